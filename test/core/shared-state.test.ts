import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { destroyServer, startServer, type TestServer } from '../helpers/server.js';
import { type Account, addUser, signup } from '../helpers/users.js';

/**
 * What each instance keeps in memory (settings, signed-in users and their
 * groups, revoked sessions, the sidebar's chat pages, the `/` picker's prompts) follows a change made on
 * another instance at once, through the change notices on Redis. Memory caches
 * also expire after 2 s; every check here waits 1 s at most, so only a notice
 * can pass it.
 */
const NOTICE_WAIT = { timeout: 1_000, interval: 25 };

describe('state shared by instances', () => {
  let redis: TestRedis;
  let first: TestServer;
  let second: TestServer;
  let admin: Account;
  let alice: Account;

  beforeAll(async () => {
    redis = await startRedis();
    const env = { REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'parley-shared-state', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' };
    first = await startServer({ env });
    second = await startServer({ env, reuse: { dataDir: first.dataDir, databaseUrl: first.databaseUrl } });
    admin = await signup(first.api, 'Shared Admin');
    alice = await addUser(first.api, admin, 'user', 'Shared Alice');
  }, 60_000);

  afterAll(async () => {
    await second?.close();
    if (first) await destroyServer(first);
    redis?.stop();
  });

  it('sees a setting saved on the other instance', async () => {
    const config = (await second.api.get('/api/v1/auths/admin/config', { token: admin.token })).body;
    expect(config.ENABLE_COMMUNITY_SHARING).toBe(true);
    const saved = await first.api.post('/api/v1/auths/admin/config', { ...config, ENABLE_COMMUNITY_SHARING: false }, { token: admin.token });
    expect(saved.status, saved.text).toBe(200);
    await expect
      .poll(async () => (await second.api.get('/api/v1/auths/admin/config', { token: admin.token })).body.ENABLE_COMMUNITY_SHARING, NOTICE_WAIT)
      .toBe(false);
  });

  it("applies a role change made on the other instance to the user's next request", async () => {
    const bob = await addUser(first.api, admin, 'user', 'Shared Bob');
    expect((await second.api.get('/api/v1/chats/', { token: bob.token })).status).toBe(200);
    const demoted = await first.api.post(`/api/v1/users/${bob.id}/update`, { role: 'pending', name: bob.name, email: bob.email, profile_image_url: '' }, { token: admin.token });
    expect(demoted.status, demoted.text).toBe(200);
    await expect.poll(async () => (await second.api.get('/api/v1/chats/', { token: bob.token })).status, NOTICE_WAIT).toBe(401);
  });

  it('applies group permissions changed on the other instance', async () => {
    const before = await second.api.get('/api/v1/auths/', { token: alice.token });
    expect(before.body.permissions.chat.file_upload).toBe(true);
    const defaults = (await first.api.get('/api/v1/users/default/permissions', { token: admin.token })).body;
    const stored = await first.api.post('/api/v1/users/default/permissions', { ...defaults, chat: { ...defaults.chat, file_upload: false } }, { token: admin.token });
    expect(stored.status, stored.text).toBe(200);
    await expect.poll(async () => (await second.api.get('/api/v1/auths/', { token: alice.token })).body.permissions.chat.file_upload, NOTICE_WAIT).toBe(false);

    const group = (await first.api.post('/api/v1/groups/create', { name: 'Uploaders', description: '', permissions: { chat: { file_upload: true } } }, { token: admin.token })).body;
    await first.api.post(`/api/v1/groups/id/${group.id}/users/add`, { user_ids: [alice.id] }, { token: admin.token });
    await expect.poll(async () => (await second.api.get('/api/v1/auths/', { token: alice.token })).body.permissions.chat.file_upload, NOTICE_WAIT).toBe(true);
  });

  it("lists a chat created on the other instance in the sidebar's first page", async () => {
    expect((await second.api.get('/api/v1/chats/?page=1', { token: alice.token })).body).toEqual([]);
    const chat = (await first.api.post('/api/v1/chats/new', { chat: { title: 'Made on the first' } }, { token: alice.token })).body;
    await expect.poll(async () => (await second.api.get('/api/v1/chats/?page=1', { token: alice.token })).body.map((c: { id: string }) => c.id), NOTICE_WAIT).toEqual([chat.id]);
    await first.api.post(`/api/v1/chats/${chat.id}/pin`, undefined, { token: alice.token });
    await expect.poll(async () => (await second.api.get('/api/v1/chats/?page=1', { token: alice.token })).body, NOTICE_WAIT).toEqual([]);
  });

  it("shows in the / picker a prompt change made on the other instance, and the reader's new groups", async () => {
    const picker = async (account: Account) =>
      ((await second.api.get('/api/v1/prompts/', { token: account.token })).body as { command: string; content: string }[]).filter((p) => p.command === 'shared_prompt');
    const created = (await first.api.post('/api/v1/prompts/create', { command: 'shared_prompt', name: 'Shared', content: 'first' }, { token: admin.token })).body;
    expect(await picker(admin)).toMatchObject([{ content: 'first' }]);
    await first.api.post(`/api/v1/prompts/id/${created.id}/update`, { command: 'shared_prompt', name: 'Shared', content: 'second' }, { token: admin.token });
    await expect.poll(async () => (await picker(admin)).map((p) => p.content), NOTICE_WAIT).toEqual(['second']);
    await first.api.post(`/api/v1/prompts/id/${created.id}/toggle`, {}, { token: admin.token });
    await expect.poll(async () => (await picker(admin)).length, NOTICE_WAIT).toBe(0);
    await first.api.post(`/api/v1/prompts/id/${created.id}/toggle`, {}, { token: admin.token });
    await expect.poll(async () => (await picker(admin)).length, NOTICE_WAIT).toBe(1);

    expect(await picker(alice)).toEqual([]);
    await first.api.post(`/api/v1/prompts/id/${created.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: alice.id, permission: 'read' }] }, { token: admin.token });
    await expect.poll(async () => (await picker(alice)).length, NOTICE_WAIT).toBe(1);
    const readers = (await first.api.post('/api/v1/groups/create', { name: 'Prompt readers', description: '' }, { token: admin.token })).body;
    await first.api.post(`/api/v1/prompts/id/${created.id}/access/update`, { access_grants: [{ principal_type: 'group', principal_id: readers.id, permission: 'read' }] }, { token: admin.token });
    await expect.poll(async () => (await picker(alice)).length, NOTICE_WAIT).toBe(0);
    await first.api.post(`/api/v1/groups/id/${readers.id}/users/add`, { user_ids: [alice.id] }, { token: admin.token });
    await expect.poll(async () => (await picker(alice)).length, NOTICE_WAIT).toBe(1);

    await first.api.delete(`/api/v1/prompts/id/${created.id}/delete`, { token: admin.token });
    await expect.poll(async () => (await picker(admin)).length, NOTICE_WAIT).toBe(0);
  });

  it('refuses on every instance a session signed out on one', async () => {
    const session = (await first.api.post('/api/v1/auths/signin', { email: alice.email, password: alice.password })).body;
    expect((await second.api.get('/api/v1/auths/', { token: session.token })).status).toBe(200);
    await first.api.post('/api/v1/auths/signout', undefined, { token: session.token });
    await expect.poll(async () => (await second.api.get('/api/v1/auths/', { token: session.token })).status, NOTICE_WAIT).toBe(401);
    expect((await second.api.get('/api/v1/auths/', { token: alice.token })).status).toBe(200);
  });
});
