import { searchBrave } from './brave.js';
import type { SearchProvider } from './context.js';
import { searchDuckDuckGo } from './duckduckgo.js';
import { searchExternal } from './external.js';
import { searchGooglePse, searchSerpapi, searchSerper } from './google.js';
import { searchBing, searchExa, searchJina, searchKagi, searchTavily } from './keyed.js';
import { searchPerplexity, searchPerplexitySearch } from './perplexity.js';
import { searchSearxng } from './searxng.js';

/** The WEB_SEARCH_ENGINE values Parley runs, by the reference's names. */
export const SEARCH_ENGINES: Record<string, SearchProvider> = {
  searxng: searchSearxng,
  brave: searchBrave,
  tavily: searchTavily,
  google_pse: searchGooglePse,
  bing: searchBing,
  kagi: searchKagi,
  exa: searchExa,
  serper: searchSerper,
  serpapi: searchSerpapi,
  jina: searchJina,
  duckduckgo: searchDuckDuckGo,
  perplexity: searchPerplexity,
  perplexity_search: searchPerplexitySearch,
  external: searchExternal,
};
