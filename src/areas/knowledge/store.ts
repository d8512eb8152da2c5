import { type Expression, type SqlBool, sql } from 'kysely';
import { IDS_PER_QUERY, chunks } from '../../core/db/batches.js';
import { type Db, isUniqueViolation } from '../../core/db/database.js';
import { fromJson, toJson } from '../../core/db/json.js';
import { containsPattern, likeLiteral } from '../../core/db/like.js';
import type { KnowledgeDirectoryRow, KnowledgeRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

/** A knowledge base as stored (KnowledgeModel without grants). */
export interface KnowledgeRecord {
  id: string;
  user_id: string;
  name: string;
  description: string;
  meta: Json | null;
  created_at: number;
  updated_at: number;
}

/** KnowledgeDirectoryModel. */
export interface DirectoryRecord {
  id: string;
  knowledge_id: string;
  parent_id: string | null;
  name: string;
  user_id: string;
  created_at: number;
  updated_at: number;
}

/** A file of a knowledge base as its listings show it (FileModelResponse without `data`), with who added it. */
export interface KnowledgeFileEntry {
  id: string;
  user_id: string;
  hash: string | null;
  filename: string;
  meta: Json | null;
  created_at: number;
  updated_at: number;
  added_by: string;
  directory_id: string | null;
}

export interface KnowledgeSearch {
  query?: string;
  viewOption?: string;
  source?: 'local' | 'external';
  access: Expression<SqlBool>;
  userId: string;
  offset: number;
  limit: number;
}

export interface FileSearch {
  query?: string;
  includeContent: boolean;
  viewOption?: string;
  orderBy?: string;
  direction?: string;
  /** Absent: every folder; null: the top level; else that folder. */
  directoryId?: string | null;
  userId: string;
  offset: number;
  limit: number;
}

/** How much of a file's extracted text a content search reads (RAG_FILE_CONTENT_SEARCH_MAX_CHARS). */
const CONTENT_SEARCH_MAX_CHARS = 100_000;

const asObject = (value: unknown): Json | null => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null);

/** A file's name (or, with `includeContent`, its extracted text) contains the query, case-insensitively. */
function fileMatch(text: string, includeContent: boolean): Expression<SqlBool> {
  const pattern = containsPattern(text);
  const byName = sql<SqlBool>`lower(file.filename) like ${pattern} escape '\\'`;
  // The extracted text sits in the data JSON; its first characters are searched, as the reference caps it.
  return includeContent ? sql<SqlBool>`(${byName} or lower(substr(coalesce(file.data, ''), 1, ${CONTENT_SEARCH_MAX_CHARS})) like ${pattern} escape '\\')` : byName;
}

function toRecord(row: KnowledgeRow): KnowledgeRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    name: row.name,
    description: row.description,
    meta: asObject(fromJson<unknown>(row.meta, null)),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function toDirectory(row: KnowledgeDirectoryRow): DirectoryRecord {
  return { ...row, created_at: Number(row.created_at), updated_at: Number(row.updated_at) };
}

const FILE_COLUMNS = [
  'file.id',
  'file.user_id',
  'file.hash',
  'file.filename',
  'file.meta',
  'file.created_at',
  'file.updated_at',
  'knowledge_file.user_id as added_by',
  'knowledge_file.directory_id',
] as const;

function toEntry(row: {
  id: string;
  user_id: string;
  hash: string | null;
  filename: string;
  meta: string | null;
  created_at: number;
  updated_at: number;
  added_by: string;
  directory_id: string | null;
}): KnowledgeFileEntry {
  return { ...row, meta: asObject(fromJson<unknown>(row.meta, null)), created_at: Number(row.created_at), updated_at: Number(row.updated_at) };
}

/** The queries of knowledge bases, their folders and their file links. Files themselves are read here only in joins. */
export class KnowledgeStore {
  constructor(private readonly db: Db) {}

  // ---- knowledge bases -------------------------------------------------------

  async insert(record: KnowledgeRecord): Promise<void> {
    await this.db
      .insertInto('knowledge')
      .values({ ...record, meta: toJson(record.meta) })
      .execute();
  }

  async byId(id: string): Promise<KnowledgeRecord | null> {
    const row = await this.db.selectFrom('knowledge').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async byIds(ids: string[]): Promise<KnowledgeRecord[]> {
    const records: KnowledgeRecord[] = [];
    for (const part of chunks([...new Set(ids)], IDS_PER_QUERY)) {
      records.push(...(await this.db.selectFrom('knowledge').selectAll().where('id', 'in', part).execute()).map(toRecord));
    }
    return records;
  }

  /** Every knowledge base, newest change first. */
  async all(): Promise<KnowledgeRecord[]> {
    return (await this.db.selectFrom('knowledge').selectAll().orderBy('updated_at', 'desc').orderBy('id').execute()).map(toRecord);
  }

  /** Sets name, description and meta as given; false when the knowledge base is gone. */
  async update(id: string, fields: Partial<Pick<KnowledgeRecord, 'name' | 'description' | 'meta'>>, now: number): Promise<boolean> {
    const values: Record<string, unknown> = { updated_at: now };
    if (fields.name !== undefined) values.name = fields.name;
    if (fields.description !== undefined) values.description = fields.description;
    if (fields.meta !== undefined) values.meta = toJson(fields.meta);
    const result = await this.db.updateTable('knowledge').set(values).where('id', '=', id).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('knowledge').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** A page of the knowledge bases the access condition lets through, newest change first, and how many there are. */
  async search(search: KnowledgeSearch): Promise<{ items: KnowledgeRecord[]; total: number }> {
    let query = this.db.selectFrom('knowledge').leftJoin('user', 'user.id', 'knowledge.user_id').where(search.access);
    if (search.query) {
      const pattern = containsPattern(search.query);
      query = query.where(
        sql<SqlBool>`(lower(knowledge.name) like ${pattern} escape '\\' or lower(knowledge.description) like ${pattern} escape '\\'
          or lower(coalesce("user".name, '')) like ${pattern} escape '\\' or lower(coalesce("user".email, '')) like ${pattern} escape '\\'
          or lower(coalesce("user".username, '')) like ${pattern} escape '\\')`,
      );
    }
    if (search.viewOption === 'created') query = query.where('knowledge.user_id', '=', search.userId);
    else if (search.viewOption === 'shared') query = query.where('knowledge.user_id', '!=', search.userId);
    // meta is JSON text; the external marker is matched on its serialised form, which JSON.stringify writes without spaces.
    const external = sql<SqlBool>`coalesce(knowledge.meta, '') like '%"source":"external"%'`;
    if (search.source === 'external') query = query.where(external);
    else if (search.source === 'local') query = query.where(sql<SqlBool>`not (${external})`);
    const counted = await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
    const rows = await query
      .selectAll('knowledge')
      .orderBy('knowledge.updated_at', 'desc')
      .orderBy('knowledge.id')
      .offset(search.offset)
      .limit(search.limit)
      .execute();
    return { items: rows.map(toRecord), total: Number(counted?.n ?? 0) };
  }

  /** How many files each knowledge base holds. */
  async fileCounts(ids: string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const part of chunks(ids, IDS_PER_QUERY)) {
      const rows = await this.db
        .selectFrom('knowledge_file')
        .select(['knowledge_id', (eb) => eb.fn.countAll<number | string>().as('n')])
        .where('knowledge_id', 'in', part)
        .groupBy('knowledge_id')
        .execute();
      for (const row of rows) counts.set(row.knowledge_id, Number(row.n));
    }
    return counts;
  }

  /** The knowledge bases holding a file. */
  async holdingFile(fileId: string): Promise<KnowledgeRecord[]> {
    const rows = await this.db
      .selectFrom('knowledge')
      .innerJoin('knowledge_file', 'knowledge_file.knowledge_id', 'knowledge.id')
      .selectAll('knowledge')
      .where('knowledge_file.file_id', '=', fileId)
      .execute();
    return rows.map(toRecord);
  }

  // ---- file links ------------------------------------------------------------

  /** Links a file; false when it is already in the knowledge base. */
  async link(link: { id: string; knowledge_id: string; file_id: string; directory_id: string | null; user_id: string }, now: number): Promise<boolean> {
    try {
      await this.db
        .insertInto('knowledge_file')
        .values({ ...link, created_at: now, updated_at: now })
        .execute();
      return true;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  async hasFile(knowledgeId: string, fileId: string): Promise<boolean> {
    const row = await this.db.selectFrom('knowledge_file').select('id').where('knowledge_id', '=', knowledgeId).where('file_id', '=', fileId).executeTakeFirst();
    return row !== undefined;
  }

  /** The ids among `fileIds` already in the knowledge base. */
  async linkedAmong(knowledgeId: string, fileIds: string[]): Promise<Set<string>> {
    const linked = new Set<string>();
    for (const part of chunks(fileIds, IDS_PER_QUERY)) {
      const rows = await this.db.selectFrom('knowledge_file').select('file_id').where('knowledge_id', '=', knowledgeId).where('file_id', 'in', part).execute();
      for (const row of rows) linked.add(row.file_id);
    }
    return linked;
  }

  async unlink(knowledgeId: string, fileId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('knowledge_file').where('knowledge_id', '=', knowledgeId).where('file_id', '=', fileId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async unlinkAll(knowledgeId: string): Promise<void> {
    await this.db.deleteFrom('knowledge_file').where('knowledge_id', '=', knowledgeId).execute();
  }

  /** Moves a file to a folder (null: the top level); false when the file is not in the knowledge base. */
  async moveFile(knowledgeId: string, fileId: string, directoryId: string | null, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('knowledge_file')
      .set({ directory_id: directoryId, updated_at: now })
      .where('knowledge_id', '=', knowledgeId)
      .where('file_id', '=', fileId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** The ids of the files of a knowledge base. */
  async fileIds(knowledgeId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('knowledge_file').select('file_id').where('knowledge_id', '=', knowledgeId).orderBy('created_at').execute();
    return rows.map((row) => row.file_id);
  }

  /** Every file of a knowledge base with its folder (sync), newest change first. */
  async files(knowledgeId: string): Promise<KnowledgeFileEntry[]> {
    const rows = await this.db
      .selectFrom('knowledge_file')
      .innerJoin('file', 'file.id', 'knowledge_file.file_id')
      .select(FILE_COLUMNS)
      .where('knowledge_file.knowledge_id', '=', knowledgeId)
      .orderBy('file.updated_at', 'desc')
      .orderBy('file.id')
      .execute();
    return rows.map(toEntry);
  }

  /** A page of a knowledge base's files (search_files_by_id), and how many match. */
  async searchFiles(knowledgeId: string, search: FileSearch): Promise<{ items: KnowledgeFileEntry[]; total: number }> {
    let query = this.db.selectFrom('knowledge_file').innerJoin('file', 'file.id', 'knowledge_file.file_id').where('knowledge_file.knowledge_id', '=', knowledgeId);
    if (search.directoryId !== undefined) {
      query = search.directoryId === null ? query.where('knowledge_file.directory_id', 'is', null) : query.where('knowledge_file.directory_id', '=', search.directoryId);
    }
    if (search.query) query = query.where(fileMatch(search.query, search.includeContent));
    if (search.viewOption === 'created') query = query.where('knowledge_file.user_id', '=', search.userId);
    else if (search.viewOption === 'shared') query = query.where('knowledge_file.user_id', '!=', search.userId);
    const counted = await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
    const direction = search.direction === 'asc' ? 'asc' : 'desc';
    const column = search.orderBy === 'name' ? 'file.filename' : search.orderBy === 'created_at' ? 'file.created_at' : 'file.updated_at';
    const rows = await query
      .select(FILE_COLUMNS)
      .orderBy(column, search.orderBy === 'name' || search.orderBy === 'created_at' || search.orderBy === 'updated_at' ? direction : 'desc')
      .orderBy('file.id')
      .offset(search.offset)
      .limit(search.limit)
      .execute();
    return { items: rows.map(toEntry), total: Number(counted?.n ?? 0) };
  }

  /** A page of the files of every knowledge base the access condition lets through (search_knowledge_files), newest change first. */
  async searchFilesAcross(access: Expression<SqlBool>, search: Omit<FileSearch, 'directoryId' | 'viewOption' | 'orderBy' | 'direction'>): Promise<{ items: (KnowledgeFileEntry & { knowledge_id: string })[]; total: number }> {
    let query = this.db
      .selectFrom('knowledge_file')
      .innerJoin('file', 'file.id', 'knowledge_file.file_id')
      .innerJoin('knowledge', 'knowledge.id', 'knowledge_file.knowledge_id')
      .where(access);
    if (search.query) query = query.where(fileMatch(search.query, search.includeContent));
    const counted = await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
    const rows = await query
      .select([...FILE_COLUMNS, 'knowledge_file.knowledge_id'])
      .orderBy('file.updated_at', 'desc')
      .orderBy('file.id')
      .offset(search.offset)
      .limit(search.limit)
      .execute();
    return { items: rows.map((row) => ({ ...toEntry(row), knowledge_id: row.knowledge_id })), total: Number(counted?.n ?? 0) };
  }

  /** Files uploaded for a knowledge base (`meta.data.knowledge_id`) still being extracted and not yet in it. */
  async pendingFiles(knowledgeId: string): Promise<{ id: string; user_id: string; hash: string | null; filename: string; data: string | null; meta: string | null; created_at: number; updated_at: number }[]> {
    const rows = await this.db
      .selectFrom('file')
      .innerJoin('file_job', 'file_job.file_id', 'file.id')
      .select(['file.id', 'file.user_id', 'file.hash', 'file.filename', 'file.data', 'file.meta', 'file.created_at', 'file.updated_at'])
      .where((eb) => eb.not(eb.exists(eb.selectFrom('knowledge_file').select('knowledge_file.id').where('knowledge_file.knowledge_id', '=', knowledgeId).whereRef('knowledge_file.file_id', '=', 'file.id'))))
      .where('file.meta', 'like', `%${likeLiteral(knowledgeId)}%`)
      .orderBy('file.created_at', 'desc')
      .execute();
    return rows.filter((row) => asObject(asObject(fromJson<unknown>(row.meta, null))?.data)?.knowledge_id === knowledgeId);
  }

  // ---- folders ---------------------------------------------------------------

  /** Adds a folder; false when its level already has one of that name. */
  async createDirectory(directory: DirectoryRecord): Promise<boolean> {
    try {
      await this.db.insertInto('knowledge_directory').values(directory).execute();
      return true;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  async directory(id: string): Promise<DirectoryRecord | null> {
    const row = await this.db.selectFrom('knowledge_directory').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toDirectory(row) : null;
  }

  /** Every folder of a knowledge base, by name. */
  async directories(knowledgeId: string): Promise<DirectoryRecord[]> {
    const rows = await this.db.selectFrom('knowledge_directory').selectAll().where('knowledge_id', '=', knowledgeId).orderBy('name').orderBy('id').execute();
    return rows.map(toDirectory);
  }

  /** Sets a folder's name and parent; false on a name taken at the target level. */
  async updateDirectory(id: string, fields: { name: string; parent_id: string | null }, now: number): Promise<boolean> {
    try {
      await this.db.updateTable('knowledge_directory').set({ ...fields, updated_at: now }).where('id', '=', id).execute();
      return true;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  /** Moves the files of the folders to `target` (null: the top level). */
  async moveFilesOut(directoryIds: string[], target: string | null, now: number): Promise<void> {
    for (const part of chunks(directoryIds, IDS_PER_QUERY)) {
      await this.db.updateTable('knowledge_file').set({ directory_id: target, updated_at: now }).where('directory_id', 'in', part).execute();
    }
  }

  /** The files in the folders (to take out of the knowledge base with them). */
  async fileIdsIn(knowledgeId: string, directoryIds: string[]): Promise<string[]> {
    const ids: string[] = [];
    for (const part of chunks(directoryIds, IDS_PER_QUERY)) {
      const rows = await this.db.selectFrom('knowledge_file').select('file_id').where('knowledge_id', '=', knowledgeId).where('directory_id', 'in', part).execute();
      ids.push(...rows.map((row) => row.file_id));
    }
    return ids;
  }

  /** Deletes a folder; its subfolders go with it (cascade). */
  async deleteDirectory(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('knowledge_directory').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async deleteDirectories(knowledgeId: string): Promise<void> {
    await this.db.deleteFrom('knowledge_directory').where('knowledge_id', '=', knowledgeId).execute();
  }
}
