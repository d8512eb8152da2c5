import { describe, expect, it } from 'vitest';
import { useServer, withWorld } from '../../helpers/world.js';

const NOT_ALLOWED_TO_CREATE = 'API key creation is not allowed in the environment.';
const NOT_ALLOWED_TO_USE = 'Use of API key is not enabled in the environment.';
/** What Parley adds to the reference's words: why, and who can change it. */
const SWITCHED_OFF = 'API keys are switched off: an admin switches them on in Admin Settings > General (or POST /api/v1/configs/import with auth.enable_api_keys: true).';

describe('API keys', () => {
  const world = useServer({ admin: 'Admin', users: { member: 'user' } });

  async function setAdminConfig(changes: Record<string, unknown>) {
    const current = (await world.api.get('/api/v1/auths/admin/config', { token: world.admin.token })).body;
    const res = await world.api.post('/api/v1/auths/admin/config', { ...current, ...changes }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
  }

  it('refuses keys while ENABLE_API_KEYS is off (the default)', async () => {
    for (const method of ['POST', 'GET', 'DELETE']) {
      const res = await world.api.request(method, '/api/v1/auths/api_key', undefined, { token: world.admin.token });
      expect(res.status, method).toBe(403);
      expect(res.body.detail).toBe(`${NOT_ALLOWED_TO_CREATE} ${SWITCHED_OFF}`);
    }
  });

  it('creates, shows, uses and deletes a key once enabled', async () => {
    await setAdminConfig({ ENABLE_API_KEYS: true });
    expect((await world.api.get('/api/v1/auths/api_key', { token: world.admin.token })).status).toBe(404);

    const mark = world.events.length;
    const created = await world.api.post('/api/v1/auths/api_key', undefined, { token: world.admin.token });
    expect(created.status, created.text).toBe(200);
    expect(created.body.api_key).toMatch(/^sk-[0-9a-f]{32}$/);
    expect(world.events.slice(mark).map((e) => e.event)).toEqual(['auth.api_key.created']);
    expect(world.events[mark].subject).toEqual({ type: 'user', id: world.admin.id });
    const key = created.body.api_key as string;

    expect((await world.api.get('/api/v1/auths/api_key', { token: world.admin.token })).body).toEqual({ api_key: key });

    // Usable as a bearer token and through x-api-key.
    const me = await world.api.get('/api/v1/auths/', { token: key });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: world.admin.id, token: key, expires_at: null });
    expect(me.headers.getSetCookie()).toEqual([]);
    expect((await world.api.get('/api/v1/auths/', { headers: { 'x-api-key': key } })).status).toBe(200);

    // A new key replaces the old one.
    const replaced = await world.api.post('/api/v1/auths/api_key', undefined, { token: world.admin.token });
    expect(replaced.body.api_key).not.toBe(key);
    expect((await world.api.get('/api/v1/auths/', { token: key })).status).toBe(401);
    const rows = await world.server.parley.core.db.selectFrom('api_key').selectAll().where('user_id', '=', world.admin.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0].id).toBe(`key_${world.admin.id}`);

    const mark2 = world.events.length;
    const deleted = await world.api.delete('/api/v1/auths/api_key', { token: world.admin.token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toBe(true);
    expect(world.events.slice(mark2).map((e) => e.event)).toEqual(['auth.api_key.deleted']);
    expect((await world.api.get('/api/v1/auths/', { token: replaced.body.api_key })).status).toBe(401);
    expect((await world.api.get('/api/v1/auths/api_key', { token: world.admin.token })).status).toBe(404);
  });

  it('refuses users without the features.api_keys permission', async () => {
    const res = await world.api.post('/api/v1/auths/api_key', undefined, { token: world.member.token });
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe(`${NOT_ALLOWED_TO_CREATE} Your account lacks the features.api_keys permission: an admin grants it in the default permissions or a group's.`);
  });

  it('stops accepting existing keys when keys are switched off', async () => {
    const key = (await world.api.post('/api/v1/auths/api_key', undefined, { token: world.admin.token })).body.api_key;
    await setAdminConfig({ ENABLE_API_KEYS: false });
    const res = await world.api.get('/api/v1/auths/', { token: key });
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe(`${NOT_ALLOWED_TO_USE} ${SWITCHED_OFF}`);
    await setAdminConfig({ ENABLE_API_KEYS: true });
    expect((await world.api.get('/api/v1/auths/', { token: key })).status).toBe(200);
  });

  it('limits keys to the allowed endpoints when restrictions are on', async () => {
    const key = (await world.api.post('/api/v1/auths/api_key', undefined, { token: world.admin.token })).body.api_key;
    await setAdminConfig({ ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: true, API_KEYS_ALLOWED_ENDPOINTS: '/api/v1/auths/api_key, /api/v1/models' });
    try {
      const refused = await world.api.get('/api/v1/auths/', { token: key });
      expect(refused.status).toBe(403);
      expect(refused.body.detail).toMatch(/^You do not have permission/);
      expect((await world.api.get('/api/v1/auths/api_key', { token: key })).status).toBe(200);
      // A prefix only matches whole path segments.
      expect((await world.api.get('/api/v1/auths/api_key?x=1', { token: key })).status).toBe(200);
      // Session tokens are not restricted.
      expect((await world.api.get('/api/v1/auths/', { token: world.admin.token })).status).toBe(200);
    } finally {
      await setAdminConfig({ ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: false, API_KEYS_ALLOWED_ENDPOINTS: '' });
    }
  });
});

describe('API keys for users granted features.api_keys', () => {
  it('lets them create and use a key', async () => {
    await withWorld({ env: { ENABLE_API_KEYS: 'true', USER_PERMISSIONS_FEATURES_API_KEYS: 'true' }, admin: 'Admin', users: { member: 'user' } }, async ({ api, member }) => {
      const created = await api.post('/api/v1/auths/api_key', undefined, { token: member.token });
      expect(created.status, created.text).toBe(200);
      const me = await api.get('/api/v1/auths/', { token: created.body.api_key });
      expect(me.body.id).toBe(member.id);
    });
  });
});
