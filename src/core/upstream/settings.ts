import { checks, defineSetting, parsers } from '../../config/settings.js';

// The provider connections an admin configures (`/openai/config`, `/ollama/config`); core/upstream reads them.

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

/**
 * Ollama connections (config.py: ollama.*), seeded from the reference's variables:
 * `OLLAMA_BASE_URLS` (`;`-separated), else `OLLAMA_BASE_URL`, else
 * `OLLAMA_API_BASE_URL` without its `/api` suffix (default http://localhost:11434);
 * `OLLAMA_API_CONFIGS` is a JSON object keyed by connection index (`enable`, `key`,
 * `prefix_id`, `model_ids`, `tags`, `connection_type`, `headers`).
 */
function seedBaseUrls(env: Record<string, string | undefined>): string[] {
  let single = (env.OLLAMA_BASE_URL ?? '').replace(/\/$/, '');
  if (!single) {
    const api = env.OLLAMA_API_BASE_URL ?? 'http://localhost:11434/api';
    single = api.endsWith('/api') ? api.slice(0, -4) : api;
  }
  return (env.OLLAMA_BASE_URLS || single).split(';').map((url) => url.trim());
}

export const OLLAMA_ENABLE = defineSetting<boolean | null>({
  key: 'ollama.enable',
  env: 'ENABLE_OLLAMA_API',
  default: true,
  parse: parsers.bool,
  check: (v) => (v === null || typeof v === 'boolean' ? null : 'must be a boolean or null'),
});

export const OLLAMA_BASE_URLS = defineSetting<string[]>({
  key: 'ollama.base_urls',
  default: ['http://localhost:11434'],
  seedFrom: ['OLLAMA_BASE_URLS', 'OLLAMA_BASE_URL', 'OLLAMA_API_BASE_URL'],
  seed: seedBaseUrls,
  check: (v) => (Array.isArray(v) && v.every((url) => typeof url === 'string') ? null : 'must be a list of strings'),
});

export const OLLAMA_API_CONFIGS = defineSetting<Record<string, Record<string, unknown>>>({
  key: 'ollama.api_configs',
  env: 'OLLAMA_API_CONFIGS',
  default: {},
  parse: (raw) => {
    const value = JSON.parse(raw) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, Record<string, unknown>>) : {};
  },
  check: checks.object,
});
