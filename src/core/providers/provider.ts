import type { UserRecord } from '../auth/user.js';
import type { Connection } from '../upstream/connections.js';
import type { CallContext } from '../upstream/headers.js';
import type { Answer } from '../upstream/service.js';

type Json = Record<string, unknown>;

/** Where a model is served: the connection a call goes to, and the model as its provider listed it. */
export interface ModelRoute {
  connection: Connection;
  model: Json;
  /** The model the caller asked for (a workspace model's id, say), named in failure events. */
  requested: string;
}

/**
 * One kind of model provider (OpenAI-compatible, Ollama), as the areas above use it: the chat
 * pipeline and `/api` calls through the models area, and each provider's own proxy routes.
 * A provider shapes a request for its connection and sends it; which model a user may call,
 * and with which workspace parameters, is the models area's rule, applied before.
 */
export interface ChatProvider {
  /** 503 when the admin switched the provider off. */
  requireEnabled(): void;
  /** The connection serving a provider model; the lists are fetched again once before a 404 naming `requested`. */
  locate(user: UserRecord, modelId: string, requested: string, context: CallContext): Promise<ModelRoute>;
  /** An OpenAI Chat Completions body (model id as listed) sent on `route`, answered in OpenAI's format. */
  chat(route: ModelRoute, user: UserRecord, payload: Json, context: CallContext): Promise<Answer>;
  /** An OpenAI-style embeddings body (model id as listed), answered in OpenAI's format. */
  embeddings(route: ModelRoute, body: Json, context: CallContext): Promise<Answer>;
}
