import { afterEach, describe, expect, it } from 'vitest';
import { destroyServer, startServer, TestClock, type TestServer } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';

describe('auth guard', () => {
  let server: TestServer | null = null;
  afterEach(async () => {
    if (server) await destroyServer(server);
    server = null;
  });

  it('judges token expiry by the server clock', async () => {
    const clock = new TestClock();
    server = await startServer({ clock, env: { JWT_EXPIRES_IN: '1h' } });
    const admin = await signup(server.api);
    expect((await server.api.get('/api/v1/users/user/settings', { token: admin.token })).status).toBe(200);
    clock.advance(3601);
    const expired = await server.api.get('/api/v1/users/user/settings', { token: admin.token });
    expect(expired.status).toBe(401);
  });

  it('refuses a session that does not belong to the user the trusted header names', async () => {
    server = await startServer({ env: { WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Forwarded-Email' } });
    const admin = await signup(server.api);
    const own = await server.api.get('/api/v1/users/user/settings', { token: admin.token, headers: { 'x-forwarded-email': admin.email } });
    expect(own.status).toBe(200);
    const other = await server.api.get('/api/v1/users/user/settings', { token: admin.token, headers: { 'x-forwarded-email': 'someone@else.org' } });
    expect(other.status).toBe(401);
    expect(other.body.detail).toBe('User mismatch. Please sign in again.');
  });
});
