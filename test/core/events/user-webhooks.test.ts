import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noticeBody } from '../../../src/core/events/formats.js';
import { openBrowser } from '../../areas/completions/setup.js';
import { eventuallyPasses } from '../../helpers/eventually.js';
import { fakeModel } from '../../helpers/fake-model.js';
import { TestClock } from '../../helpers/server.js';
import { type Account, as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

const MINUTE = 60;
const NS = 1_000_000;

/**
 * Notices to a user's own webhook (ENABLE_USER_WEBHOOKS, Settings › Notifications): an answer
 * that ended while they were away, a channel message while they had no socket in its room, a
 * calendar alert; none when the administrator turns them off.
 */
describe('user webhooks', () => {
  const clock = new TestClock(Date.UTC(2026, 0, 5, 6, 0, 0));
  const world = useServer({
    fakes: fakeModel(),
    clock,
    env: {
      ENABLE_USER_WEBHOOKS: 'true',
      ENABLE_CHANNELS: 'true',
      EVENT_WEBHOOK_ALLOW_LOCAL: 'true',
      BYPASS_MODEL_ACCESS_CONTROL: 'true',
      USER_PERMISSIONS_FEATURES_AUTOMATIONS: 'true',
      // Users may set a webhook URL only with this permission (the reference's features.webhooks).
      USER_PERMISSIONS_FEATURES_USER_WEBHOOKS: 'true',
      SCHEDULER_POLL_INTERVAL: '3600',
    },
    admin: 'Hook Admin',
    users: { alice: ['user', 'Hook Alice'], bob: ['user', 'Hook Bob'] },
  });
  const tick = () => world.server.parley.core.scheduler.tick();
  let receiver: Server;
  let url = '';
  const received: { path: string; body: any; type: string | undefined }[] = [];

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        received.push({ path: request.url ?? '', body: JSON.parse(body), type: request.headers['content-type'] });
        response.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  const setHook = async (account: Account, path: string) => {
    const res = await world.api.post('/api/v1/users/user/settings/update', { ui: { notifications: { webhook_url: `${url}${path}` } } }, as(account));
    expect(res.status, res.text).toBe(200);
  };
  const noticesAt = (path: string) => received.filter((r) => r.path === path).map((r) => r.body);

  it('sends a channel message to the members with no socket in its room, not to its author', async () => {
    await setHook(world.bob, '/bob');
    await setHook(world.admin, '/admin');
    const channel = await world.api.post('/api/v1/channels/create', { type: 'group', name: 'ops', user_ids: [world.bob.id] }, as(world.admin));
    expect(channel.status, channel.text).toBe(200);
    expect((await world.api.post(`/api/v1/channels/${channel.body.id}/messages/post`, { content: 'Deploy at noon' }, as(world.admin))).status).toBe(200);
    const link = `/channels/${channel.body.id}`;
    await eventuallyPasses(() => expect(noticesAt('/bob')).toEqual([{ action: 'channel', message: 'Deploy at noon', title: 'ops', url: link }]));
    expect(received.find((r) => r.path === '/bob')!.type).toBe('application/json');

    // Bob in the room: no notice; the author never gets one.
    const browser = await openBrowser(world.server.url, world.bob.token);
    try {
      await browser.socket.timeout(5000).emitWithAck('join-channels', { auth: { token: world.bob.token } });
      expect((await world.api.post(`/api/v1/channels/${channel.body.id}/messages/post`, { content: 'Seen live' }, as(world.admin))).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(noticesAt('/bob')).toHaveLength(1);
      expect(noticesAt('/admin')).toEqual([]);
    } finally {
      browser.close();
    }
  });

  it('sends a calendar alert to the owner', async () => {
    await setHook(world.alice, '/alice-calendar');
    const calendar = (await world.api.get('/api/v1/calendars/', as(world.alice))).body.find((c: any) => c.is_default);
    const start = (clock.nowMs() + 30 * MINUTE * 1000) * NS;
    const event = await world.api.post('/api/v1/calendars/events/create', { calendar_id: calendar.id, title: 'Standup', start_at: start, meta: { alert_minutes: 10 } }, as(world.alice));
    expect(event.status, event.text).toBe(200);
    clock.advance(20 * MINUTE);
    await tick();
    await eventuallyPasses(() => expect(noticesAt('/alice-calendar')).toEqual([{ action: 'calendar_alert', title: 'Standup', minutes_until: 10, event_id: event.body.id }]));
  });

  it('sends an answer that ended while its user was away (an automation’s run), with the chat’s link', async () => {
    world.model.script = () => ({ text: 'Your day is clear.' });
    await setHook(world.alice, '/alice-answers');
    const automation = await world.api.post('/api/v1/automations/create', { name: 'Digest', data: { prompt: 'Summarise my day', model_id: 'fake-model', rrule: 'FREQ=HOURLY' } }, as(world.alice));
    expect(automation.status, automation.text).toBe(200);
    // Alice's last request is over 3 minutes old when the run's answer ends.
    clock.advance(2 * 60 * MINUTE);
    await tick();
    await eventuallyPasses(() => expect(noticesAt('/alice-answers')).toHaveLength(1), 10_000);
    const [notice] = noticesAt('/alice-answers');
    expect(notice).toMatchObject({ action: 'chat', message: 'Your day is clear.', url: expect.stringMatching(/^\/c\/[\w-]+$/) });
    expect(typeof notice.title).toBe('string');
  });

  it('sends nothing once the administrator turns user webhooks off', async () => {
    const config = await world.api.get('/api/v1/auths/admin/config', as(world.admin));
    expect((await world.api.post('/api/v1/auths/admin/config', { ...config.body, ENABLE_USER_WEBHOOKS: false }, as(world.admin))).status).toBe(200);
    expect((await world.api.get('/api/config', as(world.bob))).body.features.enable_user_webhooks).toBe(false);
    const before = received.length;
    const channel = await world.api.post('/api/v1/channels/create', { type: 'group', name: 'quiet', user_ids: [world.bob.id] }, as(world.admin));
    expect((await world.api.post(`/api/v1/channels/${channel.body.id}/messages/post`, { content: 'Hush' }, as(world.admin))).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(received.length).toBe(before);
  });

  it('shapes a notice for Slack, Discord and Teams as event deliveries are', () => {
    const notice = { message: 'Standup — starting now', data: { action: 'calendar_alert', title: 'Standup' } };
    const context = { appName: 'Open WebUI', version: '0.11.0', iconUrl: 'https://openwebui.com/favicon.png' };
    expect(JSON.parse(noticeBody('slack', notice, context))).toEqual({ text: 'Standup — starting now' });
    expect(JSON.parse(noticeBody('discord', notice, context))).toEqual({ content: 'Standup — starting now' });
    expect(JSON.parse(noticeBody('teams_connector', notice, context)).sections[0]).toMatchObject({ activityTitle: 'Standup — starting now', activitySubtitle: 'Open WebUI (0.11.0) - calendar_alert' });
    expect(JSON.parse(noticeBody('generic', notice, context))).toEqual(notice.data);
  });
});
