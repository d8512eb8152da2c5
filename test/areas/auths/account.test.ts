import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventPayload } from '../../../src/core/events/publish.js';
import { destroyServer, startServer, TestClock, type TestServer } from '../../helpers/server.js';
import { addUser, signup, type Account } from '../../helpers/users.js';

describe('the signed-in user’s own account', () => {
  let server: TestServer;
  let admin: Account;
  let member: Account;
  let pending: Account;
  const events: EventPayload[] = [];

  beforeAll(async () => {
    // Accounts a second apart: "the first user" is told by creation time, which has one-second resolution.
    const clock = new TestClock();
    server = await startServer({ clock });
    server.parley.core.events.subscribe((event) => {
      events.push(event);
    });
    admin = await signup(server.api, 'Admin');
    clock.advance(1);
    member = await addUser(server.api, admin, 'user', 'Member');
    pending = await addUser(server.api, admin, 'pending', 'Waiting');
  });
  afterAll(async () => destroyServer(server));

  const since = (mark: number) => events.slice(mark).map((e) => e.event);

  it('updates the profile and reports user.profile_updated', async () => {
    const mark = events.length;
    const res = await server.api.post(
      '/api/v1/auths/update/profile',
      { name: 'Member Renamed', profile_image_url: 'https://example.com/me.png', bio: 'Hello', gender: 'other', date_of_birth: '1990-04-01' },
      { token: member.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: member.id, name: 'Member Renamed', role: 'user', email: member.email, profile_image_url: 'https://example.com/me.png' });
    const me = await server.api.get('/api/v1/auths/', { token: member.token });
    expect(me.body).toMatchObject({ name: 'Member Renamed', bio: 'Hello', gender: 'other', date_of_birth: '1990-04-01', profile_image_url: 'https://example.com/me.png' });
    expect(since(mark)).toEqual(['user.profile_updated']);
    const event = events[mark];
    expect(event.actor).toMatchObject({ id: member.id, type: 'user' });
    expect(event.subject).toEqual({ type: 'user', id: member.id });
    expect(event.data).toEqual({ updated_fields: ['profile_image_url', 'name', 'bio', 'gender', 'date_of_birth'] });
  });

  it('clears optional profile fields that are left out, as the reference', async () => {
    const res = await server.api.post('/api/v1/auths/update/profile', { name: 'Member', profile_image_url: '' }, { token: member.token });
    expect(res.status).toBe(200);
    expect(res.body.profile_image_url).toBe(`/api/v1/users/${member.id}/profile/image`);
    const me = await server.api.get('/api/v1/auths/', { token: member.token });
    expect(me.body).toMatchObject({ bio: null, gender: null, date_of_birth: null });
  });

  it('validates the profile form and changes nothing on failure', async () => {
    const missing = await server.api.post('/api/v1/auths/update/profile', { name: 'X' }, { token: member.token });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'profile_image_url'] });
    const badDate = await server.api.post('/api/v1/auths/update/profile', { name: 'X', profile_image_url: '', date_of_birth: 'yesterday' }, { token: member.token });
    expect(badDate.status).toBe(422);
    const badImage = await server.api.post('/api/v1/auths/update/profile', { name: 'X', profile_image_url: '/etc/passwd' }, { token: member.token });
    expect(badImage.status).toBe(422);
    const me = await server.api.get('/api/v1/auths/', { token: member.token });
    expect(me.body.name).toBe('Member');
  });

  it('refuses profile updates from pending users (401)', async () => {
    const res = await server.api.post('/api/v1/auths/update/profile', { name: 'X', profile_image_url: '' }, { token: pending.token });
    expect(res.status).toBe(401);
  });

  it('stores the timezone, also for pending users, and reports user.updated', async () => {
    const mark = events.length;
    const res = await server.api.post('/api/v1/auths/update/timezone', { timezone: 'Europe/Berlin' }, { token: pending.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: true });
    const row = await server.parley.core.db.selectFrom('user').select('timezone').where('id', '=', pending.id).executeTakeFirstOrThrow();
    expect(row.timezone).toBe('Europe/Berlin');
    expect(since(mark)).toEqual(['user.updated']);
    expect(events[mark].data).toEqual({ updated_fields: ['timezone'] });
    expect(events[mark].subject).toEqual({ type: 'user', id: pending.id });
    const missing = await server.api.post('/api/v1/auths/update/timezone', {}, { token: pending.token });
    expect(missing.status).toBe(422);
  });

  it('refuses a password change with the wrong current password and keeps the old one', async () => {
    const mark = events.length;
    const res = await server.api.post('/api/v1/auths/update/password', { password: 'wrong', new_password: 'new-pw' }, { token: member.token });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('The password provided is incorrect. Please check for typos and try again.');
    expect(since(mark)).toEqual([]);
    const old = await server.api.post('/api/v1/auths/signin', { email: member.email, password: member.password });
    expect(old.status).toBe(200);
  });

  it('changes the password, reporting auth.password_changed', async () => {
    const mark = events.length;
    const res = await server.api.post('/api/v1/auths/update/password', { password: member.password, new_password: 'new-Passw0rd' }, { token: member.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toBe(true);
    expect(since(mark)).toEqual(['auth.password_changed']);
    expect(events[mark].subject).toEqual({ type: 'user', id: member.id });
    const old = await server.api.post('/api/v1/auths/signin', { email: member.email, password: member.password });
    expect(old.status).toBe(400);
    const fresh = await server.api.post('/api/v1/auths/signin', { email: member.email, password: 'new-Passw0rd' });
    expect(fresh.status).toBe(200);
    const tooLong = await server.api.post('/api/v1/auths/update/password', { password: 'new-Passw0rd', new_password: 'x'.repeat(73) }, { token: member.token });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.detail).toMatch(/too long/);
  });

  it('shows the admin’s name and e-mail to pending users, unless hidden', async () => {
    const res = await server.api.get('/api/v1/auths/admin/details', { token: pending.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: 'Admin', email: admin.email });
    const config = (await server.api.get('/api/v1/auths/admin/config', { token: admin.token })).body;
    await server.api.post('/api/v1/auths/admin/config', { ...config, ADMIN_EMAIL: member.email }, { token: admin.token });
    expect((await server.api.get('/api/v1/auths/admin/details', { token: pending.token })).body).toEqual({ name: 'Member', email: member.email });
    await server.api.post('/api/v1/auths/admin/config', { ...config, SHOW_ADMIN_DETAILS: false }, { token: admin.token });
    const hidden = await server.api.get('/api/v1/auths/admin/details', { token: pending.token });
    expect(hidden.status).toBe(400);
    expect(hidden.body.detail).toBe('The requested action has been restricted as a security measure.');
    await server.api.post('/api/v1/auths/admin/config', config, { token: admin.token });
  });
});

describe('events of sign-up, add-user, sign-in and sign-out', () => {
  let server: TestServer;
  const events: EventPayload[] = [];

  beforeAll(async () => {
    server = await startServer();
    server.parley.core.events.subscribe((event) => {
      events.push(event);
    });
  });
  afterAll(async () => destroyServer(server));

  it('emits user.created, auth.signup, auth.login in that order on sign-up', async () => {
    const admin = await signup(server.api, 'First');
    expect(events.map((e) => e.event)).toEqual(['user.created', 'auth.signup', 'auth.login']);
    const [created, signedUp, login] = events;
    expect(created).toMatchObject({ source: 'api', subject: { type: 'user', id: admin.id }, data: { role: 'admin' } });
    expect(created.actor).toMatchObject({ id: admin.id, role: 'admin' });
    expect(signedUp).toMatchObject({ source: 'api', subject: { type: 'user', id: admin.id }, data: { email: admin.email } });
    expect(login).toMatchObject({ source: 'api', subject: { type: 'user', id: admin.id }, data: { auth_method: 'api' } });

    events.length = 0;
    const member = await addUser(server.api, admin, 'user');
    expect(events.map((e) => e.event)).toEqual(['user.created', 'auth.login']);
    expect(events[0]).toMatchObject({ source: 'admin', subject: { type: 'user', id: member.id }, data: { role: 'user' } });
    expect(events[0].actor).toMatchObject({ id: admin.id });
    expect(events[1]).toMatchObject({ source: 'password', data: { auth_method: 'password' } });
    expect(events[1].actor).toMatchObject({ id: member.id });

    events.length = 0;
    await server.api.post('/api/v1/auths/signout', undefined, { cookie: `token=${member.token}` });
    expect(events.map((e) => e.event)).toEqual(['auth.logout']);
    expect(events[0]).toMatchObject({ subject: { type: 'user', id: member.id } });
    expect(events[0].actor).toMatchObject({ id: member.id });

    events.length = 0;
    await server.api.post('/api/v1/auths/signout', undefined, { token: 'garbage' });
    expect(events.map((e) => e.event)).toEqual(['auth.logout']);
    expect(events[0]).toMatchObject({ actor: null, subject: null });

    events.length = 0;
    await server.api.post('/api/v1/auths/signout');
    expect(events).toEqual([]);
  });
});
