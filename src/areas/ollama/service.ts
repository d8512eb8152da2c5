import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { HttpError, badRequest } from '../../core/http/errors.js';
import type { OllamaModel } from '../../core/upstream/catalog.js';
import { readBody } from '../../core/upstream/client.js';
import { type Connection, stripPrefix } from '../../core/upstream/connections.js';
import type { CallContext } from '../../core/upstream/headers.js';
import { type Answer, UPSTREAM_ERROR, type UpstreamService } from '../../core/upstream/service.js';
import { OLLAMA_API_CONFIGS, OLLAMA_BASE_URLS, OLLAMA_ENABLE } from '../../core/upstream/settings.js';
import { type OllamaProvider, withoutNulls } from '../../core/providers/ollama.js';
import type { Readable } from 'node:stream';
import type { ModelsService } from '../models/service.js';
import { ModelFiles } from './files.js';

type Json = Record<string, unknown>;

export interface OllamaConfig {
  ENABLE_OLLAMA_API: boolean | null;
  OLLAMA_BASE_URLS: string[];
  OLLAMA_API_CONFIGS: Record<string, unknown>;
}

/** The OpenAI-, Anthropic- and Responses-style endpoints Ollama serves under `/v1`. */
export type OllamaCompatPath = '/v1/completions' | '/v1/chat/completions' | '/v1/embeddings' | '/v1/messages' | '/v1/responses';

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)];

/** `1.2.3`, `v0.5.1-rc2` → comparable numbers. */
function versionKey(version: string): number[] {
  return version
    .replace(/^v/, '')
    .replace(/-.*$/, '')
    .split('.')
    .map((n) => Number.parseInt(n, 10) || 0);
}

function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Ollama connections (`/ollama`): their config, merged model lists, model
 * management, and the generation proxies, native and OpenAI/Anthropic-style
 * (routers/ollama.py).
 */
export class OllamaService {
  private readonly files: ModelFiles;

  constructor(
    private readonly core: Core,
    private readonly upstream: UpstreamService,
    private readonly provider: OllamaProvider,
    private readonly models: ModelsService,
  ) {
    this.files = new ModelFiles(upstream, core.env.dataDir);
  }

  requireEnabled(): void {
    this.provider.requireEnabled();
  }

  config(): OllamaConfig {
    const settings = this.core.settings;
    return {
      ENABLE_OLLAMA_API: settings.get(OLLAMA_ENABLE),
      OLLAMA_BASE_URLS: settings.get(OLLAMA_BASE_URLS),
      OLLAMA_API_CONFIGS: settings.get(OLLAMA_API_CONFIGS),
    };
  }

  async updateConfig(user: UserRecord, form: OllamaConfig): Promise<OllamaConfig> {
    const valid = new Set(form.OLLAMA_BASE_URLS.map((_, i) => String(i)));
    const configs = Object.fromEntries(Object.entries(form.OLLAMA_API_CONFIGS).filter(([key]) => valid.has(key)));
    const saved: OllamaConfig = { ENABLE_OLLAMA_API: form.ENABLE_OLLAMA_API, OLLAMA_BASE_URLS: form.OLLAMA_BASE_URLS, OLLAMA_API_CONFIGS: configs };
    await this.core.db.transaction().execute(async (trx) => {
      await this.core.settings.set(
        { [OLLAMA_ENABLE.key]: saved.ENABLE_OLLAMA_API, [OLLAMA_BASE_URLS.key]: saved.OLLAMA_BASE_URLS, [OLLAMA_API_CONFIGS.key]: configs },
        this.core.clock.now(),
        trx,
      );
      await this.core.events.publish(
        {
          event: 'model.provider_config.updated',
          actor: user,
          subjectId: 'ollama',
          subjectType: 'model.provider_config',
          data: { provider: 'ollama', enabled: saved.ENABLE_OLLAMA_API, base_url_count: saved.OLLAMA_BASE_URLS.length },
        },
        trx,
      );
    });
    this.upstream.catalog.invalidate();
    this.models.changed();
    return saved;
  }

  /** `POST /ollama/verify`: the server's version, or why it cannot be reached. */
  async verify(form: { url: string; key?: string | null }, context: CallContext): Promise<unknown> {
    const connection: Connection = { provider: 'ollama', idx: -1, url: form.url, key: form.key ?? '', config: {}, configured: true, enabled: true };
    const response = await this.upstream.send(connection, '/api/version', { context, timeoutMs: this.upstream.options.modelListTimeoutMs });
    const body = await readBody(this.upstream.client, response, context.signal).catch((error) => {
      throw this.upstream.httpErrorOf(error);
    });
    if (response.status !== 200) {
      const detail = isObject(body) && 'error' in body ? `External Error: ${String(body.error)}` : `HTTP Error: ${response.status}`;
      throw new HttpError(500, `Unexpected error: ${detail}`);
    }
    return body;
  }

  /** Users see the models shared with them; admins every model (get_filtered_models). */
  private async visibleTo<T>(user: UserRecord, items: T[], idOf: (item: T) => string): Promise<T[]> {
    if (user.role !== 'user') return items;
    const usable = await this.models.usableIds(user, items.map(idOf));
    return items.filter((item) => usable.has(idOf(item)));
  }

  async tags(user: UserRecord, urlIdx: number | undefined, context: CallContext): Promise<Json> {
    this.requireEnabled();
    let result: Json;
    if (urlIdx === undefined) result = { models: [...(await this.provider.catalog(context)).values()] };
    else {
      const answer = await this.upstream.ollama(this.upstream.connection('ollama', urlIdx), '/api/tags', { context });
      result = answer.kind === 'json' && isObject(answer.body) ? answer.body : { models: [] };
    }
    const models = Array.isArray(result.models) ? result.models.filter(isObject) : [];
    return { ...result, models: await this.visibleTo(user, models, (m) => String(m.model)) };
  }

  /** `GET /ollama/api/ps`: loaded models across connections; a connection that fails is left out. */
  async loaded(context: CallContext): Promise<{ models: OllamaModel[] }> {
    if (!this.provider.enabled()) return { models: [] };
    const connections = this.upstream.connections('ollama').connections;
    return { models: await this.upstream.catalog.loadedModels(connections, context) };
  }

  /** `GET /ollama/api/version`: one connection's, or the lowest across connections. */
  async version(urlIdx: number | undefined, context: CallContext): Promise<unknown> {
    if (!this.provider.enabled()) return { version: false };
    if (urlIdx !== undefined) {
      const answer = await this.upstream.ollama(this.upstream.connection('ollama', urlIdx), '/api/version', { context });
      return answer.kind === 'json' ? answer.body : null;
    }
    const connections = this.upstream.connections('ollama').connections.filter((c) => c.enabled);
    const answers = await Promise.all(connections.map((c) => this.upstream.getJson(c, '/api/version', context)));
    const versions = answers.filter((a): a is Json => isObject(a) && typeof a.version === 'string').map((a) => a.version as string);
    if (versions.length === 0) throw new HttpError(500, UPSTREAM_ERROR.OLLAMA_NOT_FOUND);
    return { version: versions.reduce((low, v) => (compareVersions(versionKey(v), versionKey(low)) < 0 ? v : low)) };
  }

  /** `POST /ollama/api/unload`: asks every connection serving the model to drop it from memory. */
  async unload(body: Json, context: CallContext): Promise<{ status: boolean }> {
    const name = (body.model ?? body.name) as string | undefined;
    if (!name) throw badRequest('Missing name of the model to unload.');
    const model = await this.provider.find(name, context);
    const errors: { url_idx: number; error: string }[] = [];
    for (const idx of model.urls) {
      const connection = this.upstream.connection('ollama', idx);
      try {
        await this.upstream.ollama(connection, '/api/generate', { json: { model: stripPrefix(name, connection.config.prefix_id), keep_alive: 0, prompt: '' }, context });
      } catch (error) {
        errors.push({ url_idx: idx, error: error instanceof HttpError ? String(error.detail) : String(error) });
      }
    }
    if (errors.length > 0) throw new HttpError(500, `Failed to unload model on ${errors.length} nodes: ${JSON.stringify(errors)}`);
    return { status: true };
  }

  /** Pull, push and create report progress as a stream, relayed as Ollama sends it. */
  async manage(kind: 'pull' | 'push' | 'create', body: Json, urlIdx: number | undefined, context: CallContext): Promise<Answer> {
    this.requireEnabled();
    let idx = urlIdx ?? 0;
    let payload = withoutNulls(body);
    if (kind === 'pull') payload = { ...payload, model: payload.model ?? payload.name, insecure: true };
    if (kind === 'push' && urlIdx === undefined) idx = (await this.provider.find(String(payload.model), context)).urls[0];
    return this.upstream.ollama(this.upstream.connection('ollama', idx), `/api/${kind}`, { json: payload, context, stream: true });
  }

  async copy(user: UserRecord, body: { source: string; destination: string }, urlIdx: number | undefined, context: CallContext): Promise<boolean> {
    this.requireEnabled();
    const idx = urlIdx ?? (await this.provider.find(body.source, context)).urls[0];
    await this.upstream.ollama(this.upstream.connection('ollama', idx), '/api/copy', { json: { source: body.source, destination: body.destination }, context });
    this.upstream.catalog.invalidate();
    await this.core.events.publish({
      event: 'model.provider_model.created',
      actor: user,
      subjectId: body.destination,
      data: { provider: 'ollama', source: body.source, url_idx: idx },
    });
    return true;
  }

  async deleteModel(user: UserRecord, body: Json, urlIdx: number | undefined, context: CallContext): Promise<boolean> {
    this.requireEnabled();
    const payload = withoutNulls(body);
    const model = String(payload.model ?? payload.name ?? '');
    payload.model = model;
    const idx = urlIdx ?? (await this.provider.find(model, context)).urls[0];
    await this.upstream.ollama(this.upstream.connection('ollama', idx), '/api/delete', { method: 'DELETE', json: payload, context });
    this.upstream.catalog.invalidate();
    await this.core.events.publish({ event: 'model.provider_model.deleted', actor: user, subjectId: model, data: { provider: 'ollama', url_idx: idx } });
    return true;
  }

  /** `POST /ollama/api/show`: the model's details from one of its connections. */
  async show(user: UserRecord, body: Json, context: CallContext): Promise<unknown> {
    this.requireEnabled();
    const payload = withoutNulls(body);
    const model = String(payload.model ?? payload.name ?? '');
    payload.model = model;
    const found = await this.provider.find(model, context);
    await this.models.requireUse(user, await this.models.byId(model));
    const connection = this.upstream.connection('ollama', pick(found.urls));
    const answer = await this.upstream.ollama(connection, '/api/show', { json: payload, context });
    return answer.kind === 'json' ? answer.body : null;
  }

  /** Embeddings (`/api/embed`, batch; `/api/embeddings`, one prompt): access checked, prefix removed. */
  async embed(user: UserRecord, path: '/api/embed' | '/api/embeddings', body: Json, urlIdx: number | undefined, context: CallContext): Promise<Answer> {
    this.requireEnabled();
    const requested = String(body.model);
    const connection = await this.provider.route(user, requested, urlIdx, context);
    await this.models.requireUse(user, await this.models.byId(requested));
    // The legacy form takes no extra fields (GenerateEmbeddingsForm); /api/embed passes them on.
    const fields = path === '/api/embeddings' ? Object.fromEntries(['prompt', 'options', 'keep_alive'].map((k) => [k, body[k]])) : body;
    const payload = { ...withoutNulls(fields), model: stripPrefix(requested, connection.config.prefix_id) };
    return this.upstream.ollama(connection, path, { json: payload, context, requestedModel: requested });
  }

  /** `POST /ollama/api/generate`: streamed unless `stream: false`. */
  async generate(user: UserRecord, body: Json, urlIdx: number | undefined, context: CallContext): Promise<Answer> {
    this.requireEnabled();
    const requested = String(body.model);
    const connection = await this.provider.route(user, requested, urlIdx, context);
    await this.models.requireUse(user, await this.models.byId(requested));
    return this.provider.send(connection, '/api/generate', { ...withoutNulls(body), stream: body.stream ?? true }, context, requested);
  }

  /** `POST /ollama/api/chat`: the workspace model's base model, parameters and system prompt applied; NDJSON when streamed. */
  async chat(user: UserRecord, body: Json, urlIdx: number | undefined, context: CallContext, options: { bypassAccess?: boolean } = {}): Promise<Answer> {
    this.requireEnabled();
    const { metadata: rawMetadata, ...rest } = body;
    const metadata = isObject(rawMetadata) ? rawMetadata : null;
    const requested = String(rest.model);
    const prepared = await this.models.prepare(user, { ...withoutNulls(rest), stream: rest.stream ?? true }, { style: 'ollama', metadata });
    const connection = await this.provider.route(user, prepared.targetId, urlIdx, context, requested);
    await this.models.requireUse(user, prepared.info, options.bypassAccess);
    return this.provider.send(connection, '/api/chat', prepared.payload, { ...context, metadata }, requested);
  }

  /**
   * Ollama's OpenAI-, Anthropic- and Responses-style endpoints: the workspace
   * model's base model (and for completions its parameters) applied, access
   * checked, the prefix removed, the answer relayed.
   */
  async compat(user: UserRecord, path: OllamaCompatPath, body: Json, urlIdx: number | undefined, context: CallContext): Promise<Answer> {
    this.requireEnabled();
    const { metadata: rawMetadata, ...rest } = body;
    const metadata = isObject(rawMetadata) ? rawMetadata : null;
    const requested = String(rest.model ?? '');
    const withParams = path === '/v1/chat/completions' || path === '/v1/completions';
    const prepared = await this.models.prepare(user, path === '/v1/messages' ? rest : withoutNulls(rest), {
      style: withParams ? 'openai' : 'none',
      bypassSystemPrompt: path !== '/v1/chat/completions',
      metadata,
    });
    const connection = await this.provider.route(user, prepared.targetId, urlIdx, context, requested);
    await this.models.requireUse(user, prepared.info);
    return this.provider.send(connection, path, prepared.payload, { ...context, metadata }, requested);
  }

  /** `GET /ollama/v1/models`: the Ollama models in OpenAI's list format. */
  async openaiModels(user: UserRecord, urlIdx: number | undefined, context: CallContext): Promise<Json> {
    let models: Json[];
    if (urlIdx === undefined) models = [...(await this.provider.catalog(context)).values()];
    else {
      const answer = await this.upstream.ollama(this.upstream.connection('ollama', urlIdx), '/api/tags', { context });
      models = answer.kind === 'json' && isObject(answer.body) && Array.isArray(answer.body.models) ? answer.body.models.filter(isObject) : [];
    }
    const created = this.core.clock.now();
    const data = models.map((m) => ({ id: String(m.model), object: 'model', created, owned_by: 'openai' }));
    return { data: await this.visibleTo(user, data, (m) => m.id), object: 'list' };
  }

  /** `POST /ollama/models/download`: progress events, or null when the URL names no file. */
  download(url: string, urlIdx: number | undefined, context: CallContext): Promise<AsyncGenerator<string> | null> {
    return this.files.download(this.upstream.connection('ollama', urlIdx ?? 0), url, context);
  }

  /** `POST /ollama/models/upload`: progress events, then the created model (or the error) as the last event. */
  upload(filename: string, content: Readable, urlIdx: number | undefined, context: CallContext): Promise<AsyncGenerator<string>> {
    return this.files.upload(this.upstream.connection('ollama', urlIdx ?? 0), filename, content, context);
  }
}
