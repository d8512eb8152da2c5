import type { SearchProvider } from './context.js';
import { filterByDomain, objects, result } from './results.js';

/**
 * EXTERNAL_WEB_SEARCH_URL: a service of the operator's answering `POST {query, count}`
 * with `[{link, title, snippet}]` (retrieval/web/external.py). A failure is no results, as the reference.
 */
export const searchExternal: SearchProvider = async (query, { http, settings, count, filterList }) => {
  try {
    const payload = await http.json(settings.string('EXTERNAL_WEB_SEARCH_URL'), {
      method: 'POST',
      headers: { 'User-Agent': 'Open WebUI (https://github.com/open-webui/open-webui) RAG Bot', Authorization: `Bearer ${settings.string('EXTERNAL_WEB_SEARCH_API_KEY')}` },
      json: { query, count },
    });
    return filterByDomain(objects(payload), filterList)
      .slice(0, count)
      .map((item) => result(item.link, item.title, item.snippet));
  } catch {
    return [];
  }
};
