import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Readable, Transform } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { int } from '../../config/env.js';
import { ERROR, HttpError } from './errors.js';

/**
 * How much a request may send and how long it may take (docs/architecture.md § Request limits and timeouts).
 * The reference (uvicorn) has none of these; Parley has them so that no one, signed in or not,
 * can exhaust its memory or file descriptors with large, many or slow requests (issue 14).
 */
export interface RequestLimits {
  /** Largest body per route class, in bytes; `upload` is FILE_MAX_SIZE, read at each upload. */
  body: Record<Exclude<BodyClass, 'upload'>, number>;
  /** Bytes of bodies being received and parsed, summed over all requests (BODY_BYTES_IN_FLIGHT_MAX). */
  bodyBytesInFlightMax: number;
  /** Deepest nesting of objects and arrays a JSON body may have (REQUEST_JSON_MAX_DEPTH). */
  jsonMaxDepth: number;
  /** Longest silence while a body is being received (HTTP_BODY_IDLE_TIMEOUT). */
  bodyIdleTimeoutMs: number;
  /** The request line and headers must arrive within this; also a new connection's first byte (HTTP_HEADERS_TIMEOUT). */
  headersTimeoutMs: number;
  /** The whole request, body included; 0: none (HTTP_REQUEST_TIMEOUT). An answer being sent is never cut. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this (HTTP_KEEP_ALIVE_TIMEOUT). */
  keepAliveTimeoutMs: number;
  /** How often Node checks the header and request timeouts (HTTP_CONNECTIONS_CHECKING_INTERVAL). */
  connectionsCheckingIntervalMs: number;
  /** Open connections at most; more are closed at once (HTTP_MAX_CONNECTIONS). */
  maxConnections: number;
}

/**
 * How much body a route accepts, declared with the route: `config: { bodyClass: 'large' }`.
 * `ordinary` when not declared; `unauthenticated` for routes anyone may call with a body;
 * `large` for routes that carry whole chats or base64 images; `upload` for multipart uploads,
 * streamed under FILE_MAX_SIZE and never held whole.
 */
export type BodyClass = 'unauthenticated' | 'ordinary' | 'large' | 'upload';

declare module 'fastify' {
  interface FastifyContextConfig {
    bodyClass?: BodyClass;
  }
}

const MiB = 1024 * 1024;

/** Seconds (fractions allowed, for tests) to milliseconds. */
function seconds(raw: string | undefined, fallback: number): number {
  const value = Number.parseFloat(raw?.trim() ?? '');
  return Math.round((Number.isFinite(value) && value >= 0 ? value : fallback) * 1000);
}

export function readRequestLimits(raw: Record<string, string | undefined>): RequestLimits {
  const requestTimeoutMs = seconds(raw.HTTP_REQUEST_TIMEOUT, 300);
  const headersTimeoutMs = seconds(raw.HTTP_HEADERS_TIMEOUT, 60);
  return {
    body: {
      unauthenticated: int(raw.REQUEST_BODY_MAX_SIZE_UNAUTHENTICATED, 1 * MiB),
      ordinary: int(raw.REQUEST_BODY_MAX_SIZE, 2 * MiB),
      large: int(raw.REQUEST_BODY_MAX_SIZE_LARGE, 32 * MiB),
    },
    bodyBytesInFlightMax: int(raw.BODY_BYTES_IN_FLIGHT_MAX, 128 * MiB),
    jsonMaxDepth: int(raw.REQUEST_JSON_MAX_DEPTH, 100),
    bodyIdleTimeoutMs: seconds(raw.HTTP_BODY_IDLE_TIMEOUT, 60),
    // Node refuses a header timeout longer than the request timeout.
    headersTimeoutMs: requestTimeoutMs > 0 ? Math.min(headersTimeoutMs, requestTimeoutMs) : headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: seconds(raw.HTTP_KEEP_ALIVE_TIMEOUT, 5),
    connectionsCheckingIntervalMs: seconds(raw.HTTP_CONNECTIONS_CHECKING_INTERVAL, 10),
    maxConnections: int(raw.HTTP_MAX_CONNECTIONS, 4096),
  };
}

/** A body refused before or while it is read (413, 503): nothing of it is kept; see `dropRestOfBody`. */
export class BodyRefused extends HttpError {}

/** How long the rest of a refused body is read and dropped before the connection is cut. */
const REFUSED_BODY_LINGER_MS = 5000;

/**
 * After the answer to a refused body, what the client still sends is read and dropped (never
 * kept) for a few seconds, then the connection is cut. Closing at once would reset a connection
 * with unread data, and the client, still sending, would see the reset instead of the answer.
 */
export function dropRestOfBody(request: IncomingMessage, response: ServerResponse): void {
  response.once('finish', () => {
    if (request.complete) return;
    const cut = setTimeout(() => request.socket.destroy(), REFUSED_BODY_LINGER_MS);
    request.once('end', () => clearTimeout(cut)).once('close', () => clearTimeout(cut));
    request.resume();
  });
}

const tooLarge = (limit: number) => new BodyRefused(413, `Request body too large: this route accepts at most ${limit} bytes`);
const busy = () => new BodyRefused(503, 'Too many request bodies are being received at once; try again shortly');
const clientLeft = () => Object.assign(new Error('request body not completed'), { statusCode: 400 });

/**
 * Receives request bodies under their route's limit and a cap on the bytes being received by all
 * requests together. A body over either is refused from its Content-Length before any of it is
 * read, or, when sent chunked, at the chunk that passes the limit; it is never held whole.
 */
export class BodyReader {
  private inFlight = 0;

  constructor(
    private readonly limits: RequestLimits,
    /** FILE_MAX_SIZE in MB (an admin setting, read at each upload); null: no limit, as the reference. */
    private readonly uploadLimitMb: () => number | null,
  ) {}

  private reserve(bytes: number): boolean {
    if (this.inFlight + bytes > this.limits.bodyBytesInFlightMax) return false;
    this.inFlight += bytes;
    return true;
  }

  /** The whole body of a route of any class but `upload` (which takes no buffered body: `ordinary` then). */
  read(request: FastifyRequest, payload: IncomingMessage): Promise<Buffer> {
    const bodyClass = request.routeOptions.config?.bodyClass;
    const limit = this.limits.body[bodyClass === undefined || bodyClass === 'upload' ? 'ordinary' : bodyClass];
    const declared = declaredLength(request);
    if (declared > limit) return Promise.reject(tooLarge(limit));
    let reserved = Number.isNaN(declared) ? 0 : declared;
    if (!this.reserve(reserved)) return Promise.reject(busy());
    const socket = payload.socket;
    // A small body has usually arrived with its headers: no timer then.
    const timed = !payload.complete;
    if (timed) socket.setTimeout(this.limits.bodyIdleTimeoutMs);
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let received = 0;
      const finish = (error: Error | null) => {
        payload.removeListener('data', onData).removeListener('end', onEnd).removeListener('error', finish).removeListener('close', onClose);
        this.inFlight -= reserved;
        reserved = 0;
        if (timed) socket.setTimeout(0);
        if (error) {
          payload.pause();
          reject(error);
        } else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
      };
      const onData = (chunk: Buffer) => {
        received += chunk.length;
        if (received > limit) return finish(tooLarge(limit));
        if (received > reserved) {
          if (!this.reserve(received - reserved)) return finish(busy());
          reserved = received;
        }
        chunks.push(chunk);
      };
      const onEnd = () => finish(null);
      // Closed before its end: the client left, or the idle timeout destroyed the socket.
      const onClose = () => finish(clientLeft());
      payload.on('data', onData).on('end', onEnd).on('error', finish).on('close', onClose);
    });
  }

  /**
   * An upload's body as a stream, for routes of class `upload`: refused (413, the reference's
   * message) from its Content-Length when over FILE_MAX_SIZE, and failing at the chunk that
   * passes it when sent chunked. Bytes pass through; nothing is held.
   */
  upload(request: FastifyRequest, payload: IncomingMessage): Readable {
    const limitMb = this.uploadLimitMb();
    const limit = limitMb !== null && limitMb > 0 ? limitMb * MiB : Number.POSITIVE_INFINITY;
    const refusal = () => new BodyRefused(413, ERROR.FILE_TOO_LARGE(`${limitMb} MB`));
    if (declaredLength(request) > limit) throw refusal();
    const socket = payload.socket;
    socket.setTimeout(this.limits.bodyIdleTimeoutMs);
    payload.once('end', () => socket.setTimeout(0));
    if (limit === Number.POSITIVE_INFINITY) return payload;
    let received = 0;
    const limited = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (received <= limit) return callback(null, chunk);
        payload.unpipe(limited);
        payload.pause();
        callback(refusal());
      },
    });
    return payload.pipe(limited);
  }
}

/** Content-Length as a number; NaN when absent (a chunked body). */
function declaredLength(request: FastifyRequest): number {
  const header = request.headers['content-length'];
  return header === undefined ? Number.NaN : Number(header);
}

/**
 * Whether JSON text nests objects and arrays deeper than `max`, in one pass outside strings,
 * before `JSON.parse`: deep input would otherwise reach recursive code (validation, storage)
 * and overflow its stack. Text no longer than `max` cannot nest deeper.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // To the closing quote: one not preceded by an odd number of backslashes.
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return false;
        let backslashes = 0;
        while (text.charCodeAt(i - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
