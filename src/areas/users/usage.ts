import { badRequest } from '../../core/http/errors.js';
import type { UsageDay, UserUsageQuery, UserUsageResponse } from './schemas.js';

/**
 * `GET /users/usage` (0.11.0): a user's activity over a period, day by day in the
 * user's time zone, with weekly and running totals, streaks and averages.
 *
 * Activity is counted from the user's stored chat messages (`chat_message`):
 * every message counts on its day; an answer's tokens are the provider's usage,
 * or the tokenizer's estimate (counted apart in `estimated_tokens`).
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

/** The calendar date of a moment in the user's time zone. */
export function dateLabeler(timeZone: string | null, now: number): (seconds: number) => string {
  const format = dateFormatter(timeZone);
  return (seconds: number) => format.format(new Date(normaliseTimestamp(seconds, now) * 1000));
}

/** One entry per calendar day of the period, in the user's time zone. */
export function dailyHeatmap(period: UsagePeriod, timeZone: string | null, now: number): UsageDay[] {
  const dateOf = dateLabeler(timeZone, now);
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

/** A stored message, as the report reads it. */
export interface UsageMessage {
  chat_id: string;
  role: string;
  model_id: string | null;
  created_at: number;
  input_tokens: number | null;
  output_tokens: number | null;
  tokens_estimated: boolean;
}

interface ModelUsage {
  model_id: string;
  messages: number;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

/** Messages land on their day of `heatmap` (days outside the period are skipped); per-model and per-chat figures are gathered. */
function tally(heatmap: UsageDay[], messages: UsageMessage[], dateOf: (seconds: number) => string) {
  const days = new Map(heatmap.map((day) => [day.date, day]));
  const chatsOfDay = new Map<string, Set<string>>();
  const chatSpans = new Map<string, { first: number; last: number }>();
  const models = new Map<string, ModelUsage>();
  const totals = { input: 0, output: 0, estimated: 0, user: 0, assistant: 0, messages: 0 };
  for (const message of messages) {
    const date = dateOf(message.created_at);
    const day = days.get(date);
    if (!day) continue;
    const input = message.input_tokens ?? 0;
    const output = message.output_tokens ?? 0;
    day.messages++;
    day.tokens += input + output;
    totals.messages++;
    totals.input += input;
    totals.output += output;
    if (message.tokens_estimated) totals.estimated += input + output;
    if (message.role === 'user') totals.user++;
    if (message.role === 'assistant') totals.assistant++;
    const chats = chatsOfDay.get(date) ?? new Set<string>();
    chats.add(message.chat_id);
    chatsOfDay.set(date, chats);
    const span = chatSpans.get(message.chat_id) ?? { first: message.created_at, last: message.created_at };
    span.first = Math.min(span.first, message.created_at);
    span.last = Math.max(span.last, message.created_at);
    chatSpans.set(message.chat_id, span);
    if (message.role === 'assistant' && message.model_id) {
      day.models[message.model_id] = (day.models[message.model_id] ?? 0) + 1;
      const model = models.get(message.model_id) ?? { model_id: message.model_id, messages: 0, input_tokens: 0, output_tokens: 0, total_tokens: 0 };
      model.messages++;
      model.input_tokens += input;
      model.output_tokens += output;
      model.total_tokens += input + output;
      models.set(message.model_id, model);
    }
  }
  for (const [date, chats] of chatsOfDay) days.get(date)!.chats = chats.size;
  return { totals, chatSpans, models };
}

const share = (part: number, whole: number) => (whole ? round1((part / whole) * 100) : 0);

/** The usage report of a period from the user's messages in it; `lifetimeTokens` counts every message the user ever had answered. */
export function usageReport(
  period: UsagePeriod,
  heatmap: UsageDay[],
  messages: UsageMessage[],
  dateOf: (seconds: number) => string,
  lifetimeTokens: number,
): UserUsageResponse {
  const { totals, chatSpans, models } = tally(heatmap, messages, dateOf);
  const activeDays = heatmap.filter((day) => day.messages > 0).length;
  const { current, longest } = streaks(heatmap);
  const topModels = [...models.values()].sort((a, b) => b.messages - a.messages || b.total_tokens - a.total_tokens || a.model_id.localeCompare(b.model_id));
  const tokens = totals.input + totals.output;
  return {
    totals: {
      lifetime_tokens: lifetimeTokens,
      input_tokens: totals.input,
      output_tokens: totals.output,
      estimated_tokens: totals.estimated,
      peak_daily_tokens: heatmap.reduce((max, day) => Math.max(max, day.tokens), 0),
      longest_chat_seconds: [...chatSpans.values()].reduce((max, span) => Math.max(max, span.last - span.first), 0),
      current_streak: current,
      longest_streak: longest,
      total_chats: chatSpans.size,
      active_days: activeDays,
      models_used: models.size,
      messages: totals.messages,
      user_messages: totals.user,
      assistant_messages: totals.assistant,
    },
    heatmap,
    weekly_heatmap: weeklyHeatmap(heatmap),
    cumulative_heatmap: cumulativeHeatmap(heatmap),
    insights: {
      most_used_model: topModels[0]?.model_id ?? null,
      average_tokens_per_chat: chatSpans.size ? round1(tokens / chatSpans.size) : 0,
      average_messages_per_active_day: activeDays ? round1(totals.messages / activeDays) : 0,
      user_message_share: share(totals.user, totals.messages),
      assistant_message_share: share(totals.assistant, totals.messages),
    },
    top_models: topModels.slice(0, 10),
    top_tools: [],
    period: { start_date: period.start, end_date: period.end, days: period.days },
  };
}
