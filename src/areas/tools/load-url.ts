import { requestErrorText } from '../../core/upstream/lazy-agent.js';
import { FetchLimitError, GuardedFetch } from '../../core/http/guarded-fetch.js';
import { UrlRefusedError } from '../../core/http/url-guard.js';
import { ERROR, HttpError, badRequest } from '../../core/http/errors.js';
import type { ToolsOptions } from './options.js';

/**
 * `POST /api/v1/tools/load/url`: fetch a tool's source for the create page
 * (nothing is stored). GitHub page addresses become raw-file addresses as in the
 * reference; the target must pass the web-fetch URL rules (no private or
 * metadata addresses unless ENABLE_LOCAL_WEB_FETCH), checked again on every
 * connection and redirect, and the source must fit the size limit.
 */

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
  private readonly fetcher: GuardedFetch;

  /** `noun` names what is fetched in the answers ('tool', or 'function' for the functions area). */
  constructor(
    private readonly options: ToolsOptions['loadUrl'],
    private readonly noun: 'tool' | 'function' = 'tool',
  ) {
    this.fetcher = new GuardedFetch(options.policy, Math.min(options.timeoutMs, 10_000));
  }

  /** `{name, content}` of the tool at `url` (already parsed by `parseHttpUrl`). */
  async load(url: string): Promise<{ name: string; content: string }> {
    const target = githubRawUrl(url);
    const content = await this.fetchText(target);
    return { name: toolNameFromUrl(target), content };
  }

  async close(): Promise<void> {
    await this.fetcher.close();
  }

  private async fetchText(url: string): Promise<string> {
    // One deadline for every hop and the body; cleared once done, so it never fires at a finished request.
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort(), this.options.timeoutMs);
    const signal = controller.signal;
    try {
      const answer = await this.fetcher.get(url, { signal, maxBytes: this.options.maxBytes, headers: { accept: 'text/plain, */*' } });
      // The reference answers with the upstream's status; a non-error one would read as success.
      if (answer.status !== 200) throw new HttpError(answer.status >= 400 ? answer.status : 400, `Failed to fetch the ${this.noun}`);
      const text = new TextDecoder('utf-8').decode(answer.body);
      if (!text) throw badRequest('No data received from the URL');
      return text;
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (error instanceof FetchLimitError && error.limit === 'size') throw badRequest(`The ${this.noun} source is larger than the limit of ${this.options.maxBytes} bytes`);
      // The reference's words first, then why (the guard's refusal, also when found at connection time).
      if (error instanceof UrlRefusedError || (error as NodeJS.ErrnoException).code === 'EADDRREFUSED') throw badRequest(`${ERROR.INVALID_URL} ${(error as Error).message}`);
      if (signal.aborted) throw badRequest(`[ERROR: Error fetching ${this.noun}: no answer within ${this.options.timeoutMs / 1000} s]`);
      throw badRequest(`[ERROR: Error fetching ${this.noun}: ${requestErrorText(error)}]`);
    } finally {
      clearTimeout(deadline);
    }
  }
}
