import type { Db } from '../../core/db/database.js';
import { fromJson, toJson } from '../../core/db/json.js';
import type { FileRow } from '../../core/db/tables.js';

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
}
