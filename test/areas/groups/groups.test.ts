import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { addUser } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

const world = useServer({
  admin: 'Group Admin',
  users: { alice: ['user', 'Alice Member'], bob: ['user', 'Bob Member'], pending: ['pending', 'Pending Member'] },
  freshEvents: true,
});

async function createGroup(body: Record<string, unknown> = {}) {
  const res = await world.api.post('/api/v1/groups/create', { name: `Group ${Math.random().toString(36).slice(2, 8)}`, description: 'd', ...body }, { token: world.admin.token });
  expect(res.status, res.text).toBe(200);
  world.events.length = 0;
  return res.body;
}

const NOT_FOUND = { detail: ERROR.NOT_FOUND };
const UNKNOWN = '00000000-0000-0000-0000-000000000000';

describe('POST /api/v1/groups/create', () => {
  it('creates a group with the default share setting and publishes group.created', async () => {
    const res = await world.api.post('/api/v1/groups/create', { name: 'Engineers', description: 'Build things' }, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'Engineers',
      description: 'Build things',
      user_id: world.admin.id,
      data: { config: { share: 'members' } },
      meta: null,
      permissions: null,
      member_count: 0,
    });
    expect(typeof res.body.id).toBe('string');
    expect(res.body.created_at).toBe(res.body.updated_at);
    expect(world.events.map((e) => e.event)).toEqual(['group.created']);
    expect(world.events[0]).toMatchObject({ actor: { id: world.admin.id }, subject: { type: 'group', id: res.body.id }, data: { name: 'Engineers' }, source: 'api' });
  });

  it('keeps given permissions and data, adding the share setting only when missing', async () => {
    const permissions = { workspace: { tools: true } };
    const a = await createGroup({ permissions, data: { note: 1 } });
    expect(a.permissions).toEqual(permissions);
    expect(a.data).toEqual({ note: 1, config: { share: 'members' } });
    const b = await createGroup({ data: { config: { share: false } } });
    expect(b.data).toEqual({ config: { share: false } });
  });

  it('is for admins only (401) and validates the form (422)', async () => {
    const before = await world.api.get('/api/v1/groups/', { token: world.admin.token });
    const res = await world.api.post('/api/v1/groups/create', { name: 'x', description: 'y' }, { token: world.alice.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: ERROR.ACCESS_PROHIBITED });
    expect((await world.api.post('/api/v1/groups/create', { name: 'x', description: 'y' })).status).toBe(401);

    const missing = await world.api.post('/api/v1/groups/create', { name: 'x' }, { token: world.admin.token });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'description'] });
    const wrong = await world.api.post('/api/v1/groups/create', { name: 5, description: 'y', permissions: [] }, { token: world.admin.token });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(expect.arrayContaining([['body', 'name'], ['body', 'permissions']]));

    const after = await world.api.get('/api/v1/groups/', { token: world.admin.token });
    expect(after.body.length).toBe(before.body.length);
    expect(world.events).toEqual([]);
  });
});

describe('GET /api/v1/groups/id/{id}, /info, /export', () => {
  it('returns the group, its public info and its export with member ids', async () => {
    const group = await createGroup({ permissions: { chat: { call: false } } });
    await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [world.alice.id, world.bob.id] }, { token: world.admin.token });

    const full = await world.api.get(`/api/v1/groups/id/${group.id}`, { token: world.admin.token });
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({ id: group.id, name: group.name, permissions: { chat: { call: false } }, member_count: 2 });

    const info = await world.api.get(`/api/v1/groups/id/${group.id}/info`, { token: world.alice.token });
    expect(info.status).toBe(200);
    expect(Object.keys(info.body).sort()).toEqual(['created_at', 'description', 'id', 'member_count', 'name', 'updated_at', 'user_id']);
    expect(info.body.member_count).toBe(2);

    const exported = await world.api.get(`/api/v1/groups/id/${group.id}/export`, { token: world.admin.token });
    expect(exported.status).toBe(200);
    expect(exported.body.user_ids.sort()).toEqual([world.alice.id, world.bob.id].sort());
    expect(exported.body.member_count).toBe(2);
    expect(exported.body.permissions).toEqual({ chat: { call: false } });
  });

  it('answers an unknown id as the reference (401 on reads, 404 on the preview) and 401 for the wrong role', async () => {
    // groups.py: get, info and export answer an unknown group with 401 NOT_FOUND, for admins and users alike.
    for (const [path, token] of [
      [`/api/v1/groups/id/${UNKNOWN}`, world.admin.token],
      [`/api/v1/groups/id/${UNKNOWN}/info`, world.admin.token],
      [`/api/v1/groups/id/${UNKNOWN}/info`, world.alice.token],
      [`/api/v1/groups/id/${UNKNOWN}/export`, world.admin.token],
    ]) {
      const res = await world.api.get(path, { token });
      expect(res.status, path).toBe(401);
      expect(res.body).toEqual(NOT_FOUND);
    }
    const preview = await world.api.get(`/api/v1/groups/id/${UNKNOWN}/preview`, { token: world.admin.token });
    expect(preview.status).toBe(404);
    expect(preview.body).toEqual(NOT_FOUND);
    const group = await createGroup();
    expect((await world.api.get(`/api/v1/groups/id/${group.id}`, { token: world.alice.token })).status).toBe(401);
    expect((await world.api.get(`/api/v1/groups/id/${group.id}/export`, { token: world.alice.token })).status).toBe(401);
    expect((await world.api.get(`/api/v1/groups/id/${group.id}/preview`, { token: world.alice.token })).status).toBe(401);
    expect((await world.api.get(`/api/v1/groups/id/${group.id}/info`, { token: world.pending.token })).status).toBe(401);
    expect((await world.api.get(`/api/v1/groups/id/${group.id}/info`)).status).toBe(401);
  });
});

describe('members', () => {
  it('adds existing users (skipping unknown ids and duplicates) and publishes group.member_added', async () => {
    const group = await createGroup();
    const res = await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [world.alice.id, UNKNOWN, world.alice.id] }, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body.member_count).toBe(1);
    expect(res.body.updated_at).toBeGreaterThanOrEqual(group.updated_at);
    expect(world.events.map((e) => e.event)).toEqual(['group.member_added']);
    expect(world.events[0]).toMatchObject({ subject: { type: 'group', id: group.id }, data: { user_ids: [world.alice.id] } });

    const again = await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [world.alice.id, world.bob.id] }, { token: world.admin.token });
    expect(again.body.member_count).toBe(2);
    const empty = await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, {}, { token: world.admin.token });
    expect(empty.status).toBe(200);
    expect(empty.body.member_count).toBe(2);
  });

  it('lists members as UserInfoResponse', async () => {
    const group = await createGroup();
    await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [world.alice.id, world.bob.id] }, { token: world.admin.token });
    const res = await world.api.post(`/api/v1/groups/id/${group.id}/users`, undefined, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body.map((u: { id: string }) => u.id).sort()).toEqual([world.alice.id, world.bob.id].sort());
    const member = res.body.find((u: { id: string }) => u.id === world.alice.id);
    expect(member).toEqual({
      id: world.alice.id,
      name: world.alice.name,
      email: world.alice.email,
      role: 'user',
      bio: null,
      groups: [],
      is_active: false,
      status_emoji: null,
      status_message: null,
      status_expires_at: null,
    });
    expect(JSON.stringify(res.body)).not.toContain('password');
  });

  it('removes members and publishes group.member_removed', async () => {
    const group = await createGroup();
    await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [world.alice.id, world.bob.id] }, { token: world.admin.token });
    world.events.length = 0;
    const res = await world.api.post(`/api/v1/groups/id/${group.id}/users/remove`, { user_ids: [world.alice.id] }, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body.member_count).toBe(1);
    expect(world.events.map((e) => e.event)).toEqual(['group.member_removed']);
    expect(world.events[0].data).toEqual({ user_ids: [world.alice.id] });
    const exported = await world.api.get(`/api/v1/groups/id/${group.id}/export`, { token: world.admin.token });
    expect(exported.body.user_ids).toEqual([world.bob.id]);
  });

  it('answers an unknown group as the reference (400 on changes, no members), 401 for non-admins and 422 for a bad form, changing nothing', async () => {
    for (const [path, failed] of [
      ['users/add', 'Error adding users to group'],
      ['users/remove', 'Error removing users from group'],
    ]) {
      const res = await world.api.post(`/api/v1/groups/id/${UNKNOWN}/${path}`, { user_ids: [world.alice.id] }, { token: world.admin.token });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: `[ERROR: ${failed}]` });
    }
    const members = await world.api.post(`/api/v1/groups/id/${UNKNOWN}/users`, undefined, { token: world.admin.token });
    expect(members.status).toBe(200);
    expect(members.body).toEqual([]);
    const group = await createGroup();
    expect((await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [world.alice.id] }, { token: world.alice.token })).status).toBe(401);
    expect((await world.api.post(`/api/v1/groups/id/${group.id}/users/remove`, { user_ids: [world.alice.id] }, { token: world.alice.token })).status).toBe(401);
    expect((await world.api.post(`/api/v1/groups/id/${group.id}/users`, undefined, { token: world.alice.token })).status).toBe(401);
    const bad = await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: 'x' }, { token: world.admin.token });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'user_ids']);
    expect((await world.api.get(`/api/v1/groups/id/${group.id}`, { token: world.admin.token })).body.member_count).toBe(0);
    expect(world.events.filter((e) => e.event.startsWith('group.member'))).toEqual([]);
  });
});

describe('POST /api/v1/groups/id/{id}/update', () => {
  it('replaces name and description, and permissions/data only when given', async () => {
    const group = await createGroup({ permissions: { features: { notes: true } } });
    const res = await world.api.post(`/api/v1/groups/id/${group.id}/update`, { name: 'Renamed', description: 'New' }, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Renamed', description: 'New', permissions: { features: { notes: true } }, data: group.data });
    expect(world.events.map((e) => e.event)).toEqual(['group.updated']);
    expect(world.events[0]).toMatchObject({ subject: { type: 'group', id: group.id }, data: { name: 'Renamed' } });

    const next = await world.api.post(
      `/api/v1/groups/id/${group.id}/update`,
      { name: 'Renamed', description: 'New', permissions: { chat: { call: false } }, data: { config: { share: true } } },
      { token: world.admin.token },
    );
    expect(next.body.permissions).toEqual({ chat: { call: false } });
    expect(next.body.data).toEqual({ config: { share: true } });
  });

  it('answers 400 for an unknown group (as the reference), 401 for non-admins, 422 for a bad form', async () => {
    const res = await world.api.post(`/api/v1/groups/id/${UNKNOWN}/update`, { name: 'x', description: 'y' }, { token: world.admin.token });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: '[ERROR: Error updating group]' });
    const group = await createGroup();
    expect((await world.api.post(`/api/v1/groups/id/${group.id}/update`, { name: 'x', description: 'y' }, { token: world.alice.token })).status).toBe(401);
    expect((await world.api.post(`/api/v1/groups/id/${group.id}/update`, { name: 'x' }, { token: world.admin.token })).status).toBe(422);
    expect((await world.api.get(`/api/v1/groups/id/${group.id}`, { token: world.admin.token })).body.name).toBe(group.name);
    expect(world.events.filter((e) => e.event === 'group.updated')).toEqual([]);
  });
});

describe('DELETE /api/v1/groups/id/{id}/delete', () => {
  it('deletes the group and its memberships and publishes group.deleted', async () => {
    const group = await createGroup();
    await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [world.alice.id] }, { token: world.admin.token });
    const access = world.server.parley.services.access;
    await access.grant('tool', `tool-of-${group.id}`, { principal_type: 'group', principal_id: group.id, permission: 'read' });
    world.events.length = 0;
    expect((await world.api.delete(`/api/v1/groups/id/${group.id}/delete`, { token: world.alice.token })).status).toBe(401);
    const res = await world.api.delete(`/api/v1/groups/id/${group.id}/delete`, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toBe(true);
    expect(world.events.map((e) => e.event)).toEqual(['group.deleted']);
    expect(world.events[0]).toMatchObject({ subject: { type: 'group', id: group.id }, data: {} });
    expect((await world.api.get(`/api/v1/groups/id/${group.id}`, { token: world.admin.token })).status).toBe(401);
    const mine = await world.api.get('/api/v1/groups/', { token: world.alice.token });
    expect(mine.body.map((g: { id: string }) => g.id)).not.toContain(group.id);
    const grants = await world.server.parley.services.access.grantsOf('tool', `tool-of-${group.id}`);
    expect(grants).toEqual([]);
    const again = await world.api.delete(`/api/v1/groups/id/${group.id}/delete`, { token: world.admin.token });
    expect(again.status).toBe(404);
    expect(again.body).toEqual(NOT_FOUND);
  });
});

describe('GET /api/v1/groups/', () => {
  it('lists every group for admins, newest change first, with member counts', async () => {
    const a = await createGroup();
    const b = await createGroup();
    await world.api.post(`/api/v1/groups/id/${a.id}/users/add`, { user_ids: [world.bob.id] }, { token: world.admin.token });
    const res = await world.api.get('/api/v1/groups/', { token: world.admin.token });
    expect(res.status).toBe(200);
    const ids = res.body.map((g: { id: string }) => g.id);
    expect(ids).toEqual(expect.arrayContaining([a.id, b.id]));
    const updated = res.body.map((g: { updated_at: number }) => g.updated_at);
    expect([...updated].sort((x, y) => y - x)).toEqual(updated);
    expect(res.body.find((g: { id: string }) => g.id === a.id).member_count).toBe(1);
    expect((await world.api.get('/api/v1/groups/?share=true', { token: world.admin.token })).body.length).toBe(res.body.length);
  });

  it("shows users their own groups, or with ?share the groups they may share with", async () => {
    const carol = await addUser(world.api, world.admin, 'user', 'Carol Share');
    const members = await createGroup({ data: { config: { share: 'members' } } });
    const anyone = await createGroup({ data: { config: { share: true } } });
    // Creation always writes a share setting; an update that replaces `data` can leave it out.
    const noShareKey = await createGroup();
    await world.api.post(`/api/v1/groups/id/${noShareKey.id}/update`, { name: 'n', description: 'd', data: { other: 1 } }, { token: world.admin.token });
    const nobody = await createGroup({ data: { config: { share: false } } });
    const membersOther = await createGroup({ data: { config: { share: 'members' } } });
    for (const g of [members, nobody]) {
      await world.api.post(`/api/v1/groups/id/${g.id}/users/add`, { user_ids: [carol.id] }, { token: world.admin.token });
    }
    const ids = async (path: string) => ((await world.api.get(path, { token: carol.token })).body as { id: string }[]).map((g) => g.id);

    const own = await ids('/api/v1/groups/');
    expect(own.sort()).toEqual([members.id, nobody.id].sort());

    const shareable = await ids('/api/v1/groups/?share=true');
    expect(shareable).toEqual(expect.arrayContaining([members.id, anyone.id, noShareKey.id]));
    expect(shareable).not.toContain(nobody.id);
    expect(shareable).not.toContain(membersOther.id);

    const notShareable = await ids('/api/v1/groups/?share=false');
    expect(notShareable).toContain(nobody.id);
    expect(notShareable).not.toContain(members.id);
    expect(notShareable).not.toContain(anyone.id);
  });

  it('refuses pending users and anonymous callers (401) and a bad query (422)', async () => {
    expect((await world.api.get('/api/v1/groups/', { token: world.pending.token })).status).toBe(401);
    expect((await world.api.get('/api/v1/groups/')).status).toBe(401);
    const bad = await world.api.get('/api/v1/groups/?share=maybe', { token: world.alice.token });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'share']);
  });
});

describe('group permissions', () => {
  it("feed the members' effective permissions (GET /api/v1/users/permissions)", async () => {
    const dave = await addUser(world.api, world.admin, 'user', 'Dave Perms');
    const before = await world.api.get('/api/v1/users/permissions', { token: dave.token });
    expect(before.status).toBe(200);
    expect(before.body.features.api_keys).toBe(false);
    expect(before.body.workspace.tools).toBe(false);

    const group = await createGroup({ permissions: { features: { api_keys: true }, workspace: { tools: true } } });
    await world.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [dave.id] }, { token: world.admin.token });
    const after = await world.api.get('/api/v1/users/permissions', { token: dave.token });
    expect(after.body.features.api_keys).toBe(true);
    expect(after.body.workspace.tools).toBe(true);
    expect(after.body.chat.call).toBe(true);

    await world.api.post(`/api/v1/groups/id/${group.id}/update`, { name: 'n', description: 'd', permissions: { features: { api_keys: false } } }, { token: world.admin.token });
    const updated = await world.api.get('/api/v1/users/permissions', { token: dave.token });
    expect(updated.body.features.api_keys).toBe(false);
    expect(updated.body.workspace.tools).toBe(false);

    await world.api.post(`/api/v1/groups/id/${group.id}/update`, { name: 'n', description: 'd', permissions: { workspace: { tools: true } } }, { token: world.admin.token });
    await world.api.post(`/api/v1/groups/id/${group.id}/users/remove`, { user_ids: [dave.id] }, { token: world.admin.token });
    expect((await world.api.get('/api/v1/users/permissions', { token: dave.token })).body.workspace.tools).toBe(false);
  });
});

describe('GET /api/v1/groups/id/{id}/preview', () => {
  it("shows the group, its permissions and what its grants reach", async () => {
    const group = await createGroup({ permissions: { workspace: { tools: true } } });
    const access = world.server.parley.services.access;
    const catalog = [
      { id: 'tool-public', name: 'Public', user_id: world.admin.id },
      { id: 'tool-group', name: 'Group', user_id: world.admin.id },
      { id: 'tool-group-write', name: 'Group write', user_id: world.admin.id },
      { id: 'tool-private', name: 'Private', user_id: world.admin.id },
    ];
    access.registerPreviewCatalog('tools', { resourceType: 'tool', list: async () => catalog });
    const db = world.server.parley.core.db;
    await access.replaceGrants('tool', 'tool-public', [{ principal_type: 'user', principal_id: '*', permission: 'read' }], db);
    await access.replaceGrants('tool', 'tool-group', [{ principal_type: 'group', principal_id: group.id, permission: 'read' }], db);
    await access.replaceGrants('tool', 'tool-group-write', [{ principal_type: 'group', principal_id: group.id, permission: 'write' }], db);
    await access.replaceGrants('tool', 'tool-private', [{ principal_type: 'user', principal_id: world.alice.id, permission: 'read' }], db);

    const res = await world.api.get(`/api/v1/groups/id/${group.id}/preview`, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      group: { id: group.id, name: group.name },
      models: { items: [], total: 0 },
      knowledge: { items: [], total: 0 },
      tools: {
        items: [
          { id: 'tool-public', name: 'Public' },
          { id: 'tool-group', name: 'Group' },
          { id: 'tool-group-write', name: 'Group write' },
        ],
        total: 4,
      },
      permissions: { workspace: { tools: true } },
    });
  });
});
