import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startFakeModel } from '../../helpers/fake-model.js';
import { onlyOpenAI, readJson, sendJson } from '../../helpers/fake-upstreams.js';
import { listenLocally } from '../../helpers/server.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/**
 * External knowledge (routers/knowledge.py, retrieval/external.py): connections kept for
 * admins, and read-only knowledge bases over a collection of a Qdrant, Milvus or pgvector
 * store. The remote stores are one fake HTTP server speaking Qdrant's query API and
 * Milvus's REST search, and the embedding engine is an OpenAI-style fake on the same server;
 * chats go to the fake model.
 */
interface Remote {
  url: string;
  requests: { path: string; body: any; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

const QUERY_VECTOR = [0.5, 0.25, 0.125];

async function startRemote(): Promise<Remote> {
  const requests: Remote['requests'] = [];
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJson(req);
    const path = (req.url ?? '').split('?')[0];
    requests.push({ path, body, headers: req.headers });
    if (path === '/v1/embeddings') return sendJson(res, 200, { data: body.input.map((_: string, index: number) => ({ index, embedding: QUERY_VECTOR })) });
    if (path === '/qdrant/collections/docs/points/query') {
      return sendJson(res, 200, {
        result: { points: [{ id: 'p1', score: 0.91, payload: { text: 'Refunds take five days.', metadata: { source: 'refunds.md', page: 2 } } }] },
        status: 'ok',
      });
    }
    if (path === '/qdrant/collections/empty/points/query') return sendJson(res, 200, { result: { points: [] } });
    if (path === '/milvus/v2/vectordb/entities/search') {
      return sendJson(res, 200, { code: 0, data: [{ id: 7, distance: 0.2, data: { text: 'Shipping is free over 50.' }, metadata: { source: 'shipping.md' } }] });
    }
    sendJson(res, 404, { status: { error: 'Not found: Collection `missing` doesn\'t exist!' } });
  });
  const url = await listenLocally(server);
  return { url, requests, close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
}

const world = useServer({
  admin: 'External Admin',
  users: { member: 'user', outsider: 'user' },
  fakes: {
    start: async () => ({ remote: await startRemote(), model: await startFakeModel() }),
    env: ({ remote, model }) => ({ ...onlyOpenAI(model.url), RAG_EMBEDDING_ENGINE: 'openai', RAG_OPENAI_API_BASE_URL: `${remote.url}/v1`, RAG_OPENAI_API_KEY: 'k' }),
  },
});

const as = (account: Account) => ({ token: account.token });
const connectionForm = (provider: string, endpoint: string, extra: Record<string, unknown> = {}) => ({ name: `${provider} store`, provider, endpoint, ...extra });

describe('connections', () => {
  it('keeps connections for admins, without showing their credentials; emits knowledge.external_connection.*', async () => {
    world.takeEvents();
    const form = connectionForm('Qdrant', `${world.remote.url}/qdrant`, { auth_config: { api_key: 'secret' }, config: { timeout: 5, other: 1 } });
    expect((await world.api.post('/api/v1/knowledge/external/connections', form, as(world.member))).status).toBe(401);
    const created = await world.api.post('/api/v1/knowledge/external/connections', form, as(world.admin));
    expect(created.status, created.text).toBe(200);
    expect(created.body).toMatchObject({ provider: 'qdrant', auth_configured: true, enabled: true, config: { timeout: 5 }, capabilities: { retrieve: true } });
    expect(created.body.auth_config).toBeUndefined();
    const id = created.body.id as string;
    for (const [change, detail] of [
      [{ provider: 'weaviate' }, 'Unsupported external knowledge provider.'],
      [{ name: ' ' }, 'Knowledge source name is required.'],
      [{ endpoint: '' }, 'Knowledge source endpoint is required.'],
    ] as const) {
      expect((await world.api.post('/api/v1/knowledge/external/connections', { ...form, ...change }, as(world.admin))).body.detail).toBe(detail);
    }
    expect((await world.api.post('/api/v1/knowledge/external/connections', { ...form, endpoint: null }, as(world.admin))).status).toBe(422);

    // An update without auth_config keeps the stored credentials.
    const updated = await world.api.request('PATCH', `/api/v1/knowledge/external/connections/${id}`, { ...form, name: 'Renamed', auth_config: null }, as(world.admin));
    expect(updated.body).toMatchObject({ name: 'Renamed', auth_configured: true });
    expect((await world.api.get('/api/v1/knowledge/external/connections', as(world.admin))).body).toMatchObject({ total: 1, items: [{ id, name: 'Renamed' }] });
    expect((await world.api.post(`/api/v1/knowledge/external/connections/${id}/test`, undefined, as(world.admin))).body).toMatchObject({ ok: true, provider: 'qdrant' });
    expect((await world.api.get(`/api/v1/knowledge/external/connections/${id}`, as(world.admin))).body.health).toMatchObject({ ok: true });
    expect((await world.api.delete(`/api/v1/knowledge/external/connections/${id}`, as(world.admin))).body).toBe(true);
    expect((await world.api.get(`/api/v1/knowledge/external/connections/${id}`, as(world.admin))).status).toBe(404);
    expect(world.takeEvents().map((e) => e.event)).toEqual([
      'knowledge.external_connection.created',
      'knowledge.external_connection.updated',
      'knowledge.external_connection.deleted',
    ]);
  });
});

describe('sources', () => {
  it('tests a Qdrant source: the query embedded, the points normalised as the reference', async () => {
    const tested = await world.api.post(
      '/api/v1/knowledge/external/source/test',
      { connection: connectionForm('qdrant', `${world.remote.url}/qdrant`, { auth_config: { api_key: 'secret' } }), source: { name: 'docs', config: { content_field: 'payload.text' } }, query: 'refunds', count: 3 },
      as(world.admin),
    );
    expect(tested.status, tested.text).toBe(200);
    expect(tested.body.documents).toEqual(['Refunds take five days.']);
    expect(tested.body.metadatas[0]).toMatchObject({ source: 'refunds.md', name: 'refunds.md', page: 2, file_id: 'p1', document_id: 'p1', external: true });
    expect(tested.body.distances).toEqual([0.91]);
    const call = world.remote.requests.find((r) => r.path === '/qdrant/collections/docs/points/query')!;
    expect(call.body).toEqual({ query: QUERY_VECTOR, limit: 3, with_payload: true });
    expect(call.headers['api-key']).toBe('secret');
  });

  it('tests a Milvus source through its REST search', async () => {
    const tested = await world.api.post(
      '/api/v1/knowledge/external/source/test',
      { connection: connectionForm('milvus', `${world.remote.url}/milvus`, { config: { db_name: 'kb' } }), source: { name: 'shop', config: { content_field: 'data.text', vector_field: 'embedding' } }, query: 'shipping' },
      as(world.admin),
    );
    expect(tested.status, tested.text).toBe(200);
    expect(tested.body.documents).toEqual(['Shipping is free over 50.']);
    expect(tested.body.metadatas[0]).toMatchObject({ name: 'shipping.md', source: 'shipping.md', file_id: 7 });
    const call = world.remote.requests.find((r) => r.path === '/milvus/v2/vectordb/entities/search')!;
    expect(call.body).toMatchObject({ collectionName: 'shop', annsField: 'embedding', limit: 5, dbName: 'kb', data: [QUERY_VECTOR] });
  });

  it('refuses bad sources and unreachable stores with a clear 400', async () => {
    const base = { connection: connectionForm('qdrant', `${world.remote.url}/qdrant`), query: 'q' };
    const cases: [Record<string, unknown>, string | RegExp][] = [
      [{ source: { name: 'docs', config: {} } }, 'Content field is required.'],
      [{ source: { name: ' ', config: { content_field: 'x' } } }, 'Collection name is required.'],
      [{ source: { type: 'table', name: 'docs', config: { content_field: 'x' } } }, 'Only collection sources are supported.'],
      [{ source: { name: 'docs', config: { content_field: 'x' } }, query: ' ' }, 'Test query is required.'],
      [{ source: { name: 'missing', config: { content_field: 'x' } } }, /answered 404/],
      [{ connection: connectionForm('milvus', `${world.remote.url}/milvus`), source: { name: 'x', config: { content_field: 'x' } } }, 'Vector field is required.'],
    ];
    for (const [change, detail] of cases) {
      const res = await world.api.post('/api/v1/knowledge/external/source/test', { ...base, ...change }, as(world.admin));
      expect(res.status, JSON.stringify(change)).toBe(400);
      expect(res.body.detail).toMatch(detail);
    }
    expect((await world.api.post('/api/v1/knowledge/external/source/test', { ...base, source: null }, as(world.admin))).status).toBe(422);
  });

  it('creates a read-only knowledge base from a source that answers, updates it, and deletes it with its connection', async () => {
    const form = {
      name: 'Support docs',
      description: 'From Qdrant',
      connection: connectionForm('qdrant', `${world.remote.url}/qdrant`),
      source: { name: 'docs', config: { content_field: 'payload.text' } },
      access_grants: [{ principal_type: 'user', principal_id: world.member.id, permission: 'read' }],
      test_query: 'refunds',
    };
    expect((await world.api.post('/api/v1/knowledge/external/source/create', { ...form, source: { name: 'empty', config: { content_field: 'payload.text' } } }, as(world.admin))).body.detail).toBe(
      'Test query returned no results.',
    );
    expect((await world.api.get('/api/v1/knowledge/external/connections', as(world.admin))).body.total).toBe(0);

    const created = await world.api.post('/api/v1/knowledge/external/source/create', form, as(world.admin));
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    expect(created.body.meta).toMatchObject({ source: 'external', read_only: true, external: { provider: 'qdrant', source: { name: 'docs' } } });
    const connectionId = created.body.meta.external.connection_id as string;

    // Read-only: files and folders are refused; listing by source finds it; the member reads it.
    expect((await world.api.post(`/api/v1/knowledge/${id}/file/add`, { file_id: 'x' }, as(world.admin))).body.detail).toBe('External knowledge bases are read-only.');
    expect((await world.api.post(`/api/v1/knowledge/${id}/dirs/create`, { name: 'd' }, as(world.admin))).status).toBe(400);
    expect((await world.api.get('/api/v1/knowledge/search?source=external', as(world.member))).body.items.map((k: { id: string }) => k.id)).toEqual([id]);
    expect((await world.api.get('/api/v1/knowledge/search?source=local', as(world.member))).body.items).toEqual([]);
    const chunks = (await world.server.parley.services.externalKnowledge.query(await world.record(world.member), id, ['refunds'], 5))!;
    expect(chunks.map((c) => c.content)).toEqual(['Refunds take five days.']);
    expect(chunks[0].metadata).toMatchObject({ knowledge_id: id, knowledge_name: 'Support docs' });

    const updated = await world.api.request('PATCH', `/api/v1/knowledge/external/source/${id}`, { ...form, name: 'Support', connection: { ...form.connection, name: 'Q2' } }, as(world.admin));
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.name).toBe('Support');
    expect((await world.api.get(`/api/v1/knowledge/external/connections/${connectionId}`, as(world.admin))).body.name).toBe('Q2');
    expect((await world.api.request('PATCH', `/api/v1/knowledge/external/source/nope`, form, as(world.admin))).status).toBe(404);

    const retrieved = await world.api.post(`/api/v1/knowledge/external/connections/${connectionId}/retrieve-test`, { query: 'refunds', source: form.source }, as(world.admin));
    expect(retrieved.body.documents).toEqual(['Refunds take five days.']);
    expect((await world.api.delete(`/api/v1/knowledge/external/connections/${connectionId}`, as(world.admin))).body.detail).toBe('External connection is still used by knowledge bases.');

    expect((await world.api.delete(`/api/v1/knowledge/${id}/delete`, as(world.admin))).body).toBe(true);
    expect((await world.api.get(`/api/v1/knowledge/external/connections/${connectionId}`, as(world.admin))).status).toBe(404);
  });

  it('creates an external knowledge base over a stored connection', async () => {
    const connection = (await world.api.post('/api/v1/knowledge/external/connections', connectionForm('qdrant', `${world.remote.url}/qdrant`), as(world.admin))).body;
    const created = await world.api.post(
      '/api/v1/knowledge/external/knowledge/create',
      { name: 'Docs', connection_id: connection.id, source: { name: 'docs', config: { content_field: 'payload.text' } } },
      as(world.admin),
    );
    expect(created.status, created.text).toBe(200);
    expect(created.body.meta.external.connection_id).toBe(connection.id);
    expect((await world.api.post('/api/v1/knowledge/external/knowledge/create', { name: 'x', connection_id: 'nope', source: { name: 'd' } }, as(world.admin))).status).toBe(404);
  });
});

describe('in chat', () => {
  it('searches an external knowledge base named with # or by a model’s knowledge, for users who may read it only', async () => {
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, as(world.admin));
    const created = await world.api.post(
      '/api/v1/knowledge/external/source/create',
      {
        name: 'Policies',
        connection: connectionForm('qdrant', `${world.remote.url}/qdrant`),
        source: { name: 'docs', config: { content_field: 'payload.text' } },
        access_grants: [{ principal_type: 'user', principal_id: world.member.id, permission: 'read' }],
        test_query: 'refunds',
      },
      as(world.admin),
    );
    expect(created.status, created.text).toBe(200);
    const item = { type: 'collection', id: created.body.id, name: 'Policies' };
    const model = await world.api.post('/api/v1/models/create', { id: 'policy-bot', base_model_id: 'fake-model', name: 'Policy bot', meta: { knowledge: [item] }, params: {}, access_grants: everyone }, as(world.admin));
    expect(model.status, model.text).toBe(200);
    const ask = (account: Account, body: Record<string, unknown>) =>
      world.api.post('/api/chat/completions', { stream: false, messages: [{ role: 'user', content: 'How long do refunds take?' }], ...body }, as(account));
    const lastPrompt = () => JSON.stringify(world.model.chatRequests().at(-1).messages);

    for (const body of [{ model: 'fake-model', files: [item] }, { model: 'policy-bot' }]) {
      const searches = world.remote.requests.filter((r) => r.path === '/qdrant/collections/docs/points/query').length;
      const answer = await ask(world.member, body);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body.sources).toEqual([
        { source: item, document: ['Refunds take five days.'], metadata: [expect.objectContaining({ source: 'refunds.md', page: 2, knowledge_id: item.id })], distances: [0.91] },
      ]);
      expect(lastPrompt()).toContain(`resource-id=\\"${item.id}\\">Refunds take five days.</source>`);
      const search = world.remote.requests.filter((r) => r.path === '/qdrant/collections/docs/points/query');
      expect(search.length).toBeGreaterThan(searches);
      expect(search.at(-1)!.body).toMatchObject({ query: QUERY_VECTOR, limit: 3 });

      // A user without read access gets nothing from it, and the store is not asked.
      const denied = await ask(world.outsider, body);
      expect(denied.status, denied.text).toBe(200);
      expect(denied.body.sources).toBeUndefined();
      expect(lastPrompt()).not.toContain('Refunds take five days.');
      expect(world.remote.requests.filter((r) => r.path === '/qdrant/collections/docs/points/query')).toHaveLength(search.length);
    }

    // A store that fails leaves the knowledge base out, and the answer is given.
    const connectionId = created.body.meta.external.connection_id as string;
    const moved = await world.api.request('PATCH', `/api/v1/knowledge/external/connections/${connectionId}`, connectionForm('qdrant', `${world.remote.url}/nowhere`), as(world.admin));
    expect(moved.status, moved.text).toBe(200);
    const failed = await ask(world.admin, { model: 'fake-model', files: [item] });
    expect(failed.status, failed.text).toBe(200);
    expect(failed.body.sources).toBeUndefined();
  });
});

describe.runIf(process.env.TEST_DATABASE_URL)('pgvector sources', () => {
  it('queries a table with a vector column, when the pgvector extension is installed', async (context) => {
    // The test server's own database stands for the external one.
    const postgresUrl = world.server.databaseUrl!;
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try {
      await client.query('create extension if not exists vector');
    } catch {
      await client.end();
      context.skip();
      return;
    }
    await client.query('create table ext_chunk (id text, collection_name text, text text, vmetadata jsonb, vector vector(3))');
    await client.query(`insert into ext_chunk values ('c1', 'docs', 'Returns are free.', '{"source":"returns.md"}', '[0.5,0.25,0.125]'), ('c2', 'other', 'No.', '{}', '[1,0,0]')`);
    await client.end();
    const tested = await world.api.post(
      '/api/v1/knowledge/external/source/test',
      { connection: connectionForm('pgvector', postgresUrl), source: { name: 'docs', config: { content_field: 'text', vector_field: 'vector', table_name: 'ext_chunk' } }, query: 'returns' },
      as(world.admin),
    );
    expect(tested.status, tested.text).toBe(200);
    expect(tested.body.documents).toEqual(['Returns are free.']);
    expect(tested.body.metadatas[0]).toMatchObject({ source: 'returns.md', file_id: 'c1' });
    const injected = await world.api.post(
      '/api/v1/knowledge/external/source/test',
      { connection: connectionForm('pgvector', postgresUrl), source: { name: 'docs', config: { content_field: 'text"; drop table x; --', vector_field: 'vector' } }, query: 'q' },
      as(world.admin),
    );
    expect(injected.body.detail).toBe('Invalid content field');
  });
});
