import { type SearchProvider, SearchNotConfigured } from './context.js';
import { field, filterByDomain, objects, result } from './results.js';

/**
 * Providers answered by one keyed JSON call: Tavily, Kagi, Exa, Jina and Bing
 * (retrieval/web/{tavily,kagi,exa,jina_search,bing}.py).
 */

export const searchTavily: SearchProvider = async (query, { http, settings, endpoints, count, filterList }) => {
  const key = settings.string('TAVILY_API_KEY');
  if (!key) throw new SearchNotConfigured('No TAVILY_API_KEY found in environment variables');
  const payload = await http.json(endpoints.tavily, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, json: { query, max_results: count } });
  return filterByDomain(objects(field(payload, 'results')), filterList).map((item) => result(item.url, item.title ?? '', item.content));
};

export const searchKagi: SearchProvider = async (query, { http, settings, endpoints, count, filterList }) => {
  const key = settings.string('KAGI_SEARCH_API_KEY');
  if (!key) throw new SearchNotConfigured('No KAGI_SEARCH_API_KEY found in environment variables');
  const payload = await http.json(endpoints.kagi, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, json: { query, limit: count } });
  return filterByDomain(objects(field(payload, 'data', 'search')), filterList).map((item) => result(item.url, item.title, item.snippet));
};

/** Exa filters by domain itself (`includeDomains`); a failure is no results, as the reference. */
export const searchExa: SearchProvider = async (query, { http, settings, endpoints, count, filterList }) => {
  const key = settings.string('EXA_API_KEY');
  if (!key) throw new SearchNotConfigured('No EXA_API_KEY found in environment variables');
  try {
    const payload = await http.json(endpoints.exa, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}` },
      json: { query, numResults: count || 5, includeDomains: filterList.length > 0 ? filterList : null, contents: { text: true, highlights: true }, type: 'auto' },
    });
    return objects(field(payload, 'results')).map((item) => result(item.url, item.title, item.text));
  } catch {
    return [];
  }
};

/** Jina: at most 10 results; JINA_API_BASE_URL replaces https://s.jina.ai/. */
export const searchJina: SearchProvider = async (query, { http, settings, count }) => {
  const payload = await http.json(settings.string('JINA_API_BASE_URL') || 'https://s.jina.ai/', {
    method: 'POST',
    headers: { Accept: 'application/json', Authorization: settings.string('JINA_API_KEY'), 'X-Retain-Images': 'none' },
    json: { q: query, count: Math.min(count, 10) },
  });
  return objects(field(payload, 'data')).map((item) => result(item.url, item.title, item.content));
};

/** Bing Web Search v7 at BING_SEARCH_V7_ENDPOINT, market en-US (the reference's DEFAULT_LOCALE). */
export const searchBing: SearchProvider = async (query, { http, settings, count, filterList }) => {
  const payload = await http.json(settings.string('BING_SEARCH_V7_ENDPOINT'), {
    headers: { 'Ocp-Apim-Subscription-Key': settings.string('BING_SEARCH_V7_SUBSCRIPTION_KEY') },
    query: { q: query, mkt: 'en-US', count },
  });
  return filterByDomain(objects(field(payload, 'webPages', 'value')), filterList).map((item) => result(item.url, item.name, item.snippet));
};
