import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { useServer } from '../../helpers/world.js';
import { createGroup } from '../tools/helpers.js';

/** The 9 skill operations (routers/skills.py): records, access, toggle, export and the 0.11.0 import/export permissions. */
const world = useServer({
  admin: 'Skills Admin',
  users: { alice: ['user', 'Alice Author'], bob: ['user', 'Bob Plain'], carol: ['user', 'Carol Importer'] },
  freshEvents: true,
});
beforeAll(async () => {
  await createGroup(world.server, world.admin, [world.alice], { workspace: { skills: true }, sharing: { public_skills: true } });
  await createGroup(world.server, world.admin, [world.carol], { workspace: { skills_import: true, skills_export: true } });
});

const SUMMARY_KEYS = ['id', 'user_id', 'name', 'description', 'meta', 'is_active', 'access_grants', 'updated_at', 'created_at'];
const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];

const form = (id: string, overrides: Record<string, unknown> = {}) => ({
  id,
  name: `Skill ${id}`,
  description: `About ${id}`,
  content: `# ${id}\nDo the ${id} thing.`,
  meta: { tags: ['work'], ignored: true },
  ...overrides,
});

async function create(id: string, token = world.alice.token, overrides: Record<string, unknown> = {}) {
  const res = await world.api.post('/api/v1/skills/create', form(id, overrides), { token });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

describe('POST /api/v1/skills/create', () => {
  it('stores the skill (id lower-cased, spaces as dashes) and answers without the content', async () => {
    const res = await world.api.post('/api/v1/skills/create', form('Code Review'), { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(SUMMARY_KEYS);
    expect(res.body).toMatchObject({
      id: 'code-review',
      user_id: world.alice.id,
      name: 'Skill Code Review',
      description: 'About Code Review',
      meta: { tags: ['work'] },
      is_active: true,
      access_grants: [],
    });
    expect(world.events.map((e) => e.event)).toEqual(['skill.created']);
    expect(world.events[0]).toMatchObject({ actor: { id: world.alice.id }, subject: { type: 'skill', id: 'code-review' }, data: { name: 'Skill Code Review' } });
  });

  it('refuses an id in use with ID_TAKEN and a name in use with the create error; nothing changes', async () => {
    await create('taken');
    world.events.length = 0;
    const sameId = await world.api.post('/api/v1/skills/create', form('TAKEN', { name: 'Other name' }), { token: world.admin.token });
    expect(sameId.status).toBe(400);
    expect(sameId.body).toEqual({ detail: ERROR.ID_TAKEN });
    const sameName = await world.api.post('/api/v1/skills/create', form('fresh', { name: 'Skill taken' }), { token: world.admin.token });
    expect(sameName.status).toBe(400);
    expect(sameName.body).toEqual({ detail: '[ERROR: Error creating skill]' });
    expect((await world.api.get('/api/v1/skills/id/fresh', { token: world.admin.token })).status).toBe(404);
    expect(world.events).toEqual([]);
  });

  it('needs workspace.skills or workspace.skills_import; bad forms are 422', async () => {
    const refused = await world.api.post('/api/v1/skills/create', form('bobs'), { token: world.bob.token });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ detail: ERROR.UNAUTHORIZED });
    await create('imported', world.carol.token);
    expect((await world.api.post('/api/v1/skills/create', { id: 'x', name: 'x' }, { token: world.alice.token })).status).toBe(422);
    expect((await world.api.post('/api/v1/skills/create', form('y', { content: 5 }), { token: world.alice.token })).status).toBe(422);
    expect((await world.api.post('/api/v1/skills/create', form(' ', {}), { token: world.alice.token })).status).toBe(400);
  });

  it('drops a public grant the author may not give', async () => {
    const res = await world.api.post('/api/v1/skills/create', form('carols', { access_grants: everyone }), { token: world.carol.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.access_grants).toEqual([]);
  });
});

describe('reading skills', () => {
  it('lists readable skills with owners (GET /), pages them with write access (GET /list), and reads one', async () => {
    await create('shared', world.alice.token, { access_grants: everyone });
    await create('private');
    const asBob = await world.api.get('/api/v1/skills/', { token: world.bob.token });
    expect(asBob.status).toBe(200);
    const ids = asBob.body.map((s: any) => s.id);
    expect(ids).toContain('shared');
    expect(ids).not.toContain('private');
    expect(asBob.body.find((s: any) => s.id === 'shared')).toMatchObject({ content: '# shared\nDo the shared thing.', user: { id: world.alice.id, name: 'Alice Author', role: 'user' } });

    const list = await world.api.get('/api/v1/skills/list?query=SHARED', { token: world.bob.token });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(1);
    expect(list.body.items[0]).toMatchObject({ id: 'shared', write_access: false, user: { id: world.alice.id } });
    expect(list.body.items[0]).not.toHaveProperty('content');
    const own = await world.api.get('/api/v1/skills/list?view_option=created', { token: world.alice.token });
    expect(own.body.items.every((s: any) => s.user_id === world.alice.id && s.write_access === true)).toBe(true);

    const one = await world.api.get('/api/v1/skills/id/shared', { token: world.bob.token });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: 'shared', content: '# shared\nDo the shared thing.', user: null, write_access: false });
    const hidden = await world.api.get('/api/v1/skills/id/private', { token: world.bob.token });
    expect(hidden.status).toBe(401);
    expect(hidden.body).toEqual({ detail: ERROR.ACCESS_PROHIBITED });
    expect((await world.api.get('/api/v1/skills/id/nothing', { token: world.bob.token })).status).toBe(404);
    expect((await world.api.get('/api/v1/skills/')).status).toBe(401);
  });

  it('exports with workspace.skills_export (or as admin), else 401', async () => {
    expect((await world.api.get('/api/v1/skills/export', { token: world.alice.token })).status).toBe(401);
    const carol = await world.api.get('/api/v1/skills/export', { token: world.carol.token });
    expect(carol.status).toBe(200);
    const ids = carol.body.map((s: any) => s.id);
    expect(ids).toContain('imported');
    expect(ids).not.toContain('private');
    expect(carol.body.find((s: any) => s.id === 'imported')).toMatchObject({ content: '# imported\nDo the imported thing.', access_grants: [] });
    const admin = await world.api.get('/api/v1/skills/export', { token: world.admin.token });
    expect(admin.status).toBe(200);
  });
});

describe('changing skills', () => {
  it('updates every field for writers; others get 401, a missing id 404', async () => {
    await create('editable');
    world.events.length = 0;
    const res = await world.api.post('/api/v1/skills/id/editable/update', form('ignored', { name: 'Renamed', content: 'new', is_active: false }), { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: 'editable', name: 'Renamed', content: 'new', is_active: false, meta: { tags: ['work'] } });
    expect(world.events.map((e) => e.event)).toEqual(['skill.updated']);
    const bob = await world.api.post('/api/v1/skills/id/editable/update', form('x'), { token: world.bob.token });
    expect(bob.status).toBe(401);
    expect((await world.api.post('/api/v1/skills/id/none/update', form('x'), { token: world.alice.token })).status).toBe(404);
    const clash = await world.api.post('/api/v1/skills/id/editable/update', form('x', { name: 'Skill shared' }), { token: world.alice.token });
    expect(clash.status).toBe(400);
    expect((await world.api.get('/api/v1/skills/id/editable', { token: world.alice.token })).body.name).toBe('Renamed');
  });

  it('toggles, replaces grants and deletes, with their events', async () => {
    await create('cycle');
    world.events.length = 0;
    const off = await world.api.post('/api/v1/skills/id/cycle/toggle', {}, { token: world.alice.token });
    expect(off.status).toBe(200);
    expect(off.body.is_active).toBe(false);
    const on = await world.api.post('/api/v1/skills/id/cycle/toggle', {}, { token: world.admin.token });
    expect(on.body.is_active).toBe(true);
    const granted = await world.api.post('/api/v1/skills/id/cycle/access/update', { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'write' }] }, { token: world.alice.token });
    expect(granted.status, granted.text).toBe(200);
    expect(granted.body.access_grants).toMatchObject([{ principal_type: 'user', principal_id: world.bob.id, permission: 'write' }]);
    expect((await world.api.get('/api/v1/skills/id/cycle', { token: world.bob.token })).body.write_access).toBe(true);
    expect((await world.api.delete('/api/v1/skills/id/cycle/delete', { token: world.carol.token })).status).toBe(401);
    const deleted = await world.api.delete('/api/v1/skills/id/cycle/delete', { token: world.bob.token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toBe(true);
    expect((await world.api.get('/api/v1/skills/id/cycle', { token: world.alice.token })).status).toBe(404);
    expect(world.events.map((e) => e.event)).toEqual(['skill.disabled', 'skill.enabled', 'skill.updated', 'skill.deleted']);
    expect(world.events[2].data).toEqual({ access_updated: true, name: 'Skill cycle' });
  });
});
