import { describe, expect, it } from 'vitest';
import { addUser, signup, type Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/** Fields every caller of `/api/config` gets under `features`. */
const PUBLIC_FEATURES = [
  'auth',
  'auth_trusted_header',
  'enable_signup_password_confirmation',
  'enable_ldap',
  'enable_signup',
  'enable_login_form',
  'enable_websocket',
];

describe('app-level system routes', () => {
  const world = useServer({ admin: false });
  let admin: Account;
  let member: Account;
  let pending: Account;

  it('answers the health and readiness probes', async () => {
    for (const path of ['/health', '/ready', '/health/db']) {
      const res = await world.api.get(path);
      expect(res.status, path).toBe(200);
      expect(res.body).toEqual({ status: true });
    }
  });

  it('shows onboarding in the public config while no account exists', async () => {
    const res = await world.api.get('/api/config');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ onboarding: true, status: true, name: 'Open WebUI', version: '0.11.0', default_locale: '' });
    expect(res.body.oauth).toEqual({ providers: {}, auto_redirect: false });
    expect(Object.keys(res.body.features).sort()).toEqual([...PUBLIC_FEATURES].sort());
    expect(res.body.features).toMatchObject({ auth: true, enable_signup: true, enable_login_form: true, enable_websocket: true });
    expect(res.body).not.toHaveProperty('default_models');
    expect(res.body).not.toHaveProperty('ui');
  });

  it('drops onboarding once the first account exists', async () => {
    admin = await signup(world.api, 'System Admin');
    member = await addUser(world.api, admin, 'user');
    pending = await addUser(world.api, admin, 'pending');
    const res = await world.api.get('/api/config');
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('onboarding');
    // The first sign-up turns sign-up off, and the public view says so.
    expect(res.body.features.enable_signup).toBe(false);
    expect(Object.keys(res.body.features).sort()).toEqual([...PUBLIC_FEATURES].sort());
  });

  it('gives a member the full config, by bearer token or by cookie alone', async () => {
    const byHeader = await world.api.get('/api/config', { token: member.token });
    const byCookie = await world.api.get('/api/config', { cookie: `token=${member.token}` });
    for (const res of [byHeader, byCookie]) {
      expect(res.status, res.text).toBe(200);
      expect(res.body).not.toHaveProperty('onboarding');
      expect(res.body.features).toMatchObject({
        enable_api_keys: false,
        enable_folders: true,
        enable_channels: false,
        enable_notes: true,
        enable_direct_connections: false,
        enable_code_execution: true,
        enable_version_update_check: true,
        enable_memories: true,
      });
      expect(typeof res.body.default_prompt_suggestions.length).toBe('number');
      expect(res.body.default_models).toBeNull();
      expect(res.body.code).toEqual({ engine: 'pyodide', interpreter_engine: 'pyodide' });
      expect(res.body.audio).toEqual({ tts: { engine: '', voice: 'alloy', split_on: 'punctuation' }, stt: { engine: '' } });
      expect(res.body.file).toEqual({ max_size: null, max_count: null, image_compression: { width: null, height: null } });
      expect(res.body.permissions).toHaveProperty('chat');
      expect(res.body.permissions).toHaveProperty('workspace');
      expect(Object.keys(res.body.ui).sort()).toEqual(
        ['iframe_csp', 'pending_user_overlay_content', 'pending_user_overlay_title', 'response_watermark'].sort(),
      );
      expect(res.body.license_metadata).toBeNull();
    }
    expect(byCookie.body).toEqual(byHeader.body);
  });

  it('gives a pending account only the pending overlay texts', async () => {
    const res = await world.api.get('/api/config', { token: pending.token });
    expect(res.status).toBe(200);
    expect(res.body.ui).toEqual({ pending_user_overlay_title: '', pending_user_overlay_content: '' });
    expect(res.body).not.toHaveProperty('default_models');
    expect(res.body).not.toHaveProperty('permissions');
    expect(res.body).not.toHaveProperty('audio');
  });

  it('refuses a token it cannot decode with 401, clearing a stale cookie', async () => {
    const byHeader = await world.api.get('/api/config', { token: 'not-a-token' });
    expect(byHeader.status).toBe(401);
    expect(byHeader.body).toEqual({ detail: 'Invalid token' });

    const byCookie = await world.api.get('/api/config', { cookie: 'token=not-a-token' });
    expect(byCookie.status).toBe(401);
    expect(byCookie.headers.getSetCookie().some((c) => c.startsWith('token=;'))).toBe(true);

    const unknownKey = await world.api.get('/api/config', { token: 'sk-unknown' });
    expect(unknownKey.status).toBe(401);
  });

  it('answers the public view for a valid token whose account is gone', async () => {
    const leaving = await addUser(world.api, admin, 'user');
    const del = await world.api.delete(`/api/v1/users/${leaving.id}`, { token: admin.token });
    expect(del.status, del.text).toBe(200);
    const res = await world.api.get('/api/config', { token: leaving.token });
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('default_models');
    expect(res.body).not.toHaveProperty('onboarding');
  });

  it('reports stored settings in the config', async () => {
    const form = { DEFAULT_MODELS: 'alpha,beta', DEFAULT_PINNED_MODELS: 'alpha', MODEL_ORDER_LIST: [] };
    const set = await world.api.post('/api/v1/configs/models', form, { token: admin.token });
    expect(set.status, set.text).toBe(200);
    const res = await world.api.get('/api/config', { token: admin.token });
    expect(res.body.default_models).toBe('alpha,beta');
    expect(res.body.default_pinned_models).toBe('alpha');
  });

  it('advertises a feature only where Parley serves the route the web app calls for it, whatever its setting', async () => {
    // For each feature, a route the web app calls when it shows the feature (the reference's paths).
    const routeOf: Record<string, string> = {
      enable_notes: '/api/v1/notes/',
      enable_channels: '/api/v1/channels/',
      enable_calendar: '/api/v1/calendars/',
      enable_automations: '/api/v1/automations/list',
      enable_memories: '/api/v1/memories/',
      enable_message_rating: '/api/v1/evaluations/feedback',
      enable_image_generation: '/api/v1/images/generations',
      enable_web_search: '/api/v1/retrieval/process/web/search',
      enable_admin_analytics: '/api/v1/analytics/summary',
      enable_folders: '/api/v1/folders/',
      enable_community_sharing: '/api/v1/chats/{id}/share',
      enable_context_compaction: '/api/v1/chats/{id}/compact',
      enable_autocomplete_generation: '/api/v1/tasks/auto/completions',
      enable_version_update_check: '/api/version/updates',
      enable_ldap: '/api/v1/auths/ldap',
      enable_user_status: '/api/v1/users/user/status/update',
      enable_admin_chat_access: '/api/v1/chats/list/user/{user_id}',
      enable_admin_export: '/api/v1/chats/all/db',
    };
    const on = Object.fromEntries(
      ['notes', 'channels', 'calendar', 'automations', 'memories', 'web.search', 'image_generation', 'folders', 'chat.context_compaction', 'task.autocomplete', 'ldap'].map(
        (area) => [`${area}.enable`, true],
      ),
    );
    Object.assign(on, { 'ui.enable_message_rating': true, 'ui.enable_community_sharing': true, 'code_interpreter.enable': true, 'direct.enable': true, 'ui.enable_user_webhooks': true });
    const imported = await world.api.post('/api/v1/configs/import', { config: on }, { token: admin.token });
    expect(imported.status, imported.text).toBe(200);

    const served = new Set(Object.keys((await world.api.get('/openapi.json')).body.paths));
    const { features } = (await world.api.get('/api/config', { token: admin.token })).body;
    for (const [feature, route] of Object.entries(routeOf)) expect(features[feature], `${feature} (${route})`).toBe(served.has(route));
    // Steps Parley runs: notices to users' webhooks (docs/webhooks.md § User webhooks), the
    // browser's direct connections (docs/chat-pipeline.md § Direct connections).
    expect(features).toMatchObject({ enable_user_webhooks: true, enable_direct_connections: true });
    // A pipeline step Parley runs (docs/chat-pipeline.md § Code interpreter).
    expect(features.enable_code_interpreter).toBe(true);
  });

  it('answers the version without credentials, even with a bogus header', async () => {
    for (const headers of [{}, { authorization: 'Bearer undefined' }] as Record<string, string>[]) {
      const res = await world.api.get('/api/version', { headers });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ version: '0.11.0', deployment_id: '' });
    }
  });

  it('reports the running version as the latest, to signed-in members only', async () => {
    expect((await world.api.get('/api/version/updates')).status).toBe(401);
    expect((await world.api.get('/api/version/updates', { token: pending.token })).status).toBe(401);
    const res = await world.api.get('/api/version/updates', { token: member.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ current: '0.11.0', latest: '0.11.0' });
  });

  it('serves the changelog without credentials', async () => {
    const res = await world.api.get('/api/changelog');
    expect(res.status).toBe(200);
    const [version] = Object.keys(res.body);
    expect(version).toBe('0.11.0');
    expect(res.body[version].date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(res.body[version].added[0]).toEqual({ title: expect.any(String), content: expect.any(String), raw: expect.any(String) });
  });

  it('shows usage to admins only by default', async () => {
    expect((await world.api.get('/api/usage')).status).toBe(401);
    const denied = await world.api.get('/api/usage', { token: member.token });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ detail: 'Access denied. Only administrators can view usage statistics.' });
    const res = await world.api.get('/api/usage', { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body.model_ids).toEqual([]);
    expect(res.body.user_count).toBeGreaterThanOrEqual(1);
  });

  it('serves the PWA manifest and the OpenSearch description', async () => {
    const manifest = await world.api.get('/manifest.json');
    expect(manifest.status).toBe(200);
    expect(manifest.body).toMatchObject({ name: 'Open WebUI', short_name: 'Open WebUI', start_url: '/', display: 'standalone' });
    expect(manifest.body.icons).toHaveLength(2);

    const search = await world.api.get('/opensearch.xml');
    expect(search.status).toBe(200);
    expect(search.headers.get('content-type')).toMatch(/^application\/xml/);
    expect(search.text).toContain('<ShortName>Open WebUI</ShortName>');
    expect(search.text).toContain('template="/?q={searchTerms}"');
  });
});

describe('system routes with a custom name, a deployment id and API keys', () => {
  let admin: Account;
  const world = useServer({ env: { WEBUI_NAME: 'Team Chat', DEPLOYMENT_ID: 'blue', ENABLE_PUBLIC_ACTIVE_USERS_COUNT: 'true', ENABLE_API_KEYS: 'true' }, admin: false });

  it('names the product as the reference does and reports the deployment', async () => {
    expect((await world.api.get('/api/config')).body.name).toBe('Team Chat (Open WebUI)');
    expect((await world.api.get('/api/version')).body).toEqual({ version: '0.11.0', deployment_id: 'blue' });
    expect((await world.api.get('/manifest.json')).body.name).toBe('Team Chat (Open WebUI)');
  });

  it('gives the full config for an API key where keys are enabled', async () => {
    admin = await signup(world.api, 'Key Admin');
    const created = await world.api.post('/api/v1/auths/api_key', undefined, { token: admin.token });
    expect(created.status, created.text).toBe(200);
    const res = await world.api.get('/api/config', { token: created.body.api_key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.features.enable_api_keys).toBe(true);
    expect(res.body).toHaveProperty('default_models');
  });

  it('shows usage to members when the active-user count is public', async () => {
    const member = await addUser(world.api, admin, 'user');
    const res = await world.api.get('/api/usage', { token: member.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ model_ids: [], user_count: expect.any(Number) });
  });
});
