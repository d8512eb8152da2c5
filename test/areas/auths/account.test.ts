import { beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../../helpers/server.js';
import { addUser, signup, type Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

describe('the signed-in user’s own account', () => {
  // Accounts a second apart: "the first user" is told by creation time, which has one-second resolution.
  const clock = new TestClock();
  const world = useServer({ clock, admin: 'Admin' });
  let member: Account;
  let pending: Account;
  beforeAll(async () => {
    clock.advance(1);
    member = await addUser(world.api, world.admin, 'user', 'Member');
    pending = await addUser(world.api, world.admin, 'pending', 'Waiting');
  });

  const since = (mark: number) => world.events.slice(mark).map((e) => e.event);

  it('updates the profile and reports user.profile_updated', async () => {
    const mark = world.events.length;
    const res = await world.api.post(
      '/api/v1/auths/update/profile',
      { name: 'Member Renamed', profile_image_url: 'https://example.com/me.png', bio: 'Hello', gender: 'other', date_of_birth: '1990-04-01' },
      { token: member.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: member.id, name: 'Member Renamed', role: 'user', email: member.email, profile_image_url: 'https://example.com/me.png' });
    const me = await world.api.get('/api/v1/auths/', { token: member.token });
    expect(me.body).toMatchObject({ name: 'Member Renamed', bio: 'Hello', gender: 'other', date_of_birth: '1990-04-01', profile_image_url: 'https://example.com/me.png' });
    expect(since(mark)).toEqual(['user.profile_updated']);
    const event = world.events[mark];
    expect(event.actor).toMatchObject({ id: member.id, type: 'user' });
    expect(event.subject).toEqual({ type: 'user', id: member.id });
    expect(event.data).toEqual({ updated_fields: ['profile_image_url', 'name', 'bio', 'gender', 'date_of_birth'] });
  });

  it('clears optional profile fields that are left out, as the reference', async () => {
    const res = await world.api.post('/api/v1/auths/update/profile', { name: 'Member', profile_image_url: '' }, { token: member.token });
    expect(res.status).toBe(200);
    expect(res.body.profile_image_url).toBe(`/api/v1/users/${member.id}/profile/image`);
    const me = await world.api.get('/api/v1/auths/', { token: member.token });
    expect(me.body).toMatchObject({ bio: null, gender: null, date_of_birth: null });
  });

  it('validates the profile form and changes nothing on failure', async () => {
    const missing = await world.api.post('/api/v1/auths/update/profile', { name: 'X' }, { token: member.token });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'profile_image_url'] });
    const badDate = await world.api.post('/api/v1/auths/update/profile', { name: 'X', profile_image_url: '', date_of_birth: 'yesterday' }, { token: member.token });
    expect(badDate.status).toBe(422);
    const badImage = await world.api.post('/api/v1/auths/update/profile', { name: 'X', profile_image_url: '/etc/passwd' }, { token: member.token });
    expect(badImage.status).toBe(422);
    const me = await world.api.get('/api/v1/auths/', { token: member.token });
    expect(me.body.name).toBe('Member');
  });

  it('refuses profile updates from pending users (401)', async () => {
    const res = await world.api.post('/api/v1/auths/update/profile', { name: 'X', profile_image_url: '' }, { token: pending.token });
    expect(res.status).toBe(401);
  });

  it('stores the timezone, also for pending users, and reports user.updated', async () => {
    const mark = world.events.length;
    const res = await world.api.post('/api/v1/auths/update/timezone', { timezone: 'Europe/Berlin' }, { token: pending.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: true });
    const row = await world.server.parley.core.db.selectFrom('user').select('timezone').where('id', '=', pending.id).executeTakeFirstOrThrow();
    expect(row.timezone).toBe('Europe/Berlin');
    expect(since(mark)).toEqual(['user.updated']);
    expect(world.events[mark].data).toEqual({ updated_fields: ['timezone'] });
    expect(world.events[mark].subject).toEqual({ type: 'user', id: pending.id });
    const missing = await world.api.post('/api/v1/auths/update/timezone', {}, { token: pending.token });
    expect(missing.status).toBe(422);
  });

  it('refuses a password change with the wrong current password and keeps the old one', async () => {
    const mark = world.events.length;
    const res = await world.api.post('/api/v1/auths/update/password', { password: 'wrong', new_password: 'new-pw' }, { token: member.token });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('The password provided is incorrect. Please check for typos and try again.');
    expect(since(mark)).toEqual([]);
    const old = await world.api.post('/api/v1/auths/signin', { email: member.email, password: member.password });
    expect(old.status).toBe(200);
  });

  it('changes the password, reporting auth.password_changed', async () => {
    const mark = world.events.length;
    const res = await world.api.post('/api/v1/auths/update/password', { password: member.password, new_password: 'new-Passw0rd' }, { token: member.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toBe(true);
    expect(since(mark)).toEqual(['auth.password_changed']);
    expect(world.events[mark].subject).toEqual({ type: 'user', id: member.id });
    const old = await world.api.post('/api/v1/auths/signin', { email: member.email, password: member.password });
    expect(old.status).toBe(400);
    const fresh = await world.api.post('/api/v1/auths/signin', { email: member.email, password: 'new-Passw0rd' });
    expect(fresh.status).toBe(200);
    const tooLong = await world.api.post('/api/v1/auths/update/password', { password: 'new-Passw0rd', new_password: 'x'.repeat(73) }, { token: member.token });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.detail).toMatch(/too long/);
  });

  it('shows the admin’s name and e-mail to pending users, unless hidden', async () => {
    const res = await world.api.get('/api/v1/auths/admin/details', { token: pending.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: 'Admin', email: world.admin.email });
    const config = (await world.api.get('/api/v1/auths/admin/config', { token: world.admin.token })).body;
    await world.api.post('/api/v1/auths/admin/config', { ...config, ADMIN_EMAIL: member.email }, { token: world.admin.token });
    expect((await world.api.get('/api/v1/auths/admin/details', { token: pending.token })).body).toEqual({ name: 'Member', email: member.email });
    await world.api.post('/api/v1/auths/admin/config', { ...config, SHOW_ADMIN_DETAILS: false }, { token: world.admin.token });
    const hidden = await world.api.get('/api/v1/auths/admin/details', { token: pending.token });
    expect(hidden.status).toBe(400);
    expect(hidden.body.detail).toBe('The requested action has been restricted as a security measure.');
    await world.api.post('/api/v1/auths/admin/config', config, { token: world.admin.token });
  });
});

describe('events of sign-up, add-user, sign-in and sign-out', () => {
  const world = useServer({ admin: false });

  it('emits user.created, auth.signup, auth.login in that order on sign-up', async () => {
    const admin = await signup(world.api, 'First');
    expect(world.events.map((e) => e.event)).toEqual(['user.created', 'auth.signup', 'auth.login']);
    const [created, signedUp, login] = world.events;
    expect(created).toMatchObject({ source: 'api', subject: { type: 'user', id: admin.id }, data: { role: 'admin' } });
    expect(created.actor).toMatchObject({ id: admin.id, role: 'admin' });
    expect(signedUp).toMatchObject({ source: 'api', subject: { type: 'user', id: admin.id }, data: { email: admin.email } });
    expect(login).toMatchObject({ source: 'api', subject: { type: 'user', id: admin.id }, data: { auth_method: 'api' } });

    world.events.length = 0;
    const member = await addUser(world.api, admin, 'user');
    expect(world.events.map((e) => e.event)).toEqual(['user.created', 'auth.login']);
    expect(world.events[0]).toMatchObject({ source: 'admin', subject: { type: 'user', id: member.id }, data: { role: 'user' } });
    expect(world.events[0].actor).toMatchObject({ id: admin.id });
    expect(world.events[1]).toMatchObject({ source: 'password', data: { auth_method: 'password' } });
    expect(world.events[1].actor).toMatchObject({ id: member.id });

    world.events.length = 0;
    await world.api.post('/api/v1/auths/signout', undefined, { cookie: `token=${member.token}` });
    expect(world.events.map((e) => e.event)).toEqual(['auth.logout']);
    expect(world.events[0]).toMatchObject({ subject: { type: 'user', id: member.id } });
    expect(world.events[0].actor).toMatchObject({ id: member.id });

    world.events.length = 0;
    await world.api.post('/api/v1/auths/signout', undefined, { token: 'garbage' });
    expect(world.events.map((e) => e.event)).toEqual(['auth.logout']);
    expect(world.events[0]).toMatchObject({ actor: null, subject: null });

    world.events.length = 0;
    await world.api.post('/api/v1/auths/signout');
    expect(world.events).toEqual([]);
  });
});
