import { randomUUID } from 'node:crypto';
import { type Expression, type SqlBool, sql } from 'kysely';
import { IDS_PER_QUERY, chunks } from '../../core/db/batches.js';
import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import { containsPattern, likeLiteral } from '../../core/db/like.js';
import type { PromptHistoryRow, PromptRow } from '../../core/db/tables.js';
import type { WorkspaceSearch } from '../../core/db/workspace-search.js';

type Json = Record<string, unknown>;

/** A prompt with its JSON columns decoded (the reference's PromptModel without grants). */
export interface PromptRecord {
  id: string;
  command: string;
  user_id: string;
  name: string;
  content: string;
  data: Json;
  meta: Json;
  tags: (string | null)[];
  is_active: boolean;
  version_id: string | null;
  created_at: number;
  updated_at: number;
}

/** The fields a write sets (the rest stays). */
export type PromptWrite = Partial<Pick<PromptRecord, 'command' | 'name' | 'content' | 'data' | 'meta' | 'tags' | 'is_active' | 'version_id'>>;

/** A version of a prompt (PromptHistoryModel). */
export interface PromptVersion {
  id: string;
  prompt_id: string;
  parent_id: string | null;
  snapshot: Json;
  user_id: string;
  commit_message: string | null;
  created_at: number;
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

function toRecord(row: PromptRow): PromptRecord {
  const data = fromJson<unknown>(row.data, {});
  const meta = fromJson<unknown>(row.meta, {});
  const tags = fromJson<unknown>(row.tags, []);
  return {
    id: row.id,
    command: row.command,
    user_id: row.user_id,
    name: row.name,
    content: row.content,
    data: isObject(data) ? data : {},
    meta: isObject(meta) ? meta : {},
    tags: Array.isArray(tags) ? tags.filter((t): t is string | null => t === null || typeof t === 'string') : [],
    is_active: toBool(row.is_active),
    version_id: row.version_id,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function toVersion(row: PromptHistoryRow): PromptVersion {
  const snapshot = fromJson<unknown>(row.snapshot, {});
  return {
    id: row.id,
    prompt_id: row.prompt_id,
    parent_id: row.parent_id,
    snapshot: isObject(snapshot) ? snapshot : {},
    user_id: row.user_id,
    commit_message: row.commit_message,
    created_at: Number(row.created_at),
  };
}

/** A listing row: the id, and the row version that says whether what was rendered of the prompt is current. */
export interface PromptHead {
  id: string;
  version: string;
}

export class PromptStore {
  constructor(private readonly db: Db) {}

  async byId(id: string): Promise<PromptRecord | null> {
    const row = await this.db.selectFrom('prompt').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async idOfCommand(command: string): Promise<string | null> {
    const row = await this.db.selectFrom('prompt').select('id').where('command', '=', command).executeTakeFirst();
    return row?.id ?? null;
  }

  /** Ids and row versions of every active prompt, newest change first (the `/` picker). */
  async activeHeads(): Promise<PromptHead[]> {
    return this.db.selectFrom('prompt').select(['id', 'version']).where('is_active', '=', true).orderBy('updated_at', 'desc').orderBy('id').execute();
  }

  /** Rows as stored, by id, in batches that stay under both dialects' bound-parameter limits. */
  async rows(ids: string[]): Promise<PromptRow[]> {
    const rows: PromptRow[] = [];
    for (const part of chunks(ids, IDS_PER_QUERY)) rows.push(...(await this.db.selectFrom('prompt').selectAll().where('id', 'in', part).execute()));
    return rows;
  }

  /** The tags of active prompts the access condition lets through (null: all), as stored. */
  async activeTags(access: Expression<SqlBool> | null): Promise<unknown[]> {
    let query = this.db.selectFrom('prompt').select('tags').where('is_active', '=', true);
    if (access) query = query.where(access);
    const rows = await query.execute();
    return rows.flatMap((row) => {
      const tags = fromJson<unknown>(row.tags, []);
      return Array.isArray(tags) ? tags : [];
    });
  }

  /** One page of the workspace list (active or not), and how many match in all. */
  async search(search: WorkspaceSearch): Promise<{ items: PromptRecord[]; total: number }> {
    let query = this.db.selectFrom('prompt').leftJoin('user', 'user.id', 'prompt.user_id').where(search.access);
    if (search.query) {
      const pattern = containsPattern(search.query);
      query = query.where((eb) =>
        eb.or(
          ['prompt.name', 'prompt.command', 'prompt.content', 'user.name', 'user.email'].map(
            (column) => sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`,
          ),
        ),
      );
    }
    if (search.viewOption === 'created') query = query.where('prompt.user_id', '=', search.userId);
    else if (search.viewOption === 'shared') query = query.where('prompt.user_id', '!=', search.userId);
    // Tags are a JSON list of strings: match one element exactly, ignoring case.
    if (search.tag) query = query.where(sql<SqlBool>`lower(prompt.tags) like ${`%${likeLiteral(JSON.stringify(search.tag.toLowerCase()))}%`} escape '\\'`);

    const counted = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    const column = search.orderBy === 'name' ? 'prompt.name' : search.orderBy === 'created_at' ? 'prompt.created_at' : 'prompt.updated_at';
    const direction = search.orderBy && ['name', 'created_at', 'updated_at'].includes(search.orderBy) && search.direction === 'asc' ? 'asc' : 'desc';
    const rows = await query.selectAll('prompt').orderBy(column, direction).orderBy('prompt.id').offset(search.offset).limit(search.limit).execute();
    return { items: rows.map(toRecord), total: Number(counted?.n ?? 0) };
  }

  async insert(prompt: PromptRecord): Promise<void> {
    await this.db
      .insertInto('prompt')
      .values({
        id: prompt.id,
        command: prompt.command,
        user_id: prompt.user_id,
        name: prompt.name,
        content: prompt.content,
        data: toJson(prompt.data),
        meta: toJson(prompt.meta),
        tags: toJson(prompt.tags),
        is_active: prompt.is_active,
        version_id: prompt.version_id,
        version: randomUUID(),
        created_at: prompt.created_at,
        updated_at: prompt.updated_at,
      })
      .execute();
  }

  /** False when there is no such prompt. */
  async update(id: string, fields: PromptWrite, now: number): Promise<boolean> {
    const { data, meta, tags, ...plain } = fields;
    const result = await this.db
      .updateTable('prompt')
      .set({
        ...plain,
        ...(data !== undefined ? { data: toJson(data) } : {}),
        ...(meta !== undefined ? { meta: toJson(meta) } : {}),
        ...(tags !== undefined ? { tags: toJson(tags) } : {}),
        version: randomUUID(),
        updated_at: now,
      })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** The prompt and its versions (grants are the caller's). */
  async delete(id: string): Promise<boolean> {
    await this.db.deleteFrom('prompt_history').where('prompt_id', '=', id).execute();
    const result = await this.db.deleteFrom('prompt').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  // ---- versions ----------------------------------------------------------------

  /** Records a version after the prompt's latest one, whose id becomes its parent. */
  async addVersion(version: Omit<PromptVersion, 'parent_id'>): Promise<PromptVersion> {
    const latest = await this.db
      .selectFrom('prompt_history')
      .select(['id', 'seq'])
      .where('prompt_id', '=', version.prompt_id)
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst();
    const stored = { ...version, parent_id: latest?.id ?? null };
    await this.db
      .insertInto('prompt_history')
      .values({ ...stored, seq: (latest?.seq ?? 0) + 1, snapshot: JSON.stringify(version.snapshot) })
      .execute();
    return stored;
  }

  /** The stored versions among `ids`. */
  async versionsByIds(ids: string[]): Promise<PromptVersion[]> {
    const rows: PromptHistoryRow[] = [];
    for (const part of chunks(ids, IDS_PER_QUERY)) rows.push(...(await this.db.selectFrom('prompt_history').selectAll().where('id', 'in', part).execute()));
    return rows.map(toVersion);
  }

  /** Writes a version as it was elsewhere (an import), replacing one of that id; `orderVersions` places it. */
  async restoreVersion(version: PromptVersion): Promise<void> {
    const values = { ...version, snapshot: JSON.stringify(version.snapshot) };
    const replaced = await this.db.updateTable('prompt_history').set(values).where('id', '=', version.id).executeTakeFirst();
    if (Number(replaced.numUpdatedRows) > 0) return;
    const latest = await this.db.selectFrom('prompt_history').select('seq').where('prompt_id', '=', version.prompt_id).orderBy('seq', 'desc').limit(1).executeTakeFirst();
    await this.db.insertInto('prompt_history').values({ ...values, seq: (latest?.seq ?? 0) + 1 }).execute();
  }

  /** Numbers the prompt's versions in the order of their times (the reference lists them by time). */
  async orderVersions(promptId: string): Promise<void> {
    const ordered = await this.db.selectFrom('prompt_history').select(['id', 'seq']).where('prompt_id', '=', promptId).orderBy('created_at').orderBy('seq').execute();
    // Moved out of the way first: (prompt_id, seq) is unique at every step.
    const offset = ordered.reduce((max, row) => Math.max(max, row.seq), 0) + 1;
    for (const [index, row] of ordered.entries()) await this.db.updateTable('prompt_history').set({ seq: offset + index + 1 }).where('id', '=', row.id).execute();
    for (const [index, row] of ordered.entries()) await this.db.updateTable('prompt_history').set({ seq: index + 1 }).where('id', '=', row.id).execute();
  }

  /** A page of a prompt's versions, newest first. */
  async versions(promptId: string, offset: number, limit: number): Promise<PromptVersion[]> {
    const rows = await this.db
      .selectFrom('prompt_history')
      .selectAll()
      .where('prompt_id', '=', promptId)
      .orderBy('seq', 'desc')
      .offset(offset)
      .limit(limit)
      .execute();
    return rows.map(toVersion);
  }

  /** A version of this prompt; null when the id is unknown or belongs to another prompt. */
  async version(promptId: string, id: string): Promise<PromptVersion | null> {
    const row = await this.db.selectFrom('prompt_history').selectAll().where('id', '=', id).where('prompt_id', '=', promptId).executeTakeFirst();
    return row ? toVersion(row) : null;
  }

  /** Removes a version; its children take its parent. False when the prompt has no such version. */
  async deleteVersion(promptId: string, id: string): Promise<boolean> {
    const version = await this.version(promptId, id);
    if (!version) return false;
    await this.db.updateTable('prompt_history').set({ parent_id: version.parent_id }).where('prompt_id', '=', promptId).where('parent_id', '=', id).execute();
    await this.db.deleteFrom('prompt_history').where('id', '=', id).execute();
    return true;
  }
}
