import { int } from '../../config/env.js';
import { type UrlPolicy, webFetchPolicyFromEnv } from '../../core/http/url-guard.js';
import { type SearchEndpoints, searchEndpointsFromEnv } from '../../core/web/search/context.js';

/** Process settings of web search and fetching, read once from the environment (docs/web-search.md). */
export interface WebOptions {
  /** Which pages may be fetched: the reference's web-fetch rules (ENABLE_LOCAL_WEB_FETCH, WEB_FETCH_FILTER_LIST). */
  fetchPolicy: UrlPolicy;
  /** WEB_LOADER_MAX_BYTES: the most of one page's body that is read (default 10 MiB). */
  maxPageBytes: number;
  /** A page's deadline when WEB_LOADER_TIMEOUT is not set (AIOHTTP_CLIENT_TIMEOUT, bounded to 30 s when unset). */
  pageTimeoutMs: number;
  /** A search provider's or YouTube's deadline (the same). */
  searchTimeoutMs: number;
  endpoints: SearchEndpoints;
  /** YOUTUBE_BASE_URL: where transcripts are read (https://www.youtube.com). */
  youtubeBaseUrl: string;
}

export function readWebOptions(raw: Record<string, string | undefined>): WebOptions {
  const seconds = int(raw.AIOHTTP_CLIENT_TIMEOUT, 30);
  const timeoutMs = (seconds > 0 ? seconds : 30) * 1000;
  return {
    fetchPolicy: webFetchPolicyFromEnv(raw),
    maxPageBytes: Math.max(1, int(raw.WEB_LOADER_MAX_BYTES, 10 * 1024 * 1024)),
    pageTimeoutMs: timeoutMs,
    searchTimeoutMs: timeoutMs,
    endpoints: searchEndpointsFromEnv(raw),
    youtubeBaseUrl: (raw.YOUTUBE_BASE_URL || 'https://www.youtube.com').replace(/\/+$/, ''),
  };
}
