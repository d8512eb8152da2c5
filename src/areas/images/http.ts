import type { Dispatcher } from 'undici';
import { ERROR, HttpError, badRequest } from '../../core/http/errors.js';
import { LazyAgent, requestErrorText } from '../../core/upstream/lazy-agent.js';

/**
 * Calls to the image engines the admin configured (OpenAI, Gemini, Automatic1111,
 * ComfyUI): one pooled agent, a deadline per call, bodies read up to a limit.
 * An engine's error answer becomes an HttpError with its status and message
 * (`[ERROR: <message>]`, the reference's wording); an engine that cannot be
 * reached is a 502, one that does not answer in time a 504.
 */
export interface EngineCall {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as `multipart/form-data`. */
  form?: FormData;
  signal?: AbortSignal;
}

export interface EngineAnswer {
  status: number;
  contentType: string;
  body: Buffer;
}

/** The most an engine's answer may weigh: a few images as base64. */
const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

export class EngineHttp {
  private readonly agent = new LazyAgent({ connect: { timeout: 10_000 }, keepAliveTimeout: 10_000 });

  constructor(readonly timeoutMs: number) {}

  /** The engine's answer, whatever its status. */
  async send(url: string, call: EngineCall = {}): Promise<EngineAnswer> {
    const target = engineUrl(url);
    const headers: Record<string, string> = { ...call.headers };
    let body: string | Buffer | undefined;
    if (call.json !== undefined) {
      body = JSON.stringify(call.json);
      headers['content-type'] = 'application/json';
    } else if (call.form) {
      // The platform's own multipart encoder (the boundary comes with its content type).
      const encoded = new Response(call.form);
      body = Buffer.from(await encoded.arrayBuffer());
      headers['content-type'] = encoded.headers.get('content-type')!;
    }
    const signal = call.signal ? AbortSignal.any([call.signal, AbortSignal.timeout(this.timeoutMs)]) : AbortSignal.timeout(this.timeoutMs);
    try {
      const response = await this.agent.request(target, {
        method: (call.method ?? (body === undefined ? 'GET' : 'POST')) as Dispatcher.HttpMethod,
        headers,
        body,
        signal,
      });
      const length = Number(response.headers['content-length'] ?? 0);
      if (length > MAX_ANSWER_BYTES) {
        response.body.destroy();
        throw new HttpError(502, ERROR.DEFAULT('The image engine answered with more than 128 MB'));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) throw new HttpError(502, ERROR.DEFAULT('The image engine answered with more than 128 MB'));
        chunks.push(chunk);
      }
      const type = response.headers['content-type'];
      return { status: response.statusCode, contentType: (Array.isArray(type) ? type[0] : (type ?? '')).toLowerCase(), body: Buffer.concat(chunks) };
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (signal.aborted && !call.signal?.aborted) throw new HttpError(504, ERROR.DEFAULT('The image engine did not answer in time'));
      throw new HttpError(502, ERROR.DEFAULT(`The image engine could not be reached: ${requestErrorText(error)}`));
    }
  }

  /** The JSON answer of a successful call; an error answer is thrown with its status and message. */
  async json(url: string, call: EngineCall = {}): Promise<unknown> {
    const answer = await this.send(url, call);
    const body = parsed(answer.body);
    if (answer.status >= 400) throw engineError(answer.status, body);
    if (typeof body === 'string') throw new HttpError(502, ERROR.DEFAULT('The image engine did not answer with JSON'));
    return body;
  }

  /** The bytes of a successful call (an image). */
  async bytes(url: string, call: EngineCall = {}): Promise<EngineAnswer> {
    const answer = await this.send(url, call);
    if (answer.status >= 400) throw engineError(answer.status, parsed(answer.body));
    return answer;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

function parsed(body: Buffer): unknown {
  const text = body.toString('utf8');
  try {
    return text === '' ? null : (JSON.parse(text) as unknown);
  } catch {
    return text;
  }
}

/** An engine's error answer, passed on with its status and message. */
export function engineError(status: number, body: unknown): HttpError {
  return new HttpError(status, ERROR.DEFAULT(errorMessage(status, body).slice(0, 2000)));
}

/** OpenAI's and Gemini's `{error: {message}}`, FastAPI's `{detail}`, Automatic1111's `{errors}`, or the text. */
function errorMessage(status: number, body: unknown): string {
  if (isObject(body)) {
    if (isObject(body.error) && typeof body.error.message === 'string') return body.error.message;
    for (const field of ['detail', 'message', 'errors', 'error']) {
      const value = body[field];
      if (typeof value === 'string' && value) return value;
    }
    if (body.detail !== undefined) return JSON.stringify(body.detail);
  }
  if (typeof body === 'string' && body.trim()) return body.trim();
  return `The image engine answered ${status}`;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A configured engine address: http(s) only; an unset one says which setting is missing. */
function engineUrl(url: string): string {
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(url);
  } catch {
    throw badRequest(ERROR.DEFAULT('The image engine URL is not set or not valid; set it in Admin Settings > Images'));
  }
  if (parsedUrl.protocol !== 'http:' && parsedUrl.protocol !== 'https:') throw badRequest(ERROR.DEFAULT('The image engine URL must be http or https'));
  return parsedUrl.href;
}
