import { describe, expect, it } from 'vitest';
import { addUser, signup, type Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/** The `token` cookie as a browser would send it back, from a response's Set-Cookie headers. */
function tokenCookie(headers: Headers): string | null {
  const cookie = headers.getSetCookie().find((c) => c.startsWith('token='));
  return cookie ? cookie.split(';')[0] : null;
}

describe('sign-up, sign-in, session and sign-out', () => {
  const world = useServer({ admin: false });
  let admin: Account;

  it('makes the first account admin and answers a session with a cookie', async () => {
    const res = await world.api.post('/api/v1/auths/signup', { name: 'Ada', email: 'Ada@Example.com', password: 'pw-ada', profile_image_url: '' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer', email: 'ada@example.com', name: 'Ada', role: 'admin' });
    expect(res.body.profile_image_url).toBe(`/api/v1/users/${res.body.id}/profile/image`);
    expect(typeof res.body.token).toBe('string');
    expect(typeof res.body.expires_at).toBe('number');
    expect(res.body).toHaveProperty('permissions');
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('token='))!;
    expect(cookie).toContain(`token=${res.body.token}`);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).toMatch(/Max-Age=2419200/);
    expect(cookie).not.toMatch(/Secure/);
    admin = { id: res.body.id, email: 'ada@example.com', name: 'Ada', role: 'admin', token: res.body.token, password: 'pw-ada' };
  });

  it('signs in with the right password, case-insensitively on the e-mail', async () => {
    const res = await world.api.post('/api/v1/auths/signin', { email: 'ADA@example.com', password: 'pw-ada' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: admin.id, role: 'admin', token_type: 'Bearer' });
    expect(tokenCookie(res.headers)).toBe(`token=${res.body.token}`);
  });

  it('refuses a wrong password with 400 and leaves the account usable', async () => {
    const res = await world.api.post('/api/v1/auths/signin', { email: admin.email, password: 'wrong' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^The email or password provided is incorrect/);
    expect(res.headers.getSetCookie()).toEqual([]);
    const again = await world.api.post('/api/v1/auths/signin', { email: admin.email, password: 'pw-ada' });
    expect(again.status).toBe(200);
  });

  it('refuses an unknown account the same way', async () => {
    const res = await world.api.post('/api/v1/auths/signin', { email: 'nobody@example.com', password: 'pw' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^The email or password provided is incorrect/);
  });

  it('GET / echoes the bearer token with the user info and re-sets the cookie', async () => {
    const res = await world.api.get('/api/v1/auths/', { token: admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      token: admin.token,
      token_type: 'Bearer',
      id: admin.id,
      email: admin.email,
      name: 'Ada',
      role: 'admin',
      bio: null,
      gender: null,
      date_of_birth: null,
      status_emoji: null,
      status_message: null,
      status_expires_at: null,
    });
    expect(typeof res.body.expires_at).toBe('number');
    expect(tokenCookie(res.headers)).toBe(`token=${admin.token}`);
  });

  it('GET / works with the cookie alone and answers 401 without credentials', async () => {
    const res = await world.api.get('/api/v1/auths/', { cookie: `token=${admin.token}` });
    expect(res.status).toBe(200);
    expect(res.body.token).toBe(admin.token);
    const none = await world.api.get('/api/v1/auths/');
    expect(none.status).toBe(401);
    const bad = await world.api.get('/api/v1/auths/', { token: 'not-a-jwt' });
    expect(bad.status).toBe(401);
  });

  it('lets pending users see their session', async () => {
    const pending = await addUser(world.api, admin, 'pending');
    const res = await world.api.get('/api/v1/auths/', { token: pending.token });
    expect(res.status).toBe(200);
    expect(res.body.role).toBe('pending');
  });

  it('GET / follows profile and permission changes at once, and echoes each session its own token', async () => {
    const member = await addUser(world.api, admin, 'user');
    const before = await world.api.get('/api/v1/auths/', { token: member.token });
    expect(before.body.permissions.features.api_keys).toBe(false);

    const renamed = await world.api.post('/api/v1/auths/update/profile', { name: 'Renamed', profile_image_url: '/user.png' }, { token: member.token });
    expect(renamed.status, renamed.text).toBe(200);
    expect((await world.api.get('/api/v1/auths/', { token: member.token })).body.name).toBe('Renamed');

    const defaults = (await world.api.get('/api/v1/users/default/permissions', { token: admin.token })).body;
    const granted = { ...defaults, features: { ...defaults.features, api_keys: true } };
    expect((await world.api.post('/api/v1/users/default/permissions', granted, { token: admin.token })).status).toBe(200);
    expect((await world.api.get('/api/v1/auths/', { token: member.token })).body.permissions.features.api_keys).toBe(true);
    await world.api.post('/api/v1/users/default/permissions', defaults, { token: admin.token });

    const second = await world.api.post('/api/v1/auths/signin', { email: member.email, password: member.password });
    expect(second.body.token).not.toBe(member.token);
    for (const token of [member.token, second.body.token, member.token]) {
      const res = await world.api.get('/api/v1/auths/', { token });
      expect(res.body.token).toBe(token);
      expect(tokenCookie(res.headers)).toBe(`token=${token}`);
    }
  });

  it('signs out with the cookie alone, clears the cookies and ends that session only', async () => {
    const session = await world.api.post('/api/v1/auths/signin', { email: admin.email, password: admin.password });
    const token = session.body.token as string;
    expect((await world.api.get('/api/v1/auths/', { token })).status).toBe(200);
    const res = await world.api.post('/api/v1/auths/signout', undefined, { cookie: `token=${token}` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: true });
    const cleared = res.headers.getSetCookie();
    for (const name of ['token', 'oui-session', 'oauth_id_token']) {
      const cookie = cleared.find((c) => c.startsWith(`${name}=`));
      expect(cookie, name).toBeDefined();
      expect(cookie).toMatch(/Expires=Thu, 01 Jan 1970|Max-Age=0/);
    }
    // The reference refuses a signed-out token only with Redis; Parley always does, by bearer and by cookie.
    const after = await world.api.get('/api/v1/auths/', { token });
    expect(after.status).toBe(401);
    expect(after.body).toEqual({ detail: 'Invalid token' });
    expect((await world.api.get('/api/v1/auths/', { cookie: `token=${token}` })).status).toBe(401);
    expect((await world.api.get('/api/v1/auths/', { token: admin.token })).status).toBe(200);
  });

  it('still refuses a signed-out token after a restart', async () => {
    const session = await world.api.post('/api/v1/auths/signin', { email: admin.email, password: admin.password });
    const token = session.body.token as string;
    await world.api.post('/api/v1/auths/signout', undefined, { token });
    await world.restart();
    expect((await world.api.get('/api/v1/auths/', { token })).status).toBe(401);
    expect((await world.api.get('/api/v1/auths/', { token: admin.token })).status).toBe(200);
  });

  it('signs out without any credential too', async () => {
    const res = await world.api.post('/api/v1/auths/signout');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: true });
  });

  it('gives later sign-ups the default role (pending) after the admin re-opens sign-up', async () => {
    // The first sign-up closes sign-up, as the reference does.
    const closed = await world.api.post('/api/v1/auths/signup', { name: 'Bo', email: 'bo@example.com', password: 'pw-bo' });
    expect(closed.status).toBe(403);
    const config = await world.api.get('/api/v1/auths/admin/config', { token: admin.token });
    expect(config.body.ENABLE_SIGNUP).toBe(false);
    const reopened = await world.api.post('/api/v1/auths/admin/config', { ...config.body, ENABLE_SIGNUP: true }, { token: admin.token });
    expect(reopened.status, reopened.text).toBe(200);
    const later = await signup(world.api, 'Bo');
    expect(later.role).toBe('pending');
  });
});
