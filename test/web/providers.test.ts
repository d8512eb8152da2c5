import { describe, expect, it } from 'vitest';
import { useServer } from '../helpers/world.js';
import { fakeWeb } from './fake-web.js';

/**
 * Every search provider against a fake answering in its documented format, through
 * `POST /api/v1/retrieval/process/web/search` with the loader and the index bypassed,
 * so the answer shows exactly the results each provider gave.
 */
describe('web search providers', () => {
  const world = useServer({
    fakes: fakeWeb(),
    env: {
      ENABLE_WEB_SEARCH: 'true',
      BYPASS_WEB_SEARCH_WEB_LOADER: 'true',
      BYPASS_WEB_SEARCH_EMBEDDING_AND_RETRIEVAL: 'true',
      WEB_SEARCH_DOMAIN_FILTER_LIST: '["!blocked.example"]',
    },
    admin: 'Search Admin',
  });

  const configure = async (config: Record<string, unknown>) => {
    const res = await world.api.post('/api/v1/configs/import', { config }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
  };
  const search = async (engine: string, config: Record<string, unknown>, queries = ['tidal locking']) => {
    await configure({ 'web.search.engine': engine, ...config });
    world.web.requests.length = 0;
    return world.api.post('/api/v1/retrieval/process/web/search', { queries }, { token: world.admin.token });
  };
  const page = (name: string) => `${world.web.url}/pages/${name}`;
  const links = (body: any) => body.items.map((item: any) => item.link);

  it('SearXNG: best score first, legacy <query> URLs, the domain filter', async () => {
    const res = await search('searxng', { 'web.search.searxng_query_url': `${world.web.url}/searxng/search?q=<query>`, 'web.search.searxng_language': 'de,' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.items).toEqual([
      { link: page('searxng-1'), title: 'First', snippet: 'higher score' },
      { link: page('searxng-2'), title: 'Second', snippet: 'lower score' },
    ]);
    const [sent] = world.web.seen('/searxng/search');
    expect(Object.fromEntries(sent.query)).toMatchObject({ q: 'tidal locking', format: 'json', language: 'de', pageno: '1' });
    // Bypassing the loader, the snippets are the documents.
    expect(res.body).toMatchObject({ status: true, collection_name: null, loaded_count: 2, filenames: [page('searxng-1'), page('searxng-2')] });
    expect(res.body.docs[0]).toEqual({ content: 'higher score', metadata: { source: page('searxng-1'), title: 'First', snippet: 'higher score', link: page('searxng-1') } });
  });

  it('Brave: the subscription token, one retry after a 429', async () => {
    const res = await search('brave', { 'web.search.brave_search_api_key': 'brave-key' }, ['ratelimited']);
    expect(res.status, res.text).toBe(200);
    expect(res.body.items).toEqual([{ link: page('brave-1'), title: 'Brave one', snippet: 'brave says ratelimited' }]);
    expect(world.web.seen('/brave').map((r) => r.query.get('count'))).toEqual(['3', '3']);
  });

  it('Tavily, Kagi, Bing, Jina and the external service', async () => {
    const cases: [string, Record<string, unknown>, string, object][] = [
      ['tavily', { 'web.search.tavily_api_key': 'tv' }, 'Tavily one', { path: '/tavily', auth: 'Bearer tv', body: { query: 'tidal locking', max_results: 3 } }],
      ['kagi', { 'web.search.kagi_search_api_key': 'kg' }, 'Kagi one', { path: '/kagi', auth: 'Bearer kg', body: { query: 'tidal locking', limit: 3 } }],
      ['jina', { 'web.search.jina_api_key': 'jn', 'web.search.jina_api_base_url': `${world.web.url}/jina` }, 'Jina one', { path: '/jina', auth: 'jn', body: { q: 'tidal locking', count: 3 } }],
      ['external', { 'web.search.external_web_search_url': `${world.web.url}/external`, 'web.search.external_web_search_api_key': 'external-key' }, 'External one', { path: '/external', auth: 'Bearer external-key', body: { query: 'tidal locking', count: 3 } }],
    ];
    for (const [engine, config, title, expected] of cases) {
      const res = await search(engine, config);
      expect(res.status, `${engine}: ${res.text}`).toBe(200);
      expect(res.body.items.map((item: any) => item.title), engine).toEqual([title]);
      const { path, auth, body } = expected as { path: string; auth: string; body: object };
      const [sent] = world.web.seen(path);
      expect([sent.method, sent.headers.authorization, sent.body], engine).toEqual(['POST', auth, body]);
    }
    const bing = await search('bing', { 'web.search.bing_search_v7_endpoint': `${world.web.url}/bing`, 'web.search.bing_search_v7_subscription_key': 'bk' });
    expect(bing.body.items).toEqual([{ link: page('bing-1'), title: 'Bing one', snippet: 'bing tidal locking' }]);
    const [sent] = world.web.seen('/bing');
    expect([sent.headers['ocp-apim-subscription-key'], sent.query.get('mkt'), sent.query.get('count')]).toEqual(['bk', 'en-US', '3']);
  });

  it('Google PSE pages past 10 results', async () => {
    const res = await search('google_pse', { 'web.search.google_pse_api_key': 'gk', 'web.search.google_pse_engine_id': 'cx1', 'web.search.result_count': 12 });
    expect(res.status, res.text).toBe(200);
    expect(links(res.body)).toEqual(Array.from({ length: 12 }, (_, i) => page(`google-${i + 1}`)));
    expect(world.web.seen('/google').map((r) => [r.query.get('start'), r.query.get('num'), r.query.get('cx'), r.query.get('key')])).toEqual([
      ['1', '10', 'cx1', 'gk'],
      ['11', '2', 'cx1', 'gk'],
    ]);
    await configure({ 'web.search.result_count': 3 });
  });

  it('Serper and SerpAPI order by position', async () => {
    const serper = await search('serper', { 'web.search.serper_api_key': 'sk' });
    expect(links(serper.body)).toEqual([page('serper-1'), page('serper-2')]);
    expect(world.web.seen('/serper')[0].headers['x-api-key']).toBe('sk');
    const serpapi = await search('serpapi', { 'web.search.serpapi_api_key': 'sa', 'web.search.serpapi_engine': '' });
    expect(links(serpapi.body)).toEqual([page('serpapi-1'), page('serpapi-2')]);
    expect(Object.fromEntries(world.web.seen('/serpapi')[0].query)).toEqual({ engine: 'google', q: 'tidal locking', api_key: 'sa' });
  });

  it('Exa passes the filter list as its domains', async () => {
    const res = await search('exa', { 'web.search.exa_api_key': 'ek' });
    expect(res.body.items).toEqual([{ link: page('exa-1'), title: 'Exa one', snippet: 'exa text' }]);
    expect(world.web.seen('/exa')[0].body).toMatchObject({ query: 'tidal locking', numResults: 3, includeDomains: ['!blocked.example'], type: 'auto' });
  });

  it('DuckDuckGo: its HTML page, redirect links unwrapped, adverts left out', async () => {
    const res = await search('duckduckgo', {});
    expect(res.status, res.text).toBe(200);
    expect(res.body.items).toEqual([
      { link: page('duckduckgo-1'), title: 'Duck one', snippet: 'The first duck result' },
      { link: page('duckduckgo-2'), title: 'Duck two', snippet: 'Second duck result' },
    ]);
    const [sent] = world.web.seen('/duckduckgo/html/');
    expect([sent.method, new URLSearchParams(sent.body).get('q')]).toEqual(['POST', 'tidal locking']);
  });

  it('Perplexity: citations, the answer as the first snippet; and its Search API', async () => {
    const sonar = await search('perplexity', { 'web.search.perplexity_api_key': 'pk', 'web.search.perplexity_model': 'sonar-pro' });
    expect(sonar.body.items).toEqual([
      { link: page('perplexity-1'), title: 'Source 1', snippet: 'Perplexity answers tidal locking' },
      { link: page('perplexity-2'), title: 'Source 2', snippet: '' },
    ]);
    expect(world.web.seen('/perplexity')[0].body).toMatchObject({ model: 'sonar-pro', web_search_options: { search_context_usage: 'medium' } });
    const api = await search('perplexity_search', { 'web.search.perplexity_search_api_url': `${world.web.url}/perplexity-search` });
    expect(api.body.items).toEqual([{ link: page('perplexity_search-1'), title: 'PS one', snippet: 'ps snippet' }]);
    expect(world.web.seen('/perplexity-search')[0].body).toEqual({ query: 'tidal locking', max_results: 3 });
  });

  it('several queries: results of all, WEB_SEARCH_CONCURRENT_REQUESTS at a time', async () => {
    const res = await search('serper', { 'web.search.serper_api_key': 'sk', 'web.search.concurrent_requests': 1 }, ['one', 'two']);
    expect(res.status, res.text).toBe(200);
    expect(world.web.seen('/serper').map((r) => r.body.q)).toEqual(['one', 'two']);
    // Without the loader every result's snippet is a document, as the reference (pages are loaded once each otherwise).
    expect(res.body.filenames).toEqual([page('serper-1'), page('serper-2'), page('serper-1'), page('serper-2')]);
    await configure({ 'web.search.concurrent_requests': 0 });
  });

  it('refuses what is not configured or fails, as the reference', async () => {
    const missingKey = await search('brave', { 'web.search.brave_search_api_key': '' });
    expect([missingKey.status, missingKey.body.detail]).toEqual([400, 'No BRAVE_SEARCH_API_KEY found in environment variables']);
    const unknown = await search('yacy', {});
    expect([unknown.status, unknown.body.detail]).toEqual([400, 'The web search engine yacy is not supported by this server']);
    const failing = await search('tavily', { 'web.search.tavily_api_key': 'tv' });
    expect(failing.status).toBe(200);
    await configure({ 'web.search.bing_search_v7_endpoint': `${world.web.url}/failing` });
    const down = await search('bing', {});
    expect([down.status, down.body.detail]).toEqual([400, `500, url='${world.web.url}/failing'`]);
    // Providers that swallow their failures (as the reference's) leave no results: 404.
    const empty = await search('external', { 'web.search.external_web_search_url': `${world.web.url}/failing` });
    expect([empty.status, empty.body.detail]).toEqual([404, '[ERROR: No results found from web search]']);
    const badForm = await world.api.post('/api/v1/retrieval/process/web/search', { queries: 'one' }, { token: world.admin.token });
    expect(badForm.status).toBe(422);
  });
});
