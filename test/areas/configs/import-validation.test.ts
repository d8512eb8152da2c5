import { describe, expect, it } from 'vitest';
import { as } from '../../helpers/users.js';
import { TestClock } from '../../helpers/server.js';
import { useServer, withWorld } from '../../helpers/world.js';

/**
 * POST /api/v1/configs/import is held to the checks of the routes that write each
 * key (docs/configuration.md): a value any of them would refuse fails the whole
 * import with a 400 naming the key and the reason, and nothing changes.
 */
const PUBLIC_HOOK = 'http://93.184.216.34/hook';

describe('config import validated like the routes', () => {
  // A still clock: taking back the export writes its webhooks again, and their `updated_at` must not move to the next second.
  const world = useServer({ admin: 'Import Admin', clock: new TestClock() });

  const exported = async () => (await world.api.get('/api/v1/configs/export', as(world.admin))).body;
  const importConfig = (config: unknown) => world.api.post('/api/v1/configs/import', { config }, as(world.admin));
  const imported = () => world.events.filter((e) => e.event === 'config.imported');

  it('refuses webhook URLs the webhook routes refuse, and changes nothing', async () => {
    const created = await world.api.post('/api/events/webhooks', { id: 'kept', url: PUBLIC_HOOK }, as(world.admin));
    expect(created.status, created.text).toBe(200);
    const before = await exported();
    const eventsBefore = imported().length;

    const refused = [
      'http://127.0.0.1:9/hook',
      'http://localhost:9/hook',
      'http://[::1]:9/',
      'http://10.0.0.5/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::ffff:127.0.0.1]/',
      'http://user:secret@93.184.216.34/',
      'file:///etc/passwd',
    ];
    for (const url of refused) {
      // The route refuses it…
      expect((await world.api.post('/api/events/webhooks', { url }, as(world.admin))).status, url).toBe(400);
      // …and so does an import, as the list or as the legacy single webhook, next to a good key.
      for (const config of [
        { 'ui.default_models': 'would-be-applied', 'events.webhooks': [{ id: 'good', url: PUBLIC_HOOK }, { id: 'bad', url }] },
        { 'ui.default_models': 'would-be-applied', webhook_url: url },
      ]) {
        const res = await importConfig(config);
        expect(res.status, `${url}: ${res.text}`).toBe(400);
        expect(res.body.detail).toMatch(/^Invalid config: (events\.webhooks: item 1 url|webhook_url: url) ".*" is not an allowed webhook target \(.+\)$/);
      }
    }

    expect(await exported()).toEqual(before);
    expect((await world.api.get('/api/events/webhooks', as(world.admin))).body.map((w: { id: string }) => w.id)).toEqual(['kept']);
    expect(imported().length).toBe(eventsBefore);
  });

  it('refuses values of the wrong type or shape for known keys, naming the key and the reason', async () => {
    const before = await exported();
    const cases: [Record<string, unknown>, string][] = [
      [{ 'events.webhooks': 'http://93.184.216.34/hook' }, 'events.webhooks: must be a list'],
      [{ 'events.webhooks': ['not an object'] }, 'events.webhooks: item 0 Input should be a valid dictionary'],
      [{ 'events.webhooks': [{ id: 'x' }] }, 'events.webhooks: item 0 url: Field required'],
      [{ 'events.webhooks': [{ url: PUBLIC_HOOK, events: 'chat.*' }] }, 'events.webhooks: item 0 events: Input should be a valid list'],
      [{ 'events.webhooks': [{ url: PUBLIC_HOOK, events: ['not.real'] }] }, 'events.webhooks: item 0 Invalid event: not.real'],
      [{ 'events.webhooks': [{ url: PUBLIC_HOOK, targets: [{ type: 'robot', id: 'r' }] }] }, 'events.webhooks: item 0 Invalid target'],
      [{ webhook_url: 42 }, 'webhook_url: must be a string'],
      [{ 'ui.enable_signup': 'yes' }, 'ui.enable_signup: must be a boolean'],
      [{ 'ollama.base_urls': 'http://ollama:11434' }, 'ollama.base_urls: must be a list of strings'],
      [{ 'oauth.enable_signup': 'true' }, 'oauth.enable_signup: must be a boolean'],
      [{ 'oauth.allowed_domains': 'example.com' }, 'oauth.allowed_domains: must be a list of strings'],
      [{ 'auth.jwt_expiry': 'forever' }, "auth.jwt_expiry: must be a duration such as '4w', '12h' or '-1'"],
      [{ 'user.permissions': { chat: 'all' } }, 'user.permissions: '],
      [{ 'chat.context_compaction.retention_percentage': 80 }, 'chat.context_compaction.retention_percentage: must be an integer from 10 to 50 or null'],
      [{ 'tool_server.connections': [{ url: 'http://tools' }] }, 'tool_server.connections: 0.path: Field required'],
      [{ 'terminal_server.connections': [{ url: 'http://t', enabled: 'yes' }] }, 'terminal_server.connections: 0.enabled: Input should be a valid boolean'],
    ];
    for (const [config, message] of cases) {
      const res = await importConfig({ 'ui.default_models': 'would-be-applied', ...config });
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.detail, JSON.stringify(config)).toContain(`Invalid config: ${message}`);
    }
    expect(await exported()).toEqual(before);
  });

  it('still imports valid values, and takes back its own export whole', async () => {
    const res = await importConfig({
      'events.webhooks': [{ id: 'imported', url: PUBLIC_HOOK, events: ['chat.*'], targets: [{ type: 'user', id: world.admin.id }] }],
      webhook_url: '',
      'auth.jwt_expiry': '12h',
      'oauth.allowed_domains': ['example.com'],
      'custom.anything': { goes: [1, 'two'] },
    });
    expect(res.status, res.text).toBe(200);
    const webhooks = (await world.api.get('/api/events/webhooks', as(world.admin))).body;
    expect(webhooks).toMatchObject([{ id: 'imported', url: PUBLIC_HOOK, events: ['chat.*'], targets: [{ type: 'user', id: world.admin.id }] }]);

    // Values the admin forms may store (a null LDAP switch, OAuth comma lists) come back too.
    expect((await world.api.post('/api/v1/auths/admin/config/ldap', { enable_ldap: null }, as(world.admin))).status).toBe(200);
    expect((await world.api.post('/api/v1/auths/admin/config/oauth', { OAUTH_ADMIN_ROLES: 'boss, chief', OAUTH_TIMEOUT: 30 }, as(world.admin))).status).toBe(200);
    const whole = await exported();
    expect(whole).toMatchObject({ 'ldap.enable': null, 'oauth.admin_roles': ['boss', 'chief'], 'oauth.timeout': 30 });
    const again = await importConfig(whole);
    expect(again.status, again.text).toBe(200);
    expect(await exported()).toEqual(whole);
  });
});

describe('config import with local webhook targets allowed', () => {
  it('accepts a loopback webhook URL when EVENT_WEBHOOK_ALLOW_LOCAL is on, as the route does', async () => {
    await withWorld({ env: { EVENT_WEBHOOK_ALLOW_LOCAL: 'true' }, admin: 'Local Import Admin' }, async ({ api, admin }) => {
      const res = await api.post('/api/v1/configs/import', { config: { 'events.webhooks': [{ id: 'local', url: 'http://127.0.0.1:9/hook' }] } }, as(admin));
      expect(res.status, res.text).toBe(200);
      expect((await api.get('/api/events/webhooks', as(admin))).body).toMatchObject([{ id: 'local', url: 'http://127.0.0.1:9/hook' }]);
      // Metadata addresses stay refused whatever the operator allows.
      const metadata = await api.post('/api/v1/configs/import', { config: { webhook_url: 'http://169.254.169.254/' } }, as(admin));
      expect(metadata.status).toBe(400);
    });
  });
});
