import nodeIcal from 'node-ical';
import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { TestClock } from '../../helpers/server.js';
import { as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { openBrowser } from '../completions/setup.js';

const NS = 1_000_000;
const MINUTE = 60;
/** 2026-01-05 is a Monday. */
const START = Date.UTC(2026, 0, 5, 6, 0, 0);
const ns = (iso: string) => Date.parse(iso) * NS;
const iso = (value: number) => new Date(value / NS).toISOString();

/** Calendars (routers/calendar.py): calendars, sharing, events with recurrence, RSVP, search, alerts through the scheduler. */
describe('calendar', () => {
  const clock = new TestClock(START);
  const world = useServer({ clock, env: { SCHEDULER_POLL_INTERVAL: '3600' }, admin: 'Calendar Admin', users: { alice: ['user', 'Cal Alice'], bob: ['user', 'Cal Bob'] }, freshEvents: true });
  const tick = () => world.server.parley.core.scheduler.tick();
  const defaultOf = async (token: string) => (await world.api.get('/api/v1/calendars/', { token })).body.find((c: any) => c.is_default);

  it('gives each user a default calendar, creates, shares, updates and deletes calendars', async () => {
    const listed = await world.api.get('/api/v1/calendars/', as(world.alice));
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toMatchObject([{ name: 'Personal', is_default: true, user_id: world.alice.id, is_system: false, access_grants: [] }]);
    expect((await world.api.get('/api/v1/calendars/', as(world.alice))).body).toHaveLength(1);

    const team = await world.api.post('/api/v1/calendars/create', { name: 'Team', color: '#ff0000', data: { a: 1 }, access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] }, as(world.admin));
    expect(team.status, team.text).toBe(200);
    expect(team.body.access_grants).toMatchObject([{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }]);
    expect(world.takeEvents().filter((e) => e.event.startsWith('calendar.')).map((e) => [e.event, e.data])).toEqual([['calendar.created', { name: 'Team' }]]);
    const id = team.body.id;

    // Bob reads it (and gets his own default); Alice does not see it.
    expect((await world.api.get('/api/v1/calendars/', as(world.bob))).body.map((c: any) => c.name).sort()).toEqual(['Personal', 'Team']);
    expect((await world.api.get(`/api/v1/calendars/${id}`, as(world.bob))).status).toBe(200);
    expect(await world.api.get(`/api/v1/calendars/${id}`, as(world.alice))).toMatchObject({ status: 403, body: { detail: 'Access denied' } });
    expect((await world.api.post(`/api/v1/calendars/${id}/update`, { name: 'Mine now' }, as(world.bob))).status).toBe(403);
    expect(await world.api.get('/api/v1/calendars/nope', as(world.bob))).toMatchObject({ status: 404, body: { detail: 'Calendar not found' } });

    const updated = await world.api.post(`/api/v1/calendars/${id}/update`, { name: 'Team A', data: { b: 2 } }, as(world.admin));
    expect(updated.body).toMatchObject({ name: 'Team A', color: '#ff0000', data: { a: 1, b: 2 } });
    expect(updated.body.access_grants).toHaveLength(1);

    // The default moves; the default cannot be deleted.
    const personal = await defaultOf(world.admin.token);
    expect(personal).toMatchObject({ name: 'Personal', user_id: world.admin.id });
    expect((await world.api.post(`/api/v1/calendars/${id}/default`, {}, as(world.admin))).body).toMatchObject({ id, is_default: true });
    expect((await defaultOf(world.admin.token)).id).toBe(id);
    expect(await world.api.delete(`/api/v1/calendars/${id}/delete`, as(world.admin))).toMatchObject({ status: 400, body: { detail: 'Default calendar cannot be deleted' } });
    expect((await world.api.post(`/api/v1/calendars/${personal.id}/default`, {}, as(world.admin))).status).toBe(200);
    expect((await world.api.post(`/api/v1/calendars/${personal.id}/default`, {}, as(world.bob))).status).toBe(404);
    expect((await world.api.delete(`/api/v1/calendars/${id}/delete`, as(world.bob))).status).toBe(403);
    expect((await world.api.delete(`/api/v1/calendars/${id}/delete`, as(world.admin))).body).toEqual({ status: true });
    expect((await world.api.get('/api/v1/calendars/', as(world.bob))).body.map((c: any) => c.name)).toEqual(['Personal']);
  });

  it('lists events in a range, expanding daily, weekly with exceptions and monthly by weekday', async () => {
    await world.api.post('/api/v1/auths/update/timezone', { timezone: 'Europe/Paris' }, as(world.alice));
    const calendarId = (await defaultOf(world.alice.token)).id;
    const create = async (body: Record<string, unknown>) => {
      const res = await world.api.post('/api/v1/calendars/events/create', { calendar_id: calendarId, ...body }, as(world.alice));
      expect(res.status, res.text).toBe(200);
      return res.body;
    };
    // Monday and Wednesday 10:00 Paris (09:00 UTC), except Wednesday the 7th.
    const weekly = await create({ title: 'Standup', start_at: ns('2026-01-05T09:00:00Z'), end_at: ns('2026-01-05T09:15:00Z'), rrule: 'FREQ=WEEKLY;BYDAY=MO,WE\nEXDATE:20260107T100000' });
    await create({ title: 'Course', start_at: ns('2026-01-10T07:00:00Z'), rrule: 'RRULE:FREQ=DAILY;COUNT=3' });
    await create({ title: 'Review', start_at: ns('2026-01-13T15:00:00Z'), rrule: 'FREQ=MONTHLY;BYDAY=2TU' });
    await create({ title: 'Lunch', description: 'with the team', location: 'Canteen', start_at: ns('2026-01-08T11:00:00Z'), end_at: ns('2026-01-08T12:00:00Z') });
    await create({ title: 'Later', start_at: ns('2026-03-01T11:00:00Z') });
    const cancelled = await create({ title: 'Cancelled', start_at: ns('2026-01-09T11:00:00Z') });
    expect((await world.api.post(`/api/v1/calendars/events/${cancelled.id}/update`, { is_cancelled: true }, as(world.alice))).body.is_cancelled).toBe(true);

    const listed = await world.api.get('/api/v1/calendars/events?start=2026-01-01T00:00:00Z&end=2026-02-11T00:00:00Z', as(world.alice));
    expect(listed.status, listed.text).toBe(200);
    const byTitle = (title: string) => listed.body.filter((e: any) => e.title === title).map((e: any) => iso(e.start_at));
    expect(byTitle('Standup').slice(0, 4)).toEqual(['2026-01-05T09:00:00.000Z', '2026-01-12T09:00:00.000Z', '2026-01-14T09:00:00.000Z', '2026-01-19T09:00:00.000Z']);
    expect(listed.body.find((e: any) => e.title === 'Standup' && iso(e.start_at) === '2026-01-12T09:00:00.000Z')).toMatchObject({
      id: weekly.id,
      instance_id: `${weekly.id}_${ns('2026-01-12T09:00:00Z')}`,
      end_at: ns('2026-01-12T09:15:00Z'),
      user: { id: world.alice.id, name: 'Cal Alice' },
    });
    expect(byTitle('Course')).toEqual(['2026-01-10T07:00:00.000Z', '2026-01-11T07:00:00.000Z', '2026-01-12T07:00:00.000Z']);
    expect(byTitle('Review')).toEqual(['2026-01-13T15:00:00.000Z', '2026-02-10T15:00:00.000Z']);
    expect(byTitle('Lunch')).toEqual(['2026-01-08T11:00:00.000Z']);
    expect(byTitle('Later')).toEqual([]);
    expect(byTitle('Cancelled')).toEqual([]);
    // In order, and only the calendars asked for.
    expect(listed.body.map((e: any) => e.start_at)).toEqual([...listed.body.map((e: any) => e.start_at)].sort((a: number, b: number) => a - b));
    expect((await world.api.get('/api/v1/calendars/events?start=2026-01-01T00:00:00Z&end=2026-02-11T00:00:00Z&calendar_ids=other', as(world.alice))).body).toEqual([]);

    const search = await world.api.get('/api/v1/calendars/events/search?query=canteen', as(world.alice));
    expect(search.body).toMatchObject({ total: 1, items: [{ title: 'Lunch' }] });
    expect((await world.api.get('/api/v1/calendars/events/search?query=canteen', as(world.bob))).body).toEqual({ items: [], total: 0 });
  });

  it('invites attendees, who see the event and answer for themselves', async () => {
    const calendarId = (await defaultOf(world.alice.token)).id;
    const created = await world.api.post('/api/v1/calendars/events/create', { calendar_id: calendarId, title: 'Planning', start_at: ns('2026-01-20T10:00:00Z'), attendees: [{ user_id: world.bob.id }] }, as(world.alice));
    expect(created.body.attendees).toMatchObject([{ user_id: world.bob.id, status: 'pending' }]);
    const id = created.body.id;
    const bobsRange = await world.api.get('/api/v1/calendars/events?start=2026-01-20T00:00:00Z&end=2026-01-21T00:00:00Z', as(world.bob));
    expect(bobsRange.body.map((e: any) => e.title)).toEqual(['Planning']);

    world.takeEvents();
    expect((await world.api.post(`/api/v1/calendars/events/${id}/rsvp`, { status: 'accepted' }, as(world.bob))).body).toEqual({ status: true, rsvp: 'accepted' });
    expect(world.takeEvents().map((e) => [e.event, e.subject, e.data])).toEqual([['calendar.event.rsvp_updated', { type: 'calendar.event', id }, { status: 'accepted' }]]);
    expect(await world.api.post(`/api/v1/calendars/events/${id}/rsvp`, { status: 'maybe' }, as(world.bob))).toMatchObject({ status: 400, body: { detail: 'Invalid status' } });
    expect(await world.api.post(`/api/v1/calendars/events/${id}/rsvp`, { status: 'accepted' }, as(world.admin))).toMatchObject({ status: 404, body: { detail: 'Not an attendee of this event' } });
    expect((await world.api.get(`/api/v1/calendars/events/${id}`, as(world.alice))).body.attendees).toMatchObject([{ user_id: world.bob.id, status: 'accepted' }]);
    // Bob attends but may not edit Alice's calendar.
    expect((await world.api.post(`/api/v1/calendars/events/${id}/update`, { title: 'Mine' }, as(world.bob))).status).toBe(403);
    // Keeping an attendee keeps their answer.
    const updated = await world.api.post(`/api/v1/calendars/events/${id}/update`, { title: 'Planning 2', attendees: [{ user_id: world.bob.id }, { user_id: world.admin.id }] }, as(world.alice));
    expect(updated.body.attendees.map((a: any) => [a.user_id, a.status]).sort()).toEqual([[world.admin.id, 'pending'], [world.bob.id, 'accepted']].sort());
    expect((await world.api.delete(`/api/v1/calendars/events/${id}/delete`, as(world.alice))).body).toEqual({ status: true });
    expect(await world.api.get(`/api/v1/calendars/events/${id}`, as(world.alice))).toMatchObject({ status: 404, body: { detail: 'Event not found' } });
  });

  it('refuses bad input, storing nothing', async () => {
    const calendarId = (await defaultOf(world.alice.token)).id;
    const refused = async (body: Record<string, unknown>, status: number, detail?: unknown) => {
      const res = await world.api.post('/api/v1/calendars/events/create', { calendar_id: calendarId, title: 'Bad', start_at: ns('2026-02-01T10:00:00Z'), ...body }, as(world.alice));
      expect(res.status, res.text).toBe(status);
      if (detail !== undefined) expect(res.body.detail).toEqual(detail);
    };
    await refused({ rrule: 'FREQ=NEVER' }, 422, expect.stringMatching(/^Invalid RRULE/));
    await refused({ rrule: 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31' }, 422, 'Invalid RRULE: it never occurs');
    await refused({ end_at: ns('2026-02-01T09:00:00Z') }, 422, 'The event ends before it starts');
    await refused({ attendees: [{ user_id: 'ghost' }] }, 422, 'Unknown attendee(s): ghost');
    await refused({ start_at: 'tomorrow' }, 422);
    await refused({ calendar_id: 'nope' }, 404, 'Calendar not found');
    expect(await world.api.get('/api/v1/calendars/events?start=yesterday&end=today', as(world.alice))).toMatchObject({ status: 400 });
    expect((await world.api.get('/api/v1/calendars/events/search?query=Bad', as(world.alice))).body.total).toBe(0);
  });

  it('alerts the owner\'s sockets before an event, and before each occurrence of a recurring one', async () => {
    const calendarId = (await defaultOf(world.alice.token)).id;
    const browser = await openBrowser(world.server.url, world.alice.token);
    try {
      const now = clock.nowMs();
      const single = await world.api.post('/api/v1/calendars/events/create', { calendar_id: calendarId, title: 'Call', location: 'Room 1', start_at: (now + 30 * MINUTE * 1000) * NS, meta: { alert_minutes: 10 } }, as(world.alice));
      const daily = await world.api.post('/api/v1/calendars/events/create', { calendar_id: calendarId, title: 'Daily', start_at: (now + 60 * MINUTE * 1000) * NS, rrule: 'FREQ=DAILY' }, as(world.alice));
      await world.api.post('/api/v1/calendars/events/create', { calendar_id: calendarId, title: 'Silent', start_at: (now + 30 * MINUTE * 1000) * NS, meta: { alert_minutes: -1 } }, as(world.alice));
      const alerts = () => browser.received.filter((e) => e.type === 'calendar:alert').map((e) => e.data);

      clock.advance(19 * MINUTE);
      await tick();
      expect(alerts()).toEqual([]);
      clock.advance(MINUTE);
      await tick();
      await browser.next((e) => e.type === 'calendar:alert', 'the alert');
      expect(alerts()).toEqual([{ event_id: single.body.id, title: 'Call', description: '', start_at: single.body.start_at, minutes_until: 10, calendar_id: calendarId, location: 'Room 1' }]);

      // The daily one: 10 minutes before (the default), today and tomorrow.
      clock.advance(30 * MINUTE);
      await tick();
      await browser.next((e) => e.type === 'calendar:alert' && e.data.event_id === daily.body.id, 'the daily alert');
      clock.advance(24 * 60 * MINUTE);
      await tick();
      await tick();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(alerts().filter((a: any) => a.event_id === daily.body.id).map((a: any) => a.start_at)).toEqual([daily.body.start_at, daily.body.start_at + 24 * 3600 * 1000 * NS]);
      expect(alerts().filter((a: any) => a.title === 'Silent')).toEqual([]);
      await world.api.delete(`/api/v1/calendars/events/${daily.body.id}/delete`, as(world.alice));
      expect((await world.server.parley.core.scheduler.nextRuns('calendar-alert', [daily.body.id])).size).toBe(0);
    } finally {
      browser.close();
    }
  });

  it('is refused when off', async () => {
    const config = (await world.api.get('/api/v1/auths/admin/config', as(world.admin))).body;
    await world.api.post('/api/v1/auths/admin/config', { ...config, ENABLE_CALENDAR: false }, as(world.admin));
    try {
      expect(await world.api.get('/api/v1/calendars/', as(world.alice))).toMatchObject({ status: 403, body: { detail: ERROR.UNAUTHORIZED } });
      expect((await world.api.get('/api/config', as(world.alice))).body.features.enable_calendar).toBe(false);
    } finally {
      await world.api.post('/api/v1/auths/admin/config', { ...config, ENABLE_CALENDAR: true }, as(world.admin));
    }
    expect((await world.api.get('/api/config', as(world.alice))).body.features.enable_calendar).toBe(true);
  });

  it('publishes a calendar as a revocable iCalendar feed that node-ical reads back, and imports .ics files', async () => {
    await world.api.post('/api/v1/auths/update/timezone', { timezone: 'Europe/Paris' }, as(world.alice));
    const made = await world.api.post('/api/v1/calendars/create', { name: 'Exported' }, as(world.alice));
    const calendarId = made.body.id;
    const add = (body: Record<string, unknown>) => world.api.post('/api/v1/calendars/events/create', { calendar_id: calendarId, ...body }, as(world.alice));
    await add({ title: 'Standup', location: 'Room 2', start_at: ns('2026-03-02T09:00:00Z'), end_at: ns('2026-03-02T09:15:00Z'), rrule: 'FREQ=WEEKLY;BYDAY=MO,WE\nEXDATE:20260304T100000' });
    await add({ title: 'Launch', description: 'Big day', start_at: ns('2026-03-10T14:00:00Z') });

    expect((await world.api.post(`/api/v1/calendars/${calendarId}/feed`, {}, as(world.bob))).status).toBe(403);
    const published = await world.api.post(`/api/v1/calendars/${calendarId}/feed`, {}, as(world.alice));
    expect(published.status, published.text).toBe(200);
    const feed = await world.api.get(published.body.url);
    expect(feed.status).toBe(200);
    expect(feed.headers.get('content-type')).toContain('text/calendar');
    const parsed = Object.values(nodeIcal.sync.parseICS(feed.text)).filter((c: any) => c.type === 'VEVENT') as any[];
    const standup = parsed.find((e) => e.summary === 'Standup');
    expect(standup.start.toISOString()).toBe('2026-03-02T09:00:00.000Z');
    expect(standup.location).toBe('Room 2');
    // Paris is UTC+1 until 29 March, UTC+2 after: the rule keeps 10:00 local.
    expect(standup.rrule.between(new Date('2026-03-01T00:00:00Z'), new Date('2026-04-02T00:00:00Z')).map((d: Date) => d.toISOString())).toEqual(
      expect.arrayContaining(['2026-03-02T09:00:00.000Z', '2026-03-30T08:00:00.000Z']),
    );
    expect(Object.values(standup.exdate).map((d: any) => d.toISOString())).toContain('2026-03-04T09:00:00.000Z');
    expect(parsed.find((e) => e.summary === 'Launch')).toMatchObject({ description: 'Big day' });

    // Rotated: the old URL stops working; revoked: none works.
    const rotated = await world.api.post(`/api/v1/calendars/${calendarId}/feed`, {}, as(world.alice));
    expect((await world.api.get(published.body.url)).status).toBe(404);
    expect((await world.api.get(rotated.body.url)).status).toBe(200);
    expect((await world.api.delete(`/api/v1/calendars/${calendarId}/feed`, as(world.alice))).body).toEqual({ status: true });
    expect((await world.api.get(rotated.body.url)).status).toBe(404);

    // The feed imported into another calendar gives the same occurrences.
    const target = (await world.api.post('/api/v1/calendars/create', { name: 'Imported' }, as(world.alice))).body.id;
    const imported = await world.api.post(`/api/v1/calendars/${target}/import`, { ics: feed.text }, as(world.alice));
    expect(imported.body).toEqual({ imported: 2, skipped: 0 });
    const range = '/api/v1/calendars/events?start=2026-03-01T00:00:00Z&end=2026-04-02T00:00:00Z';
    const starts = async (id: string) => (await world.api.get(`${range}&calendar_ids=${id}`, as(world.alice))).body.map((e: any) => [e.title, iso(e.start_at)]);
    expect(await starts(target)).toEqual(await starts(calendarId));
    expect((await world.api.post(`/api/v1/calendars/${target}/import`, { ics: 'hello' }, as(world.alice))).status).toBe(422);
  });

  it('shows automations as the virtual Scheduled Tasks calendar to those who may use them', async () => {
    expect((await world.api.get('/api/v1/calendars/', as(world.alice))).body.some((c: any) => c.is_system)).toBe(false);
    const calendars = (await world.api.get('/api/v1/calendars/', as(world.admin))).body;
    expect(calendars.find((c: any) => c.is_system)).toMatchObject({ id: '__scheduled_tasks__', name: 'Scheduled Tasks', user_id: world.admin.id });
    expect(await world.api.delete('/api/v1/calendars/__scheduled_tasks__/delete', as(world.admin))).toMatchObject({ status: 400, body: { detail: 'System calendars cannot be deleted' } });

    const automation = await world.api.post('/api/v1/automations/create', { name: 'Digest', data: { prompt: 'Digest please', model_id: 'no-model', rrule: 'FREQ=DAILY;BYHOUR=9;BYMINUTE=0' } }, as(world.admin));
    expect(automation.status, automation.text).toBe(200);
    // A run (failing: there is no model) recorded now.
    await world.api.post(`/api/v1/automations/${automation.body.id}/run`, {}, as(world.admin));
    await world.server.parley.services.automations.close();
    const now = clock.nowMs();
    const range = `start=${new Date(now - 3600_000).toISOString()}&end=${new Date(now + 3 * 86_400_000).toISOString()}`;
    const listed = (await world.api.get(`/api/v1/calendars/events?${range}&calendar_ids=__scheduled_tasks__`, as(world.admin))).body;
    const upcoming = listed.filter((e: any) => e.id === `auto_${automation.body.id}`);
    expect(upcoming.map((e: any) => new Date(e.start_at / NS).toISOString().slice(11))).toEqual(['09:00:00.000Z', '09:00:00.000Z', '09:00:00.000Z']);
    expect(upcoming[0]).toMatchObject({ calendar_id: '__scheduled_tasks__', title: 'Digest', description: 'Digest please', meta: { automation_id: automation.body.id } });
    expect(listed.filter((e: any) => e.id.startsWith('run_'))).toMatchObject([{ title: 'Digest', description: 'Model not found', meta: { automation_id: automation.body.id, status: 'error' } }]);
    await world.api.delete(`/api/v1/automations/${automation.body.id}/delete`, as(world.admin));
  });
});
