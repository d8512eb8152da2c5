import { checks, defineSetting, parsers } from '../../config/settings.js';

/** Prices per model for cost budgets: `{model_id: {input, output}}`, each in currency units per million tokens. */
export const MODEL_PRICES = defineSetting<Record<string, { input: number; output: number }>>({
  key: 'usage.model_prices',
  env: 'USAGE_MODEL_PRICES',
  default: {},
  parse: (raw) => parsers.json(raw) as Record<string, { input: number; output: number }>,
  check: checks.object,
});
