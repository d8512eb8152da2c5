import { PassThrough, type Readable } from 'node:stream';
import type { Core } from '../context.js';
import { HttpError, openAIError } from '../http/errors.js';
import type { Tracing } from '../observability/tracing.js';
import { ProviderCatalog, type ProviderModels } from './catalog.js';
import { readBody, UpstreamClient, UpstreamFailure, type UpstreamResponse } from './client.js';
import { type Connection, ollamaConnections, openaiConnections, type Provider } from './connections.js';
import { publishProviderFailure, upstreamErrorOf } from './failures.js';
import { type CallContext, connectionHeaders } from './headers.js';
import { readUpstreamOptions, type UpstreamOptions } from './options.js';

/**
 * The reference's messages for provider trouble (constants.py; "Open WebUI" for the product name),
 * the switches followed by where an admin turns them on.
 */
export const UPSTREAM_ERROR = {
  SERVER_CONNECTION_ERROR: 'Open WebUI: Server Connection Error',
  TIMEOUT: 'Open WebUI: Server Connection Error (the model provider did not answer in time)',
  OLLAMA_API_DISABLED: 'The Ollama API is disabled. Please enable it to use this feature. An admin switches it on in Admin Settings > Connections.',
  OPENAI_API_DISABLED: 'OpenAI API is disabled. An admin switches it on in Admin Settings > Connections.',
  OLLAMA_NOT_FOUND: 'Open WebUI could not connect to Ollama',
  MODEL_NOT_FOUND: (name = '') => `Model '${name}' was not found`,
} as const;

/**
 * What a provider answered, ready for a route to send: a body to relay as it
 * arrives, or a JSON document (an error answer included, with its status).
 */
export type Answer =
  | { kind: 'stream'; status: number; headers: UpstreamResponse['headers']; contentType: string; body: Readable }
  | { kind: 'json'; status: number; body: unknown };

export interface ExchangeOptions {
  method?: string;
  /** A JSON value (serialised here) or a ready body. */
  json?: unknown;
  body?: string | Buffer;
  query?: Record<string, string>;
  context: CallContext;
  /** The caller will relay the body; the idle limit applies instead of reading it here. */
  stream?: boolean;
  /** The model the caller asked for, reported in failure events. */
  requestedModel?: string | null;
  /** A shorter deadline than the default (connection checks). */
  timeoutMs?: number;
}

/**
 * Provider connections, their model lists and every call made to them (see
 * docs/models.md). Areas never talk to providers any other way: this is where
 * deadlines, cancellation, credentials and failure events live.
 */
export class UpstreamService {
  readonly options: UpstreamOptions;
  readonly client: UpstreamClient;
  readonly catalog: ProviderCatalog;

  constructor(
    private readonly core: Core,
    tracing: Tracing | null = null,
  ) {
    this.options = readUpstreamOptions(core.env.raw);
    this.client = new UpstreamClient({ connectionsPerOrigin: this.options.connectionsPerOrigin, tracing });
    this.catalog = new ProviderCatalog({
      openai: () => this.connections('openai'),
      ollama: () => this.connections('ollama'),
      getJson: (connection, path, context, query) => this.getJson(connection, path, context, query),
      keepUntilRefresh: () => core.settings.get<boolean>('models.base_models_cache') === true,
      ttlMs: this.options.modelsCacheTtlMs,
      perUser: this.options.forwardUserInfo.enabled,
      warn: (details, message) => core.log.warn(details, message),
    });
  }

  connections(provider: Provider) {
    return provider === 'openai' ? openaiConnections(this.core.settings) : ollamaConnections(this.core.settings);
  }

  /** One connection by index; an index past the list is the caller's mistake (400). */
  connection(provider: Provider, idx: number): Connection {
    const connection = this.connections(provider).connections[idx];
    if (!connection) throw new HttpError(400, `No ${provider === 'openai' ? 'OpenAI' : 'Ollama'} connection at index ${idx}`);
    return connection;
  }

  /** The merged model lists of every enabled connection (cached; see ProviderCatalog). */
  models(context: CallContext, refresh = false): Promise<ProviderModels> {
    return this.catalog.models(context, refresh);
  }

  url(connection: Connection, path: string, query?: Record<string, string>): string {
    const base = connection.url.replace(/\/+$/, '');
    const search = query && Object.keys(query).length > 0 ? `?${new URLSearchParams(query).toString()}` : '';
    return `${base}${path}${search}`;
  }

  /** A JSON document for model lists and checks: short deadline, any status; null when unreachable. */
  async getJson(connection: Connection, path: string, context: CallContext, query?: Record<string, string>): Promise<unknown> {
    const url = this.url(connection, path, query);
    try {
      const headers = await connectionHeaders(connection, context, this.options);
      if (connection.url.includes('api.anthropic.com')) {
        delete headers.authorization;
        Object.assign(headers, { 'x-api-key': connection.key, 'anthropic-version': '2023-06-01' });
      }
      const response = await this.client.send({ url, headers, timeoutMs: this.options.modelListTimeoutMs, signal: context.signal });
      return await readBody(this.client, response, context.signal);
    } catch (error) {
      this.core.log.warn({ url, err: error instanceof Error ? error.message : String(error) }, 'Model provider unreachable; skipped');
      return null;
    }
  }

  /** Sends one call to a connection; failures to connect become 502/504 HttpErrors. */
  async send(connection: Connection, path: string, options: ExchangeOptions & { url?: string }): Promise<UpstreamResponse> {
    const headers = await connectionHeaders(connection, options.context, this.options);
    const body = options.body ?? (options.json === undefined ? undefined : JSON.stringify(options.json));
    try {
      return await this.client.send({
        url: options.url ?? this.url(connection, path, options.query),
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        headers,
        body,
        signal: options.context.signal,
        timeoutMs: options.timeoutMs ?? this.options.timeoutMs,
        idleTimeoutMs: options.stream ? this.options.streamIdleTimeoutMs : undefined,
      });
    } catch (error) {
      throw this.httpErrorOf(error);
    }
  }

  httpErrorOf(error: unknown): HttpError {
    if (error instanceof HttpError) return error;
    if (error instanceof UpstreamFailure) {
      if (error.kind === 'timeout') return new HttpError(504, UPSTREAM_ERROR.TIMEOUT);
      if (error.kind === 'cancelled') return new HttpError(499, 'Client closed request');
      this.core.log.warn({ url: error.url, err: error.message }, 'Model provider unreachable');
      return new HttpError(502, UPSTREAM_ERROR.SERVER_CONNECTION_ERROR);
    }
    return new HttpError(502, UPSTREAM_ERROR.SERVER_CONNECTION_ERROR);
  }

  private async read(response: UpstreamResponse, context: CallContext): Promise<unknown> {
    try {
      return await readBody(this.client, response, context.signal);
    } catch (error) {
      throw this.httpErrorOf(error);
    }
  }

  /**
   * A call with the Ollama proxy's rules (routers/ollama.send_request): a failure
   * becomes `{detail: <Ollama's error>}` with the provider's status; a streamed
   * answer is relayed; otherwise the JSON document is returned.
   */
  async ollama(connection: Connection, path: string, options: ExchangeOptions): Promise<Answer> {
    const response = await this.send(connection, path, options);
    if (response.status >= 400) {
      const body = await this.read(response, options.context);
      await this.failed('ollama', response.url, response.status, body, options, null);
      const error = typeof body === 'object' && body !== null && 'error' in body ? (body as { error: unknown }).error : null;
      throw new HttpError(response.status, error ?? UPSTREAM_ERROR.SERVER_CONNECTION_ERROR);
    }
    if (options.stream) return this.streamOf(response, options.context);
    return { kind: 'json', status: response.status, body: await this.read(response, options.context) };
  }

  /**
   * A call with the OpenAI proxy's rules: an event stream is relayed (unless it
   * is an error), anything else is read; a failure keeps the provider's status
   * and body, with `detail` added so every client finds the message.
   */
  async openai(connection: Connection, path: string, options: ExchangeOptions & { url?: string }): Promise<Answer> {
    const response = await this.send(connection, path, options);
    if (response.status < 400 && response.contentType.includes('text/event-stream')) return this.streamOf(response, options.context);
    const body = await this.read(response, options.context);
    if (response.status >= 400) {
      await this.failed('openai-compatible', connection.url, response.status, body, options, connection.key);
      return { kind: 'json', status: response.status, body: errorBody(response.status, body) };
    }
    return { kind: 'json', status: response.status, body };
  }

  /**
   * A provider's body as the answer's stream. A failure while reading (idle
   * limit, provider gone) becomes the same 502/504 as a failure to connect: an
   * error answer if nothing was sent yet, otherwise a cut connection. When the
   * stream is dropped (the client left), the provider's request is cancelled.
   */
  private streamOf(response: UpstreamResponse, context: CallContext): Answer {
    const out = new PassThrough();
    const body = response.body;
    body.once('error', (error) => out.destroy(this.httpErrorOf(this.client.failure(error, { url: response.url, signal: context.signal }))));
    out.once('close', () => {
      if (!body.destroyed) body.destroy();
    });
    body.pipe(out);
    return { kind: 'stream', status: response.status, headers: response.headers, contentType: response.contentType, body: out };
  }

  async failed(provider: 'ollama' | 'openai-compatible', baseUrl: string, status: number, body: unknown, options: ExchangeOptions, apiKey: string | null) {
    await publishProviderFailure(this.core.events, this.core.log, {
      actor: options.context.user ?? null,
      provider,
      baseUrl,
      status,
      requestedModel: options.requestedModel ?? null,
      apiKey,
      upstreamError: body,
    });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}


/**
 * A provider's error answer with a `detail` message added, as the reference's clients read it. The
 * provider's own fields are kept for SDKs; an `error` without a message (a string, or none: a
 * provider that answers `{detail}` or text) becomes OpenAI's error object.
 */
export function errorBody(status: number, body: unknown): Record<string, unknown> {
  const { message } = upstreamErrorOf(body);
  const detail = typeof message === 'string' && message ? message : message ? JSON.stringify(message) : UPSTREAM_ERROR.SERVER_CONNECTION_ERROR;
  const fields = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const error = fields.error as { message?: unknown } | null | undefined;
  const readable = error !== null && typeof error === 'object' && typeof error.message === 'string';
  return { ...fields, detail, ...(readable ? {} : { error: openAIError(status, detail) }) };
}

