import type { LazyAgent } from '../../upstream/lazy-agent.js';

/** A search provider's answer that is not a success, as the reference's `raise_for_status` reports it. */
export class SearchHttpError extends Error {
  constructor(
    readonly status: number,
    url: string,
  ) {
    super(`${status}, url='${url}'`);
  }
}

export interface SearchCall {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  query?: Record<string, string | number>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as `application/x-www-form-urlencoded`. */
  form?: Record<string, string>;
}

/** The provider calls of one server: one pooled agent, one deadline per call. */
export class SearchHttp {
  constructor(
    private readonly agent: LazyAgent,
    private readonly timeoutMs: number,
  ) {}

  /** Status and text of the answer, whatever the status. */
  async send(url: string, call: SearchCall = {}): Promise<{ status: number; text: string }> {
    const target = new URL(url);
    for (const [name, value] of Object.entries(call.query ?? {})) target.searchParams.set(name, String(value));
    const headers = { ...call.headers };
    let body: string | undefined;
    if (call.json !== undefined) {
      body = JSON.stringify(call.json);
      headers['content-type'] ??= 'application/json';
    } else if (call.form) {
      body = new URLSearchParams(call.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await this.agent.request(target.href, {
      method: call.method ?? (body === undefined ? 'GET' : 'POST'),
      headers,
      body,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    return { status: response.statusCode, text: await response.body.text() };
  }

  /** The JSON answer; a status of 400 or more throws, as `raise_for_status`. */
  async json(url: string, call: SearchCall = {}): Promise<unknown> {
    const { status, text } = await this.send(url, call);
    if (status >= 400) throw new SearchHttpError(status, url);
    return JSON.parse(text) as unknown;
  }
}
