import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { fakeModel } from '../../helpers/fake-model.js';
import { TestClock } from '../../helpers/server.js';
import { as } from '../../helpers/users.js';
import { openBrowser } from '../completions/setup.js';
import { useServer } from '../../helpers/world.js';

const HOUR = 3600;
/** 2026-03-06 12:00 UTC: two days before New York moves to summer time (2026-03-08). */
const START = Date.UTC(2026, 2, 6, 12, 0, 0);
const NS = 1_000_000;

/**
 * Automations (routers/automations.py, 0.11.0's folder_id) on the core
 * scheduler, with a settable clock: the poll is left to the test (`tick`).
 */
describe('automations', () => {
  const clock = new TestClock(START);
  const world = useServer({
    fakes: fakeModel(),
    clock,
    env: { BYPASS_MODEL_ACCESS_CONTROL: 'true', USER_PERMISSIONS_FEATURES_AUTOMATIONS: 'true', SCHEDULER_POLL_INTERVAL: '3600' },
    admin: 'Automation Admin',
    users: { alice: ['user', 'Auto Alice'], bob: ['user', 'Auto Bob'] },
    freshEvents: true,
  });
  const tick = () => world.server.parley.core.scheduler.tick();
  const form = (rrule: string, extra: Record<string, unknown> = {}) => ({ name: 'Morning summary', data: { prompt: 'Summarise my day', model_id: 'fake-model', rrule }, ...extra });
  const runsOf = async (id: string, token = world.alice.token) => (await world.api.get(`/api/v1/automations/${id}/runs`, as({ token } as never))).body as any[];
  const setZone = async (timezone: string, token = world.alice.token) => expect((await world.api.post('/api/v1/auths/update/timezone', { timezone }, { token })).status).toBe(200);

  it('creates, reads, lists, updates, toggles and deletes, each user only their own', async () => {
    const folder = await world.api.post('/api/v1/folders/', { name: 'Reports' }, as(world.alice));
    expect(folder.status, folder.text).toBe(200);
    const created = await world.api.post('/api/v1/automations/create', form('FREQ=DAILY;BYHOUR=9;BYMINUTE=0', { folder_id: folder.body.id }), as(world.alice));
    expect(created.status, created.text).toBe(200);
    expect(created.body).toMatchObject({ user_id: world.alice.id, name: 'Morning summary', folder_id: folder.body.id, is_active: true, last_run: null });
    expect(created.body.next_runs).toHaveLength(5);
    expect(created.body.next_run_at).toBe(created.body.next_runs[0]);
    const id = created.body.id;
    expect(world.takeEvents().filter((e) => e.event.startsWith('automation.')).map((e) => [e.event, e.data])).toEqual([['automation.created', { name: 'Morning summary', is_active: true }]]);

    expect((await world.api.get(`/api/v1/automations/${id}`, as(world.bob))).status).toBe(403);
    expect((await world.api.get(`/api/v1/automations/${id}`, as(world.admin))).status).toBe(200);
    expect((await world.api.get('/api/v1/automations/list', as(world.bob))).body).toEqual({ items: [], total: 0 });
    const listed = await world.api.get('/api/v1/automations/list?query=morning&status=active', as(world.alice));
    expect(listed.body.total).toBe(1);
    expect((await world.api.get('/api/v1/automations/list?status=paused', as(world.alice))).body.total).toBe(0);

    const updated = await world.api.post(`/api/v1/automations/${id}/update`, form('FREQ=WEEKLY;BYDAY=MO;BYHOUR=8;BYMINUTE=0', { name: 'Weekly report' }), as(world.alice));
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Weekly report', folder_id: null });
    expect(new Date(updated.body.next_run_at / NS).toISOString()).toBe('2026-03-09T08:00:00.000Z');

    const paused = await world.api.post(`/api/v1/automations/${id}/toggle`, {}, as(world.alice));
    expect(paused.body).toMatchObject({ is_active: false, next_run_at: null });
    const resumed = await world.api.post(`/api/v1/automations/${id}/toggle`, {}, as(world.alice));
    expect(resumed.body.is_active).toBe(true);
    expect(resumed.body.next_run_at).toBe(updated.body.next_run_at);
    expect(world.takeEvents().filter((e) => e.event.startsWith('automation.')).map((e) => e.event)).toEqual(['automation.updated', 'automation.disabled', 'automation.enabled']);

    expect((await world.api.delete(`/api/v1/automations/${id}/delete`, as(world.bob))).status).toBe(403);
    expect((await world.api.delete(`/api/v1/automations/${id}/delete`, as(world.alice))).body).toBe(true);
    expect((await world.api.get(`/api/v1/automations/${id}`, as(world.alice))).status).toBe(404);
    expect((await world.server.parley.core.scheduler.nextRuns('automation', [id])).size).toBe(0);
  });

  it('refuses bad input with 422 and the reason, storing nothing', async () => {
    const refused = async (body: unknown, detail: unknown, token = world.alice.token) => {
      const res = await world.api.post('/api/v1/automations/create', body, { token });
      expect(res.status, res.text).toBe(422);
      if (detail !== undefined) expect(res.body.detail).toEqual(detail);
    };
    await refused(form('FREQ=SOMETIMES'), expect.stringMatching(/^Invalid RRULE: /));
    await refused(form('FREQ=DAILY;BYHOUR=25'), 'Invalid RRULE: BYHOUR=25 is out of range');
    await refused(form('DTSTART:20200101T090000\nRRULE:FREQ=DAILY;COUNT=2'), 'RRULE has no future occurrences');
    await refused(form('FREQ=DAILY', { folder_id: 'no-such-folder' }), 'Folder not found');
    await refused({ name: 'x', data: { prompt: 'p', model_id: 'fake-model' } }, undefined);

    await world.api.post('/api/v1/auths/update/timezone', { timezone: 'Mars/Olympus_Mons' }, as(world.bob));
    await refused(form('FREQ=DAILY'), 'Unknown time zone: Mars/Olympus_Mons', world.bob.token);
    await setZone('UTC', world.bob.token);

    const config = (await world.api.get('/api/v1/auths/admin/config', as(world.admin))).body;
    expect((await world.api.post('/api/v1/auths/admin/config', { ...config, AUTOMATION_MIN_INTERVAL: 3600, AUTOMATION_MAX_COUNT: 1 }, as(world.admin))).status).toBe(200);
    try {
      await refused(form('FREQ=MINUTELY;INTERVAL=5'), 'Schedule too frequent. Minimum interval is 3600 seconds.', world.bob.token);
      const allowed = await world.api.post('/api/v1/automations/create', form('FREQ=HOURLY', { is_active: false }), as(world.bob));
      expect(allowed.status).toBe(200);
      await refused(form('FREQ=DAILY'), 'Automation limit reached (1)', world.bob.token);
      // Admins are not limited.
      const admins = await world.api.post('/api/v1/automations/create', form('FREQ=MINUTELY', { is_active: false }), as(world.admin));
      expect(admins.status).toBe(200);
      expect(admins.body.next_run_at).toBe(null);
    } finally {
      await world.api.post('/api/v1/auths/admin/config', { ...config, AUTOMATION_MIN_INTERVAL: '', AUTOMATION_MAX_COUNT: '' }, as(world.admin));
    }
    expect((await world.api.get('/api/v1/automations/list', as(world.alice))).body.total).toBe(0);
    expect((await world.api.get('/api/v1/automations/list', as(world.bob))).body.total).toBe(1);
  });

  it('is refused when off, and to users without features.automations', async () => {
    const config = (await world.api.get('/api/v1/auths/admin/config', as(world.admin))).body;
    await world.api.post('/api/v1/auths/admin/config', { ...config, ENABLE_AUTOMATIONS: false }, as(world.admin));
    try {
      expect(await world.api.get('/api/v1/automations/list', as(world.alice))).toMatchObject({ status: 403, body: { detail: ERROR.UNAUTHORIZED } });
      expect((await world.api.get('/api/config', as(world.alice))).body.features.enable_automations).toBe(false);
    } finally {
      await world.api.post('/api/v1/auths/admin/config', { ...config, ENABLE_AUTOMATIONS: true }, as(world.admin));
    }
    expect((await world.api.get('/api/config', as(world.alice))).body.features.enable_automations).toBe(true);
  });

  it('runs on time, once, into a chat in its folder, through DST, and missed slots run once', async () => {
    await setZone('America/New_York');
    const folder = (await world.api.post('/api/v1/folders/', { name: 'Daily' }, as(world.alice))).body;
    const created = await world.api.post('/api/v1/automations/create', form('FREQ=DAILY;BYHOUR=9;BYMINUTE=0', { name: 'Nine o\'clock', folder_id: folder.id }), as(world.alice));
    expect(created.status, created.text).toBe(200);
    const id = created.body.id;
    // 09:00 EST is 14:00 UTC; from 2026-03-08 on, 09:00 EDT is 13:00 UTC.
    expect(created.body.next_runs.slice(0, 3).map((ns: number) => new Date(ns / NS).toISOString())).toEqual(['2026-03-06T14:00:00.000Z', '2026-03-07T14:00:00.000Z', '2026-03-08T13:00:00.000Z']);
    const nextRun = async () => new Date((await world.api.get(`/api/v1/automations/${id}`, as(world.alice))).body.next_run_at / NS).toISOString();

    clock.advance(HOUR + 59 * 60); // 13:59 UTC: not yet
    await tick();
    expect(await runsOf(id)).toEqual([]);
    clock.advance(60);
    await tick();
    await tick();
    const [run] = await runsOf(id);
    expect(await runsOf(id)).toHaveLength(1);
    expect(run).toMatchObject({ status: 'success', error: null, output: 'You said: Summarise my day' });
    expect(run.duration_ms).toBeGreaterThanOrEqual(0);
    const chat = (await world.api.get(`/api/v1/chats/${run.chat_id}`, as(world.alice))).body;
    expect(chat).toMatchObject({ title: "Nine o'clock", folder_id: folder.id });
    expect(Object.values(chat.chat.history.messages).map((m: any) => m.role).sort()).toEqual(['assistant', 'user']);
    const events = world.takeEvents().filter((e) => e.event.startsWith('automation.run'));
    expect(events.map((e) => [e.event, e.data])).toEqual([['automation.run_completed', { name: "Nine o'clock", chat_id: run.chat_id }]]);
    const current = (await world.api.get(`/api/v1/automations/${id}`, as(world.alice))).body;
    expect(current.last_run.id).toBe(run.id);
    expect(await nextRun()).toBe('2026-03-07T14:00:00.000Z');

    // The last run in winter time; the next one is at 09:00 summer time.
    clock.advance(24 * HOUR);
    await tick();
    expect(await runsOf(id)).toHaveLength(2);
    expect(await nextRun()).toBe('2026-03-08T13:00:00.000Z');

    // Every instance down for three days: one run on start-up, then the next slot from now.
    clock.advance(4 * 24 * HOUR);
    await world.restart();
    await tick();
    expect(await runsOf(id)).toHaveLength(3);
    expect(await nextRun()).toBe('2026-03-12T13:00:00.000Z');
    await world.api.post(`/api/v1/automations/${id}/toggle`, {}, as(world.alice));
  });

  it('records a failed run with the reason, and the next run still happens', async () => {
    await setZone('UTC');
    world.model.script = (body) => (JSON.stringify(body.messages).includes('Break') ? { status: 500, error: 'The provider broke' } : { text: 'fine' });
    const created = await world.api.post('/api/v1/automations/create', form('FREQ=HOURLY', { name: 'Breaker', data: { prompt: 'Break please', model_id: 'fake-model', rrule: 'FREQ=HOURLY' } }), as(world.alice));
    const id = created.body.id;
    clock.advance(HOUR);
    await tick();
    const [failed] = await runsOf(id);
    expect(failed).toMatchObject({ status: 'error' });
    expect(failed.error).toContain('The provider broke');
    expect(world.takeEvents().filter((e) => e.event === 'automation.run_failed')).toHaveLength(1);
    clock.advance(HOUR);
    await tick();
    expect(await runsOf(id)).toHaveLength(2);

    // A model the owner cannot use fails the run, recorded with the pipeline's reason.
    const other = await world.api.post('/api/v1/automations/create', { ...form('FREQ=HOURLY'), data: { prompt: 'Hi', model_id: 'no-such-model', rrule: 'FREQ=HOURLY' } }, as(world.alice));
    const ran = await world.api.post(`/api/v1/automations/${other.body.id}/run`, {}, as(world.alice));
    expect(ran.status).toBe(200);
    await world.server.parley.services.automations.close();
    expect(await runsOf(other.body.id)).toMatchObject([{ status: 'error', error: 'Model not found', chat_id: expect.any(String) }]);
    for (const automation of [id, other.body.id]) await world.api.delete(`/api/v1/automations/${automation}/delete`, as(world.alice));
  });

  it('tells the owner\'s sockets of a run now: the new chat, then the result', async () => {
    world.model.script = (body) => ({ text: `Echo ${JSON.stringify(body.messages.at(-1).content)}` });
    const browser = await openBrowser(world.server.url, world.alice.token);
    const results: any[] = [];
    browser.socket.on('automation:result', (payload: any) => results.push(payload));
    try {
      const created = await world.api.post('/api/v1/automations/create', form('FREQ=WEEKLY', { is_active: false, data: { prompt: 'Hi {{USER_NAME}}', model_id: 'fake-model', rrule: 'FREQ=WEEKLY' } }), as(world.alice));
      const ran = await world.api.post(`/api/v1/automations/${created.body.id}/run`, {}, as(world.alice));
      expect(ran.status, ran.text).toBe(200);
      expect(world.takeEvents().filter((e) => e.event === 'automation.run_started').map((e) => e.data)).toEqual([{ name: 'Morning summary' }]);
      const list = await browser.next((e) => e.type === 'chat:list', 'chat:list');
      for (let i = 0; i < 200 && results.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(results).toEqual([{ automation_id: created.body.id, name: 'Morning summary', chat_id: list.chat_id, status: 'success' }]);
      expect((await runsOf(created.body.id))[0]).toMatchObject({ status: 'success', chat_id: list.chat_id, output: 'Echo "Hi Auto Alice"' });
      // Run now leaves a paused automation paused.
      expect((await world.api.get(`/api/v1/automations/${created.body.id}`, as(world.alice))).body).toMatchObject({ is_active: false, next_run_at: null });
    } finally {
      browser.close();
    }
  });
});
