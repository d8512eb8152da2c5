import { createHash } from 'node:crypto';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import { UrlRefusedError } from '../../core/http/url-guard.js';
import type { Retrieval, RetrievalDocument } from '../../core/retrieval/retrieval.js';
import { LazyAgent, requestErrorText } from '../../core/upstream/lazy-agent.js';
import { type WebSettings, webSettings } from '../../core/web/config.js';
import { mapWithLimit } from '../../core/web/limit.js';
import { SearchNotConfigured } from '../../core/web/search/context.js';
import { SEARCH_ENGINES } from '../../core/web/search/engines.js';
import { SearchHttp } from '../../core/web/search/http.js';
import type { WebSearchResult } from '../../core/web/search/results.js';
import type { CollectionsService } from '../retrieval/service.js';
import type { WebOptions } from './options.js';
import { type LoadedPage, PageLoader } from './pages.js';
import { isYoutubeUrl, YoutubeTranscripts } from './youtube.js';

/**
 * Web search and web/YouTube fetching (routers/retrieval.py process_web,
 * process_youtube, process_web_search): results come from the engine
 * WEB_SEARCH_ENGINE names, pages are loaded through the URL guard, and the text is
 * indexed through `Retrieval` into the collection the reference names (a hash of the
 * URL or of the queries, or the form's `collection_name`).
 */

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** process_web's answer when the text is stored (or only returned, with `process=false`). */
export type ProcessedUrl =
  | { status: true; collection_name: string | null; filename: string; file: { data: { content: string }; meta: { name: string; source: string } } }
  | { status: true; content: string };

export type WebSearchAnswer =
  | { status: true; collection_names: string[]; items: WebSearchResult[]; filenames: string[]; loaded_count: number }
  | { status: true; collection_name: null; filenames: string[]; items: WebSearchResult[]; docs: { content: string; metadata: Record<string, unknown> }[]; loaded_count: number };

export class WebService {
  private readonly settings: WebSettings;
  private readonly searchAgent: LazyAgent;
  private readonly http: SearchHttp;
  private readonly pages: PageLoader;
  private readonly youtube: YoutubeTranscripts;

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly collections: CollectionsService,
    private readonly retrieval: Retrieval,
    private readonly options: WebOptions,
  ) {
    this.settings = webSettings(core.settings);
    this.searchAgent = new LazyAgent({ connect: { timeout: 10_000 } });
    this.http = new SearchHttp(this.searchAgent, options.searchTimeoutMs);
    this.pages = new PageLoader(options.fetchPolicy, options.maxPageBytes);
    this.youtube = new YoutubeTranscripts(options.youtubeBaseUrl, options.searchTimeoutMs);
  }

  async close(): Promise<void> {
    await Promise.all([this.searchAgent.close(), this.pages.close(), this.youtube.close()]);
  }

  /** ENABLE_WEB_SEARCH. */
  get enabled(): boolean {
    return this.settings.flag('ENABLE_WEB_SEARCH');
  }

  /** Web search is on and the user may use it (admins always; others by `features.web_search`). */
  async maySearch(user: UserRecord): Promise<boolean> {
    return this.enabled && (isAdmin(user) || (await this.access.hasPermission(user, 'features.web_search')));
  }

  // ---- process/web and process/youtube ------------------------------------------

  async processUrl(user: UserRecord, form: { url: string; collection_name?: string | null }, process: boolean, overwrite: boolean): Promise<ProcessedUrl> {
    // The retrieval area's rule (filter_accessible_collections), as process/text and process/file.
    if (form.collection_name) await this.collections.requireAccess(user, [form.collection_name], 'write');
    let docs: LoadedPage[];
    try {
      docs = [await this.loadOne(form.url)];
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (error instanceof UrlRefusedError || (error as NodeJS.ErrnoException).code === 'EADDRREFUSED') throw badRequest(`${ERROR.INVALID_URL} ${(error as Error).message}`);
      // The reference's words, then why.
      throw badRequest(`${ERROR.DEFAULT('Error querying knowledge base')} ${requestErrorText(error)}`);
    }
    const content = docs.map((doc) => doc.text).join(' ');
    if (!process) return { status: true, content };
    let collection: string | null = form.collection_name || sha256(form.url).slice(0, 63);
    if (this.settings.flag('BYPASS_WEB_SEARCH_EMBEDDING_AND_RETRIEVAL')) collection = null;
    else await this.save(collection, docs, overwrite);
    return { status: true, collection_name: collection, filename: form.url, file: { data: { content }, meta: { name: form.url, source: form.url } } };
  }

  /** One URL as text: a YouTube transcript, or the page (HTML, text or PDF). */
  async loadOne(url: string): Promise<LoadedPage> {
    this.pages.guard.checkSyntax(url);
    if (isYoutubeUrl(url)) {
      const text = await this.youtube.transcript(url, this.settings.list('YOUTUBE_LOADER_LANGUAGE'), this.settings.string('YOUTUBE_LOADER_PROXY_URL'));
      return { text: this.truncate(text), metadata: { source: url } };
    }
    const page = await this.pages.load(url, this.loadOptions());
    return { ...page, text: this.truncate(page.text) };
  }

  private loadOptions() {
    const seconds = Number.parseFloat(this.settings.string('WEB_LOADER_TIMEOUT'));
    return {
      verifySsl: this.settings.flag('ENABLE_WEB_LOADER_SSL_VERIFICATION'),
      timeoutMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : this.options.pageTimeoutMs,
    };
  }

  /** WEB_FETCH_MAX_CONTENT_LENGTH: a page's text is cut to this many characters when set. */
  private truncate(text: string): string {
    const max = this.settings.number('WEB_FETCH_MAX_CONTENT_LENGTH');
    return max !== null && max > 0 && text.length > max ? text.slice(0, max) : text;
  }

  /** `overwrite` replaces what the collection held (save_docs_to_vector_db); otherwise the pages are added. */
  private async save(collection: string, docs: LoadedPage[], overwrite: boolean): Promise<void> {
    const documents: RetrievalDocument[] = docs.filter((doc) => doc.text.trim() !== '').map((doc) => ({ text: doc.text, metadata: { ...doc.metadata, name: doc.metadata.title ?? doc.metadata.source } }));
    if (overwrite) await this.retrieval.dropCollections([collection]);
    if (documents.length > 0) await this.retrieval.index(collection, documents);
  }


  // ---- process/web/search ---------------------------------------------------------

  /** `POST /process/web/search`: refused unless web search is on and the user may use it. */
  async processWebSearch(user: UserRecord, queries: string[]): Promise<WebSearchAnswer> {
    if (!(await this.maySearch(user))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    return this.searchAndLoad(queries);
  }

  /** Searches every query, loads the result pages and indexes them (the chat's web search calls this too). */
  async searchAndLoad(queries: string[]): Promise<WebSearchAnswer> {
    let found: WebSearchResult[][];
    try {
      found = await mapWithLimit(queries, this.settings.number('WEB_SEARCH_CONCURRENT_REQUESTS') ?? 0, (query) => this.search(query));
    } catch (error) {
      throw badRequest(requestErrorText(error) || 'Something went wrong while searching the web.');
    }
    let items = found.flat().filter((item) => item.link);
    const urls = [...new Set(items.map((item) => item.link))];
    if (urls.length === 0) throw notFound(ERROR.DEFAULT('No results found from web search'));

    let docs: { content: string; metadata: Record<string, unknown> }[];
    if (this.settings.flag('BYPASS_WEB_SEARCH_WEB_LOADER')) {
      docs = items.filter((item) => item.snippet !== null).map((item) => ({ content: item.snippet!, metadata: { source: item.link, title: item.title, snippet: item.snippet, link: item.link } }));
    } else {
      docs = (await this.loadAll(urls)).map((page) => ({ content: page.text, metadata: page.metadata }));
    }
    // Only the pages that loaded, and the results that gave them.
    const loaded = docs.map((doc) => doc.metadata.source).filter((source): source is string => typeof source === 'string' && source !== '');
    items = items.filter((item) => loaded.includes(item.link));

    if (this.settings.flag('BYPASS_WEB_SEARCH_EMBEDDING_AND_RETRIEVAL')) {
      return { status: true, collection_name: null, filenames: loaded, items, docs, loaded_count: docs.length };
    }
    const collection = `web-search-${sha256(queries.join('-'))}`.slice(0, 63);
    try {
      await this.save(
        collection,
        docs.map((doc) => ({ text: doc.content, metadata: doc.metadata })),
        true,
      );
    } catch (error) {
      // As the reference: the answer still names the collection.
      this.core.log.debug({ err: requestErrorText(error) }, 'Web search pages were not indexed');
    }
    return { status: true, collection_names: [collection], items, filenames: loaded, loaded_count: docs.length };
  }

  /** One query through WEB_SEARCH_ENGINE. */
  async search(query: string): Promise<WebSearchResult[]> {
    const engine = this.settings.string('WEB_SEARCH_ENGINE');
    const provider = SEARCH_ENGINES[engine];
    if (!provider) {
      throw new SearchNotConfigured(engine ? `The web search engine ${engine} is not supported by this server` : 'No search engine API key found in environment variables');
    }
    return provider(query, {
      http: this.http,
      settings: this.settings,
      endpoints: this.options.endpoints,
      count: this.settings.number('WEB_SEARCH_RESULT_COUNT') ?? 3,
      filterList: this.settings.list('WEB_SEARCH_DOMAIN_FILTER_LIST'),
      version: this.core.env.version,
    });
  }

  /** The result pages, WEB_LOADER_CONCURRENT_REQUESTS at a time; pages that fail or are refused are left out (continue_on_failure). */
  private async loadAll(urls: string[]): Promise<LoadedPage[]> {
    const allowed = urls.filter((url) => {
      try {
        this.pages.guard.checkSyntax(url);
        return true;
      } catch {
        return false;
      }
    });
    if (allowed.length === 0) throw badRequest(ERROR.INVALID_URL);
    const pages = await mapWithLimit(allowed, this.settings.number('WEB_LOADER_CONCURRENT_REQUESTS') ?? 10, async (url) => {
      try {
        return await this.loadOne(url);
      } catch (error) {
        this.core.log.debug({ url, err: requestErrorText(error) }, 'Web page not loaded');
        return null;
      }
    });
    return pages.filter((page): page is LoadedPage => page !== null);
  }
}
