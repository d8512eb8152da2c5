import type { SettingsStore } from '../../config/settings.js';
import { OLLAMA_API_CONFIGS, OLLAMA_BASE_URLS, OLLAMA_ENABLE, OPENAI_API_CONFIGS, OPENAI_API_KEYS, OPENAI_BASE_URLS, OPENAI_ENABLE } from './settings.js';

/**
 * The provider connections an admin configured, as one list per provider. A
 * connection's options (`api_configs`) are keyed by its index, or, in configs
 * saved by old releases, by its URL.
 */
export type Provider = 'openai' | 'ollama';

export interface ConnectionConfig {
  enable?: boolean;
  key?: string;
  prefix_id?: string;
  model_ids?: string[];
  tags?: unknown[];
  connection_type?: string;
  provider?: string;
  auth_type?: string;
  headers?: Record<string, unknown>;
  azure?: boolean;
  api_version?: string;
  api_type?: string;
  [option: string]: unknown;
}

export interface Connection {
  provider: Provider;
  idx: number;
  url: string;
  /** The bearer key: `openai.api_keys[idx]` or the Ollama config's `key`. */
  key: string;
  config: ConnectionConfig;
  /** Whether the connection has options at all (the reference treats "none" apart from "enable: true"). */
  configured: boolean;
  enabled: boolean;
}

export interface ProviderConnections {
  enabled: boolean;
  connections: Connection[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function originOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return url;
  }
}

function configOf(configs: Record<string, unknown>, idx: number, url: string): ConnectionConfig | null {
  const found = configs[String(idx)] ?? configs[url] ?? configs[originOf(url)];
  return isObject(found) ? (found as ConnectionConfig) : null;
}

export function openaiConnections(settings: SettingsStore): ProviderConnections {
  const urls = settings.get(OPENAI_BASE_URLS) ?? [];
  const keys = settings.get(OPENAI_API_KEYS) ?? [];
  const configs = settings.get(OPENAI_API_CONFIGS) ?? {};
  return {
    enabled: settings.get(OPENAI_ENABLE) === true,
    connections: urls.map((url, idx) => {
      const config = configOf(configs, idx, url);
      return {
        provider: 'openai',
        idx,
        url,
        key: keys[idx] ?? '',
        config: config ?? {},
        configured: config !== null,
        enabled: config?.enable !== false,
      };
    }),
  };
}

export function ollamaConnections(settings: SettingsStore): ProviderConnections {
  const urls = settings.get(OLLAMA_BASE_URLS) ?? [];
  const configs = settings.get(OLLAMA_API_CONFIGS) ?? {};
  return {
    enabled: settings.get(OLLAMA_ENABLE) === true,
    connections: urls.map((url, idx) => {
      const config = configOf(configs, idx, url);
      return {
        provider: 'ollama',
        idx,
        url,
        key: typeof config?.key === 'string' ? config.key : '',
        config: config ?? {},
        configured: config !== null,
        enabled: config?.enable !== false,
      };
    }),
  };
}

/** The provider's own id of a model listed under a connection's prefix (`prefix.model` → `model`). */
export function stripPrefix(modelId: string, prefixId: unknown): string {
  return typeof prefixId === 'string' && prefixId && modelId.startsWith(`${prefixId}.`) ? modelId.slice(prefixId.length + 1) : modelId;
}
