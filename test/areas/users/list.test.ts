import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../helpers/world.js';
import { expectNoVariables, plantVariables, USER_INFO_KEYS, USER_MODEL_KEYS } from './fixtures.js';

describe('user lists: GET /users/, /users/all, /users/search', () => {
  let groupId: string;
  const bulkNames: string[] = [];

  const world = useServer({ admin: 'Admin Root', users: { member: ['user', 'Member Mary'], pending: ['pending', 'Pending Pete'] } });

  beforeAll(async () => {
    // 33 more accounts, made straight through the service: enough for a second page.
    const { users } = world.server.parley.services;
    await world.server.parley.core.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 33; i++) {
        const name = `Bulk ${String(i).padStart(2, '0')}`;
        bulkNames.push(name);
        await users.create({ name, email: `bulk${i}@list.test`, role: 'user' }, trx);
      }
    });
    const group = await world.server.parley.services.groups.create(await users.byId(world.admin.id).then((u) => u!), { name: 'Readers', description: '' });
    groupId = group.id;
    await world.server.parley.services.groups.addMembers(null, groupId, [world.member.id, world.pending.id]);
    await plantVariables(world.server, world.member.id, { secret_name: 'hidden' });
  });

  describe('GET /api/v1/users/ (admin)', () => {
    it('answers a page of full records with their group ids, and the total', async () => {
      const res = await world.api.get('/api/v1/users/?order_by=name&direction=desc', { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
      expect(res.body.total).toBe(36);
      expect(res.body.users).toHaveLength(30);
      for (const user of res.body.users) expect(Object.keys(user).sort()).toEqual([...USER_MODEL_KEYS, 'group_ids'].sort());
      const mary = res.body.users.find((u: { id: string }) => u.id === world.member.id);
      expect(mary).toMatchObject({ name: 'Member Mary', email: world.member.email, role: 'user', group_ids: [groupId], settings: null });
      const bulk = res.body.users.find((u: { name: string }) => u.name === 'Bulk 32');
      expect(bulk.group_ids).toEqual([]);
      expect(bulk.profile_image_url).toBe(`/api/v1/users/${bulk.id}/profile/image`);
      expectNoVariables(res.body);
      expect(res.text).not.toContain('hidden');
    });

    it('pages by 30: page 2 holds the rest, page 0 and negative pages mean page 1', async () => {
      const page1 = await world.api.get('/api/v1/users/?order_by=name&direction=asc&page=1', { token: world.admin.token });
      const page2 = await world.api.get('/api/v1/users/?order_by=name&direction=asc&page=2', { token: world.admin.token });
      expect(page2.status).toBe(200);
      expect(page2.body.total).toBe(36);
      expect(page2.body.users).toHaveLength(6);
      const ids = new Set([...page1.body.users, ...page2.body.users].map((u: { id: string }) => u.id));
      expect(ids.size).toBe(36);
      for (const page of ['0', '-3']) {
        const res = await world.api.get(`/api/v1/users/?order_by=name&direction=asc&page=${page}`, { token: world.admin.token });
        expect(res.body.users.map((u: { id: string }) => u.id)).toEqual(page1.body.users.map((u: { id: string }) => u.id));
      }
      const beyond = await world.api.get('/api/v1/users/?page=9', { token: world.admin.token });
      expect(beyond.body).toEqual({ users: [], total: 36 });
    });

    it('orders by name, e-mail or role in either direction', async () => {
      const names = async (direction: string) =>
        (await world.api.get(`/api/v1/users/?order_by=name&direction=${direction}`, { token: world.admin.token })).body.users.map((u: { name: string }) => u.name);
      const asc = await names('asc');
      expect(asc.slice(0, 3)).toEqual(['Admin Root', 'Bulk 00', 'Bulk 01']);
      const desc = await names('desc');
      expect(desc.slice(0, 3)).toEqual(['Pending Pete', 'Member Mary', 'Bulk 32']);

      const emails = (await world.api.get('/api/v1/users/?order_by=email&direction=asc&query=bulk', { token: world.admin.token })).body.users.map(
        (u: { email: string }) => u.email,
      );
      expect(emails).toEqual([...emails].sort());

      const roles = (await world.api.get('/api/v1/users/?order_by=role&direction=asc', { token: world.admin.token })).body.users.map(
        (u: { role: string }) => u.role,
      );
      expect(roles[0]).toBe('admin');
      expect(roles[1]).toBe('pending');
    });

    it('orders members of a group first with order_by=group_id:<id>', async () => {
      const res = await world.api.get(`/api/v1/users/?order_by=group_id:${groupId}&direction=desc`, { token: world.admin.token });
      expect(res.body.users.slice(0, 2).map((u: { name: string }) => u.name)).toEqual(['Member Mary', 'Pending Pete']);
      const asc = await world.api.get(`/api/v1/users/?order_by=group_id:${groupId}&direction=asc&page=2`, { token: world.admin.token });
      expect(asc.body.users.slice(-2).map((u: { name: string }) => u.name)).toEqual(['Member Mary', 'Pending Pete']);
    });

    it('filters by part of the name or e-mail, in any case, and counts the matches', async () => {
      const byName = await world.api.get('/api/v1/users/?query=mEmBeR', { token: world.admin.token });
      expect(byName.body.total).toBe(1);
      expect(byName.body.users[0].id).toBe(world.member.id);
      const byEmail = await world.api.get('/api/v1/users/?query=%40list.test&order_by=name&direction=asc', { token: world.admin.token });
      expect(byEmail.body.total).toBe(33);
      expect(byEmail.body.users[0].name).toBe('Bulk 00');
      const literal = await world.api.get('/api/v1/users/?query=%25', { token: world.admin.token });
      expect(literal.body).toEqual({ users: [], total: 0 });
    });

    it('refuses a non-integer page with 422', async () => {
      const res = await world.api.get('/api/v1/users/?page=two', { token: world.admin.token });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ type: 'int_type', loc: ['query', 'page'] });
    });

    it('answers 401 to users, pending users and anonymous callers', async () => {
      for (const token of [world.member.token, world.pending.token, null]) {
        const res = await world.api.get('/api/v1/users/', { token });
        expect(res.status).toBe(401);
      }
      const res = await world.api.get('/api/v1/users/', { token: world.member.token });
      expect(res.body.detail).toBe('You do not have permission to access this resource. Please contact your administrator for assistance.');
    });
  });

  describe('GET /api/v1/users/all (admin)', () => {
    it('answers every user as a public card, newest first', async () => {
      const res = await world.api.get('/api/v1/users/all', { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
      expect(res.body.total).toBe(36);
      expect(res.body.users).toHaveLength(36);
      for (const user of res.body.users) expect(Object.keys(user).sort()).toEqual(USER_INFO_KEYS);
      expect(res.body.users.find((u: { id: string }) => u.id === world.member.id)).toMatchObject({
        name: 'Member Mary',
        role: 'user',
        groups: [],
        is_active: false,
        bio: null,
      });
      const created = res.body.users.map((u: { id: string }) => u.id);
      const times = await Promise.all(created.map(async (id: string) => (await world.server.parley.services.users.byId(id))!.created_at));
      expect(times).toEqual([...times].sort((a, b) => b - a));
      expectNoVariables(res.body);
    });

    it('answers 401 to non-admins', async () => {
      expect((await world.api.get('/api/v1/users/all', { token: world.member.token })).status).toBe(401);
      expect((await world.api.get('/api/v1/users/all', { token: world.pending.token })).status).toBe(401);
    });
  });

  describe('GET /api/v1/users/search (verified)', () => {
    it('answers cards as the webhook target picker asks for them', async () => {
      const res = await world.api.get('/api/v1/users/search?query=&order_by=name&direction=asc&page=1', { token: world.member.token });
      expect(res.status, res.text).toBe(200);
      expect(res.body.total).toBe(36);
      expect(res.body.users).toHaveLength(30);
      expect(res.body.users[0]).toMatchObject({ id: world.admin.id, name: 'Admin Root', email: world.admin.email });
      for (const user of res.body.users) expect(Object.keys(user).sort()).toEqual(USER_INFO_KEYS);
      expectNoVariables(res.body);
    });

    it('filters and pages like the admin list', async () => {
      const res = await world.api.get('/api/v1/users/search?query=BULK&order_by=name&direction=desc&page=2', { token: world.member.token });
      expect(res.body.total).toBe(33);
      expect(res.body.users.map((u: { name: string }) => u.name)).toEqual(['Bulk 02', 'Bulk 01', 'Bulk 00']);
    });

    it('answers 401 to pending users and anonymous callers', async () => {
      expect((await world.api.get('/api/v1/users/search', { token: world.pending.token })).status).toBe(401);
      expect((await world.api.get('/api/v1/users/search')).status).toBe(401);
    });
  });
});
