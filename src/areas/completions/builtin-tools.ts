import type { UserRecord } from '../../core/auth/user.js';
import { type Json, isObject } from '../chats/history.js';
import type { SkillsService } from '../skills/service.js';
import type { SkillRecord } from '../skills/store.js';
import { viewSkillFunction } from './skills.js';
import { type ChatFunction, textOutcome } from './tools.js';

/**
 * Built-in tools (utils/tools.get_builtin_tools, tools/builtin.py): functions
 * Parley itself offers in native function calling, only to answers the web
 * client asked for (a socket session), as the reference. Each category can be
 * switched off per model (`meta.builtinTools.<category>: false`), and the ones
 * that reach other areas are gated as the reference gates them.
 */
export interface BuiltinDeps {
  skills: SkillsService;
}

export interface BuiltinRequest {
  user: UserRecord;
  model: Json;
  /** Skills listed in the `<available_skills>` manifest. */
  viewableSkills: SkillRecord[];
}

const modelMeta = (model: Json): Json => (isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {});

/** `meta.builtinTools.<category>`, true unless switched off. */
function categoryEnabled(model: Json, category: string): boolean {
  const builtin = modelMeta(model).builtinTools;
  return !isObject(builtin) || builtin[category] !== false;
}

/** Whether an answer gets built-in tools at all: a web client's, native function calling, and the model's `builtin_tools` capability. */
export function usesBuiltinTools(sessionId: string | null, params: Json, model: Json): boolean {
  const capabilities = modelMeta(model).capabilities;
  return Boolean(sessionId) && params.function_calling !== 'legacy' && !(isObject(capabilities) && capabilities.builtin_tools === false);
}

export async function builtinFunctions(deps: BuiltinDeps, request: BuiltinRequest): Promise<ChatFunction[]> {
  const functions: ChatFunction[] = [];
  if (categoryEnabled(request.model, 'time')) functions.push(currentTimestamp, calculateTimestamp);
  if (request.viewableSkills.length > 0) functions.push(viewSkillFunction(deps.skills));
  return functions;
}

// ---- time ------------------------------------------------------------------------

/** Python's `isoformat()` of an aware datetime: `2026-01-02T03:04:05.123456+00:00`, in the zone's local time. */
function isoInZone(date: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const local = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  const offsetMinutes = Math.round((local - Math.floor(date.getTime() / 1000) * 1000) / 60000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const micros = String(date.getUTCMilliseconds() * 1000).padStart(6, '0');
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.${micros}${offset}`;
}

/** The user's zone, when it is one the runtime knows. */
function userZone(user: UserRecord): string | null {
  if (!user.timezone) return null;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: user.timezone });
    return user.timezone;
  } catch {
    return null;
  }
}

/** `relativedelta(months=…)`: the same day of an earlier month, clamped to that month's last day. */
function monthsBefore(date: Date, months: number): Date {
  const result = new Date(date);
  const day = result.getUTCDate();
  result.setUTCDate(1);
  result.setUTCMonth(result.getUTCMonth() - months);
  const last = new Date(Date.UTC(result.getUTCFullYear(), result.getUTCMonth() + 1, 0)).getUTCDate();
  result.setUTCDate(Math.min(day, last));
  return result;
}

const wholeNumber = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? Math.trunc(value) : Number.parseInt(String(value ?? 0), 10) || 0);

const currentTimestamp: ChatFunction = {
  source: 'builtin',
  spec: {
    name: 'get_current_timestamp',
    description: 'Get the current Unix timestamp in seconds.',
    parameters: { type: 'object', properties: {} },
  },
  async run(_args, user) {
    const now = new Date();
    const result: Json = { current_timestamp: Math.floor(now.getTime() / 1000), current_iso: isoInZone(now, 'UTC') };
    const zone = userZone(user);
    if (zone) Object.assign(result, { user_local_iso: isoInZone(now, zone), user_timezone: zone });
    return textOutcome(JSON.stringify(result));
  },
};

const calculateTimestamp: ChatFunction = {
  source: 'builtin',
  spec: {
    name: 'calculate_timestamp',
    description:
      'Get the current Unix timestamp, optionally adjusted by days, weeks, months, or years.\nUse this to calculate timestamps for date filtering in search functions.\nExamples: "last week" = weeks_ago=1, "3 days ago" = days_ago=3, "a year ago" = years_ago=1',
    parameters: {
      type: 'object',
      properties: {
        days_ago: { type: 'integer', description: 'Number of days to subtract from current time (default: 0)', default: 0 },
        weeks_ago: { type: 'integer', description: 'Number of weeks to subtract from current time (default: 0)', default: 0 },
        months_ago: { type: 'integer', description: 'Number of months to subtract from current time (default: 0)', default: 0 },
        years_ago: { type: 'integer', description: 'Number of years to subtract from current time (default: 0)', default: 0 },
      },
    },
  },
  async run(args, user) {
    const now = new Date();
    const days = wholeNumber(args.days_ago) + 7 * wholeNumber(args.weeks_ago);
    let adjusted = new Date(now.getTime() - days * 86_400_000);
    const months = wholeNumber(args.months_ago) + 12 * wholeNumber(args.years_ago);
    if (wholeNumber(args.months_ago) > 0 || wholeNumber(args.years_ago) > 0) adjusted = monthsBefore(adjusted, months);
    const result: Json = {
      current_timestamp: Math.floor(now.getTime() / 1000),
      current_iso: isoInZone(now, 'UTC'),
      calculated_timestamp: Math.floor(adjusted.getTime() / 1000),
      calculated_iso: isoInZone(adjusted, 'UTC'),
    };
    const zone = userZone(user);
    if (zone) Object.assign(result, { user_local_iso: isoInZone(now, zone), calculated_local_iso: isoInZone(adjusted, zone), user_timezone: zone });
    return textOutcome(JSON.stringify(result));
  },
};
