import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { AccessService } from '../../core/access/service.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, badRequest } from '../../core/http/errors.js';
import { readBody } from '../../core/upstream/client.js';
import type { Connection } from '../../core/upstream/connections.js';
import { type CallContext, isAnthropicUrl, isAzure } from '../../core/upstream/headers.js';
import { type Answer, UPSTREAM_ERROR, type UpstreamService } from '../../core/upstream/service.js';
import { OPENAI_API_CONFIGS, OPENAI_API_KEYS, OPENAI_BASE_URLS, OPENAI_ENABLE } from '../../core/upstream/settings.js';
import { azurePayload, deploymentOf, isAzureV1 } from '../../core/providers/openai-payload.js';
import type { OpenAIProvider } from '../../core/providers/openai.js';
import type { ModelsService } from '../models/service.js';

type Json = Record<string, unknown>;

export interface OpenAIConfig {
  ENABLE_OPENAI_API: boolean | null;
  OPENAI_API_BASE_URLS: string[];
  OPENAI_API_KEYS: string[];
  OPENAI_API_CONFIGS: Record<string, unknown>;
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * OpenAI-compatible connections (`/openai`): their config, model lists, and the
 * chat, responses, speech and pass-through proxies (routers/openai.py).
 */
export class OpenAIService {
  constructor(
    private readonly core: Core,
    private readonly upstream: UpstreamService,
    private readonly provider: OpenAIProvider,
    private readonly models: ModelsService,
    private readonly access: AccessService,
  ) {}

  config(): OpenAIConfig {
    const settings = this.core.settings;
    return {
      ENABLE_OPENAI_API: settings.get(OPENAI_ENABLE),
      OPENAI_API_BASE_URLS: settings.get(OPENAI_BASE_URLS),
      OPENAI_API_KEYS: settings.get(OPENAI_API_KEYS),
      OPENAI_API_CONFIGS: settings.get(OPENAI_API_CONFIGS),
    };
  }

  /** Saves the connections: one key per URL (missing keys empty), options only for existing indexes. */
  async updateConfig(user: UserRecord, form: OpenAIConfig): Promise<OpenAIConfig> {
    const urls = form.OPENAI_API_BASE_URLS;
    const keys = [...form.OPENAI_API_KEYS.slice(0, urls.length), ...Array<string>(Math.max(0, urls.length - form.OPENAI_API_KEYS.length)).fill('')];
    const valid = new Set(urls.map((_, i) => String(i)));
    const configs = Object.fromEntries(Object.entries(form.OPENAI_API_CONFIGS).filter(([key]) => valid.has(key)));
    const saved: OpenAIConfig = { ENABLE_OPENAI_API: form.ENABLE_OPENAI_API ?? null, OPENAI_API_BASE_URLS: urls, OPENAI_API_KEYS: keys, OPENAI_API_CONFIGS: configs };
    await this.core.db.transaction().execute(async (trx) => {
      await this.core.settings.set(
        {
          [OPENAI_ENABLE.key]: saved.ENABLE_OPENAI_API,
          [OPENAI_BASE_URLS.key]: urls,
          [OPENAI_API_KEYS.key]: keys,
          [OPENAI_API_CONFIGS.key]: configs,
        },
        this.core.clock.now(),
        trx,
      );
      await this.core.events.publish(
        {
          event: 'model.provider_config.updated',
          actor: user,
          subjectId: 'openai',
          subjectType: 'model.provider_config',
          data: { provider: 'openai', enabled: saved.ENABLE_OPENAI_API, base_url_count: urls.length },
        },
        trx,
      );
    });
    this.upstream.catalog.invalidate();
    this.models.changed();
    return saved;
  }

  /** `POST /openai/verify`: the connection's model list, or the provider's own error with its status. */
  async verify(form: { url: string; key: string; config?: Json | null }, context: CallContext): Promise<Answer> {
    const connection: Connection = {
      provider: 'openai',
      idx: -1,
      url: form.url,
      key: form.key,
      config: form.config ?? {},
      configured: true,
      enabled: true,
    };
    if (isAnthropicUrl(form.url)) {
      const listed = await this.upstream.getJson(connection, '/models', context, { limit: '1000' });
      if (!isObject(listed) || !Array.isArray(listed.data)) throw new HttpError(502, UPSTREAM_ERROR.SERVER_CONNECTION_ERROR);
      return { kind: 'json', status: 200, body: { object: 'list', data: listed.data } };
    }
    let url = `${form.url.replace(/\/+$/, '')}/models`;
    if (isAzure(connection) && !isAzureV1(form.url)) {
      url = `${form.url}/openai/models?api-version=${String(connection.config.api_version || '2023-03-15-preview')}`;
    }
    const response = await this.upstream.send(connection, '', { url, context, timeoutMs: this.upstream.options.modelListTimeoutMs });
    const body = await readBody(this.upstream.client, response, context.signal).catch((error) => {
      throw this.upstream.httpErrorOf(error);
    });
    return { kind: 'json', status: response.status === 200 ? 200 : response.status, body };
  }

  /** `GET /openai/models[/{url_idx}]`: the merged list, or one connection's; users see the models shared with them. */
  async listModels(user: UserRecord, urlIdx: number | undefined, context: CallContext): Promise<Json> {
    this.provider.requireEnabled();
    let result: Json;
    if (urlIdx === undefined) {
      result = { data: [...(await this.upstream.models(context)).openai.values()] };
    } else {
      const connection = this.upstream.connection('openai', urlIdx);
      if (isAzure(connection)) result = { data: Array.isArray(connection.config.model_ids) ? connection.config.model_ids : [], object: 'list' };
      else {
        const listed = await this.upstream.getJson(connection, '/models', context);
        if (!isObject(listed)) throw new HttpError(502, UPSTREAM_ERROR.SERVER_CONNECTION_ERROR);
        if ('error' in listed && !('data' in listed)) throw new HttpError(502, `External Error: ${JSON.stringify(listed.error)}`);
        result = listed;
      }
    }
    if (user.role === 'user' && Array.isArray(result.data)) {
      const entries = result.data.filter(isObject);
      const usable = await this.models.usableIds(user, entries.map((m) => String(m.id)));
      result = { ...result, data: entries.filter((m) => usable.has(String(m.id))) };
    }
    return result;
  }

  /**
   * `POST /openai/chat/completions`, and the service call the chat pipeline makes:
   * the workspace model's base model, parameters and system prompt applied, access
   * checked, the request shaped for its connection, the answer streamed or returned.
   */
  async chatCompletion(user: UserRecord, body: Json, context: CallContext): Promise<Answer> {
    this.provider.requireEnabled();
    const { metadata: rawMetadata, ...rest } = body;
    const metadata = isObject(rawMetadata) ? rawMetadata : {};
    const requested = rest.model;
    if (typeof requested !== 'string' || !requested) throw badRequest('Model is required');
    const prepared = await this.models.prepare(user, rest, { style: 'openai', metadata });
    const route = await this.provider.locate(user, prepared.targetId, requested, context);
    await this.models.requireUse(user, prepared.info);
    return this.provider.chat(route, user, prepared.payload, { ...context, metadata });
  }

  /** `POST /openai/responses`: the Responses API of the model's connection. */
  async responses(user: UserRecord, body: Json, context: CallContext): Promise<Answer> {
    const requested = String(body.model);
    const info = await this.models.byId(requested);
    const { connection } = await this.provider.locate(user, requested, requested, context);
    await this.models.requireUse(user, info);
    const payload: Json = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null));
    const target = this.provider.target(connection, payload, '/responses');
    return this.upstream.openai(connection, '', { url: target.url, json: target.payload, context, stream: payload.stream === true, requestedModel: requested });
  }

  /**
   * `POST /openai/audio/speech`: speech from the api.openai.com connection, kept
   * in a cache keyed by the request body (the same text and voice are fetched once).
   */
  async speech(user: UserRecord, raw: Buffer, context: CallContext): Promise<{ file: string }> {
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'chat.tts'))) throw new HttpError(403, ERROR.ACCESS_PROHIBITED);
    const connection = this.upstream.connections('openai').connections.find((c) => c.url === 'https://api.openai.com/v1');
    if (!connection) throw new HttpError(401, 'OpenAI API was not found');
    let payload: unknown;
    try {
      payload = JSON.parse(raw.toString('utf8'));
    } catch {
      throw badRequest('Invalid JSON payload');
    }
    if (!isObject(payload)) throw badRequest('Invalid JSON payload');
    if (typeof (payload.input ?? payload.text) !== 'string') throw badRequest('Invalid input text');
    const dir = path.join(this.core.env.dataDir, 'cache', 'audio', 'speech');
    await mkdir(dir, { recursive: true });
    const name = createHash('sha256').update(raw).digest('hex');
    const file = path.join(dir, `${name}.mp3`);
    if (await stat(file).then((s) => s.isFile(), () => false)) return { file };
    const response = await this.upstream.send(connection, '/audio/speech', { body: raw, method: 'POST', context });
    if (response.status >= 400) {
      const body = await readBody(this.upstream.client, response, context.signal).catch(() => null);
      const error = isObject(body) && 'error' in body ? `External: ${JSON.stringify(body.error)}` : UPSTREAM_ERROR.SERVER_CONNECTION_ERROR;
      throw new HttpError(response.status, error);
    }
    const temporary = path.join(dir, `${name}.${randomUUID()}.tmp`);
    try {
      await writeFile(temporary, Buffer.from(await response.body.arrayBuffer()));
      await writeFile(path.join(dir, `${name}.json`), JSON.stringify(payload));
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw this.upstream.httpErrorOf(error);
    }
    return { file };
  }

  readSpeech(file: string): Promise<Buffer> {
    return readFile(file);
  }

  /**
   * `/openai/{path}` (deprecated, off unless ENABLE_OPENAI_API_PASSTHROUGH): any
   * call forwarded to the connection serving the body's `model` (else the first).
   */
  async passthrough(method: string, subpath: string, query: string, raw: Buffer | undefined, context: CallContext): Promise<Answer> {
    if (!this.upstream.options.openaiPassthrough) {
      throw new HttpError(403, 'Direct API passthrough is disabled. Set ENABLE_OPENAI_API_PASSTHROUGH=True to enable.');
    }
    let payload: unknown = null;
    if (raw && raw.length > 0) {
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        payload = null;
      }
    }
    const modelId = isObject(payload) && typeof payload.model === 'string' ? payload.model : null;
    let connection = this.upstream.connection('openai', 0);
    if (modelId) {
      const model = (await this.upstream.models(context)).openai.get(modelId) ?? (await this.upstream.models(context, true)).openai.get(modelId);
      if (model) connection = this.upstream.connection('openai', model.urlIdx);
    }
    let url = `${connection.url.replace(/\/+$/, '')}/${subpath}${query ? `?${query}` : ''}`;
    let body: Buffer | string | undefined = raw && raw.length > 0 ? raw : undefined;
    if (isAzure(connection) && !isAzureV1(connection.url) && isObject(payload)) {
      const apiVersion = String(connection.config.api_version || '2023-03-15-preview');
      const deployment = deploymentOf(payload.model);
      if (!deployment) throw badRequest('Invalid model name: must not be empty or contain path separators or traversal sequences');
      body = JSON.stringify(azurePayload(payload, apiVersion));
      url = `${connection.url}/openai/deployments/${deployment}/${subpath}?api-version=${apiVersion}`;
    }
    return this.upstream.openai(connection, '', {
      url,
      method,
      body,
      context,
      stream: isObject(payload) && payload.stream === true,
      requestedModel: modelId,
    });
  }
}
