import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { withServer } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';

const ADMIN_CONFIG_FIELDS = [
  'SHOW_ADMIN_DETAILS',
  'ADMIN_EMAIL',
  'WEBUI_URL',
  'ENABLE_SIGNUP',
  'ENABLE_API_KEYS',
  'ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS',
  'API_KEYS_ALLOWED_ENDPOINTS',
  'DEFAULT_USER_ROLE',
  'DEFAULT_GROUP_ID',
  'JWT_EXPIRES_IN',
  'ENABLE_COMMUNITY_SHARING',
  'ENABLE_MESSAGE_RATING',
  'ENABLE_FOLDERS',
  'FOLDER_MAX_FILE_COUNT',
  'AUTOMATION_MAX_COUNT',
  'AUTOMATION_MIN_INTERVAL',
  'ENABLE_AUTOMATIONS',
  'ENABLE_CHANNELS',
  'CHANNEL_MODEL_RESPONSE_MODE',
  'ENABLE_CALENDAR',
  'ENABLE_MEMORIES',
  'ENABLE_MEMORY_SYSTEM_CONTEXT',
  'ENABLE_NOTES',
  'ENABLE_USER_WEBHOOKS',
  'ENABLE_USER_STATUS',
  'PENDING_USER_OVERLAY_TITLE',
  'PENDING_USER_OVERLAY_CONTENT',
  'RESPONSE_WATERMARK',
];

describe('admin authentication settings', () => {
  const world = useServer({ env: { WEBUI_URL: 'https://chat.example.com', ENABLE_CHANNELS: 'true' }, admin: 'Admin', users: { member: 'user' } });

  it('answers the admin config with every field, seeded from the environment', async () => {
    const res = await world.api.get('/api/v1/auths/admin/config', { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([...ADMIN_CONFIG_FIELDS].sort());
    expect(res.body).toMatchObject({
      SHOW_ADMIN_DETAILS: true,
      ADMIN_EMAIL: null,
      WEBUI_URL: 'https://chat.example.com',
      ENABLE_SIGNUP: false,
      ENABLE_API_KEYS: false,
      API_KEYS_ALLOWED_ENDPOINTS: '',
      DEFAULT_USER_ROLE: 'pending',
      DEFAULT_GROUP_ID: '',
      JWT_EXPIRES_IN: '4w',
      ENABLE_CHANNELS: true,
      CHANNEL_MODEL_RESPONSE_MODE: 'thread',
      FOLDER_MAX_FILE_COUNT: '',
      ENABLE_USER_STATUS: true,
    });
  });

  it('saves the posted config and answers the stored values', async () => {
    const current = (await world.api.get('/api/v1/auths/admin/config', { token: world.admin.token })).body;
    const res = await world.api.post(
      '/api/v1/auths/admin/config',
      { ...current, WEBUI_URL: 'https://other.example.com', FOLDER_MAX_FILE_COUNT: '25', AUTOMATION_MAX_COUNT: 3, DEFAULT_USER_ROLE: 'user', JWT_EXPIRES_IN: '2h', RESPONSE_WATERMARK: 'AI' },
      { token: world.admin.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ WEBUI_URL: 'https://other.example.com', FOLDER_MAX_FILE_COUNT: 25, AUTOMATION_MAX_COUNT: 3, AUTOMATION_MIN_INTERVAL: '', DEFAULT_USER_ROLE: 'user', JWT_EXPIRES_IN: '2h', RESPONSE_WATERMARK: 'AI' });
    expect((await world.api.get('/api/v1/auths/admin/config', { token: world.admin.token })).body).toEqual(res.body);
    // The new session length applies to the next sign-in.
    const signin = await world.api.post('/api/v1/auths/signin', { email: world.member.email, password: world.member.password });
    expect(signin.body.expires_at - world.server.parley.core.clock.now()).toBeGreaterThan(7100);
    expect(signin.body.expires_at - world.server.parley.core.clock.now()).toBeLessThanOrEqual(7200);
  });

  it('keeps the old value of a role, response mode or duration it cannot use', async () => {
    const current = (await world.api.get('/api/v1/auths/admin/config', { token: world.admin.token })).body;
    const res = await world.api.post(
      '/api/v1/auths/admin/config',
      { ...current, DEFAULT_USER_ROLE: 'superuser', CHANNEL_MODEL_RESPONSE_MODE: 'loud', JWT_EXPIRES_IN: 'forever' },
      { token: world.admin.token },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ DEFAULT_USER_ROLE: current.DEFAULT_USER_ROLE, CHANNEL_MODEL_RESPONSE_MODE: 'thread', JWT_EXPIRES_IN: current.JWT_EXPIRES_IN });
  });

  it('requires every boolean field of the form', async () => {
    const current = (await world.api.get('/api/v1/auths/admin/config', { token: world.admin.token })).body;
    const { ENABLE_SIGNUP: _omitted, ...rest } = current;
    const res = await world.api.post('/api/v1/auths/admin/config', { ...rest, ENABLE_FOLDERS: 'yes' }, { token: world.admin.token });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'missing', loc: ['body', 'ENABLE_SIGNUP'] }),
        expect.objectContaining({ type: 'bool_type', loc: ['body', 'ENABLE_FOLDERS'] }),
      ]),
    );
    expect((await world.api.get('/api/v1/auths/admin/config', { token: world.admin.token })).body).toEqual(current);
  });

  it('stores the LDAP switch and server settings', async () => {
    expect((await world.api.get('/api/v1/auths/admin/config/ldap', { token: world.admin.token })).body).toEqual({ ENABLE_LDAP: false });
    const server0 = await world.api.get('/api/v1/auths/admin/config/ldap/server', { token: world.admin.token });
    expect(server0.status).toBe(200);
    expect(server0.body).toMatchObject({ label: 'LDAP Server', host: 'localhost', port: 389, attribute_for_mail: 'mail', attribute_for_username: 'uid', use_tls: true, ciphers: 'ALL', attribute_for_groups: 'memberOf' });

    const form = { label: 'Corp', host: 'ldap.corp', port: 636, app_dn: 'cn=app', app_dn_password: 'secret', search_base: 'ou=people' };
    const saved = await world.api.post('/api/v1/auths/admin/config/ldap/server', form, { token: world.admin.token });
    expect(saved.status, saved.text).toBe(200);
    expect(saved.body).toMatchObject({ ...form, attribute_for_mail: 'mail', search_filters: '', validate_cert: true, enable_group_management: false });

    const empty = await world.api.post('/api/v1/auths/admin/config/ldap/server', { ...form, host: '' }, { token: world.admin.token });
    expect(empty.status).toBe(400);
    expect(empty.body.detail).toBe('Required field host is empty');
    const groups = await world.api.post('/api/v1/auths/admin/config/ldap/server', { ...form, enable_group_management: true, attribute_for_groups: ' ' }, { token: world.admin.token });
    expect(groups.status).toBe(400);
    expect(groups.body.detail).toBe('Required field attribute_for_groups is empty');
    expect((await world.api.get('/api/v1/auths/admin/config/ldap/server', { token: world.admin.token })).body.host).toBe('ldap.corp');

    const on = await world.api.post('/api/v1/auths/admin/config/ldap', { enable_ldap: true }, { token: world.admin.token });
    expect(on.body).toEqual({ ENABLE_LDAP: true });
  });

  it('refuses LDAP sign-in while LDAP is off, with an empty password, or with no directory to reach', async () => {
    await world.api.post('/api/v1/auths/admin/config/ldap', { enable_ldap: true }, { token: world.admin.token });
    const empty = await world.api.post('/api/v1/auths/ldap', { user: 'jdoe', password: ' ' });
    expect(empty.status).toBe(400);
    expect(empty.body.detail).toMatch(/^The email or password provided is incorrect/);
    const res = await world.api.post('/api/v1/auths/ldap', { user: 'jdoe', password: 'pw' });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^LDAP authentication failed: the LDAP server at ldaps:\/\/ldap.corp:636 could not be reached/);
    await world.api.post('/api/v1/auths/admin/config/ldap', { enable_ldap: false }, { token: world.admin.token });
    const off = await world.api.post('/api/v1/auths/ldap', { user: 'jdoe', password: 'pw' });
    expect(off.status).toBe(400);
    expect(off.body.detail).toBe('LDAP authentication is not enabled. An admin switches it on in Admin Settings > General (LDAP).');
    expect((await world.api.post('/api/v1/auths/ldap', { user: 'jdoe' })).status).toBe(422);
  });

  it('stores the OAuth settings, with comma lists kept as lists', async () => {
    const initial = await world.api.get('/api/v1/auths/admin/config/oauth', { token: world.admin.token });
    expect(initial.status).toBe(200);
    expect(initial.body).toMatchObject({ ENABLE_OAUTH: true, ENABLE_OAUTH_SIGNUP: false, OAUTH_ALLOWED_DOMAINS: '*', OAUTH_ADMIN_ROLES: 'admin', OAUTH_ALLOWED_ROLES: 'user,admin', OAUTH_SCOPES: 'openid email profile', OAUTH_PROVIDER_NAME: 'SSO' });
    expect(initial.body.OAUTH_SUB_CLAIM ?? null).toBeNull();

    const res = await world.api.post(
      '/api/v1/auths/admin/config/oauth',
      { ENABLE_OAUTH_SIGNUP: true, OAUTH_ALLOWED_DOMAINS: 'example.com, corp.example.com', OAUTH_CLIENT_ID: 'client-1', OAUTH_SCOPES: null, OAUTH_TIMEOUT: 30 },
      { token: world.admin.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ ENABLE_OAUTH_SIGNUP: true, OAUTH_ALLOWED_DOMAINS: 'example.com,corp.example.com', OAUTH_CLIENT_ID: 'client-1', OAUTH_SCOPES: 'openid email profile', OAUTH_TIMEOUT: 30 });
    expect(world.server.parley.core.settings.get('oauth.allowed_domains')).toEqual(['example.com', 'corp.example.com']);
    const typed = await world.api.post('/api/v1/auths/admin/config/oauth', { ENABLE_OAUTH: 'maybe' }, { token: world.admin.token });
    expect(typed.status).toBe(422);
  });

  it('refuses the token exchange while it is disabled, and for unknown providers', async () => {
    const res = await world.api.post('/api/v1/auths/oauth/google/token/exchange', { token: 'abc' });
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe('Token exchange is disabled. The server allows it when started with ENABLE_OAUTH_TOKEN_EXCHANGE=true.');
    expect((await world.api.post('/api/v1/auths/oauth/google/token/exchange', {})).status).toBe(422);
    await withServer({ env: { ENABLE_OAUTH_TOKEN_EXCHANGE: 'true' } }, async (enabled) => {
      const unknown = await enabled.api.post('/api/v1/auths/oauth/Google/token/exchange', { token: 'abc' });
      expect(unknown.status).toBe(404);
      expect(unknown.body.detail).toBe("Provider 'google' is not configured");
    });
  });
});

describe('OAuth sessions', () => {
  const world = useServer({ admin: 'Admin', users: { member: 'user' } });

  async function addSession(userId: string, provider: string, token: Record<string, unknown> = {}) {
    const now = world.server.parley.core.clock.now();
    const id = randomUUID();
    await world.server.parley.core.db
      .insertInto('oauth_session')
      .values({ id, user_id: userId, provider, token: JSON.stringify(token), expires_at: now + 3600, created_at: now, updated_at: now })
      .execute();
    return id;
  }

  it('deletes the user’s own sessions of a provider, names with slashes and colons included', async () => {
    await addSession(world.member.id, 'mcp:server/one');
    await addSession(world.member.id, 'mcp:server/one');
    await addSession(world.admin.id, 'mcp:server/one');
    const mark = world.events.length;
    const res = await world.api.delete(`/api/v1/auths/oauth/sessions/mcp:server/one`, { token: world.member.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toBe(true);
    expect(world.events.slice(mark).map((e) => e.event)).toEqual(['auth.oauth_session.deleted']);
    expect(world.events[mark]).toMatchObject({ subject: { type: 'user', id: world.member.id }, data: { provider: 'mcp:server/one' } });
    const left = await world.server.parley.core.db.selectFrom('oauth_session').select('user_id').execute();
    expect(left).toEqual([{ user_id: world.admin.id }]);

    const again = await world.api.delete(`/api/v1/auths/oauth/sessions/mcp:server/one`, { token: world.member.token });
    expect(again.status).toBe(404);
    expect(again.body.detail).toBe('No OAuth session found for this provider');
  });

  it('on sign-out, sends the browser to the configured end-session endpoint and drops the session cookie', async () => {
    const sessionId = await addSession(world.member.id, 'oidc', { id_token: 'id-tok' });
    await world.api.post('/api/v1/auths/admin/config/oauth', { OPENID_END_SESSION_ENDPOINT: 'https://idp.example.com/logout' }, { token: world.admin.token });
    const res = await world.api.post('/api/v1/auths/signout', undefined, { cookie: `token=${world.member.token}; oauth_session_id=${sessionId}` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: true, redirect_url: 'https://idp.example.com/logout' });
    expect(res.headers.getSetCookie().some((c) => c.startsWith('oauth_session_id=;'))).toBe(true);
  });
});
