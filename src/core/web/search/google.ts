import { type SearchProvider, SearchNotConfigured } from './context.js';
import { field, filterByDomain, type Json, objects, result, sortedBy } from './results.js';

/** Google Programmable Search: at most 10 results a request, so larger counts take several pages (retrieval/web/google_pse.py). */
export const searchGooglePse: SearchProvider = async (query, { http, settings, endpoints, count, filterList }) => {
  const key = settings.string('GOOGLE_PSE_API_KEY');
  const engine = settings.string('GOOGLE_PSE_ENGINE_ID');
  if (!key || !engine) throw new SearchNotConfigured('No GOOGLE_PSE_API_KEY or GOOGLE_PSE_ENGINE_ID found in environment variables');
  const items: Json[] = [];
  for (let start = 1, remaining = count; remaining > 0; start += 10) {
    const payload = await http.json(endpoints.googlePse, { query: { cx: engine, q: query, key, num: String(Math.min(remaining, 10)), start: String(start) } });
    const page = objects(field(payload, 'items'));
    if (page.length === 0) break;
    items.push(...page);
    remaining -= page.length;
  }
  return filterByDomain(items, filterList).map((item) => result(item.link, item.title, item.snippet));
};

/** serper.dev's Google results, by position (retrieval/web/serper.py). */
export const searchSerper: SearchProvider = async (query, { http, settings, endpoints, count, filterList }) => {
  const key = settings.string('SERPER_API_KEY');
  if (!key) throw new SearchNotConfigured('No SERPER_API_KEY found in environment variables');
  const payload = await http.json(endpoints.serper, { method: 'POST', headers: { 'X-API-KEY': key }, json: { q: query } });
  const organic = filterByDomain(sortedBy(objects(field(payload, 'organic')), 'position'), filterList);
  return organic.slice(0, count).map((item) => result(item.link, item.title, item.snippet));
};

/** serpapi.com, with SERPAPI_ENGINE (default google), by position (retrieval/web/serpapi.py). */
export const searchSerpapi: SearchProvider = async (query, { http, settings, endpoints, count, filterList }) => {
  const key = settings.string('SERPAPI_API_KEY');
  if (!key) throw new SearchNotConfigured('No SERPAPI_API_KEY found in environment variables');
  // The reference reads the answer whatever its status.
  const { text } = await http.send(endpoints.serpapi, { query: { engine: settings.string('SERPAPI_ENGINE') || 'google', q: query, api_key: key } });
  const organic = filterByDomain(sortedBy(objects(field(JSON.parse(text), 'organic_results')), 'position'), filterList);
  return organic.slice(0, count).map((item) => result(item.link, item.title, item.snippet));
};
