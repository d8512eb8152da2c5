import type { SettingsStore } from '../../config/settings.js';
import { type UserRecord, isAdmin } from '../auth/user.js';
import { ERROR, HttpError, notFound } from '../http/errors.js';
import type { OllamaModel } from '../upstream/catalog.js';
import { type Connection, stripPrefix } from '../upstream/connections.js';
import type { CallContext } from '../upstream/headers.js';
import { type Answer, UPSTREAM_ERROR, type UpstreamService } from '../upstream/service.js';
import { OLLAMA_ENABLE } from '../upstream/settings.js';
import type { ChatProvider, ModelRoute } from './provider.js';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)];
export const withoutNulls = (body: Json): Json => Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null && v !== undefined));

/** Ollama connections: a model's connection chosen among those serving it, and its endpoints called with the connection's own model id. */
export class OllamaProvider implements ChatProvider {
  constructor(
    private readonly upstream: UpstreamService,
    private readonly settings: SettingsStore,
  ) {}

  enabled(): boolean {
    return this.settings.get(OLLAMA_ENABLE) === true;
  }

  requireEnabled(): void {
    if (!this.enabled()) throw new HttpError(503, UPSTREAM_ERROR.OLLAMA_API_DISABLED);
  }

  async catalog(context: CallContext, refresh = false): Promise<Map<string, OllamaModel>> {
    return (await this.upstream.models(context, refresh)).ollama;
  }

  /** A model of the merged list; the lists are fetched again once before giving up (404). */
  async find(modelId: string, context: CallContext, requested = modelId): Promise<OllamaModel> {
    const model = (await this.catalog(context)).get(modelId) ?? (await this.catalog(context, true)).get(modelId);
    if (!model) throw notFound(UPSTREAM_ERROR.MODEL_NOT_FOUND(requested));
    return model;
  }

  /**
   * The connection a call goes to (get_ollama_url): the one asked for, which for
   * a user must be one that serves the model, or any that serves it.
   */
  async route(user: UserRecord, modelId: string, urlIdx: number | undefined, context: CallContext, requested = modelId): Promise<Connection> {
    if (urlIdx !== undefined) {
      if (!isAdmin(user) && !this.upstream.options.bypassModelAccessControl) {
        const model = (await this.catalog(context)).get(modelId) ?? (await this.catalog(context, true)).get(modelId);
        if (!model?.urls.includes(urlIdx)) throw new HttpError(403, ERROR.ACCESS_PROHIBITED);
      }
      return this.upstream.connection('ollama', urlIdx);
    }
    return (await this.locate(user, modelId, requested, context)).connection;
  }

  async locate(_user: UserRecord, modelId: string, requested: string, context: CallContext): Promise<ModelRoute> {
    const model = await this.find(modelId, context, requested);
    return { connection: this.upstream.connection('ollama', pick(model.urls)), model, requested };
  }

  /** One of Ollama's endpoints, the body's model id replaced by the connection's own (its prefix removed). */
  send(connection: Connection, path: string, payload: Json, context: CallContext, requested: string): Promise<Answer> {
    return this.upstream.ollama(connection, path, {
      json: { ...payload, model: stripPrefix(String(payload.model), connection.config.prefix_id) },
      context,
      stream: payload.stream === true,
      requestedModel: requested,
    });
  }

  chat(route: ModelRoute, _user: UserRecord, payload: Json, context: CallContext): Promise<Answer> {
    return this.send(route.connection, '/v1/chat/completions', withoutNulls(payload), context, route.requested);
  }

  /** OpenAI-style embeddings through Ollama's batch endpoint (`/api/embed`), the answer in OpenAI's format. */
  async embeddings(route: ModelRoute, body: Json, context: CallContext): Promise<Answer> {
    const request: Json = { model: body.model, input: body.input };
    for (const key of ['truncate', 'options', 'keep_alive']) if (key in body) request[key] = body[key];
    const answer = await this.send(route.connection, '/api/embed', withoutNulls(request), context, route.requested);
    if (answer.kind !== 'json' || answer.status >= 400 || !isObject(answer.body)) return answer;
    const embeddings = Array.isArray(answer.body.embeddings) ? answer.body.embeddings : [];
    return {
      kind: 'json',
      status: 200,
      body: {
        object: 'list',
        data: embeddings.map((embedding, index) =>
          isObject(embedding) ? { object: 'embedding', embedding: embedding.embedding, index: embedding.index ?? index } : { object: 'embedding', embedding, index },
        ),
        model: answer.body.model ?? route.requested,
      },
    };
  }
}
