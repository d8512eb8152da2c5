import { randomBytes, randomUUID } from 'node:crypto';
import { type AccessGrant, RESOURCE_TYPES } from '../../core/access/grants.js';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import type { Realtime } from '../../core/realtime/server.js';
import { Recurrence, RecurrenceError, toWallClock } from '../../core/scheduler/recurrence.js';
import type { AutomationsService } from '../automations/service.js';
import type { UsersService } from '../users/service.js';
import type { CalendarEventForm, CalendarEventUpdateForm, CalendarForm, CalendarUpdateForm, EventsQuery, SearchQuery } from './schemas.js';
import { type AttendeeRecord, type CalendarRecord, CalendarStore, type EventRecord, type EventWrite } from './store.js';

type Json = Record<string, unknown>;

/** The scheduler's kind for event alerts; the key is the event's id. */
export const CALENDAR_ALERT_JOB = 'calendar-alert';
const NS_PER_MS = 1_000_000;
const SHARING = { publicPermission: 'sharing.public_calendars' };
const RSVP_STATUSES = ['accepted', 'declined', 'tentative', 'pending'];
/** Occurrences one recurring event contributes to a listing at most (the reference's). */
const MAX_INSTANCES = 5000;
const invalid = (detail: string) => new HttpError(422, detail);
/** The virtual calendar of the user's automations (the reference's id). */
export const SCHEDULED_TASKS_CALENDAR_ID = '__scheduled_tasks__';

export interface CalendarOptions {
  /** Minutes before an event its alert is sent, unless its `meta.alert_minutes` says (CALENDAR_ALERT_LOOKAHEAD_MINUTES). */
  alertMinutes: number;
}

export function readCalendarOptions(raw: Record<string, string | undefined>): CalendarOptions {
  const minutes = Number.parseInt(raw.CALENDAR_ALERT_LOOKAHEAD_MINUTES ?? '', 10);
  return { alertMinutes: Number.isFinite(minutes) && minutes >= 0 ? minutes : 10 };
}

/** A calendar as answered: with its grants. */
export type CalendarResponse = Omit<CalendarRecord, 'feed_token'> & { is_system: boolean; access_grants: AccessGrant[] };
export type EventResponse = EventRecord & { attendees: AttendeeRecord[]; user?: { id: string; name: string; email: string; role: string } | null; instance_id?: string };

/**
 * Calendars (`/api/v1/calendars`, routers/calendar.py): calendars shared by
 * access grants, events with RRULE recurrence (EXDATE lines for exceptions)
 * expanded in the viewer's time zone, attendees with RSVP, and alerts before
 * events through the core scheduler to the owner's sockets (`calendar:alert`).
 * See docs/calendar.md.
 */
export class CalendarService {
  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
    private readonly realtime: Realtime,
    private readonly automations: AutomationsService,
    private readonly options: CalendarOptions,
  ) {
    core.scheduler.handle(CALENDAR_ALERT_JOB, {
      enabled: () => this.core.settings.get<boolean>('calendar.enable') === true,
      run: ({ key, slot }) => this.alert(key, slot),
    });
  }

  private store(db = this.core.db): CalendarStore {
    return new CalendarStore(db);
  }

  private nowNs(): number {
    return this.core.clock.nowMs() * NS_PER_MS;
  }

  /** check_calendar_permission: the feature off, or no `features.calendar`: 403. */
  private async requireFeature(user: UserRecord): Promise<void> {
    if (!this.core.settings.get<boolean>('calendar.enable')) throw forbidden(ERROR.UNAUTHORIZED);
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'features.calendar'))) throw forbidden(ERROR.UNAUTHORIZED);
  }

  /** _check_calendar_access: owner, admin, or a grant; 404 / 403 with the reference's words. */
  private async calendarFor(user: UserRecord, calendarId: string, permission: 'read' | 'write'): Promise<CalendarRecord> {
    const calendar = await this.store().calendar(calendarId);
    if (!calendar) throw notFound('Calendar not found');
    if (calendar.user_id === user.id || isAdmin(user)) return calendar;
    if (await this.access.hasAccess(user, RESOURCE_TYPES.calendar, calendar.id, permission, calendar.user_id)) return calendar;
    throw forbidden('Access denied');
  }

  private async respond(calendars: CalendarRecord[]): Promise<CalendarResponse[]> {
    const grants = await this.access.grantsOfMany(RESOURCE_TYPES.calendar, calendars.map((c) => c.id));
    return calendars.map(({ feed_token: _token, ...calendar }) => ({ ...calendar, is_system: false, access_grants: grants.get(calendar.id) ?? [] }));
  }

  private async visibleCalendars(user: UserRecord): Promise<CalendarRecord[]> {
    // Listings are the user's own and shared calendars, for admins too (has_permission_filter).
    const subject = { ...(await this.access.subjectOf(user)), bypass: false };
    return this.store().calendars(() => this.access.accessFilter(subject, RESOURCE_TYPES.calendar, 'read', { id: 'calendar.id', owner: 'calendar.user_id' }));
  }

  private publish(user: UserRecord, event: string, subjectId: string, data: Json) {
    // The subject type is the event's resource (`calendar`, `calendar.event`), as the reference's.
    return this.core.events.publish({ event, actor: user, subjectId, data });
  }

  // ---- calendars -----------------------------------------------------------------

  /**
   * `GET /`: owned and shared calendars; a user without a default calendar gets a
   * `Personal` one; users who may use automations also get the virtual "Scheduled Tasks" one.
   */
  async list(user: UserRecord): Promise<CalendarResponse[]> {
    await this.requireFeature(user);
    const now = this.nowNs();
    if (!(await this.store().hasDefault(user.id))) {
      await this.store().insertCalendar({ id: randomUUID(), user_id: user.id, name: 'Personal', color: '#3b82f6', is_default: true, data: null, meta: null, feed_token: null, created_at: now, updated_at: now });
    }
    const calendars = await this.respond(await this.visibleCalendars(user));
    if (await this.automations.available(user)) {
      calendars.push({ id: SCHEDULED_TASKS_CALENDAR_ID, user_id: user.id, name: 'Scheduled Tasks', color: '#8b5cf6', is_default: false, is_system: true, data: null, meta: null, access_grants: [], created_at: now, updated_at: now });
    }
    return calendars;
  }

  /** `POST /create`: grants the user may not give are dropped (sharing.public_calendars). */
  async create(user: UserRecord, form: CalendarForm): Promise<CalendarResponse> {
    await this.requireFeature(user);
    const grants = await this.access.grantsOfForm(user, form, RESOURCE_TYPES.calendar, SHARING);
    const now = this.nowNs();
    const calendar: CalendarRecord = { id: randomUUID(), user_id: user.id, name: form.name, color: form.color ?? null, is_default: false, data: form.data ?? null, meta: form.meta ?? null, feed_token: null, created_at: now, updated_at: now };
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).insertCalendar(calendar);
      if (grants) await this.access.replaceGrants(RESOURCE_TYPES.calendar, calendar.id, grants, trx);
    });
    await this.publish(user, 'calendar.created', calendar.id, { name: calendar.name });
    return (await this.respond([calendar]))[0];
  }

  /** `GET /{id}`. */
  async get(user: UserRecord, calendarId: string): Promise<CalendarResponse> {
    await this.requireFeature(user);
    return (await this.respond([await this.calendarFor(user, calendarId, 'read')]))[0];
  }

  /** `POST /{id}/update`: `data` and `meta` are merged; only the owner (or an admin) changes grants. */
  async update(user: UserRecord, calendarId: string, form: CalendarUpdateForm): Promise<CalendarResponse> {
    await this.requireFeature(user);
    const calendar = await this.calendarFor(user, calendarId, 'write');
    if (form.access_grants !== undefined && form.access_grants !== null && calendar.user_id !== user.id && !isAdmin(user)) throw forbidden('Only owner can manage sharing');
    const grants = await this.access.grantsOfForm(user, form, RESOURCE_TYPES.calendar, SHARING);
    const fields = {
      ...(form.name !== undefined ? { name: form.name } : {}),
      ...(form.color !== undefined ? { color: form.color ?? null } : {}),
      ...(form.data ? { data: { ...(calendar.data ?? {}), ...form.data } } : {}),
      ...(form.meta ? { meta: { ...(calendar.meta ?? {}), ...form.meta } } : {}),
    };
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).updateCalendar(calendarId, fields, this.nowNs());
      if (grants) await this.access.replaceGrants(RESOURCE_TYPES.calendar, calendarId, grants, trx);
    });
    const updated = (await this.store().calendar(calendarId))!;
    await this.publish(user, 'calendar.updated', calendarId, { name: updated.name });
    return (await this.respond([updated]))[0];
  }

  /** `DELETE /{id}/delete`: the owner's (or an admin's), never the default; with its events, attendees, grants and alerts. */
  async delete(user: UserRecord, calendarId: string): Promise<{ status: true }> {
    await this.requireFeature(user);
    if (calendarId === SCHEDULED_TASKS_CALENDAR_ID) throw badRequest('System calendars cannot be deleted');
    const calendar = await this.calendarFor(user, calendarId, 'write');
    if (calendar.user_id !== user.id && !isAdmin(user)) throw forbidden('Only owner can delete calendar');
    if (calendar.is_default) throw badRequest('Default calendar cannot be deleted');
    const eventIds = await this.core.db.transaction().execute(async (trx) => {
      const ids = await this.store(trx).deleteCalendar(calendarId);
      await this.access.deleteGrantsOf(RESOURCE_TYPES.calendar, calendarId, trx);
      return ids;
    });
    await this.core.scheduler.unschedule(CALENDAR_ALERT_JOB, ...eventIds);
    await this.publish(user, 'calendar.deleted', calendarId, { name: calendar.name });
    return { status: true };
  }

  /** `POST /{id}/default`: one of the user's own calendars becomes their default. */
  async setDefault(user: UserRecord, calendarId: string): Promise<CalendarResponse> {
    await this.requireFeature(user);
    const calendar = await this.store().calendar(calendarId);
    if (!calendar || calendar.user_id !== user.id) throw notFound('Calendar not found');
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).clearDefault(user.id);
      await this.store(trx).updateCalendar(calendarId, { is_default: true }, this.nowNs());
    });
    await this.publish(user, 'calendar.default_updated', calendarId, { name: calendar.name });
    return (await this.respond([{ ...calendar, is_default: true }]))[0];
  }

  // ---- events --------------------------------------------------------------------

  /** The event's rule as a Recurrence anchored at its start (in `timezone`); throws RecurrenceError. */
  private recurrence(event: Pick<EventRecord, 'rrule' | 'start_at'>, timezone: string | null): Recurrence | null {
    if (!event.rrule) return null;
    const lines = event.rrule
      .trim()
      .split(/\r?\n/)
      .map((line) => (/^(RRULE|EXRULE|EXDATE|RDATE|DTSTART)[:;]/i.test(line) ? line : `RRULE:${line}`));
    const zone = timezone ?? 'UTC';
    if (!lines.some((line) => /^DTSTART/i.test(line))) {
      const wall = new Date(toWallClock(Math.floor(event.start_at / NS_PER_MS), zone));
      lines.unshift(`DTSTART:${wall.toISOString().replace(/[-:]/g, '').slice(0, 15)}`);
    }
    return Recurrence.parse(lines.join('\n'), timezone);
  }

  private async withDetails(events: EventRecord[], withUser: boolean): Promise<EventResponse[]> {
    const attendees = await this.store().attendees(events.map((e) => e.id));
    const owners = withUser ? new Map((await this.users.byIds([...new Set(events.map((e) => e.user_id))])).map((u) => [u.id, { id: u.id, name: u.name, email: u.email, role: u.role }])) : null;
    return events.map((event) => ({ ...event, attendees: attendees.get(event.id) ?? [], ...(owners ? { user: owners.get(event.user_id) ?? null } : {}) }));
  }

  private async eventFor(user: UserRecord, eventId: string, permission: 'read' | 'write'): Promise<EventRecord> {
    const event = await this.store().event(eventId);
    if (!event) throw notFound('Event not found');
    await this.calendarFor(user, event.calendar_id, permission);
    return event;
  }

  /** Rule, time span and attendees of a form, checked before anything is stored (422 with the reason). */
  private async checkEvent(user: UserRecord, event: Pick<EventRecord, 'rrule' | 'start_at' | 'end_at'>, attendees: { user_id: string }[] | null | undefined): Promise<void> {
    if (event.end_at !== null && event.end_at < event.start_at) throw invalid('The event ends before it starts');
    try {
      this.recurrence(event, user.timezone);
    } catch (error) {
      if (error instanceof RecurrenceError) throw invalid(error.message);
      throw error;
    }
    const ids = [...new Set((attendees ?? []).map((a) => a.user_id))];
    if (ids.length > 0) {
      const found = new Set((await this.users.byIds(ids)).map((u) => u.id));
      const unknown = ids.filter((id) => !found.has(id));
      if (unknown.length > 0) throw invalid(`Unknown attendee(s): ${unknown.join(', ')}`);
    }
  }

  private async setAttendees(eventId: string, attendees: { user_id: string }[] | null | undefined): Promise<void> {
    if (!attendees) return;
    const unique = [...new Map(attendees.map((a) => [a.user_id, a])).values()];
    await this.store().setAttendees(eventId, unique.map((a) => ({ id: randomUUID(), user_id: a.user_id, status: 'pending' })), this.nowNs());
  }

  /** `GET /events?start&end&calendar_ids`: events of visible calendars and attended ones, recurring ones expanded. */
  async events(user: UserRecord, query: EventsQuery): Promise<EventResponse[]> {
    await this.requireFeature(user);
    const start = Date.parse(query.start);
    const end = Date.parse(query.end);
    if (!Number.isFinite(start) || !Number.isFinite(end)) throw badRequest('Invalid date format. Use ISO 8601 (e.g. 2026-04-01T00:00:00)');
    const wanted = query.calendar_ids ? new Set(query.calendar_ids.split(',')) : null;
    const calendarIds = (await this.visibleCalendars(user)).map((c) => c.id).filter((id) => !wanted || wanted.has(id));
    const stored = await this.store().eventsInRange(calendarIds, wanted ? null : user.id, start * NS_PER_MS, end * NS_PER_MS);
    const detailed = await this.withDetails(stored, true);
    const out: EventResponse[] = [];
    for (const event of detailed) {
      let rule: Recurrence | null = null;
      try {
        rule = this.recurrence(event, user.timezone);
      } catch {
        // A stored rule that no longer parses shows its first occurrence only.
      }
      if (!rule) {
        if (!event.rrule || (event.start_at >= start * NS_PER_MS && event.start_at < end * NS_PER_MS)) out.push(event);
        continue;
      }
      const duration = event.end_at !== null ? event.end_at - event.start_at : null;
      for (const occurrence of rule.between(start, end, 0, MAX_INSTANCES)) {
        const at = occurrence * NS_PER_MS;
        out.push({ ...event, start_at: at, end_at: duration !== null ? at + duration : null, instance_id: `${event.id}_${at}` });
      }
    }
    if ((!wanted || wanted.has(SCHEDULED_TASKS_CALENDAR_ID)) && (await this.automations.available(user))) out.push(...(await this.scheduledTasks(user, start, end)));
    return out.sort((a, b) => a.start_at - b.start_at);
  }

  /** The "Scheduled Tasks" calendar's events: automations' upcoming runs, and their recorded runs (the reference's shapes). */
  private async scheduledTasks(user: UserRecord, start: number, end: number): Promise<EventResponse[]> {
    const { upcoming, runs } = await this.automations.calendarEntries(user, start, end, MAX_INSTANCES);
    const base = { calendar_id: SCHEDULED_TASKS_CALENDAR_ID, user_id: user.id, end_at: null, all_day: false, color: null, location: null, data: null, is_cancelled: false, attendees: [], user: null };
    return [
      ...upcoming.map(({ automation, at }) => ({
        ...base,
        id: `auto_${automation.id}`,
        instance_id: `auto_${automation.id}_${at * NS_PER_MS}`,
        title: automation.name,
        description: automation.data.prompt,
        start_at: at * NS_PER_MS,
        rrule: automation.data.rrule,
        meta: { automation_id: automation.id },
        created_at: automation.created_at,
        updated_at: automation.updated_at,
      })),
      ...runs.map(({ run, automation }) => ({
        ...base,
        id: `run_${run.id}`,
        title: automation.name,
        description: run.status === 'error' ? run.error : '',
        start_at: run.created_at,
        rrule: null,
        meta: { automation_id: automation.id, run_id: run.id, chat_id: run.chat_id, status: run.status },
        created_at: run.created_at,
        updated_at: run.created_at,
      })),
    ];
  }

  /** `POST /events/create`: into a calendar the user may write. */
  async createEvent(user: UserRecord, form: CalendarEventForm): Promise<EventResponse> {
    await this.requireFeature(user);
    await this.calendarFor(user, form.calendar_id, 'write');
    const now = this.nowNs();
    const event: EventRecord = {
      id: randomUUID(),
      calendar_id: form.calendar_id,
      user_id: user.id,
      title: form.title,
      description: form.description ?? null,
      start_at: form.start_at,
      end_at: form.end_at ?? null,
      all_day: form.all_day ?? false,
      rrule: form.rrule || null,
      color: form.color ?? null,
      location: form.location ?? null,
      data: form.data ?? null,
      meta: form.meta ?? null,
      is_cancelled: false,
      created_at: now,
      updated_at: now,
    };
    await this.checkEvent(user, event, form.attendees);
    await this.store().insertEvent(event);
    await this.setAttendees(event.id, form.attendees);
    await this.planAlert(event, user.timezone);
    await this.publish(user, 'calendar.event.created', event.id, { calendar_id: event.calendar_id, title: event.title });
    return (await this.withDetails([event], false))[0];
  }

  /**
   * Calendars carried over from an Open WebUI database (`parley import-openwebui`), ids and times
   * kept; one stays its owner's default only while the owner has no other.
   */
  async restoreCalendars(calendars: CalendarRecord[]): Promise<void> {
    await this.core.db.transaction().execute(async (trx) => {
      for (const calendar of calendars) {
        const isDefault = calendar.is_default && !(await this.store(trx).hasDefault(calendar.user_id));
        await this.store(trx).insertCalendar({ ...calendar, is_default: isDefault });
      }
    });
  }

  /** Events carried over likewise, each with its next alert planned in its owner's time zone (before the row is written, as automations'). */
  async restoreEvents(events: EventRecord[]): Promise<void> {
    for (const event of events) {
      await this.planAlert(event, await this.ownerTimezone(event));
      await this.store().insertEvent(event);
    }
  }

  /** `GET /events/search?query&skip&limit`: in the calendars the user may read. */
  async search(user: UserRecord, query: SearchQuery): Promise<{ items: EventResponse[]; total: number }> {
    await this.requireFeature(user);
    const calendarIds = (await this.visibleCalendars(user)).map((c) => c.id);
    const { items, total } = await this.store().search(calendarIds, query.query, query.skip ?? 0, query.limit ?? 30);
    return { items: await this.withDetails(items, true), total };
  }

  /** `GET /events/{id}`. */
  async getEvent(user: UserRecord, eventId: string): Promise<EventResponse> {
    await this.requireFeature(user);
    return (await this.withDetails([await this.eventFor(user, eventId, 'read')], false))[0];
  }

  /** `POST /events/{id}/update`: moving it needs write access to both calendars. */
  async updateEvent(user: UserRecord, eventId: string, form: CalendarEventUpdateForm): Promise<EventResponse> {
    await this.requireFeature(user);
    const event = await this.eventFor(user, eventId, 'write');
    if (form.calendar_id && form.calendar_id !== event.calendar_id) await this.calendarFor(user, form.calendar_id, 'write');
    const { attendees, ...rest } = form;
    const fields: EventWrite = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined && value !== null)) as EventWrite;
    if (form.rrule === '' || (form.rrule === null && 'rrule' in form)) fields.rrule = null;
    const updated: EventRecord = { ...event, ...fields, updated_at: this.nowNs() };
    await this.checkEvent(user, updated, attendees);
    await this.store().updateEvent(eventId, fields, updated.updated_at);
    await this.setAttendees(eventId, attendees);
    await this.planAlert(updated, await this.ownerTimezone(updated));
    await this.publish(user, 'calendar.event.updated', eventId, { calendar_id: updated.calendar_id, title: updated.title });
    return (await this.withDetails([updated], false))[0];
  }

  /** `DELETE /events/{id}/delete`. */
  async deleteEvent(user: UserRecord, eventId: string): Promise<{ status: true }> {
    await this.requireFeature(user);
    const event = await this.eventFor(user, eventId, 'write');
    await this.store().deleteEvent(eventId);
    await this.core.scheduler.unschedule(CALENDAR_ALERT_JOB, eventId);
    await this.publish(user, 'calendar.event.deleted', eventId, { calendar_id: event.calendar_id, title: event.title });
    return { status: true };
  }

  /** `POST /events/{id}/rsvp`: the user's own answer, as an attendee. */
  async rsvp(user: UserRecord, eventId: string, status: string): Promise<{ status: true; rsvp: string }> {
    await this.requireFeature(user);
    if (!RSVP_STATUSES.includes(status)) throw badRequest('Invalid status');
    if (!(await this.store().setRsvp(eventId, user.id, status, this.nowNs()))) throw notFound('Not an attendee of this event');
    await this.publish(user, 'calendar.event.rsvp_updated', eventId, { status });
    return { status: true, rsvp: status };
  }

  // ---- iCalendar (Parley's) ----------------------------------------------------

  /** The owner (or an admin) may publish, rotate or revoke a calendar's feed, and import into it. */
  private async ownCalendar(user: UserRecord, calendarId: string): Promise<CalendarRecord> {
    const calendar = await this.calendarFor(user, calendarId, 'write');
    if (calendar.user_id !== user.id && !isAdmin(user)) throw forbidden('Only owner can manage sharing');
    return calendar;
  }

  /** `POST /{id}/feed`: a new secret feed URL (the previous one stops working). */
  async rotateFeed(user: UserRecord, calendarId: string): Promise<{ token: string; url: string }> {
    await this.requireFeature(user);
    await this.ownCalendar(user, calendarId);
    const token = randomBytes(24).toString('base64url');
    await this.store().updateCalendar(calendarId, { feed_token: token }, this.nowNs());
    return { token, url: `/api/v1/calendars/feed/${token}.ics` };
  }

  /** `DELETE /{id}/feed`: the feed URL stops working. */
  async revokeFeed(user: UserRecord, calendarId: string): Promise<{ status: true }> {
    await this.requireFeature(user);
    await this.ownCalendar(user, calendarId);
    await this.store().updateCalendar(calendarId, { feed_token: null }, this.nowNs());
    return { status: true };
  }

  /** `GET /feed/{token}.ics`: no sign-in, the token is the secret; 404 for an unknown or revoked one, or with the feature off. */
  async feed(file: string): Promise<string> {
    const token = file.replace(/\.ics$/, '');
    const calendar = token && this.core.settings.get<boolean>('calendar.enable') ? await this.store().calendarByFeedToken(token) : null;
    if (!calendar) throw notFound();
    const owner = await this.users.byId(calendar.user_id);
    // iCalendar's packages are loaded at the first feed or import, not at start.
    const { calendarFeed } = await import('./ics.js');
    return calendarFeed(calendar.name, owner?.timezone ?? 'UTC', await this.store().eventsOf(calendar.id));
  }

  /** `POST /{id}/import`: the events of an .ics file into the calendar; events whose rule Parley refuses are skipped. */
  async importIcs(user: UserRecord, calendarId: string, ics: string): Promise<{ imported: number; skipped: number }> {
    await this.requireFeature(user);
    await this.calendarFor(user, calendarId, 'write');
    const { parseCalendar } = await import('./ics.js');
    let parsed;
    try {
      parsed = parseCalendar(ics, user.timezone ?? 'UTC');
    } catch (error) {
      throw invalid(`Invalid iCalendar file: ${(error as Error).message}`);
    }
    let imported = 0;
    for (const item of parsed) {
      const now = this.nowNs();
      const event: EventRecord = { id: randomUUID(), calendar_id: calendarId, user_id: user.id, ...item, color: null, data: null, meta: { imported: true }, is_cancelled: false, created_at: now, updated_at: now };
      try {
        await this.checkEvent(user, event, null);
      } catch {
        continue;
      }
      await this.store().insertEvent(event);
      await this.planAlert(event, user.timezone);
      imported++;
    }
    await this.publish(user, 'calendar.updated', calendarId, { name: (await this.store().calendar(calendarId))?.name ?? '' });
    return { imported, skipped: parsed.length - imported };
  }

  // ---- alerts --------------------------------------------------------------------

  private alertMinutes(event: EventRecord): number {
    const minutes = event.meta?.alert_minutes;
    return typeof minutes === 'number' && Number.isFinite(minutes) ? minutes : this.options.alertMinutes;
  }

  /** The first start (ms) at or after `fromMs`, or null. */
  private nextStart(event: EventRecord, timezone: string | null, fromMs: number): number | null {
    const rule = this.recurrence(event, timezone);
    const start = Math.floor(event.start_at / NS_PER_MS);
    if (!rule) return start >= fromMs ? start : null;
    return start >= fromMs ? start : rule.next(fromMs - 1);
  }

  /** Plans the event's next alert in the scheduler (`alert_minutes` before its next start; none when negative or past). */
  private async planAlert(event: EventRecord, timezone: string | null, fromMs = this.core.clock.nowMs()): Promise<void> {
    const minutes = this.alertMinutes(event);
    let next: number | null = null;
    try {
      next = event.is_cancelled || minutes < 0 ? null : this.nextStart(event, timezone, fromMs);
    } catch {
      next = null;
    }
    if (next === null) return this.core.scheduler.unschedule(CALENDAR_ALERT_JOB, event.id);
    await this.core.scheduler.schedule(CALENDAR_ALERT_JOB, event.id, { at: Math.max(this.core.clock.nowMs(), next - minutes * 60_000) });
  }

  private async ownerTimezone(event: EventRecord): Promise<string | null> {
    return (await this.users.byId(event.user_id))?.timezone ?? null;
  }

  /**
   * A due alert: the owner's sockets are told (`events` / `calendar:alert`, the reference's shape)
   * and their webhook (user-webhooks.ts, when on), then the next occurrence's is planned.
   */
  private async alert(eventId: string, slot: number): Promise<void> {
    const event = await this.store().event(eventId);
    if (!event || event.is_cancelled) return;
    const owner = await this.users.byId(event.user_id);
    const timezone = owner?.timezone ?? null;
    const start = this.nextStart(event, timezone, slot);
    if (start === null) return;
    const now = this.core.clock.nowMs();
    const minutesUntil = Math.max(0, Math.floor((start - now) / 60_000));
    this.realtime.emitToUser(event.user_id, 'events', {
      data: {
        type: 'calendar:alert',
        data: {
          event_id: event.id,
          title: event.title,
          description: event.description ?? '',
          start_at: start * NS_PER_MS,
          minutes_until: minutesUntil,
          calendar_id: event.calendar_id,
          location: event.location ?? '',
        },
      },
    });
    if (owner) {
      const when = minutesUntil > 0 ? `in ${minutesUntil} min` : 'now';
      const notice = { message: `${event.title} — starting ${when}`, data: { action: 'calendar_alert', title: event.title, minutes_until: minutesUntil, event_id: event.id } };
      void this.core.userWebhooks.notify(owner, notice);
    }
    if (event.rrule) await this.planAlert(event, timezone, start + 1);
  }
}
