import { beforeAll, describe, expect, it } from 'vitest';
import { withServer, type TestServer } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';

const ERRORS = {
  invalidEmail: /^The email format you entered is invalid/,
  emailTaken: /^Uh-oh! This email is already registered/,
  tooLong: /^Uh-oh! The password you entered is too long/,
};

async function rowCounts(server: TestServer) {
  const db = server.parley.core.db;
  const count = async (table: 'user' | 'auth') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  return { users: await count('user'), credentials: await count('auth') };
}

describe('sign-up and add-user rules', () => {
  const world = useServer({ admin: 'Admin' });
  // Sign-up stays open after the first account here, to exercise later sign-ups.
  beforeAll(async () => {
    await world.server.parley.core.settings.set({ 'ui.enable_signup': true }, world.server.parley.core.clock.now());
  });

  it('answers missing and mistyped fields with the 422 detail list', async () => {
    const res = await world.api.post('/api/v1/auths/signup', { name: 5, password: 'x' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'missing', loc: ['body', 'email'], msg: 'Field required' }),
        expect.objectContaining({ type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 5 }),
      ]),
    );
    const signin = await world.api.post('/api/v1/auths/signin', { email: 'a@b.c' });
    expect(signin.status).toBe(422);
    expect(signin.body.detail).toEqual([expect.objectContaining({ type: 'missing', loc: ['body', 'password'] })]);
    const empty = await world.api.post('/api/v1/auths/signin');
    expect(empty.status).toBe(422);
    const add = await world.api.post('/api/v1/auths/add', { name: 'X', email: 'x@example.com', password: 'pw', role: 'boss' }, { token: world.admin.token });
    expect(add.status).toBe(422);
    expect(add.body.detail[0].loc).toEqual(['body', 'role']);
  });

  it('refuses an invalid e-mail address with 400', async () => {
    for (const email of ['not-an-email', 'a@b', '@example.com']) {
      const res = await world.api.post('/api/v1/auths/signup', { name: 'X', email, password: 'pw' });
      expect(res.status, email).toBe(400);
      expect(res.body.detail).toMatch(ERRORS.invalidEmail);
    }
    const local = await world.api.post('/api/v1/auths/add', { name: 'L', email: 'someone@localhost', password: 'pw' }, { token: world.admin.token });
    expect(local.status).toBe(200);
  });

  it('refuses a taken e-mail address regardless of case, writing nothing', async () => {
    const before = await rowCounts(world.server);
    const res = await world.api.post('/api/v1/auths/signup', { name: 'Dup', email: world.admin.email.toUpperCase(), password: 'pw' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(ERRORS.emailTaken);
    const add = await world.api.post('/api/v1/auths/add', { name: 'Dup', email: world.admin.email, password: 'pw' }, { token: world.admin.token });
    expect(add.status).toBe(400);
    expect(add.body.detail).toMatch(ERRORS.emailTaken);
    expect(await rowCounts(world.server)).toEqual(before);
  });

  it('resolves two simultaneous sign-ups with one address to one account', async () => {
    const before = await rowCounts(world.server);
    const body = { name: 'Twin', email: 'twin@example.com', password: 'pw' };
    const results = await Promise.all([world.api.post('/api/v1/auths/signup', body), world.api.post('/api/v1/auths/signup', body)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(await rowCounts(world.server)).toEqual({ users: before.users + 1, credentials: before.credentials + 1 });
  });

  it('refuses passwords longer than 72 bytes, writing nothing', async () => {
    const before = await rowCounts(world.server);
    const long = 'é'.repeat(37); // 74 bytes, 37 characters
    const res = await world.api.post('/api/v1/auths/signup', { name: 'Long', email: 'long@example.com', password: long });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(ERRORS.tooLong);
    const add = await world.api.post('/api/v1/auths/add', { name: 'Long', email: 'long@example.com', password: long }, { token: world.admin.token });
    expect(add.status).toBe(400);
    expect(await rowCounts(world.server)).toEqual(before);
  });

  it('refuses a profile image that is not an image URL with 422', async () => {
    const res = await world.api.post('/api/v1/auths/signup', { name: 'Img', email: 'img@example.com', password: 'pw', profile_image_url: 'javascript:alert(1)' });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'profile_image_url'] });
    const ok = await world.api.post('/api/v1/auths/signup', {
      name: 'Img',
      email: 'img@example.com',
      password: 'pw',
      profile_image_url: 'data:image/png;base64,iVBORw0KGgo=',
    });
    expect(ok.status).toBe(200);
    expect(ok.body.role).toBe('pending');
  });

  it('gives later sign-ups the configured default role', async () => {
    await world.server.parley.core.settings.set({ 'ui.default_user_role': 'user' }, world.server.parley.core.clock.now());
    try {
      const later = await signup(world.api, 'Later');
      expect(later.role).toBe('user');
    } finally {
      await world.server.parley.core.settings.set({ 'ui.default_user_role': 'pending' }, world.server.parley.core.clock.now());
    }
  });

  it('adds users with the requested role (pending by default) and a working token', async () => {
    const res = await world.api.post('/api/v1/auths/add', { name: 'Plain', email: 'plain@example.com', password: 'pw-plain' }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['email', 'id', 'name', 'profile_image_url', 'role', 'token', 'token_type']);
    expect(res.body).toMatchObject({ role: 'pending', token_type: 'Bearer', email: 'plain@example.com', profile_image_url: `/api/v1/users/${res.body.id}/profile/image` });
    expect(res.headers.getSetCookie()).toEqual([]);
    const me = await world.api.get('/api/v1/auths/', { token: res.body.token });
    expect(me.body).toMatchObject({ id: res.body.id, role: 'pending' });
    const admin2 = await world.api.post('/api/v1/auths/add', { name: 'Boss', email: 'boss@example.com', password: 'pw', role: 'admin' }, { token: world.admin.token });
    expect(admin2.body.role).toBe('admin');
  });

  it('answers 403 to sign-ups while sign-up is disabled, writing nothing', async () => {
    await world.server.parley.core.settings.set({ 'ui.enable_signup': false }, world.server.parley.core.clock.now());
    const before = await rowCounts(world.server);
    const res = await world.api.post('/api/v1/auths/signup', { name: 'Late', email: 'late@example.com', password: 'pw' });
    expect(res.status).toBe(403);
    expect(res.body.detail).toMatch(/^You do not have permission/);
    expect(await rowCounts(world.server)).toEqual(before);
    // Admins still add accounts.
    const add = await world.api.post('/api/v1/auths/add', { name: 'Late', email: 'late@example.com', password: 'pw' }, { token: world.admin.token });
    expect(add.status).toBe(200);
  });
});

describe('sign-up switches from the environment', () => {
  it('checks new passwords against the pattern when ENABLE_PASSWORD_VALIDATION is on', async () => {
    await withServer({
      env: { ENABLE_PASSWORD_VALIDATION: 'true', PASSWORD_VALIDATION_HINT: 'Use 8+ characters with a digit and a symbol.' },
    }, async (server) => {
      const weak = await server.api.post('/api/v1/auths/signup', { name: 'W', email: 'w@example.com', password: 'password' });
      expect(weak.status).toBe(400);
      expect(weak.body.detail).toBe('Use 8+ characters with a digit and a symbol.');
      const strong = await server.api.post('/api/v1/auths/signup', { name: 'S', email: 's@example.com', password: 'Str0ng-Passw0rd!' });
      expect(strong.status).toBe(200);
      const admin = { token: strong.body.token };
      const change = await server.api.post('/api/v1/auths/update/password', { password: 'Str0ng-Passw0rd!', new_password: 'weak' }, admin);
      expect(change.status).toBe(400);
    });
  });

  it('does not gate the first account on ENABLE_SIGNUP, but later ones', async () => {
    await withServer({ env: { ENABLE_SIGNUP: 'false' } }, async (server) => {
      const first = await server.api.post('/api/v1/auths/signup', { name: 'F', email: 'f@example.com', password: 'pw' });
      expect(first.status).toBe(200);
      expect(first.body.role).toBe('admin');
      const second = await server.api.post('/api/v1/auths/signup', { name: 'G', email: 'g@example.com', password: 'pw' });
      expect(second.status).toBe(403);
    });
  });

  it('refuses every sign-up when the login form is off, unless ENABLE_INITIAL_ADMIN_SIGNUP allows the first', async () => {
    await withServer({ env: { ENABLE_LOGIN_FORM: 'false' } }, async (closed) => {
      const res = await closed.api.post('/api/v1/auths/signup', { name: 'F', email: 'f@example.com', password: 'pw' });
      expect(res.status).toBe(403);
    });
    await withServer({ env: { ENABLE_LOGIN_FORM: 'false', ENABLE_INITIAL_ADMIN_SIGNUP: 'true' } }, async (initial) => {
      const res = await initial.api.post('/api/v1/auths/signup', { name: 'F', email: 'f@example.com', password: 'pw' });
      expect(res.status).toBe(200);
    });
  });

  it('with WEBUI_AUTH=false, signs everyone in as admin@localhost and allows no other accounts', async () => {
    await withServer({ env: { WEBUI_AUTH: 'false' } }, async (server) => {
      const first = await server.api.post('/api/v1/auths/signin', { email: '', password: '' });
      expect(first.status, first.text).toBe(200);
      expect(first.body).toMatchObject({ email: 'admin@localhost', name: 'User', role: 'admin' });
      const again = await server.api.post('/api/v1/auths/signin', { email: 'whoever@example.com', password: 'x' });
      expect(again.body.id).toBe(first.body.id);
      const other = await server.api.post('/api/v1/auths/signup', { name: 'O', email: 'o@example.com', password: 'pw' });
      expect(other.status).toBe(403);
    });
  });

  it('trusts the proxy’s e-mail header when WEBUI_AUTH_TRUSTED_EMAIL_HEADER is set', async () => {
    await withServer({
      env: { WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Forwarded-Email', WEBUI_AUTH_TRUSTED_NAME_HEADER: 'X-Forwarded-Name', WEBUI_AUTH_TRUSTED_ROLE_HEADER: 'X-Forwarded-Role' },
    }, async (server) => {
      const form = { email: '', password: '' };
      const missing = await server.api.post('/api/v1/auths/signin', form);
      expect(missing.status).toBe(400);
      expect(missing.body.detail).toMatch(/trusted header/);
      const first = await server.api.post('/api/v1/auths/signin', form, { headers: { 'x-forwarded-email': 'Boss@Example.com', 'x-forwarded-name': 'Big%20Boss' } });
      expect(first.status, first.text).toBe(200);
      expect(first.body).toMatchObject({ email: 'boss@example.com', name: 'Big Boss', role: 'admin' });
      const member = await server.api.post('/api/v1/auths/signin', form, { headers: { 'x-forwarded-email': 'member@example.com', 'x-forwarded-role': 'user' } });
      expect(member.body).toMatchObject({ email: 'member@example.com', name: 'member@example.com', role: 'user' });
      const again = await server.api.post('/api/v1/auths/signin', form, { headers: { 'x-forwarded-email': 'member@example.com' } });
      expect(again.body.id).toBe(member.body.id);
      const change = await server.api.post('/api/v1/auths/update/password', { password: 'a', new_password: 'b' }, { token: member.body.token });
      expect(change.status).toBe(400);
      expect(change.body.detail).toBe('The requested action has been restricted as a security measure.');
    });
  });

  it('answers 403 to password sign-in when ENABLE_PASSWORD_AUTH is off', async () => {
    await withWorld({ env: { ENABLE_PASSWORD_AUTH: 'false' }, admin: 'Admin' }, async ({ api }) => {
      const res = await api.post('/api/v1/auths/signin', { email: 'x@example.com', password: 'pw' });
      expect(res.status).toBe(403);
      expect(res.body.detail).toBe('The requested action has been restricted as a security measure.');
    });
  });
});

describe('two first sign-ups at the same moment', () => {
  it('make exactly one admin', async () => {
    await withServer({}, async (server) => {
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => server.api.post('/api/v1/auths/signup', { name: `U${i}`, email: `u${i}@example.com`, password: 'pw' })),
      );
      const created = results.filter((r) => r.status === 200);
      expect(created.length).toBeGreaterThanOrEqual(1);
      for (const r of results) expect([200, 403]).toContain(r.status);
      expect(created.filter((r) => r.body.role === 'admin')).toHaveLength(1);
      const roles = await server.parley.core.db.selectFrom('user').select('role').execute();
      expect(roles.filter((r) => r.role === 'admin')).toHaveLength(1);
      expect(roles).toHaveLength(created.length);
    });
  });
});
