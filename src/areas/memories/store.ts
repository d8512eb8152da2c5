import type { Db } from '../../core/db/database.js';
import { fromJson, toJson } from '../../core/db/json.js';
import type { MemoryRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

export interface MemoryRecord {
  id: string;
  user_id: string;
  type: 'user' | 'context';
  path: string | null;
  content: string;
  meta: Json | null;
  created_at: number;
  updated_at: number;
}

export type MemoryWrite = Partial<Pick<MemoryRecord, 'type' | 'path' | 'content' | 'meta'>>;

function toRecord(row: MemoryRow): MemoryRecord {
  const meta = fromJson<unknown>(row.meta, null);
  return {
    id: row.id,
    user_id: row.user_id,
    type: row.type === 'user' ? 'user' : 'context',
    path: row.path,
    content: row.content,
    meta: meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Json) : null,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** Every query names the user: a memory is only ever its owner's. */
export class MemoryStore {
  constructor(private readonly db: Db) {}

  async ofUser(userId: string): Promise<MemoryRecord[]> {
    return (await this.db.selectFrom('memory').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute()).map(toRecord);
  }

  async hasAny(userId: string): Promise<boolean> {
    return (await this.db.selectFrom('memory').select('id').where('user_id', '=', userId).limit(1).executeTakeFirst()) !== undefined;
  }

  async byId(userId: string, id: string): Promise<MemoryRecord | null> {
    const row = await this.db.selectFrom('memory').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async byIds(userId: string, ids: string[]): Promise<MemoryRecord[]> {
    if (ids.length === 0) return [];
    return (await this.db.selectFrom('memory').selectAll().where('user_id', '=', userId).where('id', 'in', ids).execute()).map(toRecord);
  }

  /** The same content, type and path already stored (an `add` operation then skips). */
  async duplicate(userId: string, content: string, type: string, path: string | null): Promise<MemoryRecord | null> {
    let query = this.db.selectFrom('memory').selectAll().where('user_id', '=', userId).where('content', '=', content).where('type', '=', type);
    query = path === null ? query.where('path', 'is', null) : query.where('path', '=', path);
    const row = await query.executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async insert(memory: MemoryRecord): Promise<void> {
    await this.db
      .insertInto('memory')
      .values({ ...memory, meta: toJson(memory.meta) })
      .execute();
  }

  async update(userId: string, id: string, fields: MemoryWrite, now: number): Promise<void> {
    const { meta, ...plain } = fields;
    await this.db
      .updateTable('memory')
      .set({ ...plain, ...(meta !== undefined ? { meta: toJson(meta) } : {}), updated_at: now })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .execute();
  }

  async delete(userId: string, id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('memory').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async deleteAll(userId: string): Promise<number> {
    const result = await this.db.deleteFrom('memory').where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
