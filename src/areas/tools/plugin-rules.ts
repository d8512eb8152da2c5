import { type UserRecord, publicUser } from '../../core/auth/user.js';
import { ERROR, HttpError, badRequest, unauthorized } from '../../core/http/errors.js';
import { PluginError } from '../../core/python/errors.js';
import type { ValvesKind } from '../../core/python/host.js';

/** What tools and functions share about their Python sources: how host failures answer, where user valves live. */

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Python's `str.isidentifier()` (XID_Start or `_`, then XID_Continue): what a tool's or function's id must be. */
export const PYTHON_IDENTIFIER = /^[\p{XID_Start}_]\p{XID_Continue}*$/u;

/** `__user__` as the reference hands it to tool and function code (UserModel dump), without the server-only variables. */
export const pluginUser = (user: UserRecord): Json => ({ ...publicUser(user) });

/** A source that does not load (create, update): the caller's 400 with the Python message; a host that cannot run it, 500. */
export function sourceLoadFailure(error: unknown): unknown {
  if (!(error instanceof PluginError)) return error;
  return new HttpError(['unavailable', 'closed', 'protocol'].includes(error.code) ? 500 : 400, `[ERROR: ${error.message}]`);
}

/** A stored source that no longer loads (or no Python) on a valves route: the reference's 500, with the cause. */
export function valvesHostFailure(error: unknown): unknown {
  if (!(error instanceof PluginError)) return error;
  return new HttpError(error.code === 'disabled' ? 400 : 500, `[ERROR: ${error.message}]`);
}

/** Valves that do not validate: no such class is a 401 not found, bad values the area's own 400 detail. */
export function valvesValidationFailure(error: unknown, kind: ValvesKind, details: { UPDATE_VALVES: string; UPDATE_USER_VALVES: string }): unknown {
  if (error instanceof PluginError && error.code === 'no_valves') return unauthorized(ERROR.NOT_FOUND);
  if (error instanceof PluginError && error.code === 'invalid_valves') {
    return badRequest(kind === 'valves' ? details.UPDATE_VALVES : details.UPDATE_USER_VALVES);
  }
  return valvesHostFailure(error);
}

/** The user's stored (sealed) valves of a source, kept in `settings[section].valves[id]` as the reference does. */
export function sealedUserValves(user: UserRecord, section: 'tools' | 'functions', id: string): unknown {
  const kept = user.settings?.[section];
  return isObject(kept) && isObject(kept.valves) ? kept.valves[id] : undefined;
}

/** `settings` with `settings[section].valves[id]` replaced by `sealed`, the rest kept. */
export function settingsWithUserValves(settings: Json | null, section: 'tools' | 'functions', id: string, sealed: unknown): Json {
  const next = { ...(settings ?? {}) };
  const kept = isObject(next[section]) ? { ...next[section] } : {};
  kept.valves = { ...(isObject(kept.valves) ? kept.valves : {}), [id]: sealed };
  next[section] = kept;
  return next;
}
