import { badRequest } from '../../core/http/errors.js';
import type { UsageDay, UserUsageQuery, UserUsageResponse } from './schemas.js';

/**
 * `GET /users/usage` (0.11.0): a user's activity over a period, day by day in the
 * user's time zone, with weekly and running totals, streaks and averages.
 *
 * Activity is counted from chat messages. Parley stores no chat messages yet, so
 * every day of the period is present with zero activity; the period arithmetic,
 * time zones and aggregates are the reference's, ready for message counts.
 */
const DAY = 86400;

export interface UsagePeriod {
  start: number;
  end: number;
  days: number;
}

/** The reference's period rules: explicit dates win, then `days`, then the account's age capped at two years. */
export function usagePeriod(query: UserUsageQuery, createdAt: number, now: number): UsagePeriod {
  const end = query.end_date || now;
  let start: number;
  if (query.start_date !== undefined) start = query.start_date;
  else if (query.days !== undefined) start = end - (query.days - 1) * DAY;
  else start = Math.max(createdAt || end - 364 * DAY, end - 729 * DAY);
  if (start > end) throw badRequest('start_date must be before end_date');
  return { start, end, days: Math.max(1, Math.trunc((end - start) / DAY) + 1) };
}

/** Milliseconds are accepted; timestamps before 2020 or more than a day ahead mean "now", as the reference reads them. */
function normaliseTimestamp(timestamp: number, now: number): number {
  const seconds = timestamp > 10_000_000_000 ? timestamp / 1000 : timestamp;
  return seconds < 1577836800 || seconds > now + DAY ? now : seconds;
}

function dateFormatter(timeZone: string | null): Intl.DateTimeFormat {
  const options = { year: 'numeric', month: '2-digit', day: '2-digit' } as const;
  try {
    return new Intl.DateTimeFormat('en-CA', { ...options, timeZone: timeZone || 'UTC' });
  } catch {
    return new Intl.DateTimeFormat('en-CA', { ...options, timeZone: 'UTC' });
  }
}

const emptyDay = (date: string): UsageDay => ({ date, messages: 0, chats: 0, tokens: 0, models: {} });

/** One entry per calendar day of the period, in the user's time zone. */
export function dailyHeatmap(period: UsagePeriod, timeZone: string | null, now: number): UsageDay[] {
  const format = dateFormatter(timeZone);
  const dateOf = (seconds: number) => format.format(new Date(normaliseTimestamp(seconds, now) * 1000));
  const last = dateOf(period.end);
  const days: UsageDay[] = [];
  for (let day = new Date(`${dateOf(period.start)}T00:00:00Z`); ; day.setUTCDate(day.getUTCDate() + 1)) {
    const date = day.toISOString().slice(0, 10);
    if (date > last) break;
    days.push(emptyDay(date));
  }
  return days;
}

function addModels(into: Record<string, number>, from: Record<string, number>): void {
  for (const [model, count] of Object.entries(from)) into[model] = (into[model] ?? 0) + count;
}

/** Days summed into weeks starting on Monday. */
export function weeklyHeatmap(heatmap: UsageDay[]): UsageDay[] {
  const weeks = new Map<string, UsageDay>();
  for (const day of heatmap) {
    const date = new Date(`${day.date}T00:00:00Z`);
    date.setUTCDate(date.getUTCDate() - ((date.getUTCDay() + 6) % 7));
    const key = date.toISOString().slice(0, 10);
    const week = weeks.get(key) ?? emptyDay(key);
    week.messages += day.messages;
    week.chats += day.chats;
    week.tokens += day.tokens;
    addModels(week.models, day.models);
    weeks.set(key, week);
  }
  return [...weeks.keys()].sort().map((key) => weeks.get(key)!);
}

/** Running totals up to and including each day. */
export function cumulativeHeatmap(heatmap: UsageDay[]): UsageDay[] {
  const running = emptyDay('');
  return heatmap.map((day) => {
    running.messages += day.messages;
    running.chats += day.chats;
    running.tokens += day.tokens;
    addModels(running.models, day.models);
    return { ...running, date: day.date, models: { ...running.models } };
  });
}

/** Longest run of days with messages, and the run that reaches the last day. */
export function streaks(heatmap: UsageDay[]): { current: number; longest: number } {
  let longest = 0;
  let run = 0;
  for (const day of heatmap) {
    run = day.messages > 0 ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  let current = 0;
  for (let i = heatmap.length - 1; i >= 0 && heatmap[i].messages > 0; i--) current++;
  return { current, longest };
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/**
 * The usage report of a period whose days are known. Figures that need message
 * records (tokens, roles, models, tools, chat lengths) are zero until chat
 * messages are stored; those derived from the days are computed.
 */
export function usageReport(period: UsagePeriod, heatmap: UsageDay[]): UserUsageResponse {
  const messages = heatmap.reduce((sum, day) => sum + day.messages, 0);
  const activeDays = heatmap.filter((day) => day.messages > 0).length;
  const { current, longest } = streaks(heatmap);
  return {
    totals: {
      lifetime_tokens: 0,
      input_tokens: 0,
      output_tokens: 0,
      peak_daily_tokens: heatmap.reduce((max, day) => Math.max(max, day.tokens), 0),
      longest_chat_seconds: 0,
      current_streak: current,
      longest_streak: longest,
      total_chats: 0,
      active_days: activeDays,
      models_used: 0,
      messages,
      user_messages: 0,
      assistant_messages: 0,
    },
    heatmap,
    weekly_heatmap: weeklyHeatmap(heatmap),
    cumulative_heatmap: cumulativeHeatmap(heatmap),
    insights: {
      most_used_model: null,
      average_tokens_per_chat: 0,
      average_messages_per_active_day: activeDays ? round1(messages / activeDays) : 0,
      user_message_share: 0,
      assistant_message_share: 0,
    },
    top_models: [],
    top_tools: [],
    period: { start_date: period.start, end_date: period.end, days: period.days },
  };
}
