import { type SqlBool, sql } from 'kysely';
import type { UserRecord } from '../../core/auth/user.js';
import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import { containsPattern, likeLiteral } from '../../core/db/like.js';
import type { UserRow, UserUpdate } from '../../core/db/tables.js';
import type { UsageMessage } from './usage.js';

/** The fields of a user a service may change; JSON fields as objects. */
export type UserPatch = Partial<Omit<UserRecord, 'id' | 'created_at'>>;

/** Columns the user lists sort by (`order_by`); `group_id:<id>` sorts members of that group first. */
const SORTABLE = ['name', 'email', 'created_at', 'last_active_at', 'updated_at', 'role'] as const;

export interface UserListFilter {
  /** Part of the name or e-mail address, any case. */
  query?: string;
  orderBy?: string;
  /** 'asc'; anything else is descending, as in the reference. */
  direction?: string;
  skip?: number;
  limit?: number;
}

const JSON_FIELDS = ['info', 'variables', 'settings', 'oauth', 'scim'] as const;

export function toUserRecord(row: UserRow): UserRecord {
  return {
    ...row,
    // The reference fills a missing image with the user's generated-avatar route.
    profile_image_url: row.profile_image_url || `/api/v1/users/${row.id}/profile/image`,
    info: fromJson(row.info, null),
    variables: fromJson<Record<string, unknown> | null>(row.variables, null) ?? {},
    settings: fromJson(row.settings, null),
    oauth: fromJson(row.oauth, null),
    scim: fromJson(row.scim, null),
  };
}

function toRowPatch(patch: UserPatch): UserUpdate {
  const row: Record<string, unknown> = { ...patch };
  for (const field of JSON_FIELDS) if (field in patch) row[field] = toJson(patch[field]);
  return row as UserUpdate;
}

export class UserStore {
  constructor(private readonly db: Db) {}

  /** The user's chat messages of a period (the usage report's input), oldest first. */
  async messagesBetween(userId: string, start: number, end: number): Promise<UsageMessage[]> {
    const rows = await this.db
      .selectFrom('chat_message')
      .select(['chat_id', 'role', 'model_id', 'created_at', 'input_tokens', 'output_tokens', 'tokens_estimated'])
      .where('user_id', '=', userId)
      .where('created_at', '>=', start)
      .where('created_at', '<=', end)
      .orderBy('created_at')
      .execute();
    return rows.map((r) => ({
      chat_id: r.chat_id,
      role: r.role,
      model_id: r.model_id,
      created_at: Number(r.created_at),
      input_tokens: r.input_tokens === null ? null : Number(r.input_tokens),
      output_tokens: r.output_tokens === null ? null : Number(r.output_tokens),
      tokens_estimated: toBool(r.tokens_estimated),
    }));
  }

  /** Every token of the user's answers, ever. */
  async lifetimeTokens(userId: string): Promise<number> {
    const row = await this.db
      .selectFrom('message_rollup')
      .select((eb) => [eb.fn.sum<number>('input_tokens').as('input'), eb.fn.sum<number>('output_tokens').as('output')])
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return Number(row?.input ?? 0) + Number(row?.output ?? 0);
  }

  async byId(id: string): Promise<UserRecord | null> {
    const row = await this.db.selectFrom('user').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toUserRecord(row) : null;
  }

  async byIds(ids: string[]): Promise<UserRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('user').selectAll().where('id', 'in', ids).execute();
    return rows.map(toUserRecord);
  }

  /**
   * Users whose JSON column `column` (`scim`, `oauth`) holds `{<provider>: {<field>: value}}`: rows are
   * narrowed with LIKE on the JSON text of the value, then checked decoded.
   */
  async byLinkedIdentity(column: 'scim' | 'oauth', provider: string, field: string, value: string): Promise<UserRecord[]> {
    const rows = await this.db
      .selectFrom('user')
      .selectAll()
      .where(column, 'like', sql<string>`${`%${likeLiteral(JSON.stringify(value))}%`} escape '\\'`)
      .execute();
    return rows.map(toUserRecord).filter((user) => {
      const linked = user[column]?.[provider] as Record<string, unknown> | undefined;
      return linked?.[field] === value;
    });
  }

  async byEmail(email: string): Promise<UserRecord | null> {
    const row = await this.db
      .selectFrom('user')
      .selectAll()
      .where(sql`lower(email)`, '=', email.toLowerCase())
      .executeTakeFirst();
    return row ? toUserRecord(row) : null;
  }

  async byApiKey(key: string): Promise<UserRecord | null> {
    const row = await this.db
      .selectFrom('api_key')
      .innerJoin('user', 'user.id', 'api_key.user_id')
      .selectAll('user')
      .where('api_key.key', '=', key)
      .executeTakeFirst();
    return row ? toUserRecord(row) : null;
  }

  /** One page of users and the number matching the filter. */
  async list(filter: UserListFilter): Promise<{ users: UserRecord[]; total: number }> {
    let query = this.db.selectFrom('user');
    if (filter.query) {
      const pattern = containsPattern(filter.query);
      query = query.where((eb) =>
        eb.or([eb(sql`lower(name)`, 'like', sql`${pattern} escape '\\'`), eb(sql`lower(email)`, 'like', sql`${pattern} escape '\\'`)]),
      );
    }
    const counted = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();

    const direction = filter.direction === 'asc' ? 'asc' : 'desc';
    let rows = query.selectAll('user');
    const orderBy = filter.orderBy ?? '';
    if (orderBy.startsWith('group_id:')) {
      const member = sql<number>`case when exists (select 1 from group_member gm where gm.user_id = "user".id and gm.group_id = ${orderBy.slice('group_id:'.length)}) then 1 else 0 end`;
      rows = rows.orderBy(member, direction).orderBy('name', 'asc');
    } else if ((SORTABLE as readonly string[]).includes(orderBy)) {
      rows = rows.orderBy(orderBy as (typeof SORTABLE)[number], direction);
    } else {
      rows = rows.orderBy('created_at', 'desc');
    }
    rows = rows.orderBy('id', 'asc');
    if (filter.limit !== undefined) rows = rows.limit(filter.limit);
    if (filter.skip) rows = rows.offset(filter.skip);
    return { users: (await rows.execute()).map(toUserRecord), total: Number(counted.n) };
  }

  /**
   * The user an identity provider's subject is bound to (`oauth.<provider>.sub`). The JSON text is
   * narrowed with LIKE (the same on both dialects, whatever spacing wrote it), the match decided here.
   */
  async byOAuthSub(provider: string, sub: string): Promise<UserRecord | null> {
    const pattern = `%${likeLiteral(JSON.stringify(sub))}%`;
    const rows = await this.db.selectFrom('user').selectAll().where(sql<SqlBool>`oauth like ${pattern} escape '\\'`).execute();
    const bound = rows.map(toUserRecord).find((user) => {
      const entry = user.oauth?.[provider];
      return entry !== null && typeof entry === 'object' && (entry as Record<string, unknown>).sub === sub;
    });
    return bound ?? null;
  }

  async count(): Promise<number> {
    const row = await this.db.selectFrom('user').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async countActiveSince(since: number): Promise<number> {
    const row = await this.db
      .selectFrom('user')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('last_active_at', '>=', since)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The first user ever created: the primary admin, who cannot be demoted or deleted. */
  async firstUserId(): Promise<string | null> {
    const row = await this.db.selectFrom('user').select('id').orderBy('created_at', 'asc').orderBy('id', 'asc').limit(1).executeTakeFirst();
    return row?.id ?? null;
  }

  async insert(user: UserRecord): Promise<void> {
    const { info, variables, settings, oauth, scim, ...rest } = user;
    await this.db
      .insertInto('user')
      .values({
        ...rest,
        info: toJson(info),
        variables: toJson(variables),
        settings: toJson(settings),
        oauth: toJson(oauth),
        scim: toJson(scim),
      })
      .execute();
  }

  async update(id: string, patch: UserPatch): Promise<UserRecord | null> {
    if (Object.keys(patch).length > 0) await this.db.updateTable('user').set(toRowPatch(patch)).where('id', '=', id).execute();
    return this.byId(id);
  }

  async touch(id: string, now: number): Promise<void> {
    await this.db.updateTable('user').set({ last_active_at: now }).where('id', '=', id).execute();
  }

  /** Deletes the user; credentials, keys, memberships and owned rows go by foreign-key cascade. */
  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('user').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
