import type { Dispatcher } from 'undici';
import { LazyAgent } from '../../core/upstream/lazy-agent.js';
import { UrlGuard, UrlRefusedError } from '../../core/http/url-guard.js';
import { ERROR, HttpError, badRequest } from '../../core/http/errors.js';
import type { ToolsOptions } from './options.js';

/**
 * `POST /api/v1/tools/load/url`: fetch a tool's source for the create page
 * (nothing is stored). GitHub page addresses become raw-file addresses as in the
 * reference; the target must pass the web-fetch URL rules (no private or
 * metadata addresses unless ENABLE_LOCAL_WEB_FETCH), checked again on every
 * connection and redirect, and the source must fit the size limit.
 */

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** github_url_to_raw_url: `tree` folders get `/main.py`, `blob` files their raw address; other URLs are kept. */
export function githubRawUrl(url: string): string {
  const tree = /^https:\/\/github\.com\/([^/]+)\/([^/]+)\/tree\/([^/]+)\/(.*)$/s.exec(url);
  if (tree) {
    const [, org, repo, branch, path] = tree;
    return `https://raw.githubusercontent.com/${org}/${repo}/refs/heads/${branch}/${path.replace(/\/+$/, '')}/main.py`;
  }
  const blob = /^https:\/\/github\.com\/([^/]+)\/([^/]+)\/blob\/([^/]+)\/(.*)$/s.exec(url);
  if (blob) {
    const [, org, repo, branch, path] = blob;
    return `https://raw.githubusercontent.com/${org}/${repo}/refs/heads/${branch}/${path}`;
  }
  return url;
}

/** The tool name the reference derives from the address: the file name without `.py`, else the folder's name. */
export function toolNameFromUrl(url: string): string {
  const parts = url.replace(/\/+$/, '').split('/');
  const fileName = parts[parts.length - 1];
  const generic = ['main.py', 'index.py', '__init__.py'].some((prefix) => fileName.startsWith(prefix));
  if (fileName.endsWith('.py') && !generic) return fileName.slice(0, -3);
  return parts.length > 1 ? parts[parts.length - 2] : 'function';
}

/** pydantic's HttpUrl: an absolute http(s) URL with a host, at most 2083 characters; normalised as `str(url)` is. */
export function parseHttpUrl(input: string): string {
  const invalid = (type: string, msg: string) => new HttpError(422, [{ type, loc: ['body', 'url'], msg, input }]);
  let parsed: URL;
  try {
    parsed = new URL(input.trim());
  } catch {
    throw invalid('url_parsing', 'Input should be a valid URL, relative URL without a base');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalid('url_scheme', "URL scheme should be 'http' or 'https'");
  if (!parsed.hostname) throw invalid('url_parsing', 'Input should be a valid URL, empty host');
  if (parsed.href.length > 2083) throw invalid('url_too_long', 'URL should have at most 2083 characters');
  return parsed.href;
}

export class ToolSourceFetcher {
  private readonly guard: UrlGuard;
  private readonly agent: LazyAgent;

  constructor(private readonly options: ToolsOptions['loadUrl']) {
    this.guard = new UrlGuard(options.policy);
    // Connections use only addresses the guard accepted, so a DNS answer that changes after the check cannot reach a refused one.
    this.agent = new LazyAgent({ connect: { lookup: this.guard.lookup, timeout: Math.min(options.timeoutMs, 10_000) } });
  }

  /** `{name, content}` of the tool at `url` (already parsed by `parseHttpUrl`). */
  async load(url: string): Promise<{ name: string; content: string }> {
    const target = githubRawUrl(url);
    const content = await this.fetchText(target);
    return { name: toolNameFromUrl(target), content };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async fetchText(start: string): Promise<string> {
    // One deadline for every hop and the body; cleared once done, so it never fires at a finished request.
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort(), this.options.timeoutMs);
    const signal = controller.signal;
    let url = start;
    try {
      for (let hop = 0; ; hop++) {
        await this.guard.check(url);
        const response = await this.agent.request(url, { method: 'GET', headers: { accept: 'text/plain, */*' }, signal });
        const location = response.headers.location;
        if (REDIRECTS.has(response.statusCode) && typeof location === 'string') {
          await response.body.dump();
          if (hop >= MAX_REDIRECTS) throw badRequest(`[ERROR: Error fetching tool: more than ${MAX_REDIRECTS} redirects]`);
          url = new URL(location, url).href;
          continue;
        }
        if (response.statusCode !== 200) {
          await response.body.dump();
          // The reference answers with the upstream's status; a non-error one would read as success.
          throw new HttpError(response.statusCode >= 400 ? response.statusCode : 400, 'Failed to fetch the tool');
        }
        const text = await this.readLimited(response.body, response.headers['content-length']);
        if (!text) throw badRequest('No data received from the URL');
        return text;
      }
    } catch (error) {
      if (error instanceof HttpError) throw error;
      // The reference's words first, then why (the guard's refusal, also when found at connection time).
      if (error instanceof UrlRefusedError || (error as NodeJS.ErrnoException).code === 'EADDRREFUSED') throw badRequest(`${ERROR.INVALID_URL} ${(error as Error).message}`);
      if (signal.aborted) throw badRequest(`[ERROR: Error fetching tool: no answer within ${this.options.timeoutMs / 1000} s]`);
      throw badRequest(`[ERROR: Error fetching tool: ${describe(error)}]`);
    } finally {
      clearTimeout(deadline);
    }
  }

  private async readLimited(body: Dispatcher.ResponseData['body'], length: string | string[] | undefined): Promise<string> {
    const tooLarge = () => badRequest(`The tool source is larger than the limit of ${this.options.maxBytes} bytes`);
    if (typeof length === 'string' && Number(length) > this.options.maxBytes) {
      body.on('error', () => undefined).destroy();
      throw tooLarge();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    // Leaving the loop early (throw) closes the body.
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > this.options.maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
    return new TextDecoder('utf-8').decode(Buffer.concat(chunks));
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: NodeJS.ErrnoException }).cause;
  const code = (error as NodeJS.ErrnoException).code ?? cause?.code;
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.includes(code) ? `${code} ${message}` : message;
}
