import { checks, defineSetting, parsers } from '../../config/settings.js';

/**
 * OpenAI-compatible connections (config.py: openai.*), seeded from the reference's
 * variables: `OPENAI_API_BASE_URLS` (`;`-separated, else `OPENAI_API_BASE_URL`, else
 * api.openai.com), `OPENAI_API_KEYS` (else `OPENAI_API_KEY`), `OPENAI_API_CONFIGS`
 * (a JSON object keyed by connection index: `enable`, `prefix_id`, `model_ids`,
 * `tags`, `connection_type`, `provider`, `auth_type`, `headers`, ...).
 */
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

const stringList = (value: unknown) =>
  Array.isArray(value) && value.every((v) => typeof v === 'string') ? null : 'must be a list of strings';

export const OPENAI_ENABLE = defineSetting<boolean | null>({
  key: 'openai.enable',
  env: 'ENABLE_OPENAI_API',
  default: true,
  parse: parsers.bool,
  check: (v) => (v === null || typeof v === 'boolean' ? null : 'must be a boolean or null'),
});

export const OPENAI_BASE_URLS = defineSetting<string[]>({
  key: 'openai.api_base_urls',
  default: [OPENAI_DEFAULT_BASE_URL],
  seedFrom: ['OPENAI_API_BASE_URLS', 'OPENAI_API_BASE_URL'],
  seed: (env) => {
    const single = (env.OPENAI_API_BASE_URL || OPENAI_DEFAULT_BASE_URL).replace(/\/$/, '');
    const list = env.OPENAI_API_BASE_URLS || single;
    return list.split(';').map((url) => url.trim() || OPENAI_DEFAULT_BASE_URL);
  },
  check: stringList,
});

export const OPENAI_API_KEYS = defineSetting<string[]>({
  key: 'openai.api_keys',
  default: [''],
  seedFrom: ['OPENAI_API_KEYS', 'OPENAI_API_KEY'],
  seed: (env) => (env.OPENAI_API_KEYS || env.OPENAI_API_KEY || '').split(';').map((key) => key.trim()),
  check: stringList,
});

export const OPENAI_API_CONFIGS = defineSetting<Record<string, Record<string, unknown>>>({
  key: 'openai.api_configs',
  env: 'OPENAI_API_CONFIGS',
  default: {},
  parse: (raw) => {
    const value = JSON.parse(raw) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, Record<string, unknown>>) : {};
  },
  check: checks.object,
});
