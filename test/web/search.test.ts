import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ERROR } from '../../src/core/http/errors.js';
import { type FakeModel, defaultScript, fakeModel, lastUserText, startFakeModel } from '../helpers/fake-model.js';
import { type Fakes, useServer, withWorld } from '../helpers/world.js';
import { openBrowser, webRequest } from '../areas/completions/setup.js';
import { type FakeWeb, fakeWeb, startFakeWeb } from './fake-web.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** The web client's answers use the built-in search tools unless function calling is `legacy`, where the search step runs (middleware.py). */
const LEGACY = { function_calling: 'legacy' };
const QUERY_TASK = 'determine the necessity of generating search queries';

/** The fake web and a model that writes `{"queries": ["tidal locking facts"]}` when asked for search queries. */
const webAndModel: Fakes<{ web: FakeWeb; model: FakeModel }> = {
  start: async () => {
    const model = await startFakeModel();
    model.script = (body) => (lastUserText(body?.messages).includes(QUERY_TASK) ? { text: 'Sure: {"queries": ["tidal locking facts"]}' } : defaultScript(body));
    return { web: await startFakeWeb(), model };
  },
  env: ({ web, model }) => ({ ...fakeWeb().env!({ web }), ...fakeModel().env!({ model }) }),
};

describe('web search with the page loader and the index', () => {
  const world = useServer({
    fakes: webAndModel,
    env: { ENABLE_WEB_SEARCH: 'true', WEB_SEARCH_ENGINE: 'serper', SERPER_API_KEY: 'sk', WEB_FETCH_FILTER_LIST: '' },
    admin: 'Searching Admin',
    users: { member: ['user', 'Search Member'] },
  });
  const configure = (config: Record<string, unknown>) => world.api.post('/api/v1/configs/import', { config }, { token: world.admin.token });

  it('loads each result page once and indexes them under the hash of the queries', async () => {
    const res = await world.api.post('/api/v1/retrieval/process/web/search', { queries: ['one', 'two'] }, { token: world.member.token });
    expect(res.status, res.text).toBe(200);
    const pages = [`${world.web.url}/pages/serper-1`, `${world.web.url}/pages/serper-2`];
    const collection = `web-search-${sha256('one-two')}`.slice(0, 63);
    expect(res.body).toEqual({ status: true, collection_names: [collection], items: expect.any(Array), filenames: pages, loaded_count: 2 });
    expect(res.body.items.map((item: any) => item.link)).toEqual([...pages, ...pages]);
    expect(world.web.requests.filter((r) => r.path.startsWith('/pages/serper')).length).toBe(2);
    const docs = await world.server.parley.services.retrieval.documents(collection);
    expect(docs.map((d) => d.text).join(' ')).toContain('The serper-1 article explains tidal locking');
    const found = await world.server.parley.services.retrieval.query([collection], ['tidal locking'], { k: 1 });
    expect(found[0].metadata.source).toMatch(/serper-[12]$/);
  });

  it('loads WEB_LOADER_CONCURRENT_REQUESTS pages at a time', async () => {
    const loadWith = async (concurrent: number) => {
      await configure({ 'web.loader.concurrent_requests': concurrent, 'web.search.result_count': 2 });
      world.web.pagesAtOnce.max = 0;
      const res = await world.api.post('/api/v1/retrieval/process/web/search', { queries: [`at ${concurrent}`] }, { token: world.admin.token });
      expect(res.body.loaded_count).toBe(2);
      return world.web.pagesAtOnce.max;
    };
    expect(await loadWith(1)).toBe(1);
    expect(await loadWith(10)).toBe(2);
    await configure({ 'web.loader.concurrent_requests': 10, 'web.search.result_count': 3 });
  });

  it('refuses more than 100 queries at once', async () => {
    const res = await world.api.post('/api/v1/retrieval/process/web/search', { queries: Array.from({ length: 101 }, (_, i) => `q${i}`) }, { token: world.admin.token });
    expect(res.status).toBe(422);
  });

  it('in an API call without a socket session: searched before the answer', async () => {
    const before = world.web.seen('/serper').length;
    const res = await world.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'moon' }], features: { web_search: true } }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(world.web.seen('/serper').slice(before).map((r) => r.body.q)).toEqual(['tidal locking facts']);
  });

  it('refuses when web search is off', async () => {
    await configure({ 'web.search.enable': false });
    const res = await world.api.post('/api/v1/retrieval/process/web/search', { queries: ['one'] }, { token: world.admin.token });
    expect([res.status, res.body.detail]).toEqual([403, ERROR.ACCESS_PROHIBITED]);
    expect((await world.api.get('/api/config', { token: world.admin.token })).body.features.enable_web_search).toBe(false);
    await configure({ 'web.search.enable': true });
    expect((await world.api.get('/api/config', { token: world.admin.token })).body.features.enable_web_search).toBe(true);
  });

  it('in a chat: generates the queries, searches, loads and indexes, with the statuses the frontend shows', async () => {
    const browser = await openBrowser(world.server.url, world.admin.token);
    try {
      const { body, assistantId } = webRequest(browser.socket, { content: 'Why does the moon show one face?', extra: { features: { web_search: true }, params: LEGACY } });
      const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
      await browser.next((e) => e.type === 'chat:completion' && e.data?.done === true, 'the answer');
      const statuses = browser.received.filter((e) => e.message_id === assistantId && e.type === 'status').map((e) => e.data);
      const pages = [`${world.web.url}/pages/serper-1`, `${world.web.url}/pages/serper-2`];
      expect(statuses).toEqual([
        { action: 'web_search', description: 'Searching the web', done: false },
        { action: 'web_search_queries_generated', queries: ['tidal locking facts'], done: false },
        { action: 'web_search', description: 'Searched {{count}} sites', urls: pages, items: expect.any(Array), done: true },
        // Then the pages are searched as any attachment (the retrieval query task runs again, as the reference's).
        { action: 'queries_generated', queries: ['tidal locking facts'], done: false },
        { action: 'sources_retrieved', count: 2, done: true },
      ]);
      expect(world.web.seen('/serper').at(-1)!.body).toEqual({ q: 'tidal locking facts' });
      const docs = await world.server.parley.services.retrieval.documents(`web-search-${sha256('tidal locking facts')}`.slice(0, 63));
      expect(docs.length).toBeGreaterThan(0);
      // The pages reach the model through the RAG template, and the frontend gets them as citations.
      const sent = world.model.chatRequests().at(-1);
      expect(JSON.stringify(sent.messages)).toContain('The serper-1 article explains tidal locking');
      expect(JSON.stringify(sent.messages)).toContain('<context>');
      const sources = browser.received.find((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.sources)?.data.sources;
      expect(sources.map((source: any) => source.source.type)).toContain('web_search');
      expect(sources.flatMap((source: any) => source.metadata.map((m: any) => m.source))).toEqual(expect.arrayContaining([pages[0]]));
      // The statuses are kept with the answer, as the reference's emitter keeps them.
      const chat = await world.api.get(`/api/v1/chats/${res.body.chat_id}`, { token: world.admin.token });
      expect(chat.body.chat.history.messages[assistantId].statusHistory.map((s: any) => s.description ?? s.action)).toEqual([
        'Searching the web',
        'web_search_queries_generated',
        'Searched {{count}} sites',
        'queries_generated',
        'sources_retrieved',
      ]);
    } finally {
      browser.close();
    }
  });

  it("in a web client's answer: the model searches and fetches with the built-in tools, and no search step runs", async () => {
    const script = world.model.script;
    world.model.script = (body) => {
      if (lastUserText(body?.messages).includes(QUERY_TASK)) return script(body);
      if (!body.tools) return defaultScript(body);
      const results = body.messages.filter((m: any) => m.role === 'tool');
      if (results.length > 0) return { text: 'answered' };
      return { toolCalls: [{ name: 'search_web', arguments: { query: 'tides', count: 1 } }, { name: 'fetch_url', arguments: { url: `${world.web.url}/pages/serper-1` } }] };
    };
    const browser = await openBrowser(world.server.url, world.admin.token);
    try {
      const before = world.model.requests.length;
      const answersBefore = world.model.chatRequests().length;
      const { body, assistantId } = webRequest(browser.socket, { content: 'How do tides work?', extra: { features: { web_search: true }, background_tasks: {} } });
      const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done === true, 'the answer');
      expect(world.model.requests.slice(before).some((r) => lastUserText(r.messages).includes(QUERY_TASK))).toBe(false);
      // The answer's own requests: an earlier test's title and tag tasks may still arrive meanwhile.
      const sent = world.model.chatRequests().slice(answersBefore);
      expect(sent[0].tools.map((t: any) => t.function.name)).toEqual(expect.arrayContaining(['search_web', 'fetch_url']));
      const results = sent.at(-1).messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
      expect(JSON.parse(results[0])).toEqual([{ title: expect.any(String), link: `${world.web.url}/pages/serper-1`, snippet: expect.any(String) }]);
      expect(results[1]).toContain('The serper-1 article explains tidal locking');
      expect(world.web.seen('/serper').at(-1)!.body).toEqual({ q: 'tides' });
      expect(browser.received.some((e) => e.message_id === assistantId && e.type === 'status')).toBe(false);
    } finally {
      browser.close();
      world.model.script = script;
    }
  });

  it('in a chat: the user message is the query when generation is off; a failed search is a status, not a failed answer', async () => {
    await configure({ 'task.query.search.enable': false });
    const browser = await openBrowser(world.server.url, world.admin.token);
    try {
      const first = webRequest(browser.socket, { content: 'moon faces', extra: { features: { web_search: true }, params: LEGACY } });
      expect((await world.api.post('/api/chat/completions', first.body, { token: world.admin.token })).status).toBe(200);
      await browser.next((e) => e.message_id === first.assistantId && e.type === 'chat:completion' && e.data?.done === true, 'the first answer');
      expect(world.web.seen('/serper').at(-1)!.body).toEqual({ q: 'moon faces' });

      await configure({ 'web.search.serper_api_key': '' });
      const second = webRequest(browser.socket, { content: 'moon faces again', extra: { features: { web_search: true }, params: LEGACY } });
      expect((await world.api.post('/api/chat/completions', second.body, { token: world.admin.token })).status).toBe(200);
      const done = await browser.next((e) => e.message_id === second.assistantId && e.type === 'chat:completion' && e.data?.done === true, 'the second answer');
      expect(done.data.output).toBeDefined();
      const last = browser.received.filter((e) => e.message_id === second.assistantId && e.type === 'status').at(-1);
      expect(last?.data).toEqual({ action: 'web_search', description: 'An error occurred while searching the web', queries: ['moon faces again'], done: true, error: true });
    } finally {
      browser.close();
      await configure({ 'task.query.search.enable': true, 'web.search.serper_api_key': 'sk' });
    }
  });
});

describe('web search permission', () => {
  it('is refused to members without features.web_search, not to admins', async () => {
    await withWorld(
      { fakes: fakeWeb(), env: { ENABLE_WEB_SEARCH: 'true', WEB_SEARCH_ENGINE: 'serper', SERPER_API_KEY: 'sk', USER_PERMISSIONS_FEATURES_WEB_SEARCH: 'false' }, users: { member: 'user' } },
      async ({ api, admin, member }) => {
        const refused = await api.post('/api/v1/retrieval/process/web/search', { queries: ['one'] }, { token: member.token });
        expect([refused.status, refused.body.detail]).toEqual([403, ERROR.ACCESS_PROHIBITED]);
        expect((await api.post('/api/v1/retrieval/process/web/search', { queries: ['one'] }, { token: admin.token })).status).toBe(200);
      },
    );
  });
});
