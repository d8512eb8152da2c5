import { beforeEach, describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { fakeProviders } from '../../helpers/fake-upstreams.js';
import type { Account } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';

const world = useServer({
  fakes: fakeProviders(),
  env: { USER_PERMISSIONS_WORKSPACE_MODELS_ACCESS: 'true', USER_PERMISSIONS_WORKSPACE_MODELS_IMPORT: 'true', USER_PERMISSIONS_WORKSPACE_MODELS_EXPORT: 'true' },
  admin: 'Workspace Admin',
  users: { alice: ['user', 'Workspace Alice'], bob: ['user', 'Workspace Bob'] },
});

const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

function form(id: string, extra: Record<string, unknown> = {}) {
  return { id, base_model_id: 'gpt-fake', name: `Model ${id}`, meta: { description: `about ${id}` }, params: { system: 'You are helpful', temperature: 0.5 }, ...extra };
}

async function create(account: Account, id: string, extra: Record<string, unknown> = {}) {
  const res = await world.api.post('/api/v1/models/create', form(id, extra), { token: account.token });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

const grant = (user: Account, permission: 'read' | 'write' = 'read') => ({ principal_type: 'user', principal_id: user.id, permission });
const grantsOf = (body: { access_grants: { principal_id: string; permission: string }[] }) =>
  body.access_grants.map((g) => `${g.principal_id}:${g.permission}`).sort();


beforeEach(async () => {
  await world.api.delete('/api/v1/models/delete/all', { token: world.admin.token });
  world.events.length = 0;
});

describe('POST /api/v1/models/create', () => {
  it('stores the model with its grants and publishes model.created', async () => {
    const res = await world.api.post('/api/v1/models/create', form('m-create', { access_grants: [grant(world.bob)], meta: { tags: ['a', { name: 'b' }, 3], knowledge: [{ type: 'file', id: 'f1', data: { content: 'long text', size: 1 } }] } }), {
      token: world.alice.token,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id: 'm-create',
      user_id: world.alice.id,
      base_model_id: 'gpt-fake',
      name: 'Model m-create',
      params: { system: 'You are helpful', temperature: 0.5 },
      meta: { tags: [{ name: 'a' }, { name: 'b' }], knowledge: [{ type: 'file', id: 'f1', data: { size: 1 } }] },
      is_active: true,
    });
    expect(res.body.created_at).toBe(res.body.updated_at);
    expect(grantsOf(res.body)).toEqual([`${world.bob.id}:read`]);
    const event = world.events.find((e) => e.event === 'model.created')!;
    expect(event).toMatchObject({ actor: { id: world.alice.id }, subject: { type: 'model', id: 'm-create' }, data: { name: 'Model m-create' } });
  });

  it('refuses taken and too long ids, and users without the workspace permission', async () => {
    await create(world.alice, 'm-taken');
    const taken = await world.api.post('/api/v1/models/create', form('m-taken'), { token: world.bob.token });
    expect(taken.status).toBe(401);
    expect(taken.body.detail).toBe('Uh-oh! This model id is already registered. Please choose another model id string.');
    const long = await world.api.post('/api/v1/models/create', form('x'.repeat(257)), { token: world.bob.token });
    expect(long.status).toBe(400);
    await withWorld({ fakes: fakeProviders(), admin: 'Strict Boss', users: { user: ['user', 'Strict User'] } }, async (strict) => {
      const { user } = strict;
      const denied = await strict.server.api.post('/api/v1/models/create', form('nope'), { token: user.token });
      expect(denied.status).toBe(401);
      expect(denied.body.detail).toBe(ERROR.UNAUTHORIZED);
    });
  });

  it('answers 422 for malformed forms and stores nothing', async () => {
    const noName = await world.api.post('/api/v1/models/create', { id: 'bad', meta: {}, params: {} }, { token: world.alice.token });
    expect(noName.status).toBe(422);
    expect(noName.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'name'] });
    const badMeta = await world.api.post('/api/v1/models/create', { id: 'bad', name: 'Bad', meta: 'x', params: {} }, { token: world.alice.token });
    expect(badMeta.status).toBe(422);
    expect((await world.api.get('/api/v1/models/model?id=bad', { token: world.admin.token })).status).toBe(404);
  });

  it('drops an unusable profile image instead of storing it', async () => {
    const model = await create(world.alice, 'm-image', { meta: { profile_image_url: 'data:image/svg+xml;base64,PHN2Zz4=' } });
    expect(model.meta.profile_image_url).toBeNull();
  });
});

describe('reading workspace models', () => {
  it('gives the owner everything, readers no params, others nothing', async () => {
    await create(world.alice, 'm-read', { access_grants: [grant(world.bob)] });
    const own = await world.api.get('/api/v1/models/model?id=m-read', { token: world.alice.token });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ write_access: true, params: { system: 'You are helpful' }, user: { id: world.alice.id, name: world.alice.name, role: 'user', email: world.alice.email } });
    const reader = await world.api.get('/api/v1/models/model?id=m-read', { token: world.bob.token });
    expect(reader.status).toBe(200);
    expect(reader.body).toMatchObject({ write_access: false, params: {} });
    await create(world.alice, 'm-private');
    const denied = await world.api.get('/api/v1/models/model?id=m-private', { token: world.bob.token });
    expect(denied.status).toBe(401);
    expect(denied.body.detail).toBe(ERROR.ACCESS_PROHIBITED);
    expect((await world.api.get('/api/v1/models/model?id=nothing', { token: world.bob.token })).status).toBe(404);
    expect((await world.api.get('/api/v1/models/model?id=m-private', { token: world.admin.token })).body.write_access).toBe(true);
  });

  it('lists readable presets a page at a time, with filters', async () => {
    await create(world.alice, 'm-list-1', { name: 'Alpha', meta: { tags: ['red'], profile_image_url: PNG } });
    await create(world.alice, 'm-list-2', { name: 'Beta', access_grants: [grant(world.bob, 'write'), grant(world.bob)] });
    await create(world.bob, 'm-list-3', { name: 'Gamma' });
    const mine = await world.api.get('/api/v1/models/list', { token: world.alice.token });
    expect(mine.status).toBe(200);
    expect(mine.body.total).toBe(2);
    expect(mine.body.items.map((m: any) => m.id).sort()).toEqual(['m-list-1', 'm-list-2']);
    expect(mine.body.items.every((m: any) => m.meta.profile_image_url === undefined)).toBe(true);
    const bobs = (await world.api.get('/api/v1/models/list?order_by=name&direction=asc', { token: world.bob.token })).body;
    expect(bobs.items.map((m: any) => [m.id, m.write_access])).toEqual([
      ['m-list-2', true],
      ['m-list-3', true],
    ]);
    expect((await world.api.get('/api/v1/models/list?view_option=created', { token: world.bob.token })).body.total).toBe(1);
    expect((await world.api.get('/api/v1/models/list?view_option=shared', { token: world.bob.token })).body.total).toBe(1);
    expect((await world.api.get('/api/v1/models/list?tag=red', { token: world.alice.token })).body.items.map((m: any) => m.id)).toEqual(['m-list-1']);
    expect((await world.api.get('/api/v1/models/list?query=gam', { token: world.admin.token })).body.items.map((m: any) => m.id)).toEqual(['m-list-3']);
    expect((await world.api.get('/api/v1/models/list?page=2', { token: world.admin.token })).body).toEqual({ items: [], total: 3 });
  });

  it('lists tags of readable presets and of base models', async () => {
    await create(world.alice, 'm-tag-1', { meta: { tags: ['zeta', 'alpha'] } });
    await create(world.bob, 'm-tag-2', { meta: { tags: ['hidden'] } });
    await world.api.post('/api/v1/models/model/access/update', { id: 'gpt-fake', access_grants: [] }, { token: world.admin.token });
    await world.api.post('/api/v1/models/model/update', { id: 'gpt-fake', name: 'GPT', meta: { tags: ['base-tag'] }, params: {} }, { token: world.admin.token });
    expect((await world.api.get('/api/v1/models/tags', { token: world.alice.token })).body).toEqual(['alpha', 'zeta']);
    expect((await world.api.get('/api/v1/models/tags', { token: world.admin.token })).body).toEqual(['alpha', 'hidden', 'zeta']);
    expect((await world.api.get('/api/v1/models/base/tags', { token: world.admin.token })).body).toEqual(['base-tag']);
    const base = await world.api.get('/api/v1/models/base?tag=base-tag', { token: world.admin.token });
    expect(base.body.map((m: any) => m.id)).toEqual(['gpt-fake']);
    expect((await world.api.get('/api/v1/models/base', { token: world.alice.token })).status).toBe(401);
  });
});

describe('POST /api/v1/models/model/update', () => {
  it('leaves grants alone when access_grants is absent or null, replaces them with a list, removes them with []', async () => {
    await create(world.alice, 'm-grants', { access_grants: [grant(world.bob)] });
    const update = (extra: Record<string, unknown>) =>
      world.api.post('/api/v1/models/model/update', { id: 'm-grants', name: 'Renamed', meta: {}, params: {}, ...extra }, { token: world.alice.token });

    let res = await update({});
    expect(res.status, res.text).toBe(200);
    expect(grantsOf(res.body)).toEqual([`${world.bob.id}:read`]);
    res = await update({ access_grants: null });
    expect(res.status, res.text).toBe(200);
    expect(grantsOf(res.body)).toEqual([`${world.bob.id}:read`]);
    res = await update({ access_grants: [grant(world.admin, 'write')] });
    expect(grantsOf(res.body)).toEqual([`${world.admin.id}:write`]);
    res = await update({ access_grants: [] });
    expect(res.body.access_grants).toEqual([]);
    expect((await world.api.get('/api/v1/models/model?id=m-grants', { token: world.bob.token })).status).toBe(401);
    expect(world.events.filter((e) => e.event === 'model.updated')).toHaveLength(4);
  });

  it('keeps the base model and image unless given, and reactivates as the reference does', async () => {
    await create(world.alice, 'm-keep', { meta: { profile_image_url: PNG } });
    await world.api.post('/api/v1/models/model/toggle?id=m-keep', undefined, { token: world.alice.token });
    const res = await world.api.post('/api/v1/models/model/update', { id: 'm-keep', name: 'Kept', meta: { description: 'new' }, params: { top_p: 1 } }, { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ base_model_id: 'gpt-fake', name: 'Kept', meta: { description: 'new', profile_image_url: PNG }, params: { top_p: 1 }, is_active: true });
    const cleared = await world.api.post('/api/v1/models/model/update', { id: 'm-keep', base_model_id: null, name: 'Kept', meta: { profile_image_url: null }, params: {} }, { token: world.alice.token });
    expect(cleared.body).toMatchObject({ base_model_id: null, meta: { profile_image_url: null } });
  });

  it('lets writers and admins change a model, refuses others, and 404s unknown ids', async () => {
    await create(world.alice, 'm-writers', { access_grants: [grant(world.bob)] });
    const body = { id: 'm-writers', name: 'By Bob', meta: {}, params: {} };
    const denied = await world.api.post('/api/v1/models/model/update', body, { token: world.bob.token });
    expect(denied.status).toBe(400);
    expect(denied.body.detail).toBe(ERROR.ACCESS_PROHIBITED);
    await world.api.post('/api/v1/models/model/access/update', { id: 'm-writers', access_grants: [grant(world.bob, 'write'), grant(world.bob)] }, { token: world.alice.token });
    expect((await world.api.post('/api/v1/models/model/update', body, { token: world.bob.token })).status).toBe(200);
    expect((await world.api.post('/api/v1/models/model/update', { ...body, name: 'By Admin' }, { token: world.admin.token })).body.name).toBe('By Admin');
    expect((await world.api.post('/api/v1/models/model/update', { ...body, id: 'missing' }, { token: world.admin.token })).status).toBe(404);
  });
});

describe('toggle, access, delete', () => {
  it('toggles with model.disabled then model.enabled', async () => {
    await create(world.alice, 'm-toggle');
    expect((await world.api.post('/api/v1/models/model/toggle?id=m-toggle', undefined, { token: world.bob.token })).status).toBe(401);
    const off = await world.api.post('/api/v1/models/model/toggle?id=m-toggle', undefined, { token: world.alice.token });
    expect(off.body.is_active).toBe(false);
    const on = await world.api.post('/api/v1/models/model/toggle?id=m-toggle', undefined, { token: world.alice.token });
    expect(on.body.is_active).toBe(true);
    expect(world.events.filter((e) => e.event.startsWith('model.') && e.event !== 'model.created').map((e) => [e.event, e.data.name])).toEqual([
      ['model.disabled', 'Model m-toggle'],
      ['model.enabled', 'Model m-toggle'],
    ]);
  });

  it('creates the workspace entry of a provider model when an admin shares it; users may not', async () => {
    const denied = await world.api.post('/api/v1/models/model/access/update', { id: 'llama-fake:latest', access_grants: [] }, { token: world.alice.token });
    expect(denied.status).toBe(403);
    const shared = await world.api.post(
      '/api/v1/models/model/access/update',
      { id: 'llama-fake:latest', access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] },
      { token: world.admin.token },
    );
    expect(shared.status, shared.text).toBe(200);
    expect(shared.body).toMatchObject({ id: 'llama-fake:latest', name: 'llama-fake:latest', base_model_id: null, user_id: world.admin.id, meta: {}, params: {} });
    expect(grantsOf(shared.body)).toEqual(['*:read']);
    expect(world.events.find((e) => e.event === 'model.access_updated')).toMatchObject({ subject: { type: 'model', id: 'llama-fake:latest' } });
    const missingList = await world.api.post('/api/v1/models/model/access/update', { id: 'x', access_grants: null }, { token: world.admin.token });
    expect(missingList.status).toBe(422);
  });

  it('deletes a model and its grants, for writers only', async () => {
    await create(world.alice, 'm-delete', { access_grants: [grant(world.bob)] });
    const denied = await world.api.post('/api/v1/models/model/delete', { id: 'm-delete' }, { token: world.bob.token });
    expect(denied.status).toBe(401);
    const res = await world.api.post('/api/v1/models/model/delete', { id: 'm-delete' }, { token: world.alice.token });
    expect(res.status).toBe(200);
    expect(res.body).toBe(true);
    expect(world.events.find((e) => e.event === 'model.deleted')).toMatchObject({ subject: { id: 'm-delete' }, data: { name: 'Model m-delete' } });
    expect((await world.api.get('/api/v1/models/model?id=m-delete', { token: world.admin.token })).status).toBe(404);
    const leftover = await world.server.parley.core.db.selectFrom('access_grant').select('id').where('resource_id', '=', 'm-delete').execute();
    expect(leftover).toEqual([]);
    expect((await world.api.post('/api/v1/models/model/delete', { id: 'm-delete' }, { token: world.alice.token })).status).toBe(404);
  });

  it('deletes everything for admins only', async () => {
    await create(world.alice, 'm-all-1');
    await create(world.bob, 'm-all-2');
    expect((await world.api.delete('/api/v1/models/delete/all', { token: world.alice.token })).status).toBe(401);
    const res = await world.api.delete('/api/v1/models/delete/all', { token: world.admin.token });
    expect(res.body).toBe(true);
    expect((await world.api.get('/api/v1/models/list', { token: world.admin.token })).body.total).toBe(0);
    expect(world.events.at(-1)).toMatchObject({ event: 'model.deleted', subject: { type: 'model', id: null } });
  });
});

describe('export, import, sync', () => {
  it('exports what the user may change and imports it back', async () => {
    await create(world.alice, 'm-export', { access_grants: [grant(world.bob)] });
    await create(world.bob, 'm-export-bob');
    const exported = await world.api.get('/api/v1/models/export', { token: world.alice.token });
    expect(exported.status).toBe(200);
    expect(exported.body.map((m: any) => m.id)).toEqual(['m-export']);
    await world.api.post('/api/v1/models/model/delete', { id: 'm-export' }, { token: world.alice.token });
    const imported = await world.api.post(
      '/api/v1/models/import',
      { models: [...exported.body, { id: 'm-export-bob', name: 'Hijacked', meta: {}, params: {} }, { id: '', name: 'no id' }] },
      { token: world.alice.token },
    );
    expect(imported.status, imported.text).toBe(200);
    expect(imported.body).toBe(true);
    const back = await world.api.get('/api/v1/models/model?id=m-export', { token: world.alice.token });
    expect(back.body).toMatchObject({ name: 'Model m-export', user_id: world.alice.id, params: { system: 'You are helpful' } });
    expect(grantsOf(back.body)).toEqual([`${world.bob.id}:read`]);
    expect((await world.api.get('/api/v1/models/model?id=m-export-bob', { token: world.bob.token })).body.name).toBe('Model m-export-bob');
    expect(world.events.find((e) => e.event === 'model.imported')).toMatchObject({ data: { count: 2, model_ids: ['m-export', 'm-export-bob'] } });
  });

  it('merges meta and keeps grants when an import updates a model without naming them', async () => {
    await create(world.alice, 'm-merge', { meta: { description: 'old', color: 'blue' }, access_grants: [grant(world.bob)] });
    await world.api.post('/api/v1/models/import', { models: [{ id: 'm-merge', name: 'Merged', meta: { description: 'new' } }] }, { token: world.alice.token });
    const model = (await world.api.get('/api/v1/models/model?id=m-merge', { token: world.alice.token })).body;
    expect(model).toMatchObject({ name: 'Merged', meta: { description: 'new', color: 'blue' }, params: {} });
    expect(grantsOf(model)).toEqual([`${world.bob.id}:read`]);
  });

  it('refuses an import with a malformed model and writes nothing', async () => {
    const res = await world.api.post('/api/v1/models/import', { models: [{ id: 'm-ok', name: 'ok', meta: {}, params: {} }, { id: 'm-bad', meta: {} }] }, { token: world.alice.token });
    expect(res.status).toBe(400);
    expect((await world.api.get('/api/v1/models/model?id=m-ok', { token: world.admin.token })).status).toBe(404);
  });

  it('syncs the whole table to the given models (admin)', async () => {
    await create(world.alice, 'm-old');
    const now = Math.floor(Date.now() / 1000);
    const res = await world.api.post(
      '/api/v1/models/sync',
      { models: [{ id: 'm-synced', user_id: world.alice.id, base_model_id: 'gpt-fake', name: 'Synced', params: {}, meta: {}, access_grants: [grant(world.bob)], is_active: true, created_at: now, updated_at: now }] },
      { token: world.admin.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((m: any) => [m.id, m.user_id])).toEqual([['m-synced', world.admin.id]]);
    expect(grantsOf(res.body[0])).toEqual([`${world.bob.id}:read`]);
    expect((await world.api.get('/api/v1/models/model?id=m-old', { token: world.admin.token })).status).toBe(404);
    expect(world.events.find((e) => e.event === 'model.synced')).toMatchObject({ data: { count: 1, model_ids: ['m-synced'] } });
    expect((await world.api.post('/api/v1/models/sync', { models: [] }, { token: world.alice.token })).status).toBe(401);
  });
});

describe('GET /api/v1/models/model/profile/image', () => {
  it('serves uploaded images, redirects to external and static ones, and falls back to the favicon', async () => {
    const model = await create(world.alice, 'm-png', { meta: { profile_image_url: PNG } });
    const image = await world.api.get('/api/v1/models/model/profile/image?id=m-png', { token: world.bob.token });
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('etag')).toBe(`"${model.updated_at}"`);
    expect(image.headers.get('x-content-type-options')).toBe('nosniff');
    await create(world.alice, 'm-url', { meta: { profile_image_url: 'https://example.com/icon.png' } });
    const external = await world.api.get('/api/v1/models/model/profile/image?id=m-url', { token: world.bob.token });
    expect(external.status).toBe(302);
    expect(external.headers.get('location')).toBe('https://example.com/icon.png');
    await create(world.alice, 'm-static', { meta: { profile_image_url: '/static/favicon.png' } });
    expect((await world.api.get('/api/v1/models/model/profile/image?id=m-static', { token: world.bob.token })).headers.get('location')).toBe('/static/favicon.png');
    const none = await world.api.get('/api/v1/models/model/profile/image?id=unknown', { token: world.bob.token });
    expect(none.status).toBe(302);
    expect(none.headers.get('location')).toBe('/static/favicon.png');
    const cookie = await world.api.get('/api/v1/models/model/profile/image?id=m-png', { cookie: `token=${world.bob.token}` });
    expect(cookie.status).toBe(200);
  });
});

describe('admin access previews', () => {
  it('list the active models a group reaches', async () => {
    const group = await world.api.post('/api/v1/groups/create', { name: 'Model Readers', description: '' }, { token: world.admin.token });
    await create(world.alice, 'm-preview', { name: 'Previewed', access_grants: [{ principal_type: 'group', principal_id: group.body.id, permission: 'read' }] });
    const preview = await world.api.get(`/api/v1/groups/id/${group.body.id}/preview`, { token: world.admin.token });
    expect(preview.body.models).toEqual({ items: [{ id: 'm-preview', name: 'Previewed' }], total: 1 });
  });
});
