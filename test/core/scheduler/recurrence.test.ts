import { describe, expect, it } from 'vitest';
import { Recurrence, RecurrenceError, fromWallClock, toWallClock } from '../../../src/core/scheduler/recurrence.js';

const iso = (times: number[]) => times.map((t) => new Date(t).toISOString());

/** RFC 5545 rules on the wall clock of a time zone (rrule.js on floating times). */
describe('recurrence', () => {
  it('keeps local times across daylight-saving changes, both ways', () => {
    const nine = Recurrence.parse('FREQ=DAILY;BYHOUR=9;BYMINUTE=0', 'America/New_York');
    expect(iso(nine.upcoming(Date.UTC(2026, 2, 7, 12), 2))).toEqual(['2026-03-07T14:00:00.000Z', '2026-03-08T13:00:00.000Z']);
    expect(iso(nine.upcoming(Date.UTC(2026, 9, 31, 12), 2))).toEqual(['2026-10-31T13:00:00.000Z', '2026-11-01T14:00:00.000Z']);
    // 02:30 does not exist on the spring day: an hour later; 01:30 happens twice in autumn: the first.
    expect(iso(Recurrence.parse('FREQ=DAILY;BYHOUR=2;BYMINUTE=30', 'America/New_York').upcoming(Date.UTC(2026, 2, 7, 12), 2))).toEqual(['2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z']);
    expect(iso(Recurrence.parse('FREQ=DAILY;BYHOUR=1;BYMINUTE=30', 'America/New_York').upcoming(Date.UTC(2026, 9, 31, 12), 2))).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
    expect(fromWallClock(toWallClock(Date.UTC(2026, 6, 1, 10), 'Europe/Paris'), 'Europe/Paris')).toBe(Date.UTC(2026, 6, 1, 10));
  });

  it('expands daily, weekly with exceptions, and monthly by weekday in a range', () => {
    const daily = Recurrence.parse('DTSTART:20260101T080000\nRRULE:FREQ=DAILY;COUNT=3', 'UTC');
    expect(iso(daily.between(Date.UTC(2025, 11, 1), Date.UTC(2026, 1, 1), 0))).toEqual(['2026-01-01T08:00:00.000Z', '2026-01-02T08:00:00.000Z', '2026-01-03T08:00:00.000Z']);
    const weekly = Recurrence.parse('DTSTART;TZID=Europe/Paris:20260105T100000\nRRULE:FREQ=WEEKLY;BYDAY=MO,WE\nEXDATE;TZID=Europe/Paris:20260107T100000', 'Europe/Paris');
    expect(iso(weekly.between(Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 15), 0))).toEqual(['2026-01-05T09:00:00.000Z', '2026-01-12T09:00:00.000Z', '2026-01-14T09:00:00.000Z']);
    const secondTuesday = Recurrence.parse('FREQ=MONTHLY;BYDAY=2TU;BYHOUR=8;BYMINUTE=0', 'Asia/Tokyo');
    expect(iso(secondTuesday.upcoming(Date.UTC(2026, 0, 1), 3))).toEqual(['2026-01-12T23:00:00.000Z', '2026-02-09T23:00:00.000Z', '2026-03-09T23:00:00.000Z']);
    // Sub-daily rules stay on the clock's grid.
    expect(iso(Recurrence.parse('FREQ=MINUTELY;INTERVAL=15').upcoming(Date.UTC(2026, 0, 1, 10, 7, 13), 2))).toEqual(['2026-01-01T10:15:00.000Z', '2026-01-01T10:30:00.000Z']);
    expect(Recurrence.parse('FREQ=HOURLY;INTERVAL=2').intervalSeconds(Date.UTC(2026, 0, 1))).toBe(7200);
  });

  it('refuses rules that are malformed, out of range, never occur or cost too much, and unknown zones', () => {
    const reason = (text: string, zone: string | null = null) => {
      try {
        Recurrence.parse(text, zone);
        return null;
      } catch (error) {
        expect(error).toBeInstanceOf(RecurrenceError);
        return (error as Error).message;
      }
    };
    expect(reason('')).toBe('Invalid RRULE: empty rule');
    expect(reason('FREQ=DAILY;BYMINUTE=60')).toBe('Invalid RRULE: BYMINUTE=60 is out of range');
    expect(reason('FREQ=DAILY;INTERVAL=0')).toBe('Invalid RRULE: INTERVAL must be a positive integer');
    expect(reason('FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30')).toBe('Invalid RRULE: it never occurs');
    expect(reason('FREQ=SECONDLY')).toBe('Invalid RRULE: FREQ=SECONDLY is not supported');
    expect(reason('FREQ=MINUTELY;BYMONTHDAY=1')).toBe('Invalid RRULE: BYMONTHDAY is not supported with FREQ=MINUTELY');
    expect(reason('hello')).toMatch(/^Invalid RRULE: /);
    expect(reason('FREQ=DAILY', 'Not/AZone')).toBe('Unknown time zone: Not/AZone');
  });
});
