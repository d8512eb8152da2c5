import { beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../../helpers/server.js';
import { addUser, type Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { expectNoVariables, plantVariables, USER_INFO_KEYS, USER_MODEL_KEYS } from './fixtures.js';

const USER_NOT_FOUND = "We could not find what you're looking for :/";
const ACTION_PROHIBITED = 'The requested action has been restricted as a security measure.';
const ACCESS_PROHIBITED = 'You do not have permission to access this resource. Please contact your administrator for assistance.';
const EMAIL_TAKEN =
  'Uh-oh! This email is already registered. Sign in with your existing account or choose another email to start anew.';

describe('one user by id, admin edits and deletion', () => {
  const clock = new TestClock();
  const world = useServer({
    clock,
    admin: 'Primary Admin',
    users: { otherAdmin: ['admin', 'Second Admin'], member: ['user', 'Member Moe'], pending: ['pending', 'Pending Pam'] },
    freshEvents: true,
  });
  beforeAll(async () => {
    await plantVariables(world.server, world.member.id, { api_token: 'top-secret' });
  });

  const get = (path: string, account: Account | null) => world.api.get(path, { token: account?.token ?? null });

  describe('GET /api/v1/users/{id} (admin)', () => {
    it('answers the record with its groups and whether the user is online', async () => {
      const admin = await world.record(world.admin);
      const group = await world.server.parley.services.groups.create(admin, { name: 'Crew', description: 'c' });
      await world.server.parley.services.groups.addMembers(null, group.id, [world.member.id]);
      const res = await get(`/api/v1/users/${world.member.id}`, world.admin);
      expect(res.status, res.text).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual([...USER_MODEL_KEYS, 'groups', 'is_active'].sort());
      expect(res.body).toMatchObject({ id: world.member.id, name: 'Member Moe', role: 'user', groups: [{ id: group.id, name: 'Crew' }], is_active: true });
      expectNoVariables(res.body);
      expect(res.text).not.toContain('top-secret');
    });

    it('answers 400 for an unknown id and 401 for non-admins', async () => {
      const res = await get('/api/v1/users/no-such-user', world.admin);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: USER_NOT_FOUND });
      for (const account of [world.member, world.pending, null]) expect((await get(`/api/v1/users/${world.member.id}`, account)).status).toBe(401);
    });
  });

  describe('GET /api/v1/users/{id}/info and /active (verified)', () => {
    it('answers the public card with groups and online state', async () => {
      const res = await get(`/api/v1/users/${world.admin.id}/info`, world.member);
      expect(res.status, res.text).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(USER_INFO_KEYS);
      expect(res.body).toMatchObject({ id: world.admin.id, name: 'Primary Admin', email: world.admin.email, role: 'admin', groups: [], is_active: true });
    });

    it('answers 400 for an unknown id and 401 for pending users', async () => {
      const res = await get('/api/v1/users/nobody/info', world.member);
      expect(res.status).toBe(400);
      expect(res.body.detail).toBe(USER_NOT_FOUND);
      expect((await get(`/api/v1/users/${world.admin.id}/info`, world.pending)).status).toBe(401);
    });

    it('says a user is active while seen in the last three minutes; unknown users are inactive', async () => {
      expect((await get(`/api/v1/users/${world.pending.id}/active`, world.member)).body).toEqual({ active: true });
      expect((await get('/api/v1/users/nobody/active', world.member)).body).toEqual({ active: false });
      clock.advance(181);
      expect((await get(`/api/v1/users/${world.pending.id}/active`, world.member)).body).toEqual({ active: false });
      // The caller's own request counts as activity.
      expect((await get(`/api/v1/users/${world.member.id}/active`, world.member)).body).toEqual({ active: true });
      expect((await get(`/api/v1/users/${world.member.id}/active`, world.pending)).status).toBe(401);
    });
  });

  describe('GET /api/v1/users/{id}/groups, /groups', () => {
    it('lists group records for admins and for the caller', async () => {
      const byAdmin = await get(`/api/v1/users/${world.member.id}/groups`, world.admin);
      expect(byAdmin.status, byAdmin.text).toBe(200);
      expect(byAdmin.body).toHaveLength(1);
      expect(Object.keys(byAdmin.body[0]).sort()).toEqual(
        ['id', 'user_id', 'name', 'description', 'data', 'meta', 'permissions', 'created_at', 'updated_at'].sort(),
      );
      expect(byAdmin.body[0]).toMatchObject({ name: 'Crew', description: 'c', user_id: world.admin.id });
      const own = await get('/api/v1/users/groups', world.member);
      expect(own.body).toEqual(byAdmin.body);
      expect((await get('/api/v1/users/groups', world.admin)).body).toEqual([]);
      expect((await get(`/api/v1/users/${world.member.id}/groups`, world.member)).status).toBe(401);
      expect((await get('/api/v1/users/groups', world.pending)).status).toBe(401);
    });
  });

  describe('GET /api/v1/users/{id}/oauth/sessions (admin)', () => {
    it('answers 400 when the user has no OAuth session, and the sessions without tokens otherwise', async () => {
      const none = await get(`/api/v1/users/${world.member.id}/oauth/sessions`, world.admin);
      expect(none.status).toBe(400);
      expect(none.body.detail).toBe(USER_NOT_FOUND);
      const now = clock.now();
      await world.server.parley.core.db
        .insertInto('oauth_session')
        .values({ id: 'sess-1', user_id: world.member.id, provider: 'google', token: 'encrypted-token', expires_at: now + 3600, created_at: now, updated_at: now })
        .execute();
      const res = await get(`/api/v1/users/${world.member.id}/oauth/sessions`, world.admin);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual([{ id: 'sess-1', user_id: world.member.id, provider: 'google', expires_at: now + 3600, created_at: now, updated_at: now }]);
      expect((await get(`/api/v1/users/${world.member.id}/oauth/sessions`, world.member)).status).toBe(401);
    });
  });

  describe('GET /api/v1/users/{id}/preview (admin)', () => {
    it('answers who the user is, their groups, and the resources they reach', async () => {
      const res = await get(`/api/v1/users/${world.member.id}/preview`, world.admin);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({
        user: { id: world.member.id, name: 'Member Moe' },
        groups: [{ id: expect.any(String), name: 'Crew' }],
        models: { items: [], total: 0 },
        knowledge: { items: [], total: 0 },
        tools: { items: [], total: 0 },
      });
    });

    it('answers 404 for an unknown id and 401 for non-admins', async () => {
      const res = await get('/api/v1/users/nobody/preview', world.admin);
      expect(res.status).toBe(404);
      expect(res.body.detail).toBe(USER_NOT_FOUND);
      expect((await get(`/api/v1/users/${world.member.id}/preview`, world.member)).status).toBe(401);
    });
  });

  describe('POST /api/v1/users/{id}/update (admin)', () => {
    const update = (id: string, body: unknown, account: Account | null = world.admin) =>
      world.api.post(`/api/v1/users/${id}/update`, body, { token: account?.token ?? null });

    it('changes name and e-mail (stored lower-case, usable to sign in) and answers the record', async () => {
      const target = await addUser(world.api, world.admin, 'user', 'Renamed Rita');
      world.events.length = 0;
      const res = await update(target.id, { name: 'Rita R', email: 'Rita.New@Example.com' });
      expect(res.status, res.text).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(USER_MODEL_KEYS);
      expect(res.body).toMatchObject({ id: target.id, name: 'Rita R', email: 'rita.new@example.com', role: 'user' });
      const signin = await world.api.post('/api/v1/auths/signin', { email: 'rita.new@example.com', password: target.password });
      expect(signin.status, signin.text).toBe(200);
      const updated = world.events.filter((e) => e.event === 'user.updated');
      expect(updated).toHaveLength(1);
      expect(updated[0]).toMatchObject({
        actor: { id: world.admin.id, role: 'admin' },
        subject: { type: 'user', id: target.id },
        source: 'api',
        data: { updated_fields: ['name', 'email'] },
      });
    });

    it('changes the role and says so with user.role_updated', async () => {
      const target = await addUser(world.api, world.admin, 'pending', 'Waiting Will');
      world.events.length = 0;
      const res = await update(target.id, { role: 'user' });
      expect(res.status, res.text).toBe(200);
      expect(res.body.role).toBe('user');
      expect(world.events.map((e) => e.event)).toEqual(['user.role_updated']);
      expect(world.events[0]).toMatchObject({ subject: { type: 'user', id: target.id }, data: { role: 'user' } });
      expect((await get('/api/v1/users/search', target)).status).toBe(200);
    });

    it('sets a new password: the old one stops working, auth.password_changed is published', async () => {
      const target = await addUser(world.api, world.admin, 'user', 'Password Paul');
      world.events.length = 0;
      const res = await update(target.id, { password: 'brand-New-pw1' });
      expect(res.status, res.text).toBe(200);
      const published = [...world.events];
      expect((await world.api.post('/api/v1/auths/signin', { email: target.email, password: target.password })).status).toBe(400);
      expect((await world.api.post('/api/v1/auths/signin', { email: target.email, password: 'brand-New-pw1' })).status).toBe(200);
      expect(published.map((e) => e.event)).toEqual(['user.updated', 'auth.password_changed']);
      expect(published[1]).toMatchObject({ source: 'admin', actor: { id: world.admin.id }, subject: { type: 'user', id: target.id } });
      expect(JSON.stringify(published)).not.toContain('brand-New-pw1');
    });

    it('refuses a password over 72 bytes with 400 and changes nothing', async () => {
      const res = await update(world.member.id, { name: 'Changed', password: 'x'.repeat(73) });
      const published = [...world.events];
      expect(res.status).toBe(400);
      expect(res.body.detail).toBe('Uh-oh! The password you entered is too long. Please make sure your password is less than 72 bytes long.');
      expect((await world.record(world.member)).name).toBe('Member Moe');
      expect((await world.api.post('/api/v1/auths/signin', { email: world.member.email, password: world.member.password })).status).toBe(200);
      expect(published).toEqual([]);
    });

    it('refuses an e-mail address another account has, in any case, with 400', async () => {
      const res = await update(world.member.id, { email: world.otherAdmin.email.toUpperCase(), name: 'Changed' });
      expect(res.status).toBe(400);
      expect(res.body.detail).toBe(EMAIL_TAKEN);
      const stored = await world.record(world.member);
      expect(stored.email).toBe(world.member.email);
      expect(stored.name).toBe('Member Moe');
    });

    it('checks the profile image URL like the reference (422 for anything but known paths, http(s) and raster data URIs)', async () => {
      for (const bad of ['javascript:alert(1)', 'data:image/svg+xml;base64,PHN2Zz4=', '/etc/passwd', '//evil.example/x.png']) {
        const res = await update(world.member.id, { profile_image_url: bad });
        expect(res.status, bad).toBe(422);
        expect(res.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'profile_image_url'], input: bad });
        expect(res.body.detail[0].msg).toMatch(/^Value error, Invalid profile image URL/);
      }
      for (const good of ['https://cdn.example.com/a.png', '/user.png', `/api/v1/users/${world.member.id}/profile/image`, 'data:image/png;base64,iVBORw0KGgo=']) {
        const res = await update(world.member.id, { profile_image_url: good });
        expect(res.status, good).toBe(200);
        expect(res.body.profile_image_url).toBe(good);
      }
    });

    it('validates the form with 422', async () => {
      const res = await update(world.member.id, { name: 42 });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ type: 'string_type', loc: ['body', 'name'] });
    });

    it('answers 400 for an unknown id and 401 for non-admins', async () => {
      const res = await update('nobody', { name: 'x' });
      expect(res.status).toBe(400);
      expect(res.body.detail).toBe(USER_NOT_FOUND);
      for (const account of [world.member, world.pending, null]) expect((await update(world.member.id, { name: 'x' }, account)).status).toBe(401);
      expect((await world.record(world.member)).name).toBe('Member Moe');
    });

    it('protects the primary admin: only they may change their record, and never their role', async () => {
      const byOther = await update(world.admin.id, { name: 'Hijacked' }, world.otherAdmin);
      expect(byOther.status).toBe(403);
      expect(byOther.body.detail).toBe(ACTION_PROHIBITED);
      const demote = await update(world.admin.id, { role: 'user' });
      expect(demote.status).toBe(403);
      expect(demote.body.detail).toBe(ACTION_PROHIBITED);
      const stored = await world.record(world.admin);
      expect(stored).toMatchObject({ name: 'Primary Admin', role: 'admin' });
      const own = await update(world.admin.id, { name: 'Primary Renamed', role: 'admin' });
      expect(own.status, own.text).toBe(200);
      expect(own.body).toMatchObject({ name: 'Primary Renamed', role: 'admin' });
      await update(world.admin.id, { name: 'Primary Admin' });
    });

    it('never answers the variables', async () => {
      const res = await update(world.member.id, {});
      expect(res.status).toBe(200);
      expectNoVariables(res.body);
      expect(res.text).not.toContain('top-secret');
    });
  });

  describe('DELETE /api/v1/users/{id} (admin)', () => {
    it('deletes the user with their credentials, memberships, sessions and access grants', async () => {
      const target = await addUser(world.api, world.admin, 'user', 'Doomed Dan');
      const admin = await world.record(world.admin);
      const group = await world.server.parley.services.groups.create(admin, { name: 'Doomed group', description: '' });
      await world.server.parley.services.groups.addMembers(null, group.id, [target.id]);
      const { db } = world.server.parley.core;
      const now = clock.now();
      await db
        .insertInto('access_grant')
        .values({ id: 'grant-1', resource_type: 'model', resource_id: 'm1', principal_type: 'user', principal_id: target.id, permission: 'read', created_at: now })
        .execute();
      await db
        .insertInto('oauth_session')
        .values({ id: 'sess-dan', user_id: target.id, provider: 'google', token: 't', expires_at: now + 60, created_at: now, updated_at: now })
        .execute();
      expect((await get('/api/v1/users/search', target)).status).toBe(200);

      world.events.length = 0;
      const res = await world.api.delete(`/api/v1/users/${target.id}`, { token: world.otherAdmin.token });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toBe(true);
      const published = [...world.events];

      const session = await get('/api/v1/users/search', target);
      expect(session.status).toBe(401);
      expect(session.body.detail).toBe('Your session has expired or the token is invalid. Please sign in again.');
      expect((await world.api.post('/api/v1/auths/signin', { email: target.email, password: target.password })).status).toBe(400);
      expect((await get(`/api/v1/users/${target.id}`, world.admin)).status).toBe(400);
      const left = async (table: 'auth' | 'group_member' | 'access_grant' | 'oauth_session', column: 'id' | 'user_id' | 'principal_id') =>
        (await db.selectFrom(table).selectAll().where(column as never, '=', target.id as never).execute()).length;
      expect(await left('auth', 'id')).toBe(0);
      expect(await left('group_member', 'user_id')).toBe(0);
      expect(await left('access_grant', 'principal_id')).toBe(0);
      expect(await left('oauth_session', 'user_id')).toBe(0);
      expect(published.map((e) => e.event)).toEqual(['user.deleted']);
      expect(published[0]).toMatchObject({ actor: { id: world.otherAdmin.id }, subject: { type: 'user', id: target.id }, source: 'api' });
    });

    it('refuses to delete the primary admin or oneself with 403', async () => {
      const primaryRes = await world.api.delete(`/api/v1/users/${world.admin.id}`, { token: world.otherAdmin.token });
      expect(primaryRes.status).toBe(403);
      expect(primaryRes.body.detail).toBe(ACTION_PROHIBITED);
      const self = await world.api.delete(`/api/v1/users/${world.otherAdmin.id}`, { token: world.otherAdmin.token });
      expect(self.status).toBe(403);
      expect(self.body.detail).toBe(ACTION_PROHIBITED);
      expect(await world.server.parley.services.users.byId(world.otherAdmin.id)).not.toBeNull();
      expect(world.events).toEqual([]);
    });

    it('answers true for an unknown id without an event, as the reference', async () => {
      const res = await world.api.delete('/api/v1/users/nobody', { token: world.admin.token });
      expect(res.status).toBe(200);
      expect(res.body).toBe(true);
      expect(world.events).toEqual([]);
    });

    it('answers 401 to non-admins and keeps the user', async () => {
      for (const account of [world.member, world.pending]) {
        const res = await world.api.delete(`/api/v1/users/${world.otherAdmin.id}`, { token: account.token });
        expect(res.status).toBe(401);
        expect(res.body.detail).toBe(ACCESS_PROHIBITED);
      }
      expect(await world.server.parley.services.users.byId(world.otherAdmin.id)).not.toBeNull();
    });
  });
});
