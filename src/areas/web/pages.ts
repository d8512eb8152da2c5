import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import type { Dispatcher } from 'undici';
import { UrlGuard, type UrlPolicy } from '../../core/http/url-guard.js';
import { LazyAgent } from '../../core/upstream/lazy-agent.js';
import { pdfText } from '../files/extract.js';
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
  /** WEB_LOADER_TIMEOUT seconds (a string in the reference's config); empty: the default. */
  timeoutMs: number;
}

/** A page that could not be loaded; the message says why. */
export class PageLoadError extends Error {}

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'Mozilla/5.0 (compatible; Open WebUI RAG Bot; +https://github.com/open-webui/open-webui)';

export class PageLoader {
  readonly guard: UrlGuard;
  private readonly verified: LazyAgent;
  private readonly unverified: LazyAgent;

  constructor(
    policy: UrlPolicy,
    private readonly maxBytes: number,
  ) {
    this.guard = new UrlGuard(policy);
    const connect = { lookup: this.guard.lookup, timeout: 10_000 };
    this.verified = new LazyAgent({ connect });
    this.unverified = new LazyAgent({ connect: { ...connect, rejectUnauthorized: false } });
  }

  async close(): Promise<void> {
    await Promise.all([this.verified.close(), this.unverified.close()]);
  }

  /** The page at `url` as text; throws PageLoadError (or the guard's UrlRefusedError) with the reason. */
  async load(url: string, options: PageLoadOptions): Promise<LoadedPage> {
    const { body, contentType } = await this.fetch(url, options);
    const type = contentType.split(';')[0].trim().toLowerCase();
    if (type === 'application/pdf' || (!type && body.subarray(0, 5).toString('latin1') === '%PDF-')) {
      return { text: await pdfText(body), metadata: { source: url } };
    }
    if (!isText(type)) throw new PageLoadError(`${url} is ${type}, which is not a web page, text or PDF`);
    const text = decode(body, contentType);
    if (type.includes('html') || (!type && /^\s*</.test(text))) return htmlPage(text, url);
    return { text, metadata: { source: url } };
  }

  private async fetch(start: string, options: PageLoadOptions): Promise<{ body: Buffer; contentType: string }> {
    const agent = options.verifySsl ? this.verified : this.unverified;
    // One deadline for every hop and the body.
    const signal = AbortSignal.timeout(options.timeoutMs);
    let url = start;
    for (let hop = 0; ; hop++) {
      await this.guard.check(url);
      let response: Dispatcher.ResponseData<unknown>;
      try {
        response = await agent.request(url, { method: 'GET', headers: { 'user-agent': USER_AGENT, accept: 'text/html,application/xhtml+xml,text/plain,application/pdf;q=0.9,*/*;q=0.8' }, signal });
      } catch (error) {
        if (signal.aborted) throw new PageLoadError(`${url} did not answer within ${options.timeoutMs / 1000} s`);
        throw error;
      }
      const location = response.headers.location;
      if (REDIRECTS.has(response.statusCode) && typeof location === 'string') {
        await response.body.dump();
        if (hop >= MAX_REDIRECTS) throw new PageLoadError(`${start} redirects more than ${MAX_REDIRECTS} times`);
        url = new URL(location, url).href;
        continue;
      }
      if (response.statusCode >= 400) {
        await response.body.dump();
        throw new PageLoadError(`${url} answered ${response.statusCode}`);
      }
      const contentType = String(response.headers['content-type'] ?? '');
      return { body: await this.readLimited(response, url, signal, options.timeoutMs), contentType };
    }
  }

  private async readLimited(response: Dispatcher.ResponseData<unknown>, url: string, signal: AbortSignal, timeoutMs: number): Promise<Buffer> {
    const tooLarge = () => new PageLoadError(`${url} is larger than the limit of ${this.maxBytes} bytes (WEB_LOADER_MAX_BYTES)`);
    const length = response.headers['content-length'];
    if (typeof length === 'string' && Number(length) > this.maxBytes) {
      response.body.on('error', () => undefined).destroy();
      throw tooLarge();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      // Leaving the loop early (throw) closes the body.
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > this.maxBytes) throw tooLarge();
        chunks.push(chunk);
      }
    } catch (error) {
      if (signal.aborted) throw new PageLoadError(`${url} did not answer within ${timeoutMs / 1000} s`);
      throw error;
    }
    return Buffer.concat(chunks);
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
export function htmlPage(html: string, url: string): LoadedPage {
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
