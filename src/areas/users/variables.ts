import { badRequest } from '../../core/http/errors.js';

/**
 * User variables (0.11.0): named strings a user keeps for prompt templates
 * (`{{user.variables.name}}`). Stored on the user record, never serialised with it.
 */
const KEY = /^[a-z][a-z0-9_]*$/;
const MAX_VALUE_LENGTH = 20_000;
const MAX_JSON_LENGTH = 100_000;

/** Only string values count; anything else stored by an older writer is ignored. */
export function normaliseUserVariables(variables: unknown): Record<string, string> {
  if (!variables || typeof variables !== 'object' || Array.isArray(variables)) return {};
  return Object.fromEntries(Object.entries(variables).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** Length of the value as Python's `json.dumps` writes it (", " and ": " separators, non-ASCII escaped). */
function pythonJsonLength(value: unknown): number {
  if (typeof value === 'string') {
    let length = JSON.stringify(value).length;
    for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) length += 5;
    return length;
  }
  if (Array.isArray(value)) return 2 + value.reduce<number>((sum, item, i) => sum + pythonJsonLength(item) + (i ? 2 : 0), 0);
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    return 2 + entries.reduce((sum, [k, v], i) => sum + pythonJsonLength(k) + 2 + pythonJsonLength(v) + (i ? 2 : 0), 0);
  }
  return JSON.stringify(value ?? null).length;
}

/** Checks a whole new set of variables; the first problem is a 400 with the reference's message. */
export function validateUserVariables(variables: Record<string, unknown>): Record<string, string> {
  if (pythonJsonLength(variables) > MAX_JSON_LENGTH) throw badRequest('User variables are too large.');
  const valid: Record<string, string> = {};
  for (const [key, value] of Object.entries(variables)) {
    if (!KEY.test(key)) throw badRequest(`Invalid user variable key: ${key}`);
    if (typeof value !== 'string') throw badRequest(`User variable must be a string: ${key}`);
    const text = value.replace(/\r\n/g, '\n');
    if ([...text].length > MAX_VALUE_LENGTH) throw badRequest(`User variable is too long: ${key}`);
    valid[key] = text;
  }
  return valid;
}
