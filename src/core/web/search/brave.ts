import { type SearchProvider, SearchNotConfigured } from './context.js';
import { SearchHttpError } from './http.js';
import { field, filterByDomain, objects, result } from './results.js';

/** Brave's free tier allows one request a second: a 429 is retried once after this pause. */
const RATE_LIMIT_RETRY_MS = 1000;

/** Brave Web Search (retrieval/web/brave.py). */
export const searchBrave: SearchProvider = async (query, { http, settings, endpoints, count, filterList }) => {
  const key = settings.string('BRAVE_SEARCH_API_KEY');
  if (!key) throw new SearchNotConfigured('No BRAVE_SEARCH_API_KEY found in environment variables');
  const call = { headers: { Accept: 'application/json', 'X-Subscription-Token': key }, query: { q: query, count } };
  let answer = await http.send(endpoints.brave, call);
  if (answer.status === 429) {
    await new Promise((resolve) => setTimeout(resolve, RATE_LIMIT_RETRY_MS));
    answer = await http.send(endpoints.brave, call);
  }
  if (answer.status >= 400) throw new SearchHttpError(answer.status, endpoints.brave);
  const results = filterByDomain(objects(field(JSON.parse(answer.text), 'web', 'results')), filterList);
  return results.slice(0, count).map((item) => result(item.url, item.title, item.description));
};
