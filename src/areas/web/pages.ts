import { FetchLimitError, GuardedFetch } from '../../core/http/guarded-fetch.js';
import type { UrlGuard, UrlPolicy } from '../../core/http/url-guard.js';
import { pdfPages } from '../files/extract.js';
import { htmlToText } from '../files/markup.js';

/**
 * Web pages as text (the reference's SafeWebBaseLoader and get_content_from_url):
 * every address and every redirect passes the web-fetch URL rules (ENABLE_LOCAL_WEB_FETCH,
 * WEB_FETCH_FILTER_LIST), and the connection goes to exactly the addresses that were
 * checked. HTML gives its main text (@mozilla/readability over linkedom; the page's
 * visible text where Readability finds no article), other text types their text, PDFs
 * the text of their pages. The body is read up to WEB_LOADER_MAX_BYTES.
 */

export interface LoadedPage {
  text: string;
  /** `source` (the address asked for), `title`, `description`, `language` as the reference's loader puts them. */
  metadata: Record<string, unknown>;
}

export interface PageLoadOptions {
  /** ENABLE_WEB_LOADER_SSL_VERIFICATION. */
  verifySsl: boolean;
  /** From WEB_LOADER_TIMEOUT (seconds, a string in the reference's config), else the process default. */
  timeoutMs: number;
}

/** A page that could not be loaded; the message says why. */
export class PageLoadError extends Error {}

const USER_AGENT = 'Mozilla/5.0 (compatible; Open WebUI RAG Bot; +https://github.com/open-webui/open-webui)';
const ACCEPT = 'text/html,application/xhtml+xml,text/plain,application/pdf;q=0.9,*/*;q=0.8';

export class PageLoader {
  private readonly fetcher: GuardedFetch;

  constructor(
    policy: UrlPolicy,
    private readonly maxBytes: number,
  ) {
    this.fetcher = new GuardedFetch(policy);
  }

  get guard(): UrlGuard {
    return this.fetcher.guard;
  }

  async close(): Promise<void> {
    await this.fetcher.close();
  }

  /** The page at `url` as text; throws PageLoadError (or the guard's UrlRefusedError) with the reason. */
  async load(url: string, options: PageLoadOptions): Promise<LoadedPage> {
    const { body, contentType } = await this.fetch(url, options);
    const type = contentType.split(';')[0].trim().toLowerCase();
    if (type === 'application/pdf' || (!type && body.subarray(0, 5).toString('latin1') === '%PDF-')) {
      return { text: (await pdfPages(body)).text, metadata: { source: url } };
    }
    if (!isText(type)) throw new PageLoadError(`${url} is ${type}, which is not a web page, text or PDF`);
    const text = decode(body, contentType);
    if (type.includes('html') || (!type && /^\s*</.test(text))) return await htmlPage(text, url);
    return { text, metadata: { source: url } };
  }

  private async fetch(url: string, options: PageLoadOptions): Promise<{ body: Buffer; contentType: string }> {
    const signal = AbortSignal.timeout(options.timeoutMs);
    try {
      const answer = await this.fetcher.get(url, { signal, maxBytes: this.maxBytes, verifySsl: options.verifySsl, headers: { 'user-agent': USER_AGENT, accept: ACCEPT } });
      if (answer.status >= 400) throw new PageLoadError(`${answer.url} answered ${answer.status}`);
      return { body: answer.body, contentType: String(answer.headers['content-type'] ?? '') };
    } catch (error) {
      if (error instanceof FetchLimitError) throw new PageLoadError(`${url}: ${error.message}${error.limit === 'size' ? ' (WEB_LOADER_MAX_BYTES)' : ''}`);
      if (signal.aborted && !(error instanceof PageLoadError)) throw new PageLoadError(`${url} did not answer within ${options.timeoutMs / 1000} s`);
      throw error;
    }
  }
}

/** The reference hands text, XML, JSON and JavaScript (and a missing type) to its web loader. */
function isText(type: string): boolean {
  return !type || type.startsWith('text/') || ['xml', 'json', 'javascript'].some((t) => type.includes(t));
}

function decode(body: Buffer, contentType: string): string {
  const charset = /charset=["']?([\w-]+)/i.exec(contentType)?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

/** The main text of an HTML page, with the page's title, description and language. */
async function htmlPage(html: string, url: string): Promise<LoadedPage> {
  // The DOM and Readability are loaded at the first page, not at start.
  const [{ Readability }, { parseHTML }] = await Promise.all([import('@mozilla/readability'), import('linkedom')]);
  const { document } = parseHTML(html);
  const metadata: Record<string, unknown> = { source: url };
  const title = document.querySelector('title')?.textContent;
  if (title) metadata.title = title.trim();
  const description = document.querySelector('meta[name="description"]');
  if (description) metadata.description = description.getAttribute('content') ?? 'No description found.';
  if (document.documentElement) metadata.language = document.documentElement.getAttribute('lang') ?? 'No language found.';
  let text = '';
  try {
    text = new Readability(document as unknown as Document).parse()?.textContent ?? '';
  } catch {
    text = '';
  }
  return { text: text.trim() ? tidy(text) : htmlToText(html), metadata };
}

/** Runs of blank space folded: one blank line between blocks, single spaces within lines. */
function tidy(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/[ \t\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
