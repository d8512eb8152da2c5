import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { fakeModel } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';

/**
 * Memories (routers/memories.py with 0.10.1's types and paths): strictly per
 * user, ranked by retrieval, and put into the chat's system context when
 * ENABLE_MEMORY_SYSTEM_CONTEXT is on.
 */
describe('memories', () => {
  const world = useServer({ fakes: fakeModel(), env: { BYPASS_MODEL_ACCESS_CONTROL: 'true' }, admin: 'Memory Admin', users: { alice: ['user', 'Memo Alice'], bob: ['user', 'Memo Bob'] }, freshEvents: true });
  const as = (token: string) => ({ token });

  it('adds, lists, updates and deletes, each user only their own', async () => {
    const added = await world.api.post('/api/v1/memories/add', { content: '  Likes green tea  ', type: 'user', path: '/food//drinks/' }, as(world.alice.token));
    expect(added.status, added.text).toBe(200);
    expect(added.body).toMatchObject({ user_id: world.alice.id, content: 'Likes green tea', type: 'user', path: 'food/drinks', meta: { created_by: 'manual' } });
    expect(world.takeEvents().map((e) => [e.event, e.data])).toEqual([['memory.created', { content_preview: 'Likes green tea', type: 'user', path: 'food/drinks' }]]);
    const id = added.body.id;

    expect((await world.api.get('/api/v1/memories/', as(world.alice.token))).body.map((m: any) => m.id)).toEqual([id]);
    expect((await world.api.get('/api/v1/memories/', as(world.bob.token))).body).toEqual([]);

    // Bob cannot touch Alice's memory: 404 and false, nothing changed.
    expect(await world.api.post(`/api/v1/memories/${id}/update`, { content: 'Hates tea' }, as(world.bob.token))).toMatchObject({ status: 404, body: { detail: ERROR.NOT_FOUND } });
    expect((await world.api.delete(`/api/v1/memories/${id}`, as(world.bob.token))).body).toBe(false);
    expect((await world.api.get('/api/v1/memories/', as(world.alice.token))).body[0].content).toBe('Likes green tea');

    const updated = await world.api.post(`/api/v1/memories/${id}/update`, { content: 'Likes oolong tea', type: 'context' }, as(world.alice.token));
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ content: 'Likes oolong tea', type: 'context', path: 'food/drinks' });
    expect((await world.api.delete(`/api/v1/memories/${id}`, as(world.alice.token))).body).toBe(true);
    expect((await world.api.get('/api/v1/memories/', as(world.alice.token))).body).toEqual([]);
  });

  it('refuses bad input with the reference 4xx, changing nothing', async () => {
    expect(await world.api.post('/api/v1/memories/add', { content: '   ' }, as(world.bob.token))).toMatchObject({ status: 400, body: { detail: 'Memory content cannot be empty' } });
    expect(await world.api.post('/api/v1/memories/add', { content: 'x', path: 'a/../b' }, as(world.bob.token))).toMatchObject({ status: 400, body: { detail: 'Invalid memory path' } });
    expect((await world.api.post('/api/v1/memories/add', { content: 'x', type: 'secret' }, as(world.bob.token))).status).toBe(422);
    const kept = (await world.api.post('/api/v1/memories/add', { content: 'Kept' }, as(world.bob.token))).body;
    expect(await world.api.post(`/api/v1/memories/${kept.id}/update`, {}, as(world.bob.token))).toMatchObject({ status: 400, body: { detail: 'No memory update provided' } });
    const ops = await world.api.post(
      '/api/v1/memories/update',
      { operations: [{ action: 'add', content: 'Never stored' }, { action: 'remove', id: 'missing' }] },
      as(world.bob.token),
    );
    expect(ops).toMatchObject({ status: 404, body: { detail: 'Memory not found: missing' } });
    expect((await world.api.get('/api/v1/memories/', as(world.bob.token))).body.map((m: any) => m.content)).toEqual(['Kept']);
    expect((await world.api.delete('/api/v1/memories/delete/user', as(world.bob.token))).body).toBe(true);
    expect(await world.api.post('/api/v1/memories/query', { content: 'anything' }, as(world.bob.token))).toMatchObject({ status: 404, body: { detail: 'No memories found for user' } });
  });

  it('ranks a query by relevance, within the user only', async () => {
    for (const content of ['Has a dog named Biscuit', 'Works as a marine biologist', 'Allergic to peanuts', 'Plays the cello on weekends']) {
      expect((await world.api.post('/api/v1/memories/add', { content }, as(world.alice.token))).status).toBe(200);
    }
    await world.api.post('/api/v1/memories/add', { content: 'Bob also plays the cello' }, as(world.bob.token));
    const found = await world.api.post('/api/v1/memories/query', { content: 'which instrument: cello?', k: 2 }, as(world.alice.token));
    expect(found.status, found.text).toBe(200);
    expect(found.body.documents[0][0]).toBe('Plays the cello on weekends');
    expect(found.body.documents[0]).not.toContain('Bob also plays the cello');
    expect(found.body.metadatas[0][0]).toMatchObject({ type: 'context', path: null });
    const cello = (await world.api.get('/api/v1/memories/', as(world.alice.token))).body.find((m: any) => m.content.includes('cello'));
    expect(found.body.ids[0][0]).toBe(cello.id);
    expect((await world.api.post('/api/v1/memories/query', { content: 'peanuts' }, as(world.alice.token))).body.documents[0]).toEqual(['Allergic to peanuts']);
    // Reset rebuilds the index from the stored memories.
    expect((await world.api.post('/api/v1/memories/reset', {}, as(world.alice.token))).body).toBe(true);
    expect((await world.api.post('/api/v1/memories/query', { content: 'peanuts' }, as(world.alice.token))).body.documents[0]).toEqual(['Allergic to peanuts']);
  });

  it('applies memory operations and reads paths', async () => {
    const ops = await world.api.post(
      '/api/v1/memories/update',
      {
        operations: [
          { action: 'add', content: 'Project Parley ships Friday', path: 'work/projects/parley' },
          { action: 'add', content: 'Standup at nine', path: 'work' },
          { action: 'add', content: 'Standup at nine', path: 'work' },
        ],
      },
      as(world.bob.token),
    );
    expect(ops.status, ops.text).toBe(200);
    expect(ops.body.map((r: any) => r.status)).toEqual(['created', 'created', 'skipped']);
    expect(ops.body[0].memory.meta).toMatchObject({ created_by: 'tool' });
    const paths = await world.api.post('/api/v1/memories/paths', {}, as(world.bob.token));
    expect(paths.status, paths.text).toBe(200);
    expect(paths.body.paths.find((p: any) => p.path === 'work')).toMatchObject({ count: 1, children: ['work/projects'] });
    const read = await world.api.post('/api/v1/memories/path', { path: 'work/projects' }, as(world.bob.token));
    expect(read.status, read.text).toBe(200);
    expect(read.body).toMatchObject({ path: 'work/projects', parents: ['work'], children: ['work/projects/parley'] });
    expect(read.body.memories.map((m: any) => m.content)).toEqual(['Project Parley ships Friday', 'Standup at nine']);
    const moved = await world.api.post('/api/v1/memories/update', { operations: [{ action: 'move', id: ops.body[1].memory.id, path: 'meetings' }] }, as(world.bob.token));
    expect(moved.body[0]).toMatchObject({ status: 'updated', memory: { path: 'meetings' } });
    const searched = await world.api.post('/api/v1/memories/search', { path: 'work/projects/parley' }, as(world.bob.token));
    expect(searched.body.map((m: any) => m.content)).toEqual(['Project Parley ships Friday']);
    expect(await world.api.post('/api/v1/memories/path', { path: '' }, as(world.bob.token))).toMatchObject({ status: 400, body: { detail: 'Memory path is required' } });
  });

  it('puts relevant memories into the system message of a chat when the turn asks for memory', async () => {
    const chat = async (memory: boolean, content: string) => {
      const res = await world.api.post(
        '/api/chat/completions',
        { model: 'fake-model', stream: false, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content }], features: { memory } },
        as(world.alice.token),
      );
      expect(res.status, res.text).toBe(200);
      return world.model.chatRequests().at(-1);
    };
    const sent = await chat(true, 'Any snack ideas? Remember my peanuts problem');
    expect(sent.messages[0].role).toBe('system');
    expect(sent.messages[0].content).toMatch(/^Be brief\.\n<memory_context>\n/);
    expect(sent.messages[0].content).toContain('[Relevant Context]\n- Allergic to peanuts');
    expect(sent.messages[0].content).not.toContain('Bob');
    expect((await chat(false, 'Any snack ideas? Remember my peanuts problem')).messages[0].content).toBe('Be brief.');
  });

  it('leaves the system message alone when ENABLE_MEMORY_SYSTEM_CONTEXT is off', async () => {
    const config = await world.api.get('/api/v1/auths/admin/config', as(world.admin.token));
    expect(config.status, config.text).toBe(200);
    await world.api.post('/api/v1/auths/admin/config', { ...config.body, ENABLE_MEMORY_SYSTEM_CONTEXT: false }, as(world.admin.token));
    try {
      const res = await world.api.post(
        '/api/chat/completions',
        { model: 'fake-model', stream: false, messages: [{ role: 'user', content: 'peanuts again' }], features: { memory: true } },
        as(world.alice.token),
      );
      expect(res.status, res.text).toBe(200);
      expect(world.model.chatRequests().at(-1).messages).toEqual([{ role: 'user', content: 'peanuts again' }]);
      // The memory routes still work.
      expect((await world.api.post('/api/v1/memories/query', { content: 'peanuts' }, as(world.alice.token))).status).toBe(200);
    } finally {
      await world.api.post('/api/v1/auths/admin/config', config.body, as(world.admin.token));
    }
  });

  it('answers 404 when memories are off and 403 without features.memories', async () => {
    const perms = (await world.api.get('/api/v1/users/default/permissions', as(world.admin.token))).body;
    await world.api.post('/api/v1/users/default/permissions', { ...perms, features: { ...perms.features, memories: false } }, as(world.admin.token));
    try {
      expect(await world.api.get('/api/v1/memories/', as(world.alice.token))).toMatchObject({ status: 403, body: { detail: ERROR.ACCESS_PROHIBITED } });
    } finally {
      await world.api.post('/api/v1/users/default/permissions', perms, as(world.admin.token));
    }
    const config = (await world.api.get('/api/v1/auths/admin/config', as(world.admin.token))).body;
    await world.api.post('/api/v1/auths/admin/config', { ...config, ENABLE_MEMORIES: false }, as(world.admin.token));
    try {
      expect((await world.api.get('/api/v1/memories/', as(world.admin.token))).status).toBe(404);
    } finally {
      await world.api.post('/api/v1/auths/admin/config', config, as(world.admin.token));
    }
  });
});
