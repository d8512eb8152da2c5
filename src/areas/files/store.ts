import { sql } from 'kysely';
import type { ExpressionBuilder } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toJson } from '../../core/db/json.js';
import type { Database, FileRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

/** A file record with its JSON columns decoded (the reference's FileModel). */
export interface FileRecord {
  id: string;
  user_id: string;
  hash: string | null;
  filename: string;
  path: string | null;
  data: Json | null;
  meta: Json | null;
  created_at: number;
  updated_at: number;
}

export type FilePatch = Partial<Pick<FileRecord, 'hash' | 'data' | 'meta' | 'filename'>>;

const asObject = (value: unknown): Json | null => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null);

function toRecord(row: FileRow): FileRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    hash: row.hash,
    filename: row.filename,
    path: row.path,
    data: asObject(fromJson<unknown>(row.data, null)),
    meta: asObject(fromJson<unknown>(row.meta, null)),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** The `file` table's queries. */
export class FileStore {
  constructor(private readonly db: Db) {}

  async byId(id: string): Promise<FileRecord | null> {
    const row = await this.db.selectFrom('file').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /** Newest change first, as the reference lists them. */
  async byIds(ids: string[]): Promise<FileRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('file').selectAll().where('id', 'in', ids).orderBy('updated_at', 'desc').execute();
    return rows.map(toRecord);
  }

  async byPath(path: string): Promise<FileRecord[]> {
    const rows = await this.db.selectFrom('file').selectAll().where('path', '=', path).execute();
    return rows.map(toRecord);
  }

  async insert(file: FileRecord): Promise<void> {
    await this.db
      .insertInto('file')
      .values({ ...file, data: toJson(file.data), meta: toJson(file.meta) })
      .execute();
  }

  async update(id: string, patch: FilePatch, now: number): Promise<void> {
    const values: Record<string, unknown> = { updated_at: now };
    if (patch.hash !== undefined) values.hash = patch.hash;
    if (patch.filename !== undefined) values.filename = patch.filename;
    if (patch.data !== undefined) values.data = toJson(patch.data);
    if (patch.meta !== undefined) values.meta = toJson(patch.meta);
    await this.db.updateTable('file').set(values).where('id', '=', id).execute();
  }

  /** A page of the user's files (all files for `null`), newest change first, and how many there are. */
  async list(userId: string | null, skip: number, limit: number): Promise<{ items: FileRecord[]; total: number }> {
    let query = this.db.selectFrom('file');
    if (userId) query = query.where('user_id', '=', userId);
    const counted = await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
    const rows = await query.selectAll().orderBy('updated_at', 'desc').orderBy('id', 'desc').offset(skip).limit(limit).execute();
    return { items: rows.map(toRecord), total: Number(counted?.n ?? 0) };
  }

  /** Files whose name matches a LIKE pattern (escape `\`), case-insensitively, newest first. */
  async search(userId: string | null, pattern: string | null, skip: number, limit: number): Promise<FileRecord[]> {
    let query = this.db.selectFrom('file').selectAll();
    if (userId) query = query.where('user_id', '=', userId);
    if (pattern !== null) query = query.where(sql<boolean>`lower(filename) like lower(${pattern}) escape '\\'`);
    const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').offset(skip).limit(limit).execute();
    return rows.map(toRecord);
  }

  async count(userId: string | null): Promise<number> {
    let query = this.db.selectFrom('file');
    if (userId) query = query.where('user_id', '=', userId);
    const row = await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('file').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Every record; returns how many there were. */
  /** Deletes every file; returns their ids. */
  async deleteAll(): Promise<string[]> {
    const rows = await this.db.deleteFrom('file').returning('id').execute();
    return rows.map((row) => row.id);
  }

  async addJob(fileId: string, now: number): Promise<void> {
    await this.db
      .insertInto('file_job')
      .values({ file_id: fileId, status: 'pending', created_at: now })
      .onConflict((oc) => oc.column('file_id').doUpdateSet({ status: 'pending', lease_until: 0 }))
      .execute();
  }

  /**
   * Claims the oldest job that is pending or whose lease ran out, for this
   * caller only: the UPDATE re-checks the condition on the row it changes, so
   * of two instances racing for one job, one gets it and the other none.
   */
  async claimJob(now: number, leaseUntil: number): Promise<{ file_id: string; attempts: number } | null> {
    const claimable = (eb: ExpressionBuilder<Database, 'file_job'>) => eb.or([eb('status', '=', 'pending'), eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)])]);
    const next = await this.db.selectFrom('file_job').select('file_id').where(claimable).orderBy('created_at').orderBy('file_id').limit(1).executeTakeFirst();
    if (!next) return null;
    const claimed = await this.db
      .updateTable('file_job')
      .set((eb) => ({ status: 'running', lease_until: leaseUntil, attempts: eb('attempts', '+', 1) }))
      .where('file_id', '=', next.file_id)
      .where(claimable)
      .returning(['file_id', 'attempts'])
      .executeTakeFirst();
    return claimed ? { file_id: claimed.file_id, attempts: Number(claimed.attempts) } : null;
  }

  /** Extends the lease of a job this instance holds. */
  async renewJob(fileId: string, leaseUntil: number): Promise<void> {
    await this.db.updateTable('file_job').set({ lease_until: leaseUntil }).where('file_id', '=', fileId).where('status', '=', 'running').execute();
  }

  /** Jobs by status (for the metrics' processing queue). */
  async jobCounts(): Promise<{ pending: number; running: number }> {
    const rows = await this.db.selectFrom('file_job').select(['status', (eb) => eb.fn.countAll().as('n')]).groupBy('status').execute();
    const count = (status: string) => Number(rows.find((row) => row.status === status)?.n ?? 0);
    return { pending: count('pending'), running: count('running') };
  }

  async finishJob(fileId: string): Promise<void> {
    await this.db.deleteFrom('file_job').where('file_id', '=', fileId).execute();
  }
}
