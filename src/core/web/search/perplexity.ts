import { type SearchProvider, SearchNotConfigured } from './context.js';
import { field, filterByDomain, objects, result, str } from './results.js';

/**
 * Perplexity (retrieval/web/perplexity.py, perplexity_search.py). `perplexity` asks a
 * Sonar model and returns its citations, the answer as the first one's snippet;
 * `perplexity_search` calls the Search API. A failure is no results, as the reference.
 */

export const searchPerplexity: SearchProvider = async (query, { http, settings, endpoints, count, filterList, version }) => {
  try {
    const payload = await http.json(endpoints.perplexity, {
      method: 'POST',
      headers: { Authorization: `Bearer ${settings.string('PERPLEXITY_API_KEY')}`, 'X-Pplx-Integration': `open-webui/${version}` },
      json: {
        model: settings.string('PERPLEXITY_MODEL') || 'sonar',
        messages: [
          { role: 'system', content: 'You are a search assistant. Provide factual information with citations.' },
          { role: 'user', content: query },
        ],
        temperature: 0.2,
        stream: false,
        web_search_options: { search_context_usage: settings.string('PERPLEXITY_SEARCH_CONTEXT_USAGE') || 'medium' },
      },
    });
    const citations = (Array.isArray(field(payload, 'citations')) ? (field(payload, 'citations') as unknown[]) : []).filter((c): c is string => typeof c === 'string');
    const answer = str(field(objects(field(payload, 'choices'))[0], 'message', 'content')) ?? '';
    const items = citations.slice(0, count).map((link, i) => ({ link, title: `Source ${i + 1}`, snippet: i === 0 ? answer : '' }));
    return filterByDomain(items, filterList)
      .slice(0, count)
      .map((item) => result(item.link, item.title, item.snippet));
  } catch {
    return [];
  }
};

export const searchPerplexitySearch: SearchProvider = async (query, { http, settings, count, version }) => {
  const key = settings.string('PERPLEXITY_API_KEY');
  if (!key) throw new SearchNotConfigured('No PERPLEXITY_API_KEY found in environment variables');
  try {
    const { text } = await http.send(settings.string('PERPLEXITY_SEARCH_API_URL') || 'https://api.perplexity.ai/search', {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'X-Pplx-Integration': `open-webui/${version}` },
      json: { query, max_results: count },
    });
    return objects(field(JSON.parse(text), 'results')).map((item) => result(item.url, item.title, item.snippet));
  } catch {
    return [];
  }
};
