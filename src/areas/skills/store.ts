import { type Expression, type SqlBool, sql } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import { containsPattern } from '../../core/db/like.js';
import type { SkillRow } from '../../core/db/tables.js';
import type { WorkspaceSearch } from '../../core/db/workspace-search.js';

/** SkillMeta: only `tags` is kept, as the reference's model keeps it. */
export interface SkillMeta {
  tags: string[];
}

/** A skill with its JSON column decoded (the reference's SkillModel without grants). */
export interface SkillRecord {
  id: string;
  user_id: string;
  name: string;
  description: string | null;
  content: string;
  meta: SkillMeta;
  is_active: boolean;
  updated_at: number;
  created_at: number;
}

export type SkillWrite = Pick<SkillRecord, 'name' | 'description' | 'content' | 'meta' | 'is_active'>;

export function skillMeta(value: unknown): SkillMeta {
  const tags = value !== null && typeof value === 'object' && Array.isArray((value as { tags?: unknown }).tags) ? (value as { tags: unknown[] }).tags : [];
  return { tags: tags.filter((tag): tag is string => typeof tag === 'string') };
}

function toRecord(row: SkillRow): SkillRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    name: row.name,
    description: row.description,
    content: row.content,
    meta: skillMeta(fromJson<unknown>(row.meta, {})),
    is_active: toBool(row.is_active),
    updated_at: Number(row.updated_at),
    created_at: Number(row.created_at),
  };
}

export class SkillStore {
  constructor(private readonly db: Db) {}

  async byId(id: string): Promise<SkillRecord | null> {
    const row = await this.db.selectFrom('skill').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async byIds(ids: string[]): Promise<SkillRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('skill').selectAll().where('id', 'in', ids).execute();
    return rows.map(toRecord);
  }

  /** Every skill the access condition lets through, newest change first. */
  async all(access: Expression<SqlBool> | null): Promise<SkillRecord[]> {
    let query = this.db.selectFrom('skill').selectAll();
    if (access) query = query.where(access);
    const rows = await query.orderBy('updated_at', 'desc').orderBy('id').execute();
    return rows.map(toRecord);
  }

  /** One page of the workspace list, and how many match in all (search_skills). */
  async search(search: WorkspaceSearch): Promise<{ items: SkillRecord[]; total: number }> {
    let query = this.db.selectFrom('skill').leftJoin('user', 'user.id', 'skill.user_id').where(search.access);
    if (search.query) {
      const pattern = containsPattern(search.query);
      query = query.where((eb) =>
        eb.or(
          ['skill.name', 'skill.description', 'skill.id', 'user.name', 'user.email'].map(
            (column) => sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`,
          ),
        ),
      );
    }
    if (search.viewOption === 'created') query = query.where('skill.user_id', '=', search.userId);
    else if (search.viewOption === 'shared') query = query.where('skill.user_id', '!=', search.userId);
    const counted = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    const rows = await query.selectAll('skill').orderBy('skill.updated_at', 'desc').orderBy('skill.id').offset(search.offset).limit(search.limit).execute();
    return { items: rows.map(toRecord), total: Number(counted?.n ?? 0) };
  }

  async insert(skill: SkillRecord): Promise<void> {
    await this.db
      .insertInto('skill')
      .values({ ...skill, meta: toJson(skill.meta) })
      .execute();
  }

  /** False when there is no such skill. */
  async update(id: string, fields: Partial<SkillWrite>, now: number): Promise<boolean> {
    const { meta, ...plain } = fields;
    const result = await this.db
      .updateTable('skill')
      .set({ ...plain, ...(meta !== undefined ? { meta: toJson(meta) } : {}), updated_at: now })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('skill').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
