import type { IncomingHttpHeaders } from 'node:http';
import { LazyAgent } from '../upstream/lazy-agent.js';
import { UrlGuard, type UrlPolicy } from './url-guard.js';

/**
 * GET (or another request) of an address a user chose (a tool's source, a web page, a tool server): the address and every
 * redirect pass the URL guard, the connection goes to exactly the addresses it checked
 * (no DNS rebinding), and at most `maxBytes` of the body are read.
 */

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** A fetch stopped by a limit: too many redirects, or a body over `maxBytes`. */
export class FetchLimitError extends Error {
  constructor(
    readonly limit: 'redirects' | 'size',
    message: string,
  ) {
    super(message);
  }
}

export interface GuardedGet {
  /** One deadline for every hop and the body. */
  signal: AbortSignal;
  maxBytes: number;
  headers?: Record<string, string>;
  /** false: certificates are not checked. */
  verifySsl?: boolean;
  maxRedirects?: number;
  /** Default GET; other methods (with `body`) follow no redirects. */
  method?: string;
  body?: string;
}

export interface FetchedBody {
  /** The address that answered (after redirects). */
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export class GuardedFetch {
  readonly guard: UrlGuard;
  private readonly verified: LazyAgent;
  private readonly unverified: LazyAgent;

  constructor(policy: UrlPolicy, connectTimeoutMs = 10_000) {
    this.guard = new UrlGuard(policy);
    const connect = { lookup: this.guard.lookup, timeout: connectTimeoutMs };
    this.verified = new LazyAgent({ connect });
    this.unverified = new LazyAgent({ connect: { ...connect, rejectUnauthorized: false } });
  }

  async close(): Promise<void> {
    await Promise.all([this.verified.close(), this.unverified.close()]);
  }

  /** The answer at `start` after its redirects, whatever its status; throws the guard's UrlRefusedError, FetchLimitError, or the connection's error. */
  async get(start: string, options: GuardedGet): Promise<FetchedBody> {
    const agent = options.verifySsl === false ? this.unverified : this.verified;
    const maxRedirects = options.maxRedirects ?? 5;
    let url = start;
    for (let hop = 0; ; hop++) {
      await this.guard.check(url);
      const method = options.method ?? 'GET';
      const response = await agent.request(url, { method, headers: options.headers, body: options.body, signal: options.signal });
      const location = response.headers.location;
      if (method === 'GET' && REDIRECTS.has(response.statusCode) && typeof location === 'string') {
        await response.body.dump();
        if (hop >= maxRedirects) throw new FetchLimitError('redirects', `more than ${maxRedirects} redirects`);
        url = new URL(location, url).href;
        continue;
      }
      const tooLarge = () => new FetchLimitError('size', `larger than the limit of ${options.maxBytes} bytes`);
      const length = response.headers['content-length'];
      if (typeof length === 'string' && Number(length) > options.maxBytes) {
        response.body.on('error', () => undefined).destroy();
        throw tooLarge();
      }
      const chunks: Buffer[] = [];
      let size = 0;
      // Leaving the loop early (throw) closes the body.
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > options.maxBytes) throw tooLarge();
        chunks.push(chunk);
      }
      return { url, status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) };
    }
  }
}
