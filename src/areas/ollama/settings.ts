import { checks, defineSetting, parsers } from '../../config/settings.js';

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
