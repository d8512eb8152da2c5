import { randomUUID } from 'node:crypto';
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { IDS_PER_QUERY, chunks } from '../db/batches.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/tables.js';
import { type AccessGrant, EVERYONE, type GrantPermission, type GrantSpec } from './grants.js';

/**
 * Whose grants count: a user (or none, for group previews) and their groups.
 * Without `groupIds`, the user's memberships are looked up inside the same query.
 */
export interface Principals {
  userId: string | null;
  groupIds?: string[];
}

/** A write grant also lets its holder read. */
export const permissionsSatisfying = (permission: GrantPermission): GrantPermission[] =>
  permission === 'read' ? ['read', 'write'] : ['write'];

/** The grant rows that name the principals: public `user:*`, the user, or one of the groups. */
function principalMatch(eb: ExpressionBuilder<Database, 'access_grant'>, who: Principals): Expression<SqlBool> {
  const users = who.userId ? [EVERYONE, who.userId] : [EVERYONE];
  const terms = [eb.and([eb('access_grant.principal_type', '=', 'user'), eb('access_grant.principal_id', 'in', users)])];
  if (who.groupIds === undefined && who.userId) {
    const memberships = eb.selectFrom('group_member').select('group_member.group_id').where('group_member.user_id', '=', who.userId);
    terms.push(eb.and([eb('access_grant.principal_type', '=', 'group'), eb('access_grant.principal_id', 'in', memberships)]));
  } else if (who.groupIds && who.groupIds.length > 0) {
    terms.push(eb.and([eb('access_grant.principal_type', '=', 'group'), eb('access_grant.principal_id', 'in', who.groupIds)]));
  }
  return eb.or(terms);
}

const toGrant = (row: AccessGrant): AccessGrant => ({ ...row, created_at: Number(row.created_at) });

export class AccessGrantStore {
  constructor(private readonly db: Db) {}

  async ofResource(resourceType: string, resourceId: string): Promise<AccessGrant[]> {
    const rows = await this.db
      .selectFrom('access_grant')
      .selectAll()
      .where('resource_type', '=', resourceType)
      .where('resource_id', '=', resourceId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toGrant);
  }

  /** Grants keyed by resource id, read in batches that stay under both dialects' bound-parameter limits. */
  async ofResources(resourceType: string, resourceIds: string[]): Promise<Map<string, AccessGrant[]>> {
    const result = new Map(resourceIds.map((id) => [id, [] as AccessGrant[]]));
    for (const part of chunks(resourceIds, IDS_PER_QUERY)) {
      const rows = await this.db
        .selectFrom('access_grant')
        .selectAll()
        .where('resource_type', '=', resourceType)
        .where('resource_id', 'in', part)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      for (const row of rows) result.get(row.resource_id)?.push(toGrant(row));
    }
    return result;
  }

  async insert(resourceType: string, resourceId: string, grants: GrantSpec[], now: number): Promise<AccessGrant[]> {
    if (grants.length === 0) return [];
    const rows = grants.map((g) => ({ id: randomUUID(), resource_type: resourceType, resource_id: resourceId, ...g, created_at: now }));
    await this.db
      .insertInto('access_grant')
      .values(rows)
      .onConflict((oc) => oc.columns(['resource_type', 'resource_id', 'principal_type', 'principal_id', 'permission']).doNothing())
      .execute();
    return rows;
  }

  /** A grant as another install stored it, id kept (`parley import-openwebui`); an identical grant is kept. */
  async insertGrant(grant: AccessGrant): Promise<void> {
    await this.db
      .insertInto('access_grant')
      .values(grant)
      .onConflict((oc) => oc.columns(['resource_type', 'resource_id', 'principal_type', 'principal_id', 'permission']).doNothing())
      .execute();
  }

  async deleteResource(resourceType: string, resourceId: string): Promise<number> {
    const result = await this.db
      .deleteFrom('access_grant')
      .where('resource_type', '=', resourceType)
      .where('resource_id', '=', resourceId)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async deleteOne(resourceType: string, resourceId: string, grant: GrantSpec): Promise<boolean> {
    const result = await this.db
      .deleteFrom('access_grant')
      .where('resource_type', '=', resourceType)
      .where('resource_id', '=', resourceId)
      .where('principal_type', '=', grant.principal_type)
      .where('principal_id', '=', grant.principal_id)
      .where('permission', '=', grant.permission)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async deletePrincipal(principalType: string, principalId: string): Promise<number> {
    const result = await this.db
      .deleteFrom('access_grant')
      .where('principal_type', '=', principalType)
      .where('principal_id', '=', principalId)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async matches(resourceType: string, resourceId: string, permission: GrantPermission, who: Principals): Promise<boolean> {
    const row = await this.db
      .selectFrom('access_grant')
      .select('id')
      .where('resource_type', '=', resourceType)
      .where('resource_id', '=', resourceId)
      .where('permission', 'in', permissionsSatisfying(permission))
      .where((eb) => principalMatch(eb, who))
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** The ids among `resourceIds` (all of the type when omitted) with a matching grant, in one query. */
  async matchingIds(resourceType: string, permission: GrantPermission, who: Principals, resourceIds?: string[]): Promise<Set<string>> {
    if (resourceIds && resourceIds.length === 0) return new Set();
    let query = this.db
      .selectFrom('access_grant')
      .select('resource_id')
      .distinct()
      .where('resource_type', '=', resourceType)
      .where('permission', 'in', permissionsSatisfying(permission))
      .where((eb) => principalMatch(eb, who));
    if (resourceIds) query = query.where('resource_id', 'in', resourceIds);
    const rows = await query.execute();
    return new Set(rows.map((r) => r.resource_id));
  }

  async hasOpenGrant(resourceType: string, resourceId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('access_grant')
      .select('id')
      .where('resource_type', '=', resourceType)
      .where('resource_id', '=', resourceId)
      .where('principal_type', '=', 'anyone')
      .where('principal_id', '=', EVERYONE)
      .where('permission', '=', 'read')
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** The principals holding `permission` (or better) on a resource. */
  async holders(resourceType: string, resourceId: string, permission: GrantPermission): Promise<{ principal_type: string; principal_id: string }[]> {
    return this.db
      .selectFrom('access_grant')
      .select(['principal_type', 'principal_id'])
      .where('resource_type', '=', resourceType)
      .where('resource_id', '=', resourceId)
      .where('permission', 'in', permissionsSatisfying(permission))
      .execute();
  }
}

/**
 * `grantExists` on grants already in memory (all of one resource): whether one
 * of them gives the principals `permission` or better. Group ids must be given.
 */
export function grantsAdmit(grants: readonly AccessGrant[], permission: GrantPermission, who: { userId: string; groupIds: readonly string[] }): boolean {
  const permissions = permissionsSatisfying(permission);
  return grants.some(
    (g) =>
      permissions.includes(g.permission as GrantPermission) &&
      ((g.principal_type === 'user' && (g.principal_id === EVERYONE || g.principal_id === who.userId)) ||
        (g.principal_type === 'group' && who.groupIds.includes(g.principal_id))),
  );
}

/**
 * A condition for another area's listing query: the row at `idColumn` has a grant
 * of `permission` (or better) for the principals. Embed with `.where(...)`.
 */
export function grantExists(resourceType: string, permission: GrantPermission, who: Principals, idColumn: string): Expression<SqlBool> {
  const users = who.userId ? [EVERYONE, who.userId] : [EVERYONE];
  const permissions = permissionsSatisfying(permission);
  let groupTerm = sql``;
  if (who.groupIds === undefined && who.userId) {
    groupTerm = sql`or (g.principal_type = 'group' and g.principal_id in (select m.group_id from group_member m where m.user_id = ${who.userId}))`;
  } else if (who.groupIds && who.groupIds.length > 0) {
    groupTerm = sql`or (g.principal_type = 'group' and g.principal_id in (${sql.join(who.groupIds)}))`;
  }
  return sql<SqlBool>`exists (select 1 from access_grant g where g.resource_type = ${resourceType} and g.resource_id = ${sql.ref(idColumn)} and g.permission in (${sql.join(permissions)}) and ((g.principal_type = 'user' and g.principal_id in (${sql.join(users)})) ${groupTerm}))`;
}
