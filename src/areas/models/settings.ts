import { checks, defineSetting, parsers } from '../../config/settings.js';

/** Arena models in the model list (config.py: evaluation.arena.*). */
export const ARENA_ENABLE = defineSetting({
  key: 'evaluation.arena.enable',
  env: 'ENABLE_EVALUATION_ARENA_MODELS',
  default: true,
  parse: parsers.bool,
  check: checks.bool,
});

export const ARENA_MODELS = defineSetting<unknown[]>({
  key: 'evaluation.arena.models',
  env: 'EVALUATION_ARENA_MODELS',
  default: [],
  parse: (raw) => {
    const value = JSON.parse(raw) as unknown;
    return Array.isArray(value) && value.every((m) => m !== null && typeof m === 'object' && !Array.isArray(m)) ? value : [];
  },
  check: checks.list,
});

/** Settings the configs area owns and the model list reads. */
export const MODEL_ORDER_LIST_KEY = 'ui.model_order_list';
export const DEFAULT_METADATA_KEY = 'models.default_metadata';
