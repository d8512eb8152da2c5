import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyServer, startServer, type TestServer } from '../helpers/server.js';
import { as, signup, type Account } from '../helpers/users.js';

/**
 * Which value wins, the environment's or the stored one (ENABLE_PERSISTENT_CONFIG), over real
 * restarts on one data folder and database; and the start-up warning for a shadowed variable.
 */
describe('persistent settings and the environment', () => {
  let server: TestServer;
  let admin: Account;
  /** The values of a first start with an empty environment. */
  let defaults: Record<string, unknown>;
  /** What the admin stored instead: every boolean, string and integer setting changed. */
  let changed: Record<string, unknown>;

  const restart = async (env: Record<string, string>, warnings?: Record<string, unknown>[]) => {
    await server.close();
    server = await startServer({ env, warnings, reuse: { dataDir: server.dataDir, databaseUrl: server.databaseUrl } });
  };
  const exported = async () => {
    const res = await server.api.get('/api/v1/configs/export', as(admin));
    expect(res.status, res.text).toBe(200);
    return res.body as Record<string, unknown>;
  };
  const shadowWarnings = (lines: Record<string, unknown>[]) => lines.filter((line) => Array.isArray(line.variables));

  beforeAll(async () => {
    server = await startServer();
    admin = await signup(server.api, 'Settings Admin');
    defaults = await exported();
    changed = {};
    for (const [key, value] of Object.entries(defaults)) {
      // Values whose checks accept any value of their type: flipped, extended, incremented.
      if (typeof value === 'boolean') changed[key] = !value;
      else if (Number.isInteger(value)) changed[key] = (value as number) + 1;
      else if (typeof value === 'string') changed[key] = `${value}-changed`;
    }
    // Keys whose checks accept only some values (an enumeration, an integer as text) keep their default.
    const refused = await server.api.post('/api/v1/configs/import', { config: changed }, as(admin));
    for (const key of Object.keys(changed)) if (String(refused.body.detail).includes(`${key}:`)) delete changed[key];
    const res = await server.api.post('/api/v1/configs/import', { config: changed }, as(admin));
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(changed).length).toBeGreaterThan(100);
  });

  afterAll(async () => {
    await destroyServer(server);
  });

  it('keeps stored values over the environment by default, and names each shadowed variable at start-up', async () => {
    const warnings: Record<string, unknown>[] = [];
    await restart({ ENABLE_API_KEYS: 'false', OPENAI_API_BASE_URL: 'http://127.0.0.1:9/v1', USER_PERMISSIONS_CHAT_CONTROLS: 'false' }, warnings);
    const values = await exported();
    for (const [key, value] of Object.entries(changed)) expect(values[key], key).toEqual(value);
    expect(values['auth.enable_api_keys']).toBe(true);
    // Stored at the first start from the empty environment, so the new variable has no effect either.
    expect(values['openai.api_base_urls']).toEqual(['https://api.openai.com/v1']);

    const shadowed = shadowWarnings(warnings);
    expect(shadowed.map((line) => line.variables)).toEqual(
      expect.arrayContaining([['ENABLE_API_KEYS'], ['OPENAI_API_BASE_URL'], ['USER_PERMISSIONS_CHAT_CONTROLS']]),
    );
    // OPENAI_API_BASE_URL also seeds retrieval's embedding URL, audio's provider URLs and the image engines' URLs, as the reference's.
    expect(shadowed.map((line) => line.key)).toEqual(
      expect.arrayContaining([
        'rag.openai.api_base_url',
        'audio.stt.openai.api_base_url',
        'audio.tts.openai.api_base_url',
        'image_generation.openai.api_base_url',
        'images.edit.openai.api_base_url',
      ]),
    );
    expect(shadowed).toHaveLength(8);
    const apiKeys = shadowed.find((line) => line.key === 'auth.enable_api_keys')!;
    expect(apiKeys.msg).toContain('ENABLE_API_KEYS is set, but the stored value of the persistent setting auth.enable_api_keys is used');
    expect(apiKeys.msg).toContain('ENABLE_PERSISTENT_CONFIG=false');
    expect(apiKeys.msg).toContain('/api/v1/configs/import');
    // Only names, never the values (a variable may hold a key).
    expect(JSON.stringify(shadowed)).not.toContain('127.0.0.1:9');
  });

  it('says nothing about a variable that agrees with the stored value', async () => {
    const warnings: Record<string, unknown>[] = [];
    await restart({ ENABLE_API_KEYS: 'true', WEBUI_NAME: 'Ignored By Settings' }, warnings);
    expect(shadowWarnings(warnings)).toEqual([]);
  });

  it('with ENABLE_PERSISTENT_CONFIG=false uses the environment (or the default) for every setting, whatever is stored', async () => {
    const warnings: Record<string, unknown>[] = [];
    await restart({ ENABLE_PERSISTENT_CONFIG: 'false', OPENAI_API_BASE_URL: 'http://127.0.0.1:9/v1' }, warnings);
    const values = await exported();
    const fromEnvironment: Record<string, unknown> = {
      'openai.api_base_urls': ['http://127.0.0.1:9/v1'],
      'rag.openai.api_base_url': 'http://127.0.0.1:9/v1',
      'audio.stt.openai.api_base_url': 'http://127.0.0.1:9/v1',
      'audio.tts.openai.api_base_url': 'http://127.0.0.1:9/v1',
      'image_generation.openai.api_base_url': 'http://127.0.0.1:9/v1',
      'images.edit.openai.api_base_url': 'http://127.0.0.1:9/v1',
      // The first sign-up closed sign-ups in the table; the environment's default reopens them.
      'ui.enable_signup': true,
    };
    for (const key of Object.keys(defaults)) expect(values[key], key).toEqual(fromEnvironment[key] ?? defaults[key]);
    const config = await server.api.get('/api/config', as(admin));
    expect(config.body.features.enable_api_keys).toBe(false);
    expect(shadowWarnings(warnings)).toEqual([]);

    // A change made meanwhile applies at once, but is not written: the next start reads the table again.
    const res = await server.api.post('/api/v1/configs/import', { config: { 'ui.enable_login_form': true } }, as(admin));
    expect(res.status, res.text).toBe(200);
    expect((await exported())['ui.enable_login_form']).toBe(true);
    await restart({});
    const stored = await exported();
    for (const [key, value] of Object.entries(changed)) expect(stored[key], key).toEqual(value);
  });
});
