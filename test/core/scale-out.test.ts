import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver } from '../areas/events/receiver.js';
import { simpleTool, TOOLS_ENV, toolBody } from '../areas/tools/helpers.js';
import { bundleParley, ChildServer } from '../helpers/child-server.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeModel } from '../helpers/fake-model.js';
import { onlyOpenAI } from '../helpers/fake-upstreams.js';
import { startRedis } from '../helpers/redis.js';
import { ApiClient, createTestDatabase, dropTestDatabase, type TestServer } from '../helpers/server.js';
import { signup } from '../helpers/users.js';
import { useServer } from '../helpers/world.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A redis-server of the test's own, as a fake the world closes. */
async function redisServer() {
  const redis = await startRedis();
  return { url: redis.url, close: async () => redis.stop() };
}

/**
 * Three instances on one database and one Redis, as in production (docs/deployment.md): what one
 * instance writes or caches, the others see. Socket events of a generation and stopping it from
 * another instance are in test/core/realtime/multi-instance.test.ts, settings, roles, groups, chat
 * pages and prompts in test/core/shared-state.test.ts, shared webhook claims and a crashed
 * instance's deliveries in test/areas/events/durability.test.ts, rate limits in
 * test/areas/auths/signin-throttle.test.ts and test/areas/evaluations/limits.test.ts, collaborative
 * notes in test/areas/notes/collaboration.test.ts.
 */
describe('three instances on one database and Redis', () => {
  const world = useServer({
    fakes: {
      start: async () => ({ model: await startFakeModel(['fake-model']), redis: await redisServer(), receiver: await Receiver.start(() => ({ status: 200 })) }),
      env: ({ model, redis }) => ({
        ...onlyOpenAI(model.url),
        ...TOOLS_ENV,
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: 'parley-scale-out',
        EVENT_WEBHOOK_ALLOW_LOCAL: 'true',
        // Provider lists kept until changed: only a notice can tell another instance.
        MODELS_CACHE_TTL: '',
        ENABLE_CHANNELS: 'true',
      }),
    },
    admin: 'Cluster Admin',
  });
  let instances: TestServer[];

  beforeAll(async () => {
    instances = [world.server, await world.addInstance(), await world.addInstance()];
  }, 60_000);

  it('signs in on one instance, works on another, and signs out on a third for all', async () => {
    const [first, second, third] = instances;
    const signedIn = await first.api.post('/api/v1/auths/signin', { email: world.admin.email, password: 'secret-Passw0rd!' });
    expect(signedIn.status, signedIn.text).toBe(200);
    const token = signedIn.body.token as string;
    const chat = await second.api.post('/api/v1/chats/new', { chat: { title: 'Made on the second' } }, { token });
    expect(chat.status, chat.text).toBe(200);
    expect((await third.api.get(`/api/v1/chats/${chat.body.id}`, { token })).body.title).toBe('Made on the second');
    expect((await third.api.post('/api/v1/auths/signout', undefined, { token })).status).toBe(200);
    for (const instance of instances) {
      await eventually(async () => (await instance.api.get('/api/v1/auths/', { token })).status === 401, 1_000);
    }
  });

  it('keeps every tag added to one chat at once through different instances (no lost update)', async () => {
    const token = world.admin.token;
    const chat = (await world.api.post('/api/v1/chats/new', { chat: { title: 'Tagged everywhere' } }, { token })).body;
    const names = Array.from({ length: 12 }, (_, i) => `tag-${i}`);
    const answers = await Promise.all(names.map((name, i) => instances[i % 3].api.post(`/api/v1/chats/${chat.id}/tags`, { name }, { token })));
    for (const answer of answers) expect(answer.status, answer.text).toBe(200);
    const tags = (await instances[1].api.get(`/api/v1/chats/${chat.id}/tags`, { token })).body.map((tag: { id: string }) => tag.id);
    expect(tags.sort()).toEqual([...names].sort());
  });

  it('delivers each event of writes made through every instance once, with one webhook-id', { timeout: 60_000 }, async () => {
    const token = world.admin.token;
    const hook = await world.api.post('/api/events/webhooks', { url: `${world.receiver.url}/cluster`, events: ['chat.created'] }, { token });
    expect(hook.status, hook.text).toBe(200);
    for (const instance of instances) await eventually(() => instance.parley.services.events.directory.get(hook.body.id) !== undefined);
    const created = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => (await instances[i % 3].api.post('/api/v1/chats/new', { chat: { title: `Delivered ${i}` } }, { token })).body.id as string),
    );
    const arrivals = () => world.receiver.received.filter((r) => r.path === '/cluster');
    await world.receiver.waitFor(() => new Set(arrivals().map((r) => r.json.subject.id)).size === created.length, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const ids = arrivals().map((r) => r.headers['webhook-id']);
    expect(ids.length).toBe(created.length);
    expect(new Set(ids).size).toBe(created.length);
    expect(new Set(arrivals().map((r) => r.json.subject.id))).toEqual(new Set(created));
  });

  it("shows a workspace model and a provider's new model made on one instance at once on the others", async () => {
    const token = world.admin.token;
    const listed = async (instance: TestServer) => ((await instance.api.get('/api/models', { token })).body.data as { id: string }[]).map((m) => m.id);
    for (const instance of instances) expect(await listed(instance)).toContain('fake-model');
    const created = await instances[0].api.post('/api/v1/models/create', { id: 'cluster-model', base_model_id: 'fake-model', name: 'Cluster', meta: {}, params: {} }, { token });
    expect(created.status, created.text).toBe(200);
    for (const instance of instances.slice(1)) await eventually(async () => (await listed(instance)).includes('cluster-model'), 1_000);

    // A provider's list changes only on a refresh or a connection change: one instance saves the connections.
    world.model.models.push('fake-model-2');
    const config = (await instances[0].api.get('/openai/config', { token })).body;
    expect((await instances[0].api.post('/openai/config/update', config, { token })).status).toBe(200);
    for (const instance of instances) await eventually(async () => (await listed(instance)).includes('fake-model-2'), 1_000);
  });

  it("shows a channel message, reaction or edit made on one instance in the others' pages of messages", async () => {
    const token = world.admin.token;
    const channel = (await instances[0].api.post('/api/v1/channels/create', { name: 'cluster-room', access_grants: [] }, { token })).body;
    const page = async (instance: TestServer) => (await instance.api.get(`/api/v1/channels/${channel.id}/messages?skip=0&limit=50`, { token })).body as any[];
    for (const instance of instances) expect(await page(instance)).toEqual([]);
    const posted = (await instances[1].api.post(`/api/v1/channels/${channel.id}/messages/post`, { content: 'hello cluster' }, { token })).body;
    for (const instance of instances) await eventually(async () => (await page(instance)).map((m) => m.content).join() === 'hello cluster', 1_000);
    expect((await instances[2].api.post(`/api/v1/channels/${channel.id}/messages/${posted.id}/reactions/add`, { name: 'wave' }, { token })).status).toBe(200);
    expect((await instances[2].api.post(`/api/v1/channels/${channel.id}/messages/${posted.id}/update`, { content: 'hello, cluster' }, { token })).status).toBe(200);
    for (const instance of instances) {
      await eventually(async () => {
        const [message] = await page(instance);
        return message?.content === 'hello, cluster' && message.reactions.some((r: any) => r.name === 'wave');
      }, 1_000);
    }
  });

  it("serves a tool's new specs on every instance once one instance updated it", { timeout: 60_000 }, async () => {
    const token = world.admin.token;
    const created = await instances[0].api.post('/api/v1/tools/create', toolBody('cluster_tool', { content: simpleTool('before') }), { token });
    expect(created.status, created.text).toBe(200);
    const specs = async (instance: TestServer) => JSON.stringify((await instance.api.get('/api/v1/tools/id/cluster_tool', { token })).body.specs);
    const before = await specs(instances[2]);
    const renamed = simpleTool('before').replace(/def (\w+)\(/, 'def renamed_$1(');
    expect(renamed).not.toBe(simpleTool('before'));
    const updated = await instances[1].api.post('/api/v1/tools/id/cluster_tool/update', toolBody('cluster_tool', { content: renamed }), { token });
    expect(updated.status, updated.text).toBe(200);
    for (const instance of instances) expect(await specs(instance)).not.toBe(before);
    expect(await specs(instances[2])).toContain('renamed_');
  });
});

describe('an instance killed under load', () => {
  let bundle: { file: string; remove(): void };
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let dataDir: string;
  let databaseUrl: string | null;

  beforeAll(async () => {
    bundle = await bundleParley();
    redis = await startRedis();
    dataDir = mkdtempSync(path.join(tmpdir(), 'parley-scale-kill-'));
    databaseUrl = await createTestDatabase();
  }, 120_000);

  afterAll(async () => {
    bundle?.remove();
    redis?.stop();
    await dropTestDatabase(databaseUrl);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses nothing it acknowledged: every chat answered 200 is there on the survivor', { timeout: 120_000 }, async () => {
    const env = {
      DATA_DIR: dataDir,
      WEBUI_SECRET_KEY: 'scale-out-secret',
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: 'parley-scale-kill',
      ENABLE_OLLAMA_API: 'false',
      ENABLE_OPENAI_API: 'false',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    const doomed = await ChildServer.start(bundle.file, env);
    const survivor = await ChildServer.start(bundle.file, env);
    try {
      const admin = await signup(new ApiClient(doomed.url), 'Kill Admin');
      const acknowledged: string[] = [];
      let killed = false;
      const writer = async (url: string, worker: number) => {
        const api = new ApiClient(url);
        for (let i = 0; !killed || url === survivor.url; i++) {
          if (url === survivor.url && killed && i > 40) return;
          try {
            const res = await api.post('/api/v1/chats/new', { chat: { title: `w${worker}-${i}` } }, { token: admin.token });
            if (res.status === 200) acknowledged.push(res.body.id);
          } catch {
            return; // the connection died with the instance: not acknowledged
          }
        }
      };
      const writers = Promise.all([0, 1, 2, 3].map((w) => writer(w % 2 === 0 ? doomed.url : survivor.url, w)));
      await eventually(() => acknowledged.length >= 60, 30_000);
      killed = true;
      await doomed.kill();
      await writers;
      const api = new ApiClient(survivor.url);
      for (const id of acknowledged) {
        const res = await api.get(`/api/v1/chats/${id}`, { token: admin.token });
        expect(res.status, `chat ${id} acknowledged before the kill`).toBe(200);
      }
      expect((await api.get('/ready')).status).toBe(200);
    } finally {
      await doomed.kill().catch(() => undefined);
      await survivor.kill().catch(() => undefined);
    }
  });
});
