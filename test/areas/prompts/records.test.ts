import { beforeAll, describe, expect, it } from 'vitest';
import { PROMPT_ERROR } from '../../../src/areas/prompts/service.js';
import { ERROR } from '../../../src/core/http/errors.js';
import { useServer } from '../../helpers/world.js';
import { createPrompt, grantPromptAuthoring, promptBody } from './helpers.js';

const world = useServer({
  admin: 'Prompts Admin',
  users: { alice: ['user', 'Alice Author'], bob: ['user', 'Bob Plain'] },
  freshEvents: true,
});
beforeAll(async () => {
  await grantPromptAuthoring(world.server, world.admin, [world.alice]);
});

const MODEL_KEYS = ['id', 'command', 'user_id', 'name', 'content', 'data', 'meta', 'tags', 'is_active', 'version_id', 'created_at', 'updated_at', 'access_grants'];

const get = (id: string, token = world.alice.token) => world.api.get(`/api/v1/prompts/id/${id}`, { token });
const history = (id: string, page = 0) => world.api.get(`/api/v1/prompts/id/${id}/history?page=${page}`, { token: world.alice.token });
const picker = async (token = world.alice.token) => (await world.api.get('/api/v1/prompts/', { token })).body as { command: string; content: string }[];

describe('POST /api/v1/prompts/create', () => {
  it('stores the prompt with its first version in use, and says so', async () => {
    const res = await world.api.post('/api/v1/prompts/create', promptBody('summary', { data: { x: 1 } }), { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(MODEL_KEYS);
    expect(res.body).toMatchObject({
      command: 'summary',
      user_id: world.alice.id,
      name: 'Prompt summary',
      content: 'Summarise {{CLIPBOARD}} for summary',
      data: { x: 1 },
      meta: {},
      tags: ['work'],
      is_active: true,
      access_grants: [],
    });
    const versions = await history(res.body.id);
    expect(versions.body).toHaveLength(1);
    expect(versions.body[0]).toMatchObject({
      id: res.body.version_id,
      prompt_id: res.body.id,
      parent_id: null,
      commit_message: 'Initial version',
      user: { id: world.alice.id, name: 'Alice Author' },
      snapshot: { name: 'Prompt summary', command: 'summary', content: 'Summarise {{CLIPBOARD}} for summary', tags: ['work'], access_grants: [] },
    });
    expect(world.events.map((e) => e.event)).toEqual(['prompt.created']);
    expect(world.events[0]).toMatchObject({ actor: { id: world.alice.id }, subject: { type: 'prompt', id: res.body.id }, data: { name: 'Prompt summary', command: 'summary' } });
  });

  it('refuses a command already registered, with the reference error, and changes nothing', async () => {
    await createPrompt(world.server, world.alice, 'taken');
    world.events.length = 0;
    const res = await world.api.post('/api/v1/prompts/create', promptBody('taken', { name: 'Other' }), { token: world.admin.token });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: PROMPT_ERROR.COMMAND_TAKEN });
    expect((await picker(world.admin.token)).filter((p) => p.command === 'taken')).toHaveLength(1);
    expect(world.events).toEqual([]);
  });

  it.each([
    ['an empty name', { name: '  ' }, 400, PROMPT_ERROR.EMPTY_NAME],
    ['an empty command', { command: '' }, 400, PROMPT_ERROR.EMPTY_COMMAND],
  ])('refuses %s', async (_label, override, status, detail) => {
    const res = await world.api.post('/api/v1/prompts/create', { ...promptBody('empty_case'), ...override }, { token: world.alice.token });
    expect(res.status).toBe(status);
    expect(res.body.detail).toBe(detail);
    expect((await picker()).some((p) => p.command === 'empty_case')).toBe(false);
  });

  it.each([
    ['no content', { command: 'bad', name: 'n' }],
    ['tags that are not a list', { ...promptBody('bad'), tags: 'x' }],
    ['a malformed grant', { ...promptBody('bad'), access_grants: [{ principal_type: 'robot', principal_id: 'x', permission: 'read' }] }],
  ])('refuses a form with %s', async (_label, body) => {
    const res = await world.api.post('/api/v1/prompts/create', body, { token: world.alice.token });
    expect([400, 422]).toContain(res.status);
    expect((await picker()).some((p) => p.command === 'bad')).toBe(false);
  });

  it('needs workspace.prompts: a plain user gets 401', async () => {
    const res = await world.api.post('/api/v1/prompts/create', promptBody('not_mine'), { token: world.bob.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: ERROR.UNAUTHORIZED });
  });

  it('accepts the legacy access_control: null is public read', async () => {
    const created = await createPrompt(world.server, world.admin, 'legacy_public', { access_control: null });
    expect(created.access_grants).toMatchObject([{ principal_type: 'user', principal_id: '*', permission: 'read' }]);
    expect((await picker(world.bob.token)).map((p) => p.command)).toContain('legacy_public');
  });
});

describe('GET /api/v1/prompts/ (the / picker), /tags and /list', () => {
  it('lists the active prompts the user may read, variables left in the content', async () => {
    const own = await createPrompt(world.server, world.alice, 'picker_own', { tags: ['Alpha', 'beta'] });
    await createPrompt(world.server, world.admin, 'picker_private');
    const commands = (await picker()).map((p) => p.command);
    expect(commands).toContain('picker_own');
    expect(commands).not.toContain('picker_private');
    expect((await picker()).find((p) => p.command === 'picker_own')!.content).toBe('Summarise {{CLIPBOARD}} for picker_own');

    const toggled = await world.api.post(`/api/v1/prompts/id/${own.id}/toggle`, {}, { token: world.alice.token });
    expect(toggled.body.is_active).toBe(false);
    expect((await picker()).map((p) => p.command)).not.toContain('picker_own');
    const tags = await world.api.get('/api/v1/prompts/tags', { token: world.alice.token });
    expect(tags.body).not.toContain('Alpha');
    // Inactive prompts stay in the workspace list.
    const listed = await world.api.get('/api/v1/prompts/list?query=picker_own', { token: world.alice.token });
    expect(listed.body.total).toBe(1);
    expect(listed.body.items[0]).toMatchObject({ command: 'picker_own', is_active: false, write_access: true, user: { id: world.alice.id } });

    await world.api.post(`/api/v1/prompts/id/${own.id}/toggle`, {}, { token: world.alice.token });
    expect((await world.api.get('/api/v1/prompts/tags', { token: world.alice.token })).body).toEqual(expect.arrayContaining(['Alpha', 'beta']));
    expect(world.events.filter((e) => e.event.startsWith('prompt.')).map((e) => e.event)).toEqual([
      'prompt.created',
      'prompt.created',
      'prompt.disabled',
      'prompt.enabled',
    ]);
  });

  it('writes picker entries as PromptModel, the same as the record', async () => {
    const created = await createPrompt(world.server, world.alice, 'picker_shape', {
      data: { nested: { 'quote"d': 'ü\n' } },
      meta: { description: 'd' },
      access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }],
    });
    const entry = (await picker()).find((p) => p.command === 'picker_shape') as unknown as Record<string, unknown>;
    expect(Object.keys(entry)).toEqual(MODEL_KEYS);
    const { user: _user, write_access: _write, ...record } = (await get(created.id)).body;
    expect(entry).toEqual(record);
    expect(entry).toEqual(created);
  });

  // The picker's entries are kept in memory: every change on this instance shows at once (another instance: test/core/shared-state.test.ts).
  it('shows every change at once: edits, toggles, deletion', async () => {
    const created = await createPrompt(world.server, world.alice, 'picker_fresh', { content: 'first' });
    const contentOf = async () =>
      ((await world.api.get('/api/v1/prompts/', { token: world.alice.token })).body as { command: string; content: string }[]).find((p) => p.command === 'picker_fresh')?.content;
    expect(await contentOf()).toBe('first');
    // Twice within a second: the row version, not the timestamp, tells the change.
    for (const content of ['second', 'third']) {
      const res = await world.api.post(`/api/v1/prompts/id/${created.id}/update`, promptBody('picker_fresh', { content }), { token: world.alice.token });
      expect(res.status, res.text).toBe(200);
      expect(await contentOf()).toBe(content);
    }
    await world.api.post(`/api/v1/prompts/id/${created.id}/toggle`, {}, { token: world.alice.token });
    expect(await contentOf()).toBeUndefined();
    await world.api.post(`/api/v1/prompts/id/${created.id}/toggle`, {}, { token: world.alice.token });
    expect(await contentOf()).toBe('third');
    await world.api.delete(`/api/v1/prompts/id/${created.id}/delete`, { token: world.alice.token });
    expect(await contentOf()).toBeUndefined();
  });

  it('pages, filters by tag and view, and counts before paging', async () => {
    for (let i = 0; i < 32; i++) await createPrompt(world.server, world.alice, `paged_${String(i).padStart(2, '0')}`, { tags: ['Paged'] });
    const first = await world.api.get('/api/v1/prompts/list?tag=paged&order_by=name&direction=asc', { token: world.alice.token });
    expect(first.body.total).toBe(32);
    expect(first.body.items).toHaveLength(30);
    expect(first.body.items[0].command).toBe('paged_00');
    const second = await world.api.get('/api/v1/prompts/list?tag=PAGED&order_by=name&direction=asc&page=2', { token: world.alice.token });
    expect(second.body.items.map((p: { command: string }) => p.command)).toEqual(['paged_30', 'paged_31']);
    const shared = await world.api.get('/api/v1/prompts/list?tag=paged&view_option=shared', { token: world.alice.token });
    expect(shared.body.total).toBe(0);
    // A LIKE wildcard in the query is taken literally.
    const wildcard = await world.api.get('/api/v1/prompts/list?query=paged%25', { token: world.alice.token });
    expect(wildcard.body.total).toBe(0);
  });
});

describe('history', () => {
  it('records a version per change, reads one, restores one, and deletes all but the one in use', async () => {
    const created = await createPrompt(world.server, world.alice, 'versioned', { content: 'v1 {{name}}' });
    const v1 = created.version_id;

    const update = (body: Record<string, unknown>) =>
      world.api.post(`/api/v1/prompts/id/${created.id}/update`, { ...promptBody('versioned'), ...body }, { token: world.alice.token });
    const second = await update({ content: 'v2 {{name}}', commit_message: 'second' });
    expect(second.status, second.text).toBe(200);
    expect(second.body.version_id).not.toBe(v1);
    const v2 = second.body.version_id;

    // The same fields again: nothing to record.
    const same = await update({ content: 'v2 {{name}}' });
    expect(same.body.version_id).toBe(v2);

    // A draft: recorded, not put in use.
    const draft = await update({ content: 'v3 draft', is_production: false });
    expect(draft.body.version_id).toBe(v2);
    expect(draft.body.content).toBe('v3 draft');

    const versions = (await history(created.id)).body;
    expect(versions.map((v: { snapshot: { content: string } }) => v.snapshot.content)).toEqual(['v3 draft', 'v2 {{name}}', 'v1 {{name}}']);
    expect(versions[1]).toMatchObject({ id: v2, parent_id: v1, commit_message: 'second' });
    expect(versions[0].parent_id).toBe(v2);

    const one = await world.api.get(`/api/v1/prompts/id/${created.id}/history/${v1}`, { token: world.alice.token });
    expect(one.status).toBe(200);
    expect(Object.keys(one.body)).toEqual(['id', 'prompt_id', 'parent_id', 'snapshot', 'user_id', 'commit_message', 'created_at']);
    expect(one.body.snapshot.content).toBe('v1 {{name}}');

    world.events.length = 0;
    const restored = await world.api.post(`/api/v1/prompts/id/${created.id}/update/version`, { version_id: v1 }, { token: world.alice.token });
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body).toMatchObject({ version_id: v1, content: 'v1 {{name}}' });
    expect((await get(created.id)).body).toMatchObject({ version_id: v1, content: 'v1 {{name}}' });
    expect(world.events.map((e) => e.event)).toEqual(['prompt.version_updated']);
    expect(world.events[0].data).toEqual({ version_id: v1 });

    const inUse = await world.api.delete(`/api/v1/prompts/id/${created.id}/history/${v1}`, { token: world.alice.token });
    expect(inUse.status).toBe(400);
    expect(inUse.body.detail).toBe(PROMPT_ERROR.ACTIVE_VERSION);

    const removed = await world.api.delete(`/api/v1/prompts/id/${created.id}/history/${v2}`, { token: world.alice.token });
    expect(removed.body).toBe(true);
    const left = (await history(created.id)).body;
    expect(left.map((v: { id: string }) => v.id)).not.toContain(v2);
    // The draft now descends from v1.
    expect(left[0].parent_id).toBe(v1);
  });

  it('refuses a version of another prompt, and reads none through the wrong prompt', async () => {
    const a = await createPrompt(world.server, world.alice, 'foreign_a');
    const b = await createPrompt(world.server, world.alice, 'foreign_b', { content: 'secret b' });
    const res = await world.api.post(`/api/v1/prompts/id/${a.id}/update/version`, { version_id: b.version_id }, { token: world.alice.token });
    expect(res.status).toBe(400);
    expect((await get(a.id)).body.version_id).toBe(a.version_id);
    expect((await world.api.get(`/api/v1/prompts/id/${a.id}/history/${b.version_id}`, { token: world.alice.token })).status).toBe(404);
    expect((await world.api.delete(`/api/v1/prompts/id/${a.id}/history/${b.version_id}`, { token: world.alice.token })).status).toBe(404);
    // Shadowed in the reference by /history/{history_id}: a 404.
    expect((await world.api.get(`/api/v1/prompts/id/${a.id}/history/diff?from_id=${a.version_id}&to_id=${a.version_id}`, { token: world.alice.token })).status).toBe(404);
  });
});

describe('updates', () => {
  it('update/meta renames without a version; a taken command is refused and nothing changes', async () => {
    const created = await createPrompt(world.server, world.alice, 'meta_me');
    await createPrompt(world.server, world.alice, 'meta_taken');
    const renamed = await world.api.post(`/api/v1/prompts/id/${created.id}/update/meta`, { name: 'Renamed', command: 'meta_new', tags: ['t'] }, { token: world.alice.token });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'Renamed', command: 'meta_new', tags: ['t'], version_id: created.version_id });
    expect((await history(created.id)).body).toHaveLength(1);
    expect(world.events.filter((e) => e.event === 'prompt.updated').map((e) => e.data)).toEqual([{ name: 'Renamed', command: 'meta_new' }]);
    world.events.length = 0;

    for (const path of ['update/meta', 'update']) {
      const clash = await world.api.post(`/api/v1/prompts/id/${created.id}/${path}`, { ...promptBody('meta_taken'), name: 'Clash' }, { token: world.alice.token });
      expect(clash.status).toBe(400);
      expect(clash.body.detail).toBe(PROMPT_ERROR.COMMAND_TAKEN);
    }
    expect((await get(created.id)).body).toMatchObject({ name: 'Renamed', command: 'meta_new' });
    expect(world.events).toEqual([]);
  });

  it('an empty name on update is refused and changes nothing', async () => {
    const created = await createPrompt(world.server, world.alice, 'keep_name');
    const res = await world.api.post(`/api/v1/prompts/id/${created.id}/update`, promptBody('keep_name', { name: '' }), { token: world.alice.token });
    expect(res.status).toBe(400);
    expect((await get(created.id)).body.name).toBe('Prompt keep_name');
    expect((await history(created.id)).body).toHaveLength(1);
  });

  it('delete removes the prompt, its versions and grants', async () => {
    const created = await createPrompt(world.server, world.alice, 'doomed', { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] });
    world.events.length = 0;
    const res = await world.api.delete(`/api/v1/prompts/id/${created.id}/delete`, { token: world.alice.token });
    expect(res.body).toBe(true);
    expect((await get(created.id)).status).toBe(404);
    expect((await world.api.get(`/api/v1/prompts/id/${created.id}/history`, { token: world.alice.token })).status).toBe(404);
    expect(world.events.map((e) => e.event)).toEqual(['prompt.deleted']);
    expect(world.events[0].data).toEqual({ name: 'Prompt doomed', command: 'doomed' });
    const db = world.server.parley.core.db;
    expect(await db.selectFrom('prompt_history').select('id').where('prompt_id', '=', created.id).execute()).toEqual([]);
    expect(await db.selectFrom('access_grant').select('id').where('resource_id', '=', created.id).execute()).toEqual([]);
    // The command is free again.
    await createPrompt(world.server, world.alice, 'doomed');
  });

  it('answers 404 for an unknown prompt on every route', async () => {
    const token = { token: world.alice.token };
    const statuses = [
      (await world.api.get('/api/v1/prompts/id/nope', token)).status,
      (await world.api.post('/api/v1/prompts/id/nope/update', promptBody('nope'), token)).status,
      (await world.api.post('/api/v1/prompts/id/nope/update/meta', { name: 'n', command: 'nope' }, token)).status,
      (await world.api.post('/api/v1/prompts/id/nope/update/version', { version_id: 'x' }, token)).status,
      (await world.api.post('/api/v1/prompts/id/nope/access/update', { access_grants: [] }, token)).status,
      (await world.api.post('/api/v1/prompts/id/nope/toggle', {}, token)).status,
      (await world.api.delete('/api/v1/prompts/id/nope/delete', token)).status,
      (await world.api.get('/api/v1/prompts/id/nope/history', token)).status,
      (await world.api.get('/api/v1/prompts/id/nope/history/x', token)).status,
      (await world.api.delete('/api/v1/prompts/id/nope/history/x', token)).status,
    ];
    expect(statuses).toEqual(Array(10).fill(404));
  });
});
