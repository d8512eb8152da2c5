import { type Expression, type SqlBool, sql } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import type { FolderRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

/** A folder with its JSON columns decoded (the reference's FolderModel). */
export interface FolderRecord {
  id: string;
  parent_id: string | null;
  user_id: string;
  name: string;
  items: Json | null;
  meta: Json | null;
  data: Json | null;
  is_expanded: boolean;
  created_at: number;
  updated_at: number;
}

export type FolderPatch = Partial<Pick<FolderRecord, 'parent_id' | 'name' | 'meta' | 'data' | 'is_expanded' | 'updated_at'>>;

function toRecord(row: FolderRow): FolderRecord {
  return {
    id: row.id,
    parent_id: row.parent_id,
    user_id: row.user_id,
    name: row.name,
    items: fromJson(row.items, null),
    meta: fromJson(row.meta, null),
    data: fromJson(row.data, null),
    is_expanded: toBool(row.is_expanded),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** The queries of folders. No rules. */
export class FolderStore {
  constructor(private readonly db: Db) {}

  async insert(folder: FolderRecord): Promise<void> {
    await this.db
      .insertInto('folder')
      .values({ ...folder, items: toJson(folder.items), meta: toJson(folder.meta), data: toJson(folder.data) })
      .execute();
  }

  async byId(id: string): Promise<FolderRecord | null> {
    const row = await this.db.selectFrom('folder').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async byIds(ids: string[]): Promise<FolderRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('folder').selectAll().where('id', 'in', ids).execute();
    return rows.map(toRecord);
  }

  /** Every folder of a user, oldest first. */
  async ofUser(userId: string): Promise<FolderRecord[]> {
    const rows = await this.db.selectFrom('folder').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute();
    return rows.map(toRecord);
  }

  /** Folders of other users matching `condition` (an access filter on `folder.id`). */
  async sharedWith(userId: string, condition: Expression<SqlBool>): Promise<FolderRecord[]> {
    const rows = await this.db
      .selectFrom('folder')
      .selectAll()
      .where('user_id', '!=', userId)
      .where(condition)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toRecord);
  }

  /** A folder of the user with this name (any case) under this parent. */
  async sibling(userId: string, parentId: string | null, name: string): Promise<FolderRecord | null> {
    const row = await this.db
      .selectFrom('folder')
      .selectAll()
      .where('user_id', '=', userId)
      .where('parent_id', parentId === null ? 'is' : '=', parentId)
      .where(sql<SqlBool>`lower(name) = ${name.toLowerCase()}`)
      .executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async update(id: string, patch: FolderPatch): Promise<void> {
    const row: Record<string, unknown> = { ...patch };
    if ('meta' in patch) row.meta = toJson(patch.meta);
    if ('data' in patch) row.data = toJson(patch.data);
    await this.db.updateTable('folder').set(row).where('id', '=', id).execute();
  }

  async delete(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.deleteFrom('folder').where('id', 'in', ids).execute();
  }
}
