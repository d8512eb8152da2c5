import { describe, expect, it } from 'vitest';
import { TestClock } from '../../helpers/server.js';
import { withWorld } from '../../helpers/world.js';

describe('auth guard', () => {
  it('judges token expiry by the server clock', async () => {
    const clock = new TestClock();
    await withWorld({ clock, env: { JWT_EXPIRES_IN: '1h' } }, async ({ api, admin }) => {
      expect((await api.get('/api/v1/users/user/settings', { token: admin.token })).status).toBe(200);
      clock.advance(3601);
      const expired = await api.get('/api/v1/users/user/settings', { token: admin.token });
      expect(expired.status).toBe(401);
    });
  });

  it('refuses a session that does not belong to the user the trusted header names', async () => {
    await withWorld({ env: { WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Forwarded-Email' } }, async ({ api, admin }) => {
      const own = await api.get('/api/v1/users/user/settings', { token: admin.token, headers: { 'x-forwarded-email': admin.email } });
      expect(own.status).toBe(200);
      const other = await api.get('/api/v1/users/user/settings', { token: admin.token, headers: { 'x-forwarded-email': 'someone@else.org' } });
      expect(other.status).toBe(401);
      expect(other.body.detail).toBe('User mismatch. Please sign in again.');
    });
  });
});
