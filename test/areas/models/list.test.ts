import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeProviders, startFakeOpenAI, type FakeUpstream } from '../../helpers/fake-upstreams.js';
import type { Account } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';

const world = useServer({
  fakes: fakeProviders(),
  env: { USER_PERMISSIONS_WORKSPACE_MODELS_ACCESS: 'true' },
  admin: 'List Admin',
  users: { alice: ['user', 'List Alice'], pending: ['pending', 'List Pending'] },
});

const ids = (body: { data: Record<string, any>[] }) => body.data.map((m) => m.id as string);

async function listAs(account: Account, query = '') {
  const res = await world.api.get(`/api/models${query}`, { token: account.token });
  expect(res.status, res.text).toBe(200);
  return res.body as { data: Record<string, any>[] };
}

async function setOpenAI(body: Record<string, unknown>) {
  const res = await world.api.post('/openai/config/update', body, { token: world.admin.token });
  expect(res.status, res.text).toBe(200);
}

async function setOllama(body: Record<string, unknown>) {
  const res = await world.api.post('/ollama/config/update', body, { token: world.admin.token });
  expect(res.status, res.text).toBe(200);
}


beforeEach(async () => {
  await setOpenAI({ ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: [world.openai.url], OPENAI_API_KEYS: ['sk-upstream-key-1234'], OPENAI_API_CONFIGS: {} });
  await setOllama({ ENABLE_OLLAMA_API: true, OLLAMA_BASE_URLS: [world.ollama.url], OLLAMA_API_CONFIGS: {} });
  await world.api.delete('/api/v1/models/delete/all', { token: world.admin.token });
  world.openai.listFails = false;
  world.ollama.listFails = false;
});

describe('GET /api/models', () => {
  it('merges every connection into the shape the frontend reads', async () => {
    const { data } = await listAs(world.admin);
    expect(ids({ data })).toEqual(['gpt-fake', 'gpt-fake-endless', 'gpt-fake-error', 'gpt-fake-silent', 'llama-fake:latest', 'llama-fake-endless:latest', 'llama-fake-error:latest']);
    const gpt = data.find((m) => m.id === 'gpt-fake')!;
    expect(gpt).toMatchObject({
      id: 'gpt-fake',
      name: 'gpt-fake',
      object: 'model',
      owned_by: 'openai',
      openai: { id: 'gpt-fake' },
      urlIdx: 0,
      connection_type: 'external',
      tags: [],
      actions: [],
      filters: [],
    });
    const llama = data.find((m) => m.id === 'llama-fake:latest')!;
    expect(llama).toMatchObject({
      name: 'llama-fake:latest',
      object: 'model',
      created: 0,
      owned_by: 'ollama',
      connection_type: 'local',
      loaded: true,
      ollama: { size: 1234, details: { parameter_size: '1B', quantization_level: 'Q4_0' }, urls: [0], expires_at: 1893456000 },
      tags: [],
      actions: [],
      filters: [],
    });
    expect(data.find((m) => m.id === 'llama-fake-endless:latest')!.loaded).toBe(false);
  });

  it('is also served at /api/v1/models, to verified users only', async () => {
    const res = await world.api.get('/api/v1/models', { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(ids(res.body)).toContain('gpt-fake');
    expect((await world.api.get('/api/models')).status).toBe(401);
    expect((await world.api.get('/api/models', { token: world.pending.token })).status).toBe(401);
  });

  it('applies prefix ids, model allow-lists, connection tags and connection types', async () => {
    await setOpenAI({
      ENABLE_OPENAI_API: true,
      OPENAI_API_BASE_URLS: [world.openai.url],
      OPENAI_API_KEYS: ['k'],
      OPENAI_API_CONFIGS: { '0': { prefix_id: 'work', tags: [{ name: 'team' }], connection_type: 'local', model_ids: ['gpt-fake'] } },
    });
    await setOllama({ ENABLE_OLLAMA_API: true, OLLAMA_BASE_URLS: [world.ollama.url], OLLAMA_API_CONFIGS: { '0': { model_ids: ['llama-fake:latest'], tags: ['home'] } } });
    const { data } = await listAs(world.admin);
    expect(ids({ data })).toEqual(['work.gpt-fake', 'llama-fake:latest']);
    expect(data[0]).toMatchObject({ connection_type: 'local', tags: [{ name: 'team' }], urlIdx: 0 });
    expect(data[1].tags).toEqual([{ name: 'home' }]);
  });

  it('leaves out disabled connections and disabled providers', async () => {
    await setOpenAI({ ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: [world.openai.url], OPENAI_API_KEYS: ['k'], OPENAI_API_CONFIGS: { '0': { enable: false } } });
    await setOllama({ ENABLE_OLLAMA_API: false, OLLAMA_BASE_URLS: [world.ollama.url], OLLAMA_API_CONFIGS: {} });
    expect((await listAs(world.admin)).data).toEqual([]);
  });

  it('skips a connection that does not answer, and one that refuses, without failing the list', async () => {
    await setOpenAI({ ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: ['http://127.0.0.1:1', world.openai.url], OPENAI_API_KEYS: ['k', 'k'], OPENAI_API_CONFIGS: {} });
    world.ollama.listFails = true;
    const started = Date.now();
    const { data } = await listAs(world.admin);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(ids({ data })).toEqual(['gpt-fake', 'gpt-fake-endless', 'gpt-fake-error', 'gpt-fake-silent']);
    expect(data[0].urlIdx).toBe(1);
  });

  it('reuses the provider lists for the cache lifetime, and fetches again on refresh', async () => {
    await listAs(world.admin);
    const before = world.openai.requests.filter((r) => r.path === '/models').length;
    await listAs(world.admin);
    await listAs(world.admin);
    expect(world.openai.requests.filter((r) => r.path === '/models').length).toBe(before);
    world.openai.models.push('gpt-new');
    try {
      expect(ids(await listAs(world.admin, '?refresh=true'))).toContain('gpt-new');
      expect(world.openai.requests.filter((r) => r.path === '/models').length).toBe(before + 1);
    } finally {
      world.openai.models.pop();
    }
  });

  it('sends the connection key to the provider', async () => {
    await listAs(world.admin, '?refresh=true');
    const request = world.openai.requests.filter((r) => r.path === '/models').at(-1)!;
    expect(request.headers.authorization).toBe('Bearer sk-upstream-key-1234');
  });
});

describe('access in the list', () => {
  it('shows users only the models shared with them', async () => {
    expect((await listAs(world.alice)).data).toEqual([]);
    const share = await world.api.post(
      '/api/v1/models/model/access/update',
      { id: 'gpt-fake', name: 'GPT Fake', access_grants: [{ principal_type: 'user', principal_id: world.alice.id, permission: 'read' }] },
      { token: world.admin.token },
    );
    expect(share.status, share.text).toBe(200);
    const { data } = await listAs(world.alice);
    expect(ids({ data })).toEqual(['gpt-fake']);
    expect(data[0].name).toBe('GPT Fake');
    expect(data[0].info).toMatchObject({ id: 'gpt-fake', base_model_id: null, user_id: world.admin.id });
    expect(data[0].info.params).toBeUndefined();
  });

  it('shows a preset to its owner and to those it is shared with, with its base model\'s provider', async () => {
    const preset = await world.api.post(
      '/api/v1/models/create',
      { id: 'alice-helper', base_model_id: 'llama-fake:latest', name: 'Helper', meta: { description: 'helps', tags: ['fun'], profile_image_url: 'https://example.com/a.png' }, params: { system: 'Be kind' } },
      { token: world.alice.token },
    );
    expect(preset.status, preset.text).toBe(200);
    const { data } = await listAs(world.alice);
    const listed = data.find((m) => m.id === 'alice-helper')!;
    expect(listed).toMatchObject({ name: 'Helper', owned_by: 'ollama', connection_type: 'local', preset: true, loaded: true, tags: [{ name: 'fun' }] });
    expect(listed.info.meta.profile_image_url).toBeUndefined();
    expect(listed.info.meta.description).toBe('helps');
    expect(listed.info.params).toBeUndefined();
    expect(ids(await listAs(world.admin))).toContain('alice-helper');
  });

  it('hides a base model whose workspace entry is turned off, for everyone', async () => {
    await world.api.post('/api/v1/models/model/access/update', { id: 'gpt-fake', access_grants: [] }, { token: world.admin.token });
    const toggle = await world.api.post('/api/v1/models/model/toggle?id=gpt-fake', undefined, { token: world.admin.token });
    expect(toggle.status, toggle.text).toBe(200);
    expect(toggle.body.is_active).toBe(false);
    expect(ids(await listAs(world.admin))).not.toContain('gpt-fake');
  });

  it('applies grants to admins too when BYPASS_ADMIN_ACCESS_CONTROL is off', async () => {
    await withWorld({ fakes: fakeProviders(), env: { BYPASS_ADMIN_ACCESS_CONTROL: 'false' }, admin: 'Strict Admin', users: { other: ['admin', 'Other Admin'] } }, async (strict) => {
      const { admin: boss, other } = strict;
      await strict.server.api.post('/api/v1/models/model/access/update', { id: 'gpt-fake', access_grants: [] }, { token: boss.token });
      const res = await strict.server.api.get('/api/models', { token: other.token });
      expect(ids(res.body)).not.toContain('gpt-fake');
      expect(ids(res.body)).toContain('gpt-fake-endless');
      expect(ids((await strict.server.api.get('/api/models', { token: boss.token })).body)).toContain('gpt-fake');
    });
  });
});

describe('list settings', () => {
  it('orders by the model order list, then by name', async () => {
    const res = await world.api.post('/api/v1/configs/models', { DEFAULT_MODELS: null, DEFAULT_PINNED_MODELS: null, MODEL_ORDER_LIST: ['llama-fake-error:latest', 'gpt-fake-silent'], DEFAULT_MODEL_PARAMS: {}, DEFAULT_MODEL_METADATA: { capabilities: { vision: true }, description: 'default' } }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    try {
      const { data } = await listAs(world.admin);
      expect(ids({ data }).slice(0, 3)).toEqual(['llama-fake-error:latest', 'gpt-fake-silent', 'gpt-fake']);
      expect(data[0].info.meta).toEqual({ capabilities: { vision: true }, description: 'default' });
    } finally {
      await world.api.post('/api/v1/configs/models', { DEFAULT_MODELS: null, DEFAULT_PINNED_MODELS: null, MODEL_ORDER_LIST: [], DEFAULT_MODEL_PARAMS: {}, DEFAULT_MODEL_METADATA: {} }, { token: world.admin.token });
    }
  });

  it('adds the arena model when arena models are on, visible to admins', async () => {
    await withWorld({ fakes: fakeProviders(), env: { ENABLE_EVALUATION_ARENA_MODELS: 'true' }, admin: 'Arena Admin', users: { user: ['user', 'Arena User'] } }, async (arena) => {
      const { admin: boss, user } = arena;
      const listed = (await arena.server.api.get('/api/models', { token: boss.token })).body.data;
      expect(listed.find((m: any) => m.id === 'arena-model')).toMatchObject({ name: 'Arena Model', owned_by: 'arena', arena: true, info: { meta: { description: expect.any(String) } } });
      expect(ids((await arena.server.api.get('/api/models', { token: user.token })).body)).toEqual([]);
    });
  });
});

describe('GET /api/models/base', () => {
  it('lists provider models without workspace changes, for admins', async () => {
    await world.api.post('/api/v1/models/model/access/update', { id: 'gpt-fake', name: 'Renamed', access_grants: [] }, { token: world.admin.token });
    const res = await world.api.get('/api/models/base', { token: world.admin.token });
    expect(res.status).toBe(200);
    const gpt = res.body.data.find((m: any) => m.id === 'gpt-fake');
    expect(gpt.name).toBe('gpt-fake');
    expect(gpt.info).toBeUndefined();
    expect((await world.api.get('/api/models/base', { token: world.alice.token })).status).toBe(401);
  });
});

describe('many connections', () => {
  let extra: FakeUpstream;
  beforeAll(async () => {
    extra = await startFakeOpenAI(Array.from({ length: 300 }, (_, i) => `bulk-${i}`));
  });
  afterAll(async () => {
    await extra.close();
  });

  it('keeps the first connection\'s entry when two serve the same id', async () => {
    await setOpenAI({ ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: [world.openai.url, extra.url, world.openai.url], OPENAI_API_KEYS: ['a', 'b'], OPENAI_API_CONFIGS: {} });
    const config = (await world.api.get('/openai/config', { token: world.admin.token })).body;
    expect(config.OPENAI_API_KEYS).toEqual(['a', 'b', '']);
    const { data } = await listAs(world.admin);
    expect(data.filter((m) => m.id === 'gpt-fake')).toHaveLength(1);
    expect(data.find((m) => m.id === 'gpt-fake')!.urlIdx).toBe(0);
    expect(data.filter((m) => m.id.startsWith('bulk-'))).toHaveLength(300);
  });
});
