import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import type { PublishInput } from '../../../src/core/events/publish.js';
import { RETRY_SCHEDULE_MS } from '../../../src/core/events/retry.js';
import { TestClock } from '../../helpers/server.js';
import { type Account, addUser } from '../../helpers/users.js';
import { ServerWorld, useServer, startWorld } from '../../helpers/world.js';
import { eventually } from '../../helpers/eventually.js';
import { Receiver } from './receiver.js';

const LOCAL = { EVENT_WEBHOOK_ALLOW_LOCAL: 'true' };
/** A receiver that answers 200 unless a test sets its behaviour. */
const RECEIVER = { start: async () => ({ receiver: await Receiver.start() }) };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Small helpers to drive a world's webhooks through the API, as its admin. */
function webhookDriver(world: ServerWorld) {
  const auth = () => ({ token: world.admin.token });
  return {
    async webhook(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
      const res = await world.api.post('/api/events/webhooks', body, auth());
      expect(res.status, res.text).toBe(200);
      const secret = await world.api.get(`/api/events/webhooks/${res.body.id}/secret`, auth());
      return { id: res.body.id, secret: secret.body.secret };
    },
    publish(input: PublishInput) {
      return world.server.parley.core.events.publish(input);
    },
    async deliveries(id: string, query = '') {
      const res = await world.api.get(`/api/events/webhooks/${id}/deliveries${query}`, auth());
      expect(res.status, res.text).toBe(200);
      return res.body as { items: any[]; total: number; page: number; limit: number };
    },
    async webhooks() {
      return (await world.api.get('/api/events/webhooks', auth())).body as any[];
    },
    wake() {
      world.server.parley.services.events.dispatcher.wake();
    },
  };
}

describe('deliveries', () => {
  const world = useServer({ fakes: RECEIVER, env: LOCAL, admin: 'Delivery Admin' });
  const env = webhookDriver(world);

  it('are signed the Standard Webhooks way and carry the event as the body', async () => {
    const { id, secret } = await env.webhook({ url: `${world.receiver.url}/signed`, events: ['group.*'] });
    const group = await world.api.post('/api/v1/groups/create', { name: 'Signed', description: '' }, { token: world.admin.token });
    expect(group.status).toBe(200);
    const [request] = (await world.receiver.waitFor((r) => r.some((x) => x.path === '/signed'))).filter((r) => r.path === '/signed');
    expect(new Webhook(secret).verify(request.body, request.headers)).toMatchObject({ event: 'group.created' });
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['webhook-id']).toBe(request.json.id);
    expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    expect(request.json).toMatchObject({
      schema: '0.11.0',
      event: 'group.created',
      resource: 'group',
      operation: 'created',
      source: 'api',
      actor: { id: world.admin.id, type: 'user' },
      subject: { type: 'group', id: group.body.id },
      data: { name: 'Signed' },
      message: null,
    });
    const log = await eventually(async () => {
      const page = await env.deliveries(id);
      return page.items[0]?.status === 'succeeded' ? page : undefined;
    });
    expect(log.items[0]).toMatchObject({ event_id: request.json.id, event: 'group.created', attempts: 1, last_status_code: 200, last_error: null, next_attempt_at: null });
    expect(log.items[0].last_latency_ms).toBeGreaterThanOrEqual(0);
  });

  it('go to the webhooks whose filters and targets match: null, [], users and group members', async () => {
    const memberA = await addUser(world.api, world.admin, 'user', 'Target A');
    const memberB = await addUser(world.api, world.admin, 'user', 'Target B');
    const group = await world.api.post('/api/v1/groups/create', { name: 'Targets', description: '' }, { token: world.admin.token });
    await world.api.post(`/api/v1/groups/id/${group.body.id}/users/add`, { user_ids: [memberA.id] }, { token: world.admin.token });
    const routes = {
      all: { targets: null },
      system: { targets: [] },
      userA: { targets: [{ type: 'user', id: memberA.id }] },
      groupG: { targets: [{ type: 'group', id: group.body.id }] },
      auth: { events: ['auth.*'] },
      off: { enabled: false },
    };
    for (const [path, fields] of Object.entries(routes)) {
      await env.webhook({ url: `${world.receiver.url}/m/${path}`, events: ['system.*', 'user.*', 'auth.*', 'note.*'], ...fields });
    }
    const actor = (a: Account) => ({ id: a.id, name: a.name, role: a.role });
    await env.publish({ event: 'system.startup.completed', source: 'system', data: { marker: 'system' } });
    await env.publish({ event: 'user.settings_updated', actor: actor(memberA), subjectId: memberA.id, subjectType: 'user', data: { marker: 'a' } });
    await env.publish({ event: 'user.settings_updated', actor: actor(memberB), subjectId: memberB.id, subjectType: 'user', data: { marker: 'b' } });
    await env.publish({ event: 'note.created', actor: actor(world.admin), subjectId: 'n1', data: { marker: 'about-a', user_ids: [memberA.id] } });
    await env.publish({ event: 'auth.login', actor: actor(memberB), subjectId: memberB.id, subjectType: 'user', data: { marker: 'login-b' } });
    const expected = [
      'all:system', 'system:system',
      'all:a', 'userA:a', 'groupG:a',
      'all:b',
      'all:about-a', 'userA:about-a', 'groupG:about-a',
      'all:login-b', 'auth:login-b',
    ];
    const seen = () => world.receiver.received.filter((r) => r.path.startsWith('/m/')).map((r) => `${r.path.slice(3)}:${r.json.data.marker}`);
    await world.receiver.waitFor(() => seen().length >= expected.length);
    await sleep(300);
    expect(seen().sort()).toEqual(expected.sort());
  });

  it('reach a webhook created by the same request ("created"), never one just deleted ("deleted")', async () => {
    const before = world.receiver.received.length;
    const { id } = await env.webhook({ url: `${world.receiver.url}/self`, events: ['config.webhook.updated'] });
    await world.receiver.waitFor((r) => r.slice(before).some((x) => x.path === '/self' && x.json.data.action === 'created'));
    await world.api.delete(`/api/events/webhooks/${id}`, { token: world.admin.token });
    await sleep(300);
    expect(world.receiver.received.slice(before).filter((x) => x.path === '/self').map((x) => x.json.data.action)).toEqual(['created']);
  });

  it('go to one webhook only for a test, which reports as a delivery', async () => {
    const { id, secret } = await env.webhook({ url: `${world.receiver.url}/tested`, events: ['chat.created'] });
    await env.webhook({ url: `${world.receiver.url}/bystander` });
    const res = await world.api.post(`/api/events/webhooks/${id}/test`, undefined, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ webhook_id: id, event: 'config.webhook.tested', attempts: 0 });
    expect(['pending', 'delivering', 'succeeded']).toContain(res.body.status);
    const [request] = await world.receiver.waitFor((r) => r.some((x) => x.path === '/tested'));
    const tested = world.receiver.received.find((x) => x.path === '/tested')!;
    expect(new Webhook(secret).verify(tested.body, tested.headers)).toMatchObject({ event: 'config.webhook.tested', subject: { type: 'config', id } });
    expect(request).toBeDefined();
    await sleep(200);
    expect(world.receiver.received.some((x) => x.path === '/bystander' && x.json.event === 'config.webhook.tested')).toBe(false);
    expect((await world.api.post('/api/events/webhooks/nope/test', undefined, { token: world.admin.token })).status).toBe(404);
    await world.api.put(`/api/events/webhooks/${id}`, { enabled: false }, { token: world.admin.token });
    const disabled = await world.api.post(`/api/events/webhooks/${id}/test`, undefined, { token: world.admin.token });
    expect(disabled.status).toBe(400);
  });

  it('are listed newest first, a page at a time', async () => {
    const { id } = await env.webhook({ url: `${world.receiver.url}/paged`, events: ['note.*'] });
    for (let i = 0; i < 5; i++) await env.publish({ event: 'note.updated', subjectId: `page-${i}`, data: { i } });
    await world.receiver.waitFor((r) => r.filter((x) => x.path === '/paged').length === 5);
    const first = await env.deliveries(id, '?page=1&limit=2');
    expect(first).toMatchObject({ total: 5, page: 1, limit: 2 });
    expect(first.items).toHaveLength(2);
    const all = await env.deliveries(id, '?limit=100');
    expect(all.items.map((d) => d.id)).toEqual([...all.items.map((d) => d.id)].sort().reverse());
    expect(Object.keys(all.items[0]).sort()).toEqual(
      ['attempts', 'created_at', 'event', 'event_id', 'id', 'last_attempt_at', 'last_error', 'last_latency_ms', 'last_status_code', 'next_attempt_at', 'status', 'updated_at', 'webhook_id'].sort(),
    );
    expect((await world.api.get(`/api/events/webhooks/${id}/deliveries?limit=101`, { token: world.admin.token })).status).toBe(422);
    expect((await world.api.get('/api/events/webhooks/nope/deliveries', { token: world.admin.token })).body).toEqual({ detail: 'Webhook not found' });
  });

  it('carry a signature from the previous secret too while a rotation is in its grace period', async () => {
    const { id, secret: old } = await env.webhook({ url: `${world.receiver.url}/rotated`, events: ['note.*'] });
    const rotated = await world.api.post(`/api/events/webhooks/${id}/secret/rotate`, undefined, { token: world.admin.token });
    await env.publish({ event: 'note.deleted', subjectId: 'rotation' });
    const request = (await world.receiver.waitFor((r) => r.some((x) => x.path === '/rotated'))).find((x) => x.path === '/rotated')!;
    expect(request.headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(old).verify(request.body, request.headers)).not.toThrow();
    expect(() => new Webhook(rotated.body.secret).verify(request.body, request.headers)).not.toThrow();
  });
});

describe('failed deliveries', () => {
  const clock = new TestClock();
  const world = useServer({ fakes: RECEIVER, clock, env: LOCAL, admin: 'Delivery Admin' });
  const env = webhookDriver(world);
  afterEach(() => {
    world.receiver.behaviour = () => ({ status: 200 });
  });

  const attemptsAt = (path: string) => world.receiver.received.filter((r) => r.path === path);
  /** Moves the clock once every attempt under way is recorded, so no outcome is stamped with the jumped time. */
  const advance = async (ms: number) => {
    await eventually(() => world.server.parley.services.events.dispatcher.unsettledCount === 0);
    clock.advance(ms / 1000);
    env.wake();
    await sleep(120);
  };

  it('are retried on the schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, ±10 %), then fail for good', async () => {
    world.receiver.behaviour = (r) => (r.path === '/schedule' ? { status: 500, body: 'boom' } : { status: 200 });
    const { id } = await env.webhook({ url: `${world.receiver.url}/schedule`, events: ['note.*'] });
    await env.publish({ event: 'note.created', subjectId: 'scheduled' });
    await world.receiver.waitFor(() => attemptsAt('/schedule').length === 1);
    for (let made = 1; made < RETRY_SCHEDULE_MS.length; made++) {
      const delay = RETRY_SCHEDULE_MS[made];
      const record = await eventually(async () => {
        const item = (await env.deliveries(id)).items[0];
        return item.attempts === made && item.status === 'pending' ? item : undefined;
      });
      expect(record.last_status_code).toBe(500);
      expect(record.last_error).toBe('HTTP 500: boom');
      const dueIn = record.next_attempt_at * 1000 - clock.nowMs();
      expect(dueIn).toBeGreaterThanOrEqual(delay * 0.9 - 1000);
      expect(dueIn).toBeLessThanOrEqual(delay * 1.1 + 1000);
      await advance(delay * 0.85);
      expect(attemptsAt('/schedule')).toHaveLength(made);
      await advance(delay * 0.27);
      await world.receiver.waitFor(() => attemptsAt('/schedule').length === made + 1);
    }
    const final = await eventually(async () => {
      const item = (await env.deliveries(id)).items[0];
      return item.status === 'failed' ? item : undefined;
    });
    expect(final).toMatchObject({ attempts: 8, next_attempt_at: null });
    const ids = new Set(attemptsAt('/schedule').map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    const stamps = attemptsAt('/schedule').map((r) => Number(r.headers['webhook-timestamp']));
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    expect(new Set(stamps).size).toBe(stamps.length);
    await advance(86_400_000);
    expect(attemptsAt('/schedule')).toHaveLength(8);
  });

  it('succeed on a later attempt with the same webhook-id (500, then 200)', async () => {
    world.receiver.behaviour = (r, index) => (r.path === '/flaky' && world.receiver.received.slice(0, index).every((x) => x.path !== '/flaky') ? { status: 500 } : { status: 200 });
    const { id } = await env.webhook({ url: `${world.receiver.url}/flaky`, events: ['note.*'] });
    await env.publish({ event: 'note.created', subjectId: 'flaky' });
    await world.receiver.waitFor(() => attemptsAt('/flaky').length === 1);
    await eventually(async () => (await env.deliveries(id)).items[0].attempts === 1);
    await advance(5_600);
    await world.receiver.waitFor(() => attemptsAt('/flaky').length === 2);
    const record = await eventually(async () => {
      const item = (await env.deliveries(id)).items[0];
      return item.status === 'succeeded' ? item : undefined;
    });
    expect(record).toMatchObject({ attempts: 2, last_status_code: 200, last_error: null });
    const [first, second] = attemptsAt('/flaky');
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
  });

  it('are tried again at once on request, even after failing for good', async () => {
    world.receiver.behaviour = (r) => (r.path === '/manual' ? { status: 503 } : { status: 200 });
    const { id } = await env.webhook({ url: `${world.receiver.url}/manual`, events: ['note.*'] });
    await env.publish({ event: 'note.created', subjectId: 'manual' });
    const pending = await eventually(async () => {
      const item = (await env.deliveries(id)).items[0];
      return item?.attempts === 1 ? item : undefined;
    });
    world.receiver.behaviour = () => ({ status: 204 });
    const res = await world.api.post(`/api/events/webhooks/${id}/deliveries/${pending.id}/retry`, undefined, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(pending.id);
    await world.receiver.waitFor(() => attemptsAt('/manual').length === 2);
    await eventually(async () => (await env.deliveries(id)).items[0].status === 'succeeded');
    const missing = await world.api.post(`/api/events/webhooks/${id}/deliveries/nope/retry`, undefined, { token: world.admin.token });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Delivery not found' });
  });

  it('wait at least as long as Retry-After asks', async () => {
    world.receiver.behaviour = (r) => (r.path === '/throttled' ? { status: 429, headers: { 'retry-after': '120' } } : { status: 200 });
    const { id } = await env.webhook({ url: `${world.receiver.url}/throttled`, events: ['note.*'] });
    await env.publish({ event: 'note.created', subjectId: 'throttled' });
    const record = await eventually(async () => {
      const item = (await env.deliveries(id)).items[0];
      return item?.attempts === 1 ? item : undefined;
    });
    expect(record.next_attempt_at * 1000 - clock.nowMs()).toBeGreaterThanOrEqual(119_000);
    await advance(10_000);
    expect(attemptsAt('/throttled')).toHaveLength(1);
  });

  it('switch a webhook off on 410 Gone, and say so with config.webhook.disabled', async () => {
    world.receiver.behaviour = (r) => (r.path === '/gone' ? { status: 410 } : { status: 200 });
    const { id } = await env.webhook({ url: `${world.receiver.url}/gone`, events: ['note.*'] });
    await env.publish({ event: 'note.created', subjectId: 'gone' });
    await eventually(async () => (await env.webhooks()).find((w) => w.id === id)?.enabled === false);
    expect((await env.deliveries(id)).items[0]).toMatchObject({ status: 'failed', attempts: 1, last_status_code: 410 });
    expect(world.events.find((e) => e.event === 'config.webhook.disabled' && e.subject?.id === id)).toMatchObject({
      source: 'system',
      subject: { type: 'config', id },
      data: { reason: 'gone', status: 410 },
    });
    await env.publish({ event: 'note.created', subjectId: 'after-gone' });
    await sleep(200);
    expect(attemptsAt('/gone')).toHaveLength(1);
  });

  it('switch off a webhook that has failed for five days without a success, and not one that succeeded in between', async () => {
    world.receiver.behaviour = (r) => (r.path === '/dead' || r.path === '/patchy' ? { status: 500 } : { status: 200 });
    const dead = await env.webhook({ url: `${world.receiver.url}/dead`, events: ['note.*'], targets: [] });
    const patchy = await env.webhook({ url: `${world.receiver.url}/patchy`, events: ['note.*'], targets: [] });
    await env.publish({ event: 'note.updated', subjectId: 'streak-1' });
    await world.receiver.waitFor(() => attemptsAt('/dead').length >= 1 && attemptsAt('/patchy').length >= 1);
    await advance(3 * 86_400_000);
    world.receiver.behaviour = (r) => (r.path === '/dead' ? { status: 500 } : { status: 200 });
    await env.publish({ event: 'note.updated', subjectId: 'streak-2' });
    await world.receiver.waitFor(() => attemptsAt('/patchy').some((x) => x.json.subject.id === 'streak-2'));
    world.receiver.behaviour = (r) => (r.path === '/dead' || r.path === '/patchy' ? { status: 500 } : { status: 200 });
    await advance(2 * 86_400_000 + 5_000);
    await env.publish({ event: 'note.updated', subjectId: 'streak-3' });
    await eventually(async () => (await env.webhooks()).find((w) => w.id === dead.id)?.enabled === false);
    expect(world.events.find((e) => e.event === 'config.webhook.disabled' && e.subject?.id === dead.id)?.data).toMatchObject({ reason: 'failing' });
    await world.receiver.waitFor(() => attemptsAt('/patchy').some((x) => x.json.subject.id === 'streak-3'));
    await sleep(200);
    expect((await env.webhooks()).find((w) => w.id === patchy.id)?.enabled).toBe(true);
  });

  it('are pruned once finished and older than the retention', async () => {
    const { id } = await env.webhook({ url: `${world.receiver.url}/pruned`, events: ['note.*'] });
    await env.publish({ event: 'note.pinned', subjectId: 'prune' });
    await eventually(async () => (await env.deliveries(id)).items[0]?.status === 'succeeded');
    const events = world.server.parley.services.events;
    await events.dispatcher.prune();
    expect((await env.deliveries(id)).total).toBe(1);
    await advance(8 * 86_400_000);
    await events.dispatcher.prune();
    expect((await env.deliveries(id)).total).toBe(0);
    const left = await world.server.parley.core.db.selectFrom('event_outbox').select('id').where('event', '=', 'note.pinned').execute();
    expect(left).toHaveLength(0);
  });
});

describe('slow receivers', () => {
  it('time out, and never delay deliveries to other webhooks', async () => {
    const world = await startWorld({ env: { ...LOCAL, EVENT_WEBHOOK_TIMEOUT: '0.5', EVENT_WEBHOOK_CONCURRENCY: '4', EVENT_WEBHOOK_SHUTDOWN_GRACE: '0.1' }, admin: 'Delivery Admin' });
    const env = webhookDriver(world);
    const hanging = await Receiver.start(() => ({ hang: true }));
    const fast = await Receiver.start();
    try {
      const slow = await env.webhook({ url: `${hanging.url}/hang`, events: ['note.*'] });
      await env.webhook({ url: `${fast.url}/fast`, events: ['note.*'] });
      const started = Date.now();
      for (let i = 0; i < 30; i++) await env.publish({ event: 'note.updated', subjectId: `n${i}` });
      await fast.waitFor((r) => r.length === 30, 3_000);
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(hanging.maxConcurrent).toBeLessThanOrEqual(4);
      const timedOut = await eventually(async () => (await env.deliveries(slow.id, '?limit=100')).items.find((d) => d.attempts === 1));
      expect(timedOut).toMatchObject({ status: 'pending', last_status_code: null, last_error: 'timed out after 0.5 s' });
    } finally {
      await hanging.close();
      await fast.close();
      await world.close();
    }
  });
});
