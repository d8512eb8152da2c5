import { Type } from '@sinclair/typebox';
import { Nullable } from '../http/schema.js';

/**
 * Access grants (models/access_grants.py): one row per (resource, principal,
 * permission). A principal is a user, a group, the public `user:*` (every
 * signed-in user with role user or admin) or, for shared chats only, the
 * no-sign-in `anyone:*`.
 */
export type PrincipalType = 'user' | 'group' | 'anyone';
export type GrantPermission = 'read' | 'write';

/** The wildcard principal id: `user:*` is public, `anyone:*` is open. */
export const EVERYONE = '*';

/** Resource type names as stored in `access_grant.resource_type` (the reference's names). */
export const RESOURCE_TYPES = {
  tool: 'tool',
  model: 'model',
  knowledge: 'knowledge',
  prompt: 'prompt',
  note: 'note',
  channel: 'channel',
  file: 'file',
  folder: 'folder',
  skill: 'skill',
  calendar: 'calendar',
  sharedChat: 'shared_chat',
} as const;

/** A stored grant (AccessGrantModel); resources return these in `access_grants`. */
export interface AccessGrant {
  id: string;
  resource_type: string;
  resource_id: string;
  principal_type: string;
  principal_id: string;
  permission: string;
  created_at: number;
}

/** A grant as forms give it, once checked. */
export interface GrantSpec {
  principal_type: PrincipalType;
  principal_id: string;
  permission: GrantPermission;
}

interface LegacyPrincipals {
  group_ids?: string[];
  user_ids?: string[];
}

/** The legacy `access_control` object: null = public read, {} = private (interface §2.4). */
export interface AccessControl {
  read?: LegacyPrincipals;
  write?: LegacyPrincipals;
}

// ---- schemas --------------------------------------------------------------

/** An element of `access_grants` in forms (interface §2.4). */
export const AccessGrantForm = Type.Object(
  {
    id: Type.Optional(Type.String()),
    principal_type: Type.Union([Type.Literal('user'), Type.Literal('group')]),
    principal_id: Type.String({ minLength: 1 }),
    permission: Type.Union([Type.Literal('read'), Type.Literal('write')]),
  },
  { additionalProperties: true },
);

/** The same, also accepting the open `anyone:*` read grant (shared chats). */
export const OpenAccessGrantForm = Type.Object(
  {
    id: Type.Optional(Type.String()),
    principal_type: Type.Union([Type.Literal('user'), Type.Literal('group'), Type.Literal('anyone')]),
    principal_id: Type.String({ minLength: 1 }),
    permission: Type.Union([Type.Literal('read'), Type.Literal('write')]),
  },
  { additionalProperties: true },
);

/** A stored grant in responses. */
export const AccessGrantSchema = Type.Object({
  id: Type.String(),
  resource_type: Type.String(),
  resource_id: Type.String(),
  principal_type: Type.String(),
  principal_id: Type.String(),
  permission: Type.String(),
  created_at: Type.Integer(),
});

const LegacyPrincipalsSchema = Type.Object(
  { group_ids: Type.Optional(Type.Array(Type.String())), user_ids: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: true },
);

/** The legacy `access_control` field, in forms and responses. */
export const AccessControlSchema = Nullable(
  Type.Object({ read: Type.Optional(LegacyPrincipalsSchema), write: Type.Optional(LegacyPrincipalsSchema) }, { additionalProperties: true }),
);

// ---- checks and conversions ----------------------------------------------

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const keyOf = (g: GrantSpec) => `${g.principal_type}\u0000${g.principal_id}\u0000${g.permission}`;

function dedupe(grants: GrantSpec[]): GrantSpec[] {
  const seen = new Map<string, GrantSpec>();
  for (const grant of grants) seen.set(keyOf(grant), grant);
  return [...seen.values()];
}

/**
 * Checks a form's `access_grants` list and drops duplicates. The reference
 * silently skips malformed entries; Parley refuses them with a message instead
 * of storing less than the caller asked for.
 */
export function parseGrants(input: unknown): { grants: GrantSpec[] } | { error: string } {
  if (input === null || input === undefined) return { grants: [] };
  if (!Array.isArray(input)) return { error: 'access_grants must be a list' };
  const grants: GrantSpec[] = [];
  for (const [index, entry] of input.entries()) {
    const where = `access_grants[${index}]`;
    if (!isObject(entry)) return { error: `${where} must be an object` };
    const { principal_type, principal_id, permission } = entry;
    if (principal_type !== 'user' && principal_type !== 'group' && principal_type !== 'anyone') {
      return { error: `${where}.principal_type must be 'user' or 'group'` };
    }
    if (permission !== 'read' && permission !== 'write') return { error: `${where}.permission must be 'read' or 'write'` };
    if (typeof principal_id !== 'string' || principal_id === '') return { error: `${where}.principal_id must be a non-empty string` };
    if (principal_type === 'group' && principal_id === EVERYONE) return { error: `${where}: '*' names every user, not a group` };
    if (principal_type === 'anyone' && (principal_id !== EVERYONE || permission !== 'read')) {
      return { error: `${where}: an 'anyone' grant must be principal_id '*' with permission 'read'` };
    }
    grants.push({ principal_type, principal_id, permission });
  }
  return { grants: dedupe(grants) };
}

/**
 * Legacy `access_control` to grants (access_control_to_grants): null is public
 * read, except for files where null is private; {} is private; otherwise one
 * grant per listed group and user.
 */
export function accessControlToGrants(accessControl: unknown, resourceType?: string): { grants: GrantSpec[] } | { error: string } {
  if (accessControl === null || accessControl === undefined) {
    return { grants: resourceType === RESOURCE_TYPES.file ? [] : [{ principal_type: 'user', principal_id: EVERYONE, permission: 'read' }] };
  }
  if (!isObject(accessControl)) return { error: 'access_control must be an object or null' };
  const grants: GrantSpec[] = [];
  for (const permission of ['read', 'write'] as const) {
    const principals = accessControl[permission];
    if (principals === undefined || principals === null) continue;
    if (!isObject(principals)) return { error: `access_control.${permission} must be an object` };
    for (const [field, principalType] of [['group_ids', 'group'], ['user_ids', 'user']] as const) {
      const ids = principals[field] ?? [];
      if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string' || id === '')) {
        return { error: `access_control.${permission}.${field} must be a list of ids` };
      }
      for (const id of ids as string[]) grants.push({ principal_type: principalType, principal_id: id, permission });
    }
  }
  return { grants: dedupe(grants) };
}

/**
 * Grants back to the legacy object (grants_to_access_control): none is {}
 * (private), a public read grant is null (public; its write grants are then only
 * visible in `access_grants`), otherwise the read and write principal lists.
 */
export function grantsToAccessControl(grants: Pick<AccessGrant, 'principal_type' | 'principal_id' | 'permission'>[]): {
  read: Required<LegacyPrincipals>;
  write: Required<LegacyPrincipals>;
} | null | Record<string, never> {
  if (grants.length === 0) return {};
  const result = { read: { group_ids: [] as string[], user_ids: [] as string[] }, write: { group_ids: [] as string[], user_ids: [] as string[] } };
  let isPublic = false;
  for (const grant of grants) {
    if (grant.permission !== 'read' && grant.permission !== 'write') continue;
    // Public write stays in write.user_ids as '*', so it survives a round trip.
    if (grant.principal_type === 'user' && grant.principal_id === EVERYONE && grant.permission === 'read') {
      isPublic = true;
      continue;
    }
    const list = grant.principal_type === 'group' ? result[grant.permission].group_ids : grant.principal_type === 'user' ? result[grant.permission].user_ids : null;
    if (list && !list.includes(grant.principal_id)) list.push(grant.principal_id);
  }
  return isPublic ? null : result;
}

export const isPublicGrant = (g: GrantSpec) => g.principal_type === 'user' && g.principal_id === EVERYONE;
export const isOpenGrant = (g: GrantSpec) => g.principal_type === 'anyone';
export const isUserGrant = (g: GrantSpec) => g.principal_type === 'user' && g.principal_id !== EVERYONE;
export const isGroupGrant = (g: GrantSpec) => g.principal_type === 'group';
