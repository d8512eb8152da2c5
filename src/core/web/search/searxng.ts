import { type SearchProvider, SearchNotConfigured } from './context.js';
import { field, filterByDomain, objects, result, sortedBy } from './results.js';

/** SearXNG's JSON API (`format=json`), best score first (retrieval/web/searxng.py). */
export const searchSearxng: SearchProvider = async (query, { http, settings, count, filterList }) => {
  let url = settings.string('SEARXNG_QUERY_URL');
  if (!url) throw new SearchNotConfigured('No SEARXNG_QUERY_URL found in environment variables');
  // Legacy `...?q=<query>` URLs: the parameters are sent here instead.
  if (url.includes('<query>')) url = url.split('?')[0];
  const payload = await http.json(url, {
    headers: { 'User-Agent': 'Open WebUI (https://github.com/open-webui/open-webui) RAG Bot', Accept: 'text/html', 'Accept-Language': 'en-US,en;q=0.5' },
    query: {
      q: query,
      format: 'json',
      pageno: 1,
      safesearch: '1',
      language: settings.string('SEARXNG_LANGUAGE').trim().replace(/,+$/, '') || 'all',
      time_range: '',
      categories: '',
      theme: 'simple',
      image_proxy: 0,
    },
  });
  const results = filterByDomain(sortedBy(objects(field(payload, 'results')), 'score', true), filterList);
  return results.slice(0, count).map((item) => result(item.url, item.title, item.content));
};
