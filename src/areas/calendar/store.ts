import type { Expression, SqlBool } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import type { CalendarEventAttendeeRow, CalendarEventRow, CalendarRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

export interface CalendarRecord {
  id: string;
  user_id: string;
  name: string;
  color: string | null;
  is_default: boolean;
  data: Json | null;
  meta: Json | null;
  feed_token: string | null;
  created_at: number;
  updated_at: number;
}

export interface AttendeeRecord {
  id: string;
  event_id: string;
  user_id: string;
  status: string;
  meta: Json | null;
  created_at: number;
  updated_at: number;
}

export interface EventRecord {
  id: string;
  calendar_id: string;
  user_id: string;
  title: string;
  description: string | null;
  start_at: number;
  end_at: number | null;
  all_day: boolean;
  rrule: string | null;
  color: string | null;
  location: string | null;
  data: Json | null;
  meta: Json | null;
  is_cancelled: boolean;
  created_at: number;
  updated_at: number;
}

export type EventWrite = Partial<Omit<EventRecord, 'id' | 'user_id' | 'created_at' | 'updated_at'>>;

const object = (text: string | null): Json | null => {
  const value = fromJson<unknown>(text, null);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null;
};
const optionalNumber = (value: unknown) => (value === null || value === undefined ? null : Number(value));

function toCalendar(row: CalendarRow): CalendarRecord {
  return { ...row, is_default: toBool(row.is_default), data: object(row.data), meta: object(row.meta), created_at: Number(row.created_at), updated_at: Number(row.updated_at) };
}

function toEvent(row: CalendarEventRow): EventRecord {
  return {
    ...row,
    start_at: Number(row.start_at),
    end_at: optionalNumber(row.end_at),
    all_day: toBool(row.all_day),
    is_cancelled: toBool(row.is_cancelled),
    data: object(row.data),
    meta: object(row.meta),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function toAttendee(row: CalendarEventAttendeeRow): AttendeeRecord {
  return { ...row, meta: object(row.meta), created_at: Number(row.created_at), updated_at: Number(row.updated_at) };
}

const eventColumns = (fields: EventWrite) => {
  const { data, meta, ...plain } = fields;
  return { ...plain, ...(data !== undefined ? { data: toJson(data) } : {}), ...(meta !== undefined ? { meta: toJson(meta) } : {}) };
};

export class CalendarStore {
  constructor(private readonly db: Db) {}

  async calendar(id: string): Promise<CalendarRecord | null> {
    const row = await this.db.selectFrom('calendar').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toCalendar(row) : null;
  }

  async calendarByFeedToken(token: string): Promise<CalendarRecord | null> {
    const row = await this.db.selectFrom('calendar').selectAll().where('feed_token', '=', token).executeTakeFirst();
    return row ? toCalendar(row) : null;
  }

  /** Calendars passing `visible` (owner or grant, built by the access service), oldest first. */
  async calendars(visible: (table: 'calendar') => Expression<SqlBool>): Promise<CalendarRecord[]> {
    return (await this.db.selectFrom('calendar').selectAll().where(visible('calendar')).orderBy('created_at').orderBy('id').execute()).map(toCalendar);
  }

  async hasDefault(userId: string): Promise<boolean> {
    return (await this.db.selectFrom('calendar').select('id').where('user_id', '=', userId).where('is_default', '=', true).limit(1).executeTakeFirst()) !== undefined;
  }

  async insertCalendar(calendar: CalendarRecord): Promise<void> {
    await this.db
      .insertInto('calendar')
      .values({ ...calendar, data: toJson(calendar.data), meta: toJson(calendar.meta) })
      .execute();
  }

  async updateCalendar(id: string, fields: Partial<Pick<CalendarRecord, 'name' | 'color' | 'data' | 'meta' | 'is_default' | 'feed_token'>>, now: number): Promise<void> {
    const { data, meta, ...plain } = fields;
    await this.db
      .updateTable('calendar')
      .set({ ...plain, ...(data !== undefined ? { data: toJson(data) } : {}), ...(meta !== undefined ? { meta: toJson(meta) } : {}), updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  async clearDefault(userId: string): Promise<void> {
    await this.db.updateTable('calendar').set({ is_default: false }).where('user_id', '=', userId).where('is_default', '=', true).execute();
  }

  /** The calendar with its events and their attendees; answers the events' ids. */
  async deleteCalendar(id: string): Promise<string[]> {
    const ids = (await this.db.selectFrom('calendar_event').select('id').where('calendar_id', '=', id).execute()).map((r) => r.id);
    if (ids.length > 0) await this.db.deleteFrom('calendar_event_attendee').where('event_id', 'in', ids).execute();
    await this.db.deleteFrom('calendar_event').where('calendar_id', '=', id).execute();
    await this.db.deleteFrom('calendar').where('id', '=', id).execute();
    return ids;
  }

  async eventsOf(calendarId: string): Promise<EventRecord[]> {
    return (await this.db.selectFrom('calendar_event').selectAll().where('calendar_id', '=', calendarId).orderBy('start_at').orderBy('id').execute()).map(toEvent);
  }

  async event(id: string): Promise<EventRecord | null> {
    const row = await this.db.selectFrom('calendar_event').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toEvent(row) : null;
  }

  /**
   * Events of `calendarIds` or attended by `attendeeId` that may fall in
   * [start, end): single events overlapping it, and every recurring one (expanded by the service).
   */
  async eventsInRange(calendarIds: string[], attendeeId: string | null, start: number, end: number): Promise<EventRecord[]> {
    let query = this.db.selectFrom('calendar_event').selectAll().where('is_cancelled', '=', false);
    query = query.where((eb) => {
      const reach = [];
      if (calendarIds.length > 0) reach.push(eb('calendar_id', 'in', calendarIds));
      if (attendeeId) reach.push(eb('id', 'in', eb.selectFrom('calendar_event_attendee').select('event_id').where('user_id', '=', attendeeId)));
      return reach.length > 0 ? eb.or(reach) : eb.val(false);
    });
    query = query.where((eb) =>
      eb.or([
        eb('rrule', 'is not', null),
        eb.and([eb('start_at', '<', end), eb.or([eb.and([eb('end_at', 'is', null), eb('start_at', '>=', start)]), eb('end_at', '>', start)])]),
      ]),
    );
    return (await query.orderBy('start_at').orderBy('id').execute()).map(toEvent);
  }

  /** Events of `calendarIds` whose title, description or location holds `text`, latest first. */
  async search(calendarIds: string[], text: string | undefined, skip: number, limit: number): Promise<{ items: EventRecord[]; total: number }> {
    if (calendarIds.length === 0) return { items: [], total: 0 };
    let query = this.db.selectFrom('calendar_event').where('is_cancelled', '=', false).where('calendar_id', 'in', calendarIds);
    if (text) {
      const pattern = `%${text.toLowerCase()}%`;
      query = query.where((eb) => eb.or([eb(eb.fn('lower', ['title']), 'like', pattern), eb(eb.fn('lower', ['description']), 'like', pattern), eb(eb.fn('lower', ['location']), 'like', pattern)]));
    }
    const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const rows = await query.selectAll().orderBy('start_at', 'desc').orderBy('id').offset(skip).limit(limit).execute();
    return { items: rows.map(toEvent), total: Number(total.n) };
  }

  async insertEvent(event: EventRecord): Promise<void> {
    await this.db.insertInto('calendar_event').values({ ...event, data: toJson(event.data), meta: toJson(event.meta) }).execute();
  }

  async updateEvent(id: string, fields: EventWrite, now: number): Promise<void> {
    await this.db.updateTable('calendar_event').set({ ...eventColumns(fields), updated_at: now }).where('id', '=', id).execute();
  }

  async deleteEvent(id: string): Promise<void> {
    await this.db.deleteFrom('calendar_event_attendee').where('event_id', '=', id).execute();
    await this.db.deleteFrom('calendar_event').where('id', '=', id).execute();
  }

  async attendees(eventIds: string[]): Promise<Map<string, AttendeeRecord[]>> {
    const map = new Map<string, AttendeeRecord[]>();
    if (eventIds.length === 0) return map;
    const rows = await this.db.selectFrom('calendar_event_attendee').selectAll().where('event_id', 'in', eventIds).orderBy('created_at').orderBy('id').execute();
    for (const row of rows) map.set(row.event_id, [...(map.get(row.event_id) ?? []), toAttendee(row)]);
    return map;
  }

  /** An attendee as they were elsewhere (an import), id, RSVP and times kept. */
  async insertAttendee(attendee: AttendeeRecord): Promise<void> {
    await this.db.insertInto('calendar_event_attendee').values({ ...attendee, meta: toJson(attendee.meta) }).execute();
  }

  /** Replaces the attendee list; those who stay keep their RSVP. */
  async setAttendees(eventId: string, attendees: { id: string; user_id: string; status: string }[], now: number): Promise<void> {
    const current = new Map(((await this.attendees([eventId])).get(eventId) ?? []).map((a) => [a.user_id, a]));
    const wanted = new Set(attendees.map((a) => a.user_id));
    const gone = [...current.keys()].filter((id) => !wanted.has(id));
    if (gone.length > 0) await this.db.deleteFrom('calendar_event_attendee').where('event_id', '=', eventId).where('user_id', 'in', gone).execute();
    const added = attendees.filter((a) => !current.has(a.user_id));
    if (added.length > 0) {
      await this.db
        .insertInto('calendar_event_attendee')
        .values(added.map((a) => ({ id: a.id, event_id: eventId, user_id: a.user_id, status: a.status, meta: null, created_at: now, updated_at: now })))
        .execute();
    }
  }

  async setRsvp(eventId: string, userId: string, status: string, now: number): Promise<boolean> {
    const result = await this.db.updateTable('calendar_event_attendee').set({ status, updated_at: now }).where('event_id', '=', eventId).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
}
