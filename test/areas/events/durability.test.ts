import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, createTestDatabase, destroyServer, dropTestDatabase, startServer, type TestServer } from '../../helpers/server.js';
import { type Account, signup } from '../../helpers/users.js';
import { buildParleyOnce, ChildServer } from './child-server.js';
import { eventually, Receiver } from './receiver.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ids of the webhooks whose "created" event reached the receiver. */
const createdSubjects = (receiver: Receiver) =>
  new Set(receiver.received.filter((r) => r.json?.data?.action === 'created').map((r) => r.json.subject.id as string));

describe('a server killed with SIGKILL', () => {
  let build: { dir: string; remove(): void };
  let dataDir: string;
  let databaseUrl: string | null;
  beforeAll(async () => {
    build = await buildParleyOnce();
    dataDir = mkdtempSync(path.join(tmpdir(), 'parley-crash-'));
    databaseUrl = await createTestDatabase();
  }, 180_000);
  afterAll(async () => {
    build?.remove();
    await dropTestDatabase(databaseUrl);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses no delivery: after the restart every event it accepted arrives', { timeout: 90_000 }, async () => {
    const receiver = await Receiver.start(() => ({ status: 200, delayMs: 100 }));
    const env = {
      DATA_DIR: dataDir,
      WEBUI_SECRET_KEY: 'crash-test-key',
      EVENT_WEBHOOK_ALLOW_LOCAL: 'true',
      INSTANCE_ID: 'crash-test',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    // A slow receiver with few slots first, so that deliveries fall behind the requests.
    let child = await ChildServer.start(build.dir, { ...env, EVENT_WEBHOOK_CONCURRENCY: '2' });
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

      child = await ChildServer.start(build.dir, env);
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
  let first: TestServer;
  let second: TestServer;
  let receiver: Receiver;
  let admin: Account;
  beforeAll(async () => {
    const env = { EVENT_WEBHOOK_ALLOW_LOCAL: 'true', EVENT_WEBHOOK_TIMEOUT: '1', EVENT_WEBHOOK_LEASE_MARGIN: '1' };
    first = await startServer({ env });
    second = await startServer({ env, reuse: { dataDir: first.dataDir, databaseUrl: first.databaseUrl } });
    receiver = await Receiver.start(() => ({ status: 200, delayMs: 15 }));
    admin = await signup(first.api, 'Shared Admin');
  });
  afterAll(async () => {
    await receiver.close();
    await second.close();
    await destroyServer(first);
  });

  it('share the deliveries, and never attempt one delivery twice at once', { timeout: 60_000 }, async () => {
    const hook = await first.api.post('/api/events/webhooks', { url: `${receiver.url}/shared`, events: ['note.*'] }, { token: admin.token });
    expect(hook.status).toBe(200);
    await eventually(() => second.parley.services.events.directory.get(hook.body.id) !== undefined);
    const total = 400;
    for (let i = 0; i < total; i++) {
      const instance = i % 2 === 0 ? first : second;
      await instance.parley.core.events.publish({ event: 'note.updated', subjectId: `shared-${i}` });
    }
    await receiver.waitFor(() => new Set(receiver.received.map((r) => r.json.subject.id)).size === total, 30_000);
    expect(receiver.maxConcurrentPerId).toBe(1);
    const attemptsOf = (server: TestServer) => server.parley.services.events.dispatcher.stats.attempts;
    expect(attemptsOf(first)).toBeGreaterThan(0);
    expect(attemptsOf(second)).toBeGreaterThan(0);
    await sleep(200);
    expect(receiver.received.length).toBe(total);
  });

  it("take over a crashed instance's claims when its lease ends, not before", { timeout: 30_000 }, async () => {
    const hook = await first.api.post('/api/events/webhooks', { url: `${receiver.url}/lease`, events: ['note.*'] }, { token: admin.token });
    const events = first.parley.services.events;
    await eventually(() => second.parley.services.events.directory.get(hook.body.id) !== undefined);
    // A claim held by an instance that died: recorded, leased for 1.5 s from now, never attempted.
    const event = first.parley.core.events.build({ event: 'note.created', subjectId: 'orphaned' });
    const [deliveryId] = await events.store.recordEvent(
      { id: event.id, event: event.event, payload: JSON.stringify(event) },
      [hook.body.id],
      { seconds: first.parley.core.clock.now(), ms: Date.now() },
      first.parley.core.db,
    );
    const leasedUntil = Date.now() + 1_500;
    await first.parley.core.db.updateTable('event_delivery').set({ lease_owner: 'dead-instance/run', lease_expires_ms: leasedUntil }).where('id', '=', deliveryId).execute();
    first.parley.services.events.dispatcher.wake();
    second.parley.services.events.dispatcher.wake();
    await sleep(700);
    expect(receiver.received.some((r) => r.path === '/lease')).toBe(false);
    const [request] = await receiver.waitFor((r) => r.some((x) => x.path === '/lease'), 10_000);
    expect(request).toBeDefined();
    const arrived = receiver.received.find((r) => r.path === '/lease')!;
    expect(arrived.at).toBeGreaterThanOrEqual(leasedUntil);
    expect(arrived.json.subject.id).toBe('orphaned');
  });
});
