import { describe, expect, it } from 'vitest';
import { TestClock, withServer } from '../../helpers/server.js';
import { useServer, withWorld } from '../../helpers/world.js';

type Level = 'current' | 'verified' | 'admin';

/** Every guarded operation of /api/v1/auths with the role it needs (routes-0.10.2.json). */
const GUARDED: [string, string, Level, unknown?][] = [
  ['GET', '/api/v1/auths/', 'current'],
  ['POST', '/api/v1/auths/update/profile', 'verified', { name: 'N', profile_image_url: '' }],
  ['POST', '/api/v1/auths/update/timezone', 'current', { timezone: 'UTC' }],
  ['POST', '/api/v1/auths/update/password', 'current', { password: 'x', new_password: 'y' }],
  ['DELETE', '/api/v1/auths/oauth/sessions/github', 'verified'],
  ['POST', '/api/v1/auths/add', 'admin', { name: 'N', email: 'not-an-email', password: 'pw' }],
  ['GET', '/api/v1/auths/admin/details', 'current'],
  ['GET', '/api/v1/auths/admin/config', 'admin'],
  ['POST', '/api/v1/auths/admin/config', 'admin', {}],
  ['GET', '/api/v1/auths/admin/config/ldap/server', 'admin'],
  ['POST', '/api/v1/auths/admin/config/ldap/server', 'admin', {}],
  ['GET', '/api/v1/auths/admin/config/ldap', 'admin'],
  ['POST', '/api/v1/auths/admin/config/ldap', 'admin', {}],
  ['GET', '/api/v1/auths/admin/config/oauth', 'admin'],
  ['POST', '/api/v1/auths/admin/config/oauth', 'admin', {}],
  ['POST', '/api/v1/auths/api_key', 'current'],
  ['GET', '/api/v1/auths/api_key', 'current'],
  ['DELETE', '/api/v1/auths/api_key', 'current'],
];

const ALLOWED: Record<Level, string[]> = { current: ['pending', 'user', 'admin'], verified: ['user', 'admin'], admin: ['admin'] };

describe('role checks', () => {
  const world = useServer({ admin: 'Admin', users: { user: 'user', pending: 'pending' } });

  it('answers 401 without credentials and to the wrong role, and lets the right roles through', async () => {
    for (const [method, path, level, body] of GUARDED) {
      const anonymous = await world.api.request(method, path, body);
      expect(anonymous.status, `${method} ${path} anonymous`).toBe(401);
      expect(anonymous.body.detail).toBe('Not authenticated');
      for (const role of ['pending', 'user', 'admin'] as const) {
        const res = await world.api.request(method, path, body, { token: world[role].token });
        if (ALLOWED[level].includes(role)) expect(res.status, `${method} ${path} as ${role}`).not.toBe(401);
        else {
          expect(res.status, `${method} ${path} as ${role}`).toBe(401);
          expect(res.body.detail).toMatch(/^You do not have permission/);
        }
      }
    }
  });
});

describe('token expiry', () => {
  it('issues tokens for the configured time and refuses them afterwards', async () => {
    const clock = new TestClock();
    await withServer({ clock, env: { JWT_EXPIRES_IN: '1h' } }, async (server) => {
      const res = await server.api.post('/api/v1/auths/signup', { name: 'A', email: 'a@example.com', password: 'pw' });
      expect(res.body.expires_at).toBe(clock.now() + 3600);
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith('token='))!;
      expect(cookie).toMatch(/Max-Age=3600/);
      expect(cookie).toContain(`Expires=${new Date((clock.now() + 3600) * 1000).toUTCString()}`);

      clock.advance(1800);
      const half = await server.api.get('/api/v1/auths/', { token: res.body.token });
      expect(half.status).toBe(200);
      expect(half.body.expires_at).toBe(res.body.expires_at);
      expect(half.headers.getSetCookie().find((c) => c.startsWith('token='))).toMatch(/Max-Age=1800/);

      clock.advance(1801);
      const late = await server.api.get('/api/v1/auths/', { token: res.body.token });
      expect(late.status).toBe(401);
      // An expired token does not decode, so the guard answers as the reference's get_current_user does.
      expect(late.body.detail).toBe('401 Unauthorized');
    });
  });

  it('refuses a token whose expiry has passed on every guarded route', async () => {
    const clock = new TestClock();
    await withServer({ clock, env: { JWT_EXPIRES_IN: '1d' } }, async (server) => {
      const res = await server.api.post('/api/v1/auths/signup', { name: 'A', email: 'a@example.com', password: 'pw' });
      expect(res.status).toBe(200);
      expect((await server.api.get('/api/v1/auths/admin/details', { token: res.body.token })).status).toBe(200);
      clock.advance(2 * 86400);
      const stale = await server.api.get('/api/v1/auths/admin/details', { token: res.body.token });
      expect(stale.status).toBe(401);
      const viaCookie = await server.api.get('/api/v1/auths/admin/details', { cookie: `token=${res.body.token}` });
      expect(viaCookie.status).toBe(401);
      // The stale cookie is dropped.
      expect(viaCookie.headers.getSetCookie().some((c) => c.startsWith('token=;'))).toBe(true);
    });
  });

  it('issues tokens without expiry for JWT_EXPIRES_IN=-1, with a session cookie', async () => {
    await withServer({ env: { JWT_EXPIRES_IN: '-1' } }, async (server) => {
      const res = await server.api.post('/api/v1/auths/signup', { name: 'A', email: 'a@example.com', password: 'pw' });
      expect(res.body.expires_at).toBeNull();
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith('token='))!;
      expect(cookie).not.toMatch(/Max-Age|Expires/);
      const me = await server.api.get('/api/v1/auths/', { token: res.body.token });
      expect(me.body.expires_at).toBeNull();
    });
  });

  it('marks the cookie Secure and SameSite as configured', async () => {
    await withServer({ env: { WEBUI_AUTH_COOKIE_SECURE: 'true', WEBUI_AUTH_COOKIE_SAME_SITE: 'strict' } }, async (server) => {
      const res = await server.api.post('/api/v1/auths/signup', { name: 'A', email: 'a@example.com', password: 'pw' });
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith('token='))!;
      expect(cookie).toMatch(/; Secure/);
      expect(cookie).toMatch(/SameSite=Strict/);
    });
  });
});

describe('sign-in rate limit', () => {
  it('answers 429 after 15 attempts for one address within three minutes', async () => {
    const clock = new TestClock();
    await withWorld({ clock, admin: 'Admin' }, async ({ api, admin }) => {
      for (let i = 0; i < 15; i++) {
        const res = await api.post('/api/v1/auths/signin', { email: admin.email, password: 'wrong' });
        expect(res.status).toBe(400);
      }
      const limited = await api.post('/api/v1/auths/signin', { email: admin.email.toUpperCase(), password: admin.password });
      expect(limited.status).toBe(429);
      expect(limited.body.detail).toBe('API rate limit exceeded');
      clock.advance(240);
      expect((await api.post('/api/v1/auths/signin', { email: admin.email, password: admin.password })).status).toBe(200);
    });
  });
});
