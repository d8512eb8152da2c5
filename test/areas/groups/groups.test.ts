import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EventPayload } from '../../../src/core/events/publish.js';
import { ERROR } from '../../../src/core/http/errors.js';
import { destroyServer, startServer, type TestServer } from '../../helpers/server.js';
import { type Account, addUser, signup } from '../../helpers/users.js';

let server: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
let pending: Account;
const events: EventPayload[] = [];

beforeAll(async () => {
  server = await startServer();
  server.parley.core.events.subscribe((event) => {
    events.push(event);
  });
  admin = await signup(server.api, 'Group Admin');
  alice = await addUser(server.api, admin, 'user', 'Alice Member');
  bob = await addUser(server.api, admin, 'user', 'Bob Member');
  pending = await addUser(server.api, admin, 'pending', 'Pending Member');
});

afterAll(async () => {
  await destroyServer(server);
});

beforeEach(() => {
  events.length = 0;
});

const api = () => server.api;

async function createGroup(body: Record<string, unknown> = {}) {
  const res = await api().post('/api/v1/groups/create', { name: `Group ${Math.random().toString(36).slice(2, 8)}`, description: 'd', ...body }, { token: admin.token });
  expect(res.status, res.text).toBe(200);
  events.length = 0;
  return res.body;
}

const NOT_FOUND = { detail: ERROR.NOT_FOUND };
const UNKNOWN = '00000000-0000-0000-0000-000000000000';

describe('POST /api/v1/groups/create', () => {
  it('creates a group with the default share setting and publishes group.created', async () => {
    const res = await api().post('/api/v1/groups/create', { name: 'Engineers', description: 'Build things' }, { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'Engineers',
      description: 'Build things',
      user_id: admin.id,
      data: { config: { share: 'members' } },
      meta: null,
      permissions: null,
      member_count: 0,
    });
    expect(typeof res.body.id).toBe('string');
    expect(res.body.created_at).toBe(res.body.updated_at);
    expect(events.map((e) => e.event)).toEqual(['group.created']);
    expect(events[0]).toMatchObject({ actor: { id: admin.id }, subject: { type: 'group', id: res.body.id }, data: { name: 'Engineers' }, source: 'api' });
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
    const before = await api().get('/api/v1/groups/', { token: admin.token });
    const res = await api().post('/api/v1/groups/create', { name: 'x', description: 'y' }, { token: alice.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: ERROR.ACCESS_PROHIBITED });
    expect((await api().post('/api/v1/groups/create', { name: 'x', description: 'y' })).status).toBe(401);

    const missing = await api().post('/api/v1/groups/create', { name: 'x' }, { token: admin.token });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'description'] });
    const wrong = await api().post('/api/v1/groups/create', { name: 5, description: 'y', permissions: [] }, { token: admin.token });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(expect.arrayContaining([['body', 'name'], ['body', 'permissions']]));

    const after = await api().get('/api/v1/groups/', { token: admin.token });
    expect(after.body.length).toBe(before.body.length);
    expect(events).toEqual([]);
  });
});

describe('GET /api/v1/groups/id/{id}, /info, /export', () => {
  it('returns the group, its public info and its export with member ids', async () => {
    const group = await createGroup({ permissions: { chat: { call: false } } });
    await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [alice.id, bob.id] }, { token: admin.token });

    const full = await api().get(`/api/v1/groups/id/${group.id}`, { token: admin.token });
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({ id: group.id, name: group.name, permissions: { chat: { call: false } }, member_count: 2 });

    const info = await api().get(`/api/v1/groups/id/${group.id}/info`, { token: alice.token });
    expect(info.status).toBe(200);
    expect(Object.keys(info.body).sort()).toEqual(['created_at', 'description', 'id', 'member_count', 'name', 'updated_at', 'user_id']);
    expect(info.body.member_count).toBe(2);

    const exported = await api().get(`/api/v1/groups/id/${group.id}/export`, { token: admin.token });
    expect(exported.status).toBe(200);
    expect(exported.body.user_ids.sort()).toEqual([alice.id, bob.id].sort());
    expect(exported.body.member_count).toBe(2);
    expect(exported.body.permissions).toEqual({ chat: { call: false } });
  });

  it('answers 404 for unknown ids and 401 for the wrong role', async () => {
    for (const path of [`/api/v1/groups/id/${UNKNOWN}`, `/api/v1/groups/id/${UNKNOWN}/info`, `/api/v1/groups/id/${UNKNOWN}/export`, `/api/v1/groups/id/${UNKNOWN}/preview`]) {
      const res = await api().get(path, { token: admin.token });
      expect(res.status, path).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    const group = await createGroup();
    expect((await api().get(`/api/v1/groups/id/${group.id}`, { token: alice.token })).status).toBe(401);
    expect((await api().get(`/api/v1/groups/id/${group.id}/export`, { token: alice.token })).status).toBe(401);
    expect((await api().get(`/api/v1/groups/id/${group.id}/preview`, { token: alice.token })).status).toBe(401);
    expect((await api().get(`/api/v1/groups/id/${group.id}/info`, { token: pending.token })).status).toBe(401);
    expect((await api().get(`/api/v1/groups/id/${group.id}/info`)).status).toBe(401);
  });
});

describe('members', () => {
  it('adds existing users (skipping unknown ids and duplicates) and publishes group.member_added', async () => {
    const group = await createGroup();
    const res = await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [alice.id, UNKNOWN, alice.id] }, { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body.member_count).toBe(1);
    expect(res.body.updated_at).toBeGreaterThanOrEqual(group.updated_at);
    expect(events.map((e) => e.event)).toEqual(['group.member_added']);
    expect(events[0]).toMatchObject({ subject: { type: 'group', id: group.id }, data: { user_ids: [alice.id] } });

    const again = await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [alice.id, bob.id] }, { token: admin.token });
    expect(again.body.member_count).toBe(2);
    const empty = await api().post(`/api/v1/groups/id/${group.id}/users/add`, {}, { token: admin.token });
    expect(empty.status).toBe(200);
    expect(empty.body.member_count).toBe(2);
  });

  it('lists members as UserInfoResponse', async () => {
    const group = await createGroup();
    await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [alice.id, bob.id] }, { token: admin.token });
    const res = await api().post(`/api/v1/groups/id/${group.id}/users`, undefined, { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body.map((u: { id: string }) => u.id).sort()).toEqual([alice.id, bob.id].sort());
    const member = res.body.find((u: { id: string }) => u.id === alice.id);
    expect(member).toEqual({
      id: alice.id,
      name: alice.name,
      email: alice.email,
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
    await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [alice.id, bob.id] }, { token: admin.token });
    events.length = 0;
    const res = await api().post(`/api/v1/groups/id/${group.id}/users/remove`, { user_ids: [alice.id] }, { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body.member_count).toBe(1);
    expect(events.map((e) => e.event)).toEqual(['group.member_removed']);
    expect(events[0].data).toEqual({ user_ids: [alice.id] });
    const exported = await api().get(`/api/v1/groups/id/${group.id}/export`, { token: admin.token });
    expect(exported.body.user_ids).toEqual([bob.id]);
  });

  it('answers 404 for an unknown group, 401 for non-admins and 422 for a bad form, changing nothing', async () => {
    for (const path of ['users/add', 'users/remove']) {
      const res = await api().post(`/api/v1/groups/id/${UNKNOWN}/${path}`, { user_ids: [alice.id] }, { token: admin.token });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    expect((await api().post(`/api/v1/groups/id/${UNKNOWN}/users`, undefined, { token: admin.token })).status).toBe(404);
    const group = await createGroup();
    expect((await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [alice.id] }, { token: alice.token })).status).toBe(401);
    expect((await api().post(`/api/v1/groups/id/${group.id}/users/remove`, { user_ids: [alice.id] }, { token: alice.token })).status).toBe(401);
    expect((await api().post(`/api/v1/groups/id/${group.id}/users`, undefined, { token: alice.token })).status).toBe(401);
    const bad = await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: 'x' }, { token: admin.token });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'user_ids']);
    expect((await api().get(`/api/v1/groups/id/${group.id}`, { token: admin.token })).body.member_count).toBe(0);
    expect(events.filter((e) => e.event.startsWith('group.member'))).toEqual([]);
  });
});

describe('POST /api/v1/groups/id/{id}/update', () => {
  it('replaces name and description, and permissions/data only when given', async () => {
    const group = await createGroup({ permissions: { features: { notes: true } } });
    const res = await api().post(`/api/v1/groups/id/${group.id}/update`, { name: 'Renamed', description: 'New' }, { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Renamed', description: 'New', permissions: { features: { notes: true } }, data: group.data });
    expect(events.map((e) => e.event)).toEqual(['group.updated']);
    expect(events[0]).toMatchObject({ subject: { type: 'group', id: group.id }, data: { name: 'Renamed' } });

    const next = await api().post(
      `/api/v1/groups/id/${group.id}/update`,
      { name: 'Renamed', description: 'New', permissions: { chat: { call: false } }, data: { config: { share: true } } },
      { token: admin.token },
    );
    expect(next.body.permissions).toEqual({ chat: { call: false } });
    expect(next.body.data).toEqual({ config: { share: true } });
  });

  it('answers 404 for an unknown group, 401 for non-admins, 422 for a bad form', async () => {
    const res = await api().post(`/api/v1/groups/id/${UNKNOWN}/update`, { name: 'x', description: 'y' }, { token: admin.token });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(NOT_FOUND);
    const group = await createGroup();
    expect((await api().post(`/api/v1/groups/id/${group.id}/update`, { name: 'x', description: 'y' }, { token: alice.token })).status).toBe(401);
    expect((await api().post(`/api/v1/groups/id/${group.id}/update`, { name: 'x' }, { token: admin.token })).status).toBe(422);
    expect((await api().get(`/api/v1/groups/id/${group.id}`, { token: admin.token })).body.name).toBe(group.name);
    expect(events.filter((e) => e.event === 'group.updated')).toEqual([]);
  });
});

describe('DELETE /api/v1/groups/id/{id}/delete', () => {
  it('deletes the group and its memberships and publishes group.deleted', async () => {
    const group = await createGroup();
    await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [alice.id] }, { token: admin.token });
    const access = server.parley.services.access;
    await access.grant('tool', `tool-of-${group.id}`, { principal_type: 'group', principal_id: group.id, permission: 'read' });
    events.length = 0;
    expect((await api().delete(`/api/v1/groups/id/${group.id}/delete`, { token: alice.token })).status).toBe(401);
    const res = await api().delete(`/api/v1/groups/id/${group.id}/delete`, { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toBe(true);
    expect(events.map((e) => e.event)).toEqual(['group.deleted']);
    expect(events[0]).toMatchObject({ subject: { type: 'group', id: group.id }, data: {} });
    expect((await api().get(`/api/v1/groups/id/${group.id}`, { token: admin.token })).status).toBe(404);
    const mine = await api().get('/api/v1/groups/', { token: alice.token });
    expect(mine.body.map((g: { id: string }) => g.id)).not.toContain(group.id);
    const grants = await server.parley.services.access.grantsOf('tool', `tool-of-${group.id}`);
    expect(grants).toEqual([]);
    const again = await api().delete(`/api/v1/groups/id/${group.id}/delete`, { token: admin.token });
    expect(again.status).toBe(404);
    expect(again.body).toEqual(NOT_FOUND);
  });
});

describe('GET /api/v1/groups/', () => {
  it('lists every group for admins, newest change first, with member counts', async () => {
    const a = await createGroup();
    const b = await createGroup();
    await api().post(`/api/v1/groups/id/${a.id}/users/add`, { user_ids: [bob.id] }, { token: admin.token });
    const res = await api().get('/api/v1/groups/', { token: admin.token });
    expect(res.status).toBe(200);
    const ids = res.body.map((g: { id: string }) => g.id);
    expect(ids).toEqual(expect.arrayContaining([a.id, b.id]));
    const updated = res.body.map((g: { updated_at: number }) => g.updated_at);
    expect([...updated].sort((x, y) => y - x)).toEqual(updated);
    expect(res.body.find((g: { id: string }) => g.id === a.id).member_count).toBe(1);
    expect((await api().get('/api/v1/groups/?share=true', { token: admin.token })).body.length).toBe(res.body.length);
  });

  it("shows users their own groups, or with ?share the groups they may share with", async () => {
    const carol = await addUser(api(), admin, 'user', 'Carol Share');
    const members = await createGroup({ data: { config: { share: 'members' } } });
    const anyone = await createGroup({ data: { config: { share: true } } });
    // Creation always writes a share setting; an update that replaces `data` can leave it out.
    const noShareKey = await createGroup();
    await api().post(`/api/v1/groups/id/${noShareKey.id}/update`, { name: 'n', description: 'd', data: { other: 1 } }, { token: admin.token });
    const nobody = await createGroup({ data: { config: { share: false } } });
    const membersOther = await createGroup({ data: { config: { share: 'members' } } });
    for (const g of [members, nobody]) {
      await api().post(`/api/v1/groups/id/${g.id}/users/add`, { user_ids: [carol.id] }, { token: admin.token });
    }
    const ids = async (path: string) => ((await api().get(path, { token: carol.token })).body as { id: string }[]).map((g) => g.id);

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
    expect((await api().get('/api/v1/groups/', { token: pending.token })).status).toBe(401);
    expect((await api().get('/api/v1/groups/')).status).toBe(401);
    const bad = await api().get('/api/v1/groups/?share=maybe', { token: alice.token });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'share']);
  });
});

describe('group permissions', () => {
  it("feed the members' effective permissions (GET /api/v1/users/permissions)", async () => {
    const dave = await addUser(api(), admin, 'user', 'Dave Perms');
    const before = await api().get('/api/v1/users/permissions', { token: dave.token });
    expect(before.status).toBe(200);
    expect(before.body.features.api_keys).toBe(false);
    expect(before.body.workspace.tools).toBe(false);

    const group = await createGroup({ permissions: { features: { api_keys: true }, workspace: { tools: true } } });
    await api().post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [dave.id] }, { token: admin.token });
    const after = await api().get('/api/v1/users/permissions', { token: dave.token });
    expect(after.body.features.api_keys).toBe(true);
    expect(after.body.workspace.tools).toBe(true);
    expect(after.body.chat.call).toBe(true);

    await api().post(`/api/v1/groups/id/${group.id}/update`, { name: 'n', description: 'd', permissions: { features: { api_keys: false } } }, { token: admin.token });
    const updated = await api().get('/api/v1/users/permissions', { token: dave.token });
    expect(updated.body.features.api_keys).toBe(false);
    expect(updated.body.workspace.tools).toBe(false);

    await api().post(`/api/v1/groups/id/${group.id}/update`, { name: 'n', description: 'd', permissions: { workspace: { tools: true } } }, { token: admin.token });
    await api().post(`/api/v1/groups/id/${group.id}/users/remove`, { user_ids: [dave.id] }, { token: admin.token });
    expect((await api().get('/api/v1/users/permissions', { token: dave.token })).body.workspace.tools).toBe(false);
  });
});

describe('GET /api/v1/groups/id/{id}/preview', () => {
  it("shows the group, its permissions and what its grants reach", async () => {
    const group = await createGroup({ permissions: { workspace: { tools: true } } });
    const access = server.parley.services.access;
    const catalog = [
      { id: 'tool-public', name: 'Public', user_id: admin.id },
      { id: 'tool-group', name: 'Group', user_id: admin.id },
      { id: 'tool-group-write', name: 'Group write', user_id: admin.id },
      { id: 'tool-private', name: 'Private', user_id: admin.id },
    ];
    access.registerPreviewCatalog('tools', { resourceType: 'tool', list: async () => catalog });
    const db = server.parley.core.db;
    await access.replaceGrants('tool', 'tool-public', [{ principal_type: 'user', principal_id: '*', permission: 'read' }], db);
    await access.replaceGrants('tool', 'tool-group', [{ principal_type: 'group', principal_id: group.id, permission: 'read' }], db);
    await access.replaceGrants('tool', 'tool-group-write', [{ principal_type: 'group', principal_id: group.id, permission: 'write' }], db);
    await access.replaceGrants('tool', 'tool-private', [{ principal_type: 'user', principal_id: alice.id, permission: 'read' }], db);

    const res = await api().get(`/api/v1/groups/id/${group.id}/preview`, { token: admin.token });
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
