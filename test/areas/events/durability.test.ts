import { beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, type TestServer } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { ChildServer, useBuiltServerStore } from '../../helpers/child-server.js';
import { eventually } from '../../helpers/eventually.js';
import { Receiver } from './receiver.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ids of the webhooks whose "created" event reached the receiver. */
const createdSubjects = (receiver: Receiver) =>
  new Set(receiver.received.filter((r) => r.json?.data?.action === 'created').map((r) => r.json.subject.id as string));

describe('a server killed with SIGKILL', () => {
  const store = useBuiltServerStore('parley-crash');

  it('loses no delivery: after the restart every event it accepted arrives', { timeout: 90_000 }, async () => {
    const receiver = await Receiver.start(() => ({ status: 200, delayMs: 100 }));
    const env = {
      DATA_DIR: store.dataDir,
      WEBUI_SECRET_KEY: 'crash-test-key',
      EVENT_WEBHOOK_ALLOW_LOCAL: 'true',
      INSTANCE_ID: 'crash-test',
      ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
    };
    // A slow receiver with few slots first, so that deliveries fall behind the requests.
    let child = await ChildServer.start(store.entry, { ...env, EVENT_WEBHOOK_CONCURRENCY: '2' });
    try {
      const api = new ApiClient(child.url);
      const admin = await signup(api, 'Crash Admin');
      const auth = { token: admin.token };
      const hook = await api.post('/api/events/webhooks', { url: `${receiver.url}/crash`, events: ['config.webhook.updated'] }, auth);
      expect(hook.status).toBe(200);
      await api.post('/api/events/webhooks', { url: `${receiver.url}/system`, events: ['system.*'], targets: [] }, auth);

      // Each accepted POST commits one event (its webhook's "created"); the kill lands while posts and deliveries are under way.
      const accepted: string[] = [];
      let killed = false;
      const worker = async (w: number) => {
        for (let i = 0; !killed && i < 100; i++) {
          try {
            const res = await api.post('/api/events/webhooks', { url: '', name: `w${w}-${i}` }, auth);
            if (res.status === 200) accepted.push(res.body.id);
          } catch {
            return;
          }
        }
      };
      const workers = Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
      await eventually(() => {
        const delivered = createdSubjects(receiver);
        return delivered.size >= 5 && accepted.filter((id) => !delivered.has(id)).length >= 20;
      }, 30_000);
      killed = true;
      await child.kill();
      await workers;
      const beforeRestart = createdSubjects(receiver);
      expect(accepted.filter((id) => !beforeRestart.has(id)).length, 'deliveries outstanding at the kill').toBeGreaterThan(0);

      child = await ChildServer.start(store.entry, env);
      await receiver.waitFor(() => accepted.every((id) => createdSubjects(receiver).has(id)), 30_000);
      expect(await child.stop()).toBe(0);
      // The restart and the clean stop announced themselves; the stop's events went out before the process ended.
      const system = receiver.received.filter((r) => r.path === '/system').map((r) => r.json.event);
      expect(system).toEqual(expect.arrayContaining(['system.startup.started', 'system.startup.completed', 'system.shutdown.started', 'system.shutdown.completed']));
    } finally {
      await child.kill().catch(() => undefined);
      await receiver.close();
    }
  });
});

describe('two instances on one database', () => {
  const world = useServer({
    fakes: { start: async () => ({ receiver: await Receiver.start(() => ({ status: 200, delayMs: 15 })) }) },
    env: { EVENT_WEBHOOK_ALLOW_LOCAL: 'true', EVENT_WEBHOOK_TIMEOUT: '1', EVENT_WEBHOOK_LEASE_MARGIN: '1' },
    admin: 'Shared Admin',
  });
  let second: TestServer;
  beforeAll(async () => {
    second = await world.addInstance();
  });

  it('share the deliveries, and never attempt one delivery twice at once', { timeout: 60_000 }, async () => {
    const hook = await world.api.post('/api/events/webhooks', { url: `${world.receiver.url}/shared`, events: ['note.*'] }, { token: world.admin.token });
    expect(hook.status).toBe(200);
    await eventually(() => second.parley.services.events.directory.get(hook.body.id) !== undefined);
    const total = 400;
    for (let i = 0; i < total; i++) {
      const instance = i % 2 === 0 ? world.server : second;
      await instance.parley.core.events.publish({ event: 'note.updated', subjectId: `shared-${i}` });
    }
    await world.receiver.waitFor(() => new Set(world.receiver.received.map((r) => r.json.subject.id)).size === total, 30_000);
    expect(world.receiver.maxConcurrentPerId).toBe(1);
    const attemptsOf = (server: TestServer) => server.parley.services.events.dispatcher.stats.attempts;
    expect(attemptsOf(world.server)).toBeGreaterThan(0);
    expect(attemptsOf(second)).toBeGreaterThan(0);
    await sleep(200);
    expect(world.receiver.received.length).toBe(total);
  });

  it("take over a crashed instance's claims when its lease ends, not before", { timeout: 30_000 }, async () => {
    const hook = await world.api.post('/api/events/webhooks', { url: `${world.receiver.url}/lease`, events: ['note.*'] }, { token: world.admin.token });
    const events = world.server.parley.services.events;
    await eventually(() => second.parley.services.events.directory.get(hook.body.id) !== undefined);
    // A claim held by an instance that died: recorded, leased for 1.5 s from now, never attempted.
    const event = world.server.parley.core.events.build({ event: 'note.created', subjectId: 'orphaned' });
    const [deliveryId] = await events.store.recordEvent(
      { id: event.id, event: event.event, payload: JSON.stringify(event) },
      [hook.body.id],
      { seconds: world.server.parley.core.clock.now(), ms: Date.now() },
      world.server.parley.core.db,
    );
    const leasedUntil = Date.now() + 1_500;
    await world.server.parley.core.db.updateTable('event_delivery').set({ lease_owner: 'dead-instance/run', lease_expires_ms: leasedUntil }).where('id', '=', deliveryId).execute();
    world.server.parley.services.events.dispatcher.wake();
    second.parley.services.events.dispatcher.wake();
    await sleep(700);
    expect(world.receiver.received.some((r) => r.path === '/lease')).toBe(false);
    const [request] = await world.receiver.waitFor((r) => r.some((x) => x.path === '/lease'), 10_000);
    expect(request).toBeDefined();
    const arrived = world.receiver.received.find((r) => r.path === '/lease')!;
    expect(arrived.at).toBeGreaterThanOrEqual(leasedUntil);
    expect(arrived.json.subject.id).toBe('orphaned');
  });
});
