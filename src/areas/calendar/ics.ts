import ical, { type ICalTZDateStub } from 'ical-generator';
import nodeIcal from 'node-ical';
import { toWallClock } from '../../core/scheduler/recurrence.js';
import type { EventRecord } from './store.js';

const NS_PER_MS = 1_000_000;
/** Events one import takes at most. */
export const IMPORT_MAX_EVENTS = 5000;

const stamp = (wallMs: number) => new Date(wallMs).toISOString().replace(/[-:]/g, '').slice(0, 15);

/**
 * An instant that ical-generator writes as local time in `timeZone` (its
 * `TZDate` stub): without it, a `Date` is written in the process's zone under
 * the event's TZID.
 */
class ZonedDate extends Date implements ICalTZDateStub {
  readonly internal: Date;
  private readonly wall: Date;

  constructor(
    instantMs: number,
    readonly timeZone: string,
  ) {
    super(instantMs);
    this.internal = new Date(instantMs);
    this.wall = new Date(toWallClock(instantMs, timeZone));
  }

  withTimeZone(timeZone?: string | null): ZonedDate {
    return new ZonedDate(this.getTime(), timeZone ?? this.timeZone);
  }

  tzComponents(): number[] {
    return [this.getFullYear(), this.getMonth(), this.getDate(), this.getHours(), this.getMinutes(), this.getSeconds()];
  }

  override getFullYear(): number {
    return this.wall.getUTCFullYear();
  }
  override getMonth(): number {
    return this.wall.getUTCMonth();
  }
  override getDate(): number {
    return this.wall.getUTCDate();
  }
  override getHours(): number {
    return this.wall.getUTCHours();
  }
  override getMinutes(): number {
    return this.wall.getUTCMinutes();
  }
  override getSeconds(): number {
    return this.wall.getUTCSeconds();
  }
}

/**
 * A calendar as iCalendar text (the read-only feed): every event that is not
 * cancelled, recurring ones with their RRULE and EXDATE lines in `timeZone`
 * (the owner's: where the rules are evaluated).
 */
export function calendarFeed(name: string, timeZone: string, events: EventRecord[]): string {
  const feed = ical({ name, timezone: timeZone, prodId: { company: 'parley', product: 'calendar' } });
  for (const event of events) {
    if (event.is_cancelled) continue;
    const start = new ZonedDate(Math.floor(event.start_at / NS_PER_MS), timeZone);
    const lines = (event.rrule ?? '')
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line && !/^DTSTART/i.test(line))
      .map((line) => {
        if (/^EXDATE/i.test(line)) return `EXDATE;TZID=${timeZone}:${line.slice(line.lastIndexOf(':') + 1).replace(/Z$/, '')}`;
        return /^(RRULE|RDATE|EXRULE)[:;]/i.test(line) ? line : `RRULE:${line}`;
      });
    feed.createEvent({
      id: event.id,
      start,
      end: event.end_at !== null ? new ZonedDate(Math.floor(event.end_at / NS_PER_MS), timeZone) : null,
      allDay: event.all_day,
      timezone: timeZone,
      summary: event.title,
      description: event.description,
      location: event.location,
      repeating: lines.length > 0 ? lines.join('\n') : null,
    });
  }
  return feed.toString();
}

export interface ImportedEvent {
  title: string;
  description: string | null;
  location: string | null;
  start_at: number;
  end_at: number | null;
  all_day: boolean;
  rrule: string | null;
}

const text = (value: unknown): string | null => {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && 'val' in value) return String((value as { val: unknown }).val);
  return null;
};

/**
 * The VEVENTs of an .ics file, with their rules in `timeZone`'s wall clock
 * (where Parley evaluates them): RRULE kept, EXDATE dates converted. Throws
 * on text that is not iCalendar.
 */
export function parseCalendar(ics: string, timeZone: string): ImportedEvent[] {
  if (!/BEGIN:VCALENDAR/i.test(ics)) throw new Error('Not an iCalendar file');
  const parsed = nodeIcal.sync.parseICS(ics);
  const events: ImportedEvent[] = [];
  for (const component of Object.values(parsed)) {
    if (!component || component.type !== 'VEVENT' || !(component.start instanceof Date) || Number.isNaN(component.start.getTime())) continue;
    if (component.recurrenceid) continue; // a moved occurrence: Parley keeps the series only
    const start = component.start.getTime();
    const end = component.end instanceof Date && !Number.isNaN(component.end.getTime()) ? component.end.getTime() : null;
    let rrule: string | null = null;
    if (component.rrule) {
      const rule = component.rrule
        .toString()
        .split('\n')
        .find((line) => /^RRULE:/i.test(line));
      const exdates = Object.values(component.exdate ?? {})
        .filter((date): date is NonNullable<typeof date> => date instanceof Date)
        .map((date) => `EXDATE:${stamp(toWallClock(date.getTime(), timeZone))}`);
      rrule = rule ? [rule, ...new Set(exdates)].join('\n') : null;
    }
    events.push({
      title: text(component.summary) || '(no title)',
      description: text(component.description),
      location: text(component.location),
      start_at: start * NS_PER_MS,
      end_at: end !== null && end > start ? end * NS_PER_MS : null,
      all_day: component.datetype === 'date',
      rrule,
    });
    if (events.length >= IMPORT_MAX_EVENTS) break;
  }
  return events;
}
