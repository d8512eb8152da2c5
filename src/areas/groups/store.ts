import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db/database.js';
import { fromJson, toJson } from '../../core/db/json.js';
import type { GroupRow } from '../../core/db/tables.js';

/** A group with its JSON columns decoded (the reference's GroupModel). */
export interface GroupRecord {
  id: string;
  user_id: string;
  name: string;
  description: string;
  data: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
  permissions: Record<string, unknown> | null;
  created_at: number;
  updated_at: number;
}

export interface GroupMemberRecord {
  id: string;
  group_id: string;
  user_id: string;
  created_at: number;
  updated_at: number;
}

export type GroupWithCount = GroupRecord & { member_count: number };

export type GroupPatch = Partial<Pick<GroupRecord, 'name' | 'description' | 'data' | 'meta' | 'permissions'>>;

function toGroupRecord(row: GroupRow): GroupRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    name: row.name,
    description: row.description,
    data: fromJson(row.data, null),
    meta: fromJson(row.meta, null),
    permissions: fromJson(row.permissions, null),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

export class GroupStore {
  constructor(private readonly db: Db) {}

  async insert(group: GroupRecord): Promise<void> {
    await this.db
      .insertInto('group')
      .values({ ...group, data: toJson(group.data), meta: toJson(group.meta), permissions: toJson(group.permissions) })
      .execute();
  }

  async byId(id: string): Promise<GroupRecord | null> {
    const row = await this.db.selectFrom('group').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toGroupRecord(row) : null;
  }

  /** Groups by exact name (names are not unique: every group of a name). */
  async byNames(names: string[]): Promise<GroupRecord[]> {
    if (names.length === 0) return [];
    const rows = await this.db.selectFrom('group').selectAll().where('name', 'in', names).orderBy('created_at').orderBy('id').execute();
    return rows.map(toGroupRecord);
  }

  /** A page of groups, oldest first, and how many there are. */
  async page(skip: number, limit: number): Promise<{ groups: GroupRecord[]; total: number }> {
    const counted = await this.db.selectFrom('group').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const rows = limit > 0 ? await this.db.selectFrom('group').selectAll().orderBy('created_at').orderBy('id').offset(skip).limit(limit).execute() : [];
    return { groups: rows.map(toGroupRecord), total: Number(counted.n) };
  }

  /** Every group with its member count, newest change first; only `memberId`'s groups when given. */
  async listWithCounts(memberId?: string): Promise<GroupWithCount[]> {
    let query = this.db
      .selectFrom('group')
      .selectAll('group')
      .select((eb) =>
        eb
          .selectFrom('group_member')
          .select((sub) => sub.fn.countAll<number>().as('n'))
          .whereRef('group_member.group_id', '=', 'group.id')
          .as('member_count'),
      );
    if (memberId !== undefined) {
      query = query.where('group.id', 'in', (eb) => eb.selectFrom('group_member').select('group_id').where('user_id', '=', memberId));
    }
    const rows = await query.orderBy('group.updated_at', 'desc').orderBy('group.id').execute();
    return rows.map(({ member_count, ...row }) => ({ ...toGroupRecord(row), member_count: Number(member_count ?? 0) }));
  }

  /** The groups `userId` belongs to, newest change first (the order permissions are merged in). */
  async ofMember(userId: string): Promise<GroupRecord[]> {
    const rows = await this.db
      .selectFrom('group')
      .innerJoin('group_member', 'group_member.group_id', 'group.id')
      .selectAll('group')
      .where('group_member.user_id', '=', userId)
      .orderBy('group.updated_at', 'desc')
      .orderBy('group.id')
      .execute();
    return rows.map(toGroupRecord);
  }

  async idsOfMember(userId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('group_member').select('group_id').where('user_id', '=', userId).execute();
    return rows.map((r) => r.group_id);
  }

  /** Group ids per user, for many users in one query. */
  async idsOfMembers(userIds: string[]): Promise<Map<string, string[]>> {
    const result = new Map(userIds.map((id) => [id, [] as string[]]));
    if (userIds.length === 0) return result;
    const rows = await this.db.selectFrom('group_member').select(['user_id', 'group_id']).where('user_id', 'in', userIds).execute();
    for (const row of rows) result.get(row.user_id)?.push(row.group_id);
    return result;
  }

  async memberCount(groupId: string): Promise<number> {
    const row = await this.db
      .selectFrom('group_member')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('group_id', '=', groupId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async memberIds(groupId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('group_member').select('user_id').where('group_id', '=', groupId).orderBy('created_at').orderBy('id').execute();
    return rows.map((r) => r.user_id);
  }

  async existingIds(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('group').select('id').where('id', 'in', ids).execute();
    return rows.map((r) => r.id);
  }

  async update(id: string, patch: GroupPatch & { updated_at: number }): Promise<void> {
    const row: Record<string, unknown> = { ...patch };
    for (const field of ['data', 'meta', 'permissions'] as const) if (field in patch) row[field] = toJson(patch[field]);
    await this.db.updateTable('group').set(row).where('id', '=', id).execute();
  }

  async touch(ids: string[], now: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.updateTable('group').set({ updated_at: now }).where('id', 'in', ids).execute();
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('group').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Adds members; existing memberships are left as they are. */
  async addMembers(groupId: string, userIds: string[], now: number): Promise<void> {
    if (userIds.length === 0) return;
    await this.db
      .insertInto('group_member')
      .values(userIds.map((user_id) => ({ id: randomUUID(), group_id: groupId, user_id, created_at: now, updated_at: now })))
      .onConflict((oc) => oc.columns(['group_id', 'user_id']).doNothing())
      .execute();
  }

  /** A membership as another install stored it, id kept (`parley import-openwebui`). */
  async insertMember(member: GroupMemberRecord): Promise<void> {
    await this.db.insertInto('group_member').values(member).onConflict((oc) => oc.columns(['group_id', 'user_id']).doNothing()).execute();
  }

  async removeMembers(groupId: string, userIds: string[]): Promise<void> {
    if (userIds.length === 0) return;
    await this.db.deleteFrom('group_member').where('group_id', '=', groupId).where('user_id', 'in', userIds).execute();
  }
}
