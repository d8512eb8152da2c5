import type { WebSettings } from '../config.js';
import type { SearchHttp } from './http.js';
import type { WebSearchResult } from './results.js';

/**
 * Provider endpoints the reference fixes in code. Each can be pointed elsewhere by a
 * process variable (docs/web-search.md § Endpoints), for a proxy or a test's fake;
 * the endpoints the reference lets the admin set (SearXNG, Bing, Jina, Perplexity
 * Search, external) are settings instead.
 */
export interface SearchEndpoints {
  brave: string;
  tavily: string;
  googlePse: string;
  kagi: string;
  exa: string;
  serper: string;
  serpapi: string;
  perplexity: string;
  duckduckgo: string;
}

export function searchEndpointsFromEnv(raw: Record<string, string | undefined>): SearchEndpoints {
  return {
    brave: raw.BRAVE_SEARCH_API_URL || 'https://api.search.brave.com/res/v1/web/search',
    tavily: raw.TAVILY_API_URL || 'https://api.tavily.com/search',
    googlePse: raw.GOOGLE_PSE_API_URL || 'https://www.googleapis.com/customsearch/v1',
    kagi: raw.KAGI_SEARCH_API_URL || 'https://kagi.com/api/v1/search',
    exa: raw.EXA_API_URL || 'https://api.exa.ai/search',
    serper: raw.SERPER_API_URL || 'https://google.serper.dev/search',
    serpapi: raw.SERPAPI_API_URL || 'https://serpapi.com/search',
    perplexity: raw.PERPLEXITY_API_URL || 'https://api.perplexity.ai/chat/completions',
    duckduckgo: raw.DUCKDUCKGO_HTML_URL || 'https://html.duckduckgo.com/html/',
  };
}

/** What a provider gets for one query. */
export interface SearchContext {
  http: SearchHttp;
  settings: WebSettings;
  endpoints: SearchEndpoints;
  /** WEB_SEARCH_RESULT_COUNT. */
  count: number;
  /** WEB_SEARCH_DOMAIN_FILTER_LIST. */
  filterList: string[];
  /** The Parley version, for the headers that name the integration. */
  version: string;
}

export type SearchProvider = (query: string, context: SearchContext) => Promise<WebSearchResult[]>;

/** A provider that is not configured: the reference's words ("No X found in environment variables"). */
export class SearchNotConfigured extends Error {}
