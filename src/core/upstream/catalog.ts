import type { Connection, ProviderConnections } from './connections.js';
import type { CallContext } from './headers.js';

/**
 * The models every enabled connection offers, fetched concurrently (OpenAI-style
 * `/models`, Ollama `/api/tags` and `/api/ps`) and merged per provider as the
 * reference does (routers/openai.get_all_models, routers/ollama.get_all_models).
 * A connection that does not answer is skipped with a log line; it never fails
 * the list.
 */
export type Json = Record<string, unknown>;

/** A model of an OpenAI-style connection, as `/api/models` lists it. */
export interface OpenAIModel extends Json {
  id: string;
  name: string;
  owned_by: string;
  urlIdx: number;
}

/** A model of one or more Ollama connections (`urls`: the indexes serving it). */
export interface OllamaModel extends Json {
  model: string;
  name: string;
  urls: number[];
}

export interface ProviderModels {
  openai: Map<string, OpenAIModel>;
  ollama: Map<string, OllamaModel>;
  /** Increases whenever the lists are fetched again, so dependants know to rebuild. */
  version: number;
}

export interface CatalogSource {
  openai(): ProviderConnections;
  ollama(): ProviderConnections;
  /** GET a JSON document from a connection, or null when it cannot be had. */
  getJson(connection: Connection, path: string, context: CallContext, query?: Record<string, string>): Promise<unknown>;
  /** Whether lists are kept until an explicit refresh (`models.base_models_cache`). */
  keepUntilRefresh(): boolean;
  ttlMs: number | null;
  /** Lists are fetched per user only when the user's identity is forwarded to providers. */
  perUser: boolean;
  warn(details: object, message: string): void;
}

const UNSUPPORTED_OPENAI_MODELS = ['babbage', 'dall-e', 'davinci', 'embedding', 'tts', 'whisper'];

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * A filter of a Pipelines server: it runs before and after other models' answers
 * (`pipeline.type` `filter`) and is never offered as a model itself (main.get_models).
 */
export function isFilterPipeline(model: Json): boolean {
  return isObject(model.pipeline) && model.pipeline.type === 'filter';
}

function listOf(response: unknown, field: 'data' | 'models'): Json[] | null {
  if (Array.isArray(response)) return response.filter(isObject);
  if (isObject(response) && Array.isArray(response[field])) return (response[field] as unknown[]).filter(isObject);
  return null;
}

function hostnameOf(url: string): string | null {
  try {
    return new URL(url).hostname;
  } catch {
    return null;
  }
}

interface CacheEntry {
  value: ProviderModels;
  expiresAt: number | null;
}

export class ProviderCatalog {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly pending = new Map<string, Promise<ProviderModels>>();
  private version = 0;
  private generation = 0;

  constructor(private readonly source: CatalogSource) {}

  /** Forgets every list (connections changed). */
  invalidate(): void {
    this.cache.clear();
    this.pending.clear();
    this.generation++;
  }

  async models(context: CallContext, refresh = false): Promise<ProviderModels> {
    const key = this.source.perUser && context.user ? context.user.id : '*';
    const cached = this.cache.get(key);
    const fresh = cached && (cached.expiresAt === null || Date.now() < cached.expiresAt || this.source.keepUntilRefresh());
    if (cached && fresh && !refresh) return cached.value;
    const running = this.pending.get(key);
    if (running) return running;
    const generation = this.generation;
    const fetching = this.fetch(context)
      .then((value) => {
        if (generation === this.generation) {
          const ttl = this.source.ttlMs;
          this.cache.set(key, { value, expiresAt: ttl === null ? null : Date.now() + ttl });
        }
        return value;
      })
      .finally(() => {
        if (this.pending.get(key) === fetching) this.pending.delete(key);
      });
    this.pending.set(key, fetching);
    return fetching;
  }

  private async fetch(context: CallContext): Promise<ProviderModels> {
    const [openai, ollama] = await Promise.all([this.fetchOpenAI(context), this.fetchOllama(context)]);
    return { openai, ollama, version: ++this.version };
  }

  // ---- OpenAI-style connections ---------------------------------------------

  private async openaiList(connection: Connection, context: CallContext): Promise<Json[] | null> {
    const modelIds = connection.config.model_ids;
    if (Array.isArray(modelIds) && modelIds.length > 0) {
      return modelIds.map((id) => ({ id, name: id, owned_by: 'openai', openai: { id }, urlIdx: connection.idx }));
    }
    if (connection.url.includes('api.anthropic.com')) return this.anthropicList(connection, context);
    const response = await this.source.getJson(connection, '/models', context);
    if (isObject(response) && 'error' in response) {
      this.source.warn({ url: connection.url, error: response.error }, 'Model list refused by the provider; skipped');
      return null;
    }
    return listOf(response, 'data');
  }

  /** Anthropic lists models on its own paged endpoint. */
  private async anthropicList(connection: Connection, context: CallContext): Promise<Json[] | null> {
    const models: Json[] = [];
    let after: string | null = null;
    for (let page = 0; page < 50; page++) {
      const query: Record<string, string> = { limit: '1000', ...(after ? { after_id: after } : {}) };
      const response = await this.source.getJson(connection, '/models', context, query);
      if (!isObject(response) || !Array.isArray(response.data)) return models.length > 0 ? models : null;
      for (const model of response.data.filter(isObject)) {
        models.push({ id: model.id, object: 'model', created: 0, owned_by: 'anthropic', name: model.display_name ?? model.id });
      }
      if (!response.has_more || typeof response.last_id !== 'string') break;
      after = response.last_id;
    }
    return models;
  }

  private async fetchOpenAI(context: CallContext): Promise<Map<string, OpenAIModel>> {
    const merged = new Map<string, OpenAIModel>();
    const { enabled, connections } = this.source.openai();
    if (!enabled) return merged;
    const lists = await Promise.all(connections.map((c) => (c.enabled ? this.openaiList(c, context) : Promise.resolve(null))));
    for (const [idx, list] of lists.entries()) {
      if (!list) continue;
      const connection = connections[idx];
      const { prefix_id: prefix, tags, provider } = connection.config;
      const connectionType = connection.config.connection_type ?? 'external';
      const officialOpenAI = hostnameOf(connection.url) === 'api.openai.com';
      for (const raw of list) {
        const model: Json = { ...raw };
        if (model.name === null) delete model.name;
        const ownId = String(model.id ?? model.name ?? '');
        if (prefix) model.id = `${prefix}.${ownId}`;
        if (Array.isArray(tags) && tags.length > 0) model.tags = tags;
        model.connection_type = connectionType;
        if (provider) model.provider = provider;
        const id = String(model.id ?? model.name ?? '');
        if (!id || merged.has(id)) continue;
        if (officialOpenAI && UNSUPPORTED_OPENAI_MODELS.some((word) => id.includes(word))) continue;
        const entry: OpenAIModel = {
          ...model,
          id,
          name: typeof model.name === 'string' ? model.name : id,
          owned_by: 'openai',
          openai: model,
          connection_type: connectionType,
          provider: provider ?? '',
          urlIdx: connection.idx,
        };
        const loaded = llamaCppLoaded(model, String(provider ?? ''), Array.isArray(connection.config.model_ids) && connection.config.model_ids.length > 0);
        if (loaded !== null) entry.loaded = loaded;
        merged.set(id, entry);
      }
    }
    return merged;
  }

  // ---- Ollama connections ------------------------------------------------

  private async fetchOllama(context: CallContext): Promise<Map<string, OllamaModel>> {
    const merged = new Map<string, OllamaModel>();
    const { enabled, connections } = this.source.ollama();
    if (!enabled) return merged;
    const responses = await Promise.all(connections.map((c) => (c.enabled ? this.source.getJson(c, '/api/tags', context) : Promise.resolve(null))));
    const answered = new Set<number>();
    for (const [idx, response] of responses.entries()) {
      const list = listOf(response, 'models');
      if (!list) continue;
      answered.add(idx);
      const connection = connections[idx];
      const { prefix_id: prefix, tags, model_ids: allowed } = connection.config;
      const connectionType = connection.config.connection_type ?? 'local';
      for (const raw of list) {
        if (typeof raw.model !== 'string') continue;
        if (Array.isArray(allowed) && allowed.length > 0 && !allowed.includes(raw.model)) continue;
        const model: Json = { ...raw };
        if (prefix) model.model = `${prefix}.${raw.model}`;
        if (Array.isArray(tags) && tags.length > 0) model.tags = tags;
        if (connectionType) model.connection_type = connectionType;
        const id = model.model as string;
        const existing = merged.get(id);
        if (existing) existing.urls.push(connection.idx);
        else merged.set(id, { ...model, model: id, name: typeof model.name === 'string' ? model.name : id, urls: [connection.idx] });
      }
    }
    await this.markLoaded(merged, connections.filter((c) => answered.has(c.idx)), context);
    return merged;
  }

  /** Adds `expires_at` (epoch seconds) to the models Ollama holds in memory (`/api/ps`). */
  private async markLoaded(models: Map<string, OllamaModel>, connections: Connection[], context: CallContext): Promise<void> {
    if (models.size === 0) return;
    const loaded = await this.loadedModels(connections, context);
    for (const entry of loaded) {
      const model = models.get(String(entry.model));
      const expires = typeof entry.expires_at === 'string' ? Date.parse(entry.expires_at) : Number.NaN;
      if (model && Number.isFinite(expires)) model.expires_at = Math.floor(expires / 1000);
    }
  }

  /** The models loaded in memory across connections (`/api/ps`), merged like the tags. */
  async loadedModels(connections: Connection[], context: CallContext): Promise<OllamaModel[]> {
    const responses = await Promise.all(connections.filter((c) => c.enabled).map(async (c) => ({ c, response: await this.source.getJson(c, '/api/ps', context) })));
    const merged = new Map<string, OllamaModel>();
    for (const { c, response } of responses) {
      for (const raw of listOf(response, 'models') ?? []) {
        if (typeof raw.model !== 'string') continue;
        const id = c.config.prefix_id ? `${c.config.prefix_id}.${raw.model}` : raw.model;
        const existing = merged.get(id);
        if (existing) existing.urls.push(c.idx);
        else merged.set(id, { ...raw, model: id, name: typeof raw.name === 'string' ? raw.name : id, urls: [c.idx] });
      }
    }
    return [...merged.values()];
  }
}

/** llama.cpp servers report whether a model is in memory (get_llamacpp_model_loaded_state). */
function llamaCppLoaded(model: Json, provider: string, manualIds: boolean): boolean | null {
  if (provider !== 'llama.cpp') return null;
  const status = model.status;
  if (isObject(status)) {
    if (status.value === 'loaded' || status.value === 'sleeping') return true;
    if (status.value === 'loading' || status.value === 'unloaded') return false;
  }
  if (!manualIds && !('status' in model)) return true;
  return null;
}
