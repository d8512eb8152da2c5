import * as rrulePackage from 'rrule';

// rrule ships CommonJS for Node and ESM for bundlers: its exports sit on `default` in the first.
type RRuleModule = typeof rrulePackage;
const withDefault = rrulePackage as unknown as { default?: RRuleModule };
const { rrulestr, RRule } = withDefault.default?.rrulestr ? withDefault.default : rrulePackage;
type RuleSet = ReturnType<typeof rrulestr>;

/** A recurrence rule or time zone that cannot be used; `message` is the reason the user is told. */
export class RecurrenceError extends Error {}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Sub-daily rules without DTSTART count from here, so "every 5 minutes" falls on :00, :05 ... (the reference's epoch). */
const CLOCK_EPOCH = Date.UTC(2000, 0, 1);
/** Bounds of the BY* parts rrule.js would otherwise accept and wrap (BYHOUR=99 runs at 03:00). */
const BOUNDS: Record<string, [number, number]> = {
  byhour: [0, 23],
  byminute: [0, 59],
  bysecond: [0, 59],
  bymonth: [1, 12],
  bymonthday: [-31, 31],
  byyearday: [-366, 366],
  byweekno: [-53, 53],
  bysetpos: [-366, 366],
};

/** A time zone name the runtime knows (IANA), else a RecurrenceError. */
export function checkTimeZone(timeZone: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
  } catch {
    throw new RecurrenceError(`Unknown time zone: ${timeZone}`);
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();
function formatOf(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formats.set(timeZone, format);
  }
  return format;
}

/**
 * The wall clock of `timeZone` at an instant, as a "floating" epoch: the UTC
 * fields of the result are the local fields. rrule.js computes in UTC fields,
 * so rules run on floating times and DST never shifts a 09:00 rule.
 */
export function toWallClock(instantMs: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatOf(timeZone).formatToParts(new Date(instantMs))) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  return Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second, instantMs % 1000);
}

/**
 * The instant a floating wall-clock time happens in `timeZone`. A time that
 * happens twice (autumn) is the first; one that never happens (the spring gap)
 * is moved forward by the gap (02:30 becomes 03:30), as Python's zoneinfo does.
 */
export function fromWallClock(wallMs: number, timeZone: string): number {
  const offsets = new Set([-1, 0, 1].map((days) => toWallClock(wallMs + days * DAY_MS, timeZone) - (wallMs + days * DAY_MS)));
  const matches = [...offsets].map((offset) => wallMs - offset).filter((instant) => toWallClock(instant, timeZone) === wallMs);
  if (matches.length > 0) return Math.min(...matches);
  // In the gap: the offset in force before it.
  const before = toWallClock(wallMs - DAY_MS, timeZone) - (wallMs - DAY_MS);
  return wallMs - before;
}

/**
 * An RFC 5545 recurrence (RRULE, optionally DTSTART, RDATE and EXDATE lines)
 * evaluated on the wall clock of a time zone (UTC when none). Time zone
 * markers inside the text are ignored, as the reference's `ignoretz=True`:
 * its times are the user's local times. Without DTSTART, sub-daily rules count
 * from 2000-01-01 00:00 and others from `anchor` (the previous run, or now).
 */
export class Recurrence {
  private constructor(
    readonly text: string,
    readonly timeZone: string,
    private readonly hasStart: boolean,
    /** The step of a sub-daily rule (ms), null for daily and longer. */
    private readonly subDailyPeriod: number | null,
  ) {}

  static parse(text: string, timeZone: string | null = null): Recurrence {
    const zone = timeZone ? checkTimeZone(timeZone) : 'UTC';
    const clean = text
      .trim()
      .replace(/;TZID=[^:;\n]+/g, '')
      .replace(/(\d{8}T\d{6})Z/g, '$1');
    if (!clean) throw new RecurrenceError('Invalid RRULE: empty rule');
    let parsed: RuleSet;
    try {
      parsed = rrulestr(clean, { forceset: true });
    } catch (error) {
      throw new RecurrenceError(`Invalid RRULE: ${(error as Error).message}`);
    }
    const rules = (parsed as unknown as { rrules(): { origOptions: Record<string, unknown> }[] }).rrules();
    if (rules.length === 0) throw new RecurrenceError('Invalid RRULE: no RRULE line');
    for (const rule of rules) checkBounds(rule.origOptions);
    const freq = rules[0].origOptions.freq;
    checkCost(rules[0].origOptions);
    if (!hasAnyOccurrence(clean)) throw new RecurrenceError('Invalid RRULE: it never occurs');
    const unit = freq === RRule.HOURLY ? 3_600_000 : freq === RRule.MINUTELY ? MINUTE_MS : freq === RRule.SECONDLY ? 1000 : null;
    const period = unit === null ? null : unit * Number(rules[0].origOptions.interval ?? 1);
    return new Recurrence(clean, zone, /DTSTART/i.test(clean), period);
  }

  private rule(anchorMs: number): RuleSet {
    if (this.hasStart) return rrulestr(this.text, { forceset: true });
    const wall = toWallClock(anchorMs, this.timeZone);
    // Sub-daily steps stay on the epoch's grid, started at the grid point before the anchor (not iterated from 2000).
    const period = this.subDailyPeriod;
    const start = period !== null ? CLOCK_EPOCH + Math.floor((wall - CLOCK_EPOCH) / period) * period : Math.floor(wall / MINUTE_MS) * MINUTE_MS;
    // A DTSTART line, not the `dtstart` option: rrule.js ignores the option when it builds a set.
    const stamp = new Date(start).toISOString().replace(/[-:]/g, '').slice(0, 15);
    return rrulestr(`DTSTART:${stamp}\n${this.text}`, { forceset: true });
  }

  /** The first occurrence strictly after `afterMs` (epoch ms), or null when the rule has ended. */
  next(afterMs: number, anchorMs: number = afterMs): number | null {
    const found = this.rule(anchorMs).after(new Date(toWallClock(afterMs, this.timeZone)), false);
    if (!found) return null;
    const instant = fromWallClock(found.getTime(), this.timeZone);
    // A wall time repeated in autumn can map back to or before `afterMs`: take the one after it.
    return instant > afterMs ? instant : this.next(afterMs + 1000 * 3600, anchorMs);
  }

  /** Up to `count` occurrences after `afterMs`. */
  upcoming(afterMs: number, count: number, anchorMs: number = afterMs): number[] {
    const out: number[] = [];
    let from = afterMs;
    while (out.length < count) {
      const next = this.next(from, anchorMs);
      if (next === null) break;
      out.push(next);
      from = next;
    }
    return out;
  }

  /** Occurrences in [startMs, endMs), at most `limit`. */
  between(startMs: number, endMs: number, anchorMs: number, limit = 1000): number[] {
    const rule = this.rule(anchorMs);
    const wallStart = toWallClock(startMs, this.timeZone);
    const wallEnd = toWallClock(endMs, this.timeZone);
    const out: number[] = [];
    rule.between(new Date(wallStart - DAY_MS), new Date(wallEnd + DAY_MS), true, (date) => {
      const instant = fromWallClock(date.getTime(), this.timeZone);
      if (instant >= startMs && instant < endMs) out.push(instant);
      return out.length < limit;
    });
    return out;
  }

  /** Seconds between the next two occurrences (AUTOMATION_MIN_INTERVAL), null for a rule with fewer than two left. */
  intervalSeconds(nowMs: number): number | null {
    const [first, second] = this.upcoming(nowMs, 2);
    return first !== undefined && second !== undefined ? Math.round((second - first) / 1000) : null;
  }
}

/**
 * rrule.js walks candidate by candidate (up to year 9999 when nothing matches),
 * so rules that step by seconds, or by minutes and hours within a few days of a
 * year, would take seconds of CPU to evaluate: they are refused.
 */
function checkCost(options: Record<string, unknown>): void {
  if (options.freq === RRule.SECONDLY) throw new RecurrenceError('Invalid RRULE: FREQ=SECONDLY is not supported');
  const sparse = ['bymonth', 'bymonthday', 'byyearday', 'byweekno', 'bysetpos'].filter((part) => options[part] !== undefined && options[part] !== null);
  if ((options.freq === RRule.MINUTELY || options.freq === RRule.HOURLY) && sparse.length > 0) {
    throw new RecurrenceError(`Invalid RRULE: ${sparse[0].toUpperCase()} is not supported with FREQ=${options.freq === RRule.MINUTELY ? 'MINUTELY' : 'HOURLY'}`);
  }
}

/**
 * Whether the rule's days and times ever match (BYMONTH=2;BYMONTHDAY=30 never
 * does), checked on a yearly rule with the same BY parts: it covers every day
 * the rule could take and steps a year at a time, so a rule that never matches
 * costs a fraction of a second here instead of minutes in every evaluation.
 */
function hasAnyOccurrence(text: string): boolean {
  const lines = text.split(/\r?\n/).filter((line) => !/^(EXDATE|RDATE)/i.test(line));
  const yearly = lines.map((line) =>
    /^DTSTART/i.test(line)
      ? line
      : line
          .replace(/^RRULE:/i, '')
          .split(';')
          .filter((part) => !/^(COUNT|UNTIL|INTERVAL|BYSETPOS)=/i.test(part))
          .map((part) => (/^FREQ=/i.test(part) ? 'FREQ=YEARLY' : part))
          .join(';'),
  );
  const start = /DTSTART/i.test(text) ? '' : 'DTSTART:20000101T000000\n';
  return rrulestr(start + yearly.join('\n'), { forceset: true }).after(new Date(Date.UTC(2000, 0, 1)), true) !== null;
}

function checkBounds(options: Record<string, unknown>): void {
  for (const [part, [min, max]] of Object.entries(BOUNDS)) {
    const value = options[part];
    const values = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
    for (const item of values) {
      if (typeof item !== 'number' || !Number.isInteger(item) || item < min || item > max || (min < 0 && item === 0)) {
        throw new RecurrenceError(`Invalid RRULE: ${part.toUpperCase()}=${String(item)} is out of range`);
      }
    }
  }
  const interval = options.interval;
  if (interval !== undefined && (typeof interval !== 'number' || !Number.isInteger(interval) || interval < 1)) throw new RecurrenceError('Invalid RRULE: INTERVAL must be a positive integer');
}
