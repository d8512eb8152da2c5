import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Tracing } from '../observability/tracing.js';
import { LazyAgent } from './lazy-agent.js';

/**
 * The one HTTP client Parley uses to talk to model providers: a pooled undici
 * agent, a deadline on every call, and failures turned into one error type the
 * routes map to 502/504. Bodies are returned as streams so that answers can be
 * relayed chunk by chunk; destroying a body (or aborting the caller's signal)
 * cancels the provider's request.
 */
export interface UpstreamCall {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer | Readable | null;
  /** Aborted when the caller gives up (e.g. the client disconnected). */
  signal?: AbortSignal;
  /** Deadline for the whole exchange, body included. */
  timeoutMs: number;
  /** Longest silence between two body chunks; defaults to the deadline. */
  idleTimeoutMs?: number;
}

export type UpstreamBody = Dispatcher.ResponseData['body'];

export interface UpstreamResponse {
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  contentType: string;
  body: UpstreamBody;
}

export type UpstreamFailureKind = 'unreachable' | 'timeout' | 'cancelled';

export class UpstreamFailure extends Error {
  constructor(
    readonly kind: UpstreamFailureKind,
    readonly url: string,
    message: string,
  ) {
    super(message);
  }
}

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}

/** The codes of undici's timeout errors (headers, body, connect). */
const UNDICI_TIMEOUTS = new Set<unknown>(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

export class UpstreamClient {
  private readonly agent: LazyAgent;
  private readonly tracing: Tracing | null;

  constructor(options: { connectionsPerOrigin: number | null; tracing?: Tracing | null }) {
    this.tracing = options.tracing ?? null;
    this.agent = new LazyAgent({
      connections: options.connectionsPerOrigin,
      keepAliveTimeout: 10_000,
      connect: { timeout: 10_000 },
    });
  }

  async send(call: UpstreamCall): Promise<UpstreamResponse> {
    const traced = this.tracing?.startHttp(call.method ?? 'GET', call.url);
    // One controller for the deadline and the caller's signal (cheaper than AbortSignal.any, which
    // also kept signals alive on Node 20); released once the body is closed.
    const controller = new AbortController();
    let timedOut = false;
    // The abort reason is what undici throws, so a deadline met while reading a body is still a timeout.
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new UpstreamFailure('timeout', call.url, 'The model provider did not answer in time'));
    }, call.timeoutMs);
    timer.unref();
    const onCallerAbort = () => controller.abort(new UpstreamFailure('cancelled', call.url, 'The client went away'));
    if (call.signal?.aborted) onCallerAbort();
    else call.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const release = () => {
      clearTimeout(timer);
      call.signal?.removeEventListener('abort', onCallerAbort);
    };
    try {
      const response = await this.agent.request(call.url, {
        method: (call.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: { 'accept-encoding': 'identity', ...call.headers },
        body: call.body ?? undefined,
        signal: controller.signal,
        headersTimeout: call.timeoutMs,
        bodyTimeout: call.idleTimeoutMs ?? call.timeoutMs,
      });
      response.body.once('close', release);
      traced?.answered(response.statusCode, response.body);
      return {
        url: call.url,
        status: response.statusCode,
        headers: response.headers,
        contentType: headerText(response.headers['content-type']).toLowerCase(),
        body: response.body,
      };
    } catch (error) {
      release();
      const failure = this.failure(error, call, timedOut);
      traced?.failed(failure.kind);
      throw failure;
    }
  }

  /** Maps whatever undici threw to an UpstreamFailure (also used for errors while reading a body). */
  failure(error: unknown, call: Pick<UpstreamCall, 'url' | 'signal'>, timedOut = false): UpstreamFailure {
    if (error instanceof UpstreamFailure) return error;
    if (call.signal?.aborted) return new UpstreamFailure('cancelled', call.url, 'The client went away');
    if (
      timedOut ||
      UNDICI_TIMEOUTS.has((error as { code?: unknown } | null)?.code) ||
      (error instanceof Error && error.name === 'TimeoutError')
    ) {
      return new UpstreamFailure('timeout', call.url, 'The model provider did not answer in time');
    }
    const cause = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    return new UpstreamFailure('unreachable', call.url, cause);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Reads a whole body as text; a body that fails mid-way becomes an UpstreamFailure. */
export async function readText(client: UpstreamClient, response: UpstreamResponse, signal?: AbortSignal): Promise<string> {
  try {
    return await response.body.text();
  } catch (error) {
    throw client.failure(error, { url: response.url, signal });
  }
}

/** The body parsed as JSON, or its text when it is not JSON. */
export async function readBody(client: UpstreamClient, response: UpstreamResponse, signal?: AbortSignal): Promise<unknown> {
  const text = await readText(client, response, signal);
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
