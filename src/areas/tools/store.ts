import { randomUUID } from 'node:crypto';
import { type Expression, type SqlBool } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toJson } from '../../core/db/json.js';
import type { ToolRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

/** ToolMeta as stored: exactly these three keys. */
export interface ToolMeta {
  description: string | null;
  manifest: Json | null;
  has_user_valves: boolean;
}

/** A tool with its JSON columns decoded; `valves` is the stored value (a dict, a Fernet token string, or null). */
export interface ToolRecord {
  id: string;
  user_id: string;
  name: string;
  content: string;
  specs: Json[];
  meta: ToolMeta;
  valves: unknown;
  updated_at: number;
  created_at: number;
}

/** A listing row: the id and the version, which says whether what was rendered of the tool is still current. */
export interface ToolHead {
  id: string;
  version: string;
}

/** What listings show of a tool, specs and meta as their stored JSON text. */
export interface ToolListed {
  id: string;
  version: string;
  user_id: string;
  name: string;
  specs: string;
  meta: string;
  updated_at: number;
  created_at: number;
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

export function toToolMeta(value: unknown): ToolMeta {
  const meta = isObject(value) ? value : {};
  return {
    description: typeof meta.description === 'string' ? meta.description : null,
    manifest: meta.manifest === null ? null : isObject(meta.manifest) ? meta.manifest : {},
    has_user_valves: meta.has_user_valves === true,
  };
}

function toRecord(row: ToolRow): ToolRecord {
  const specs = fromJson<unknown>(row.specs, []);
  return {
    id: row.id,
    user_id: row.user_id,
    name: row.name,
    content: row.content,
    specs: Array.isArray(specs) ? specs : [],
    meta: toToolMeta(fromJson(row.meta, {})),
    valves: fromJson<unknown>(row.valves, null),
    updated_at: Number(row.updated_at),
    created_at: Number(row.created_at),
  };
}

export type ToolWrite = Pick<ToolRecord, 'name' | 'content' | 'specs' | 'meta'>;

export class ToolStore {
  constructor(private readonly db: Db) {}

  async byId(id: string): Promise<ToolRecord | null> {
    const row = await this.db.selectFrom('tool').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async exists(id: string): Promise<boolean> {
    return (await this.db.selectFrom('tool').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  }

  /** Tools the access condition lets through (null: all), newest change first. */
  async heads(access: Expression<SqlBool> | null): Promise<ToolHead[]> {
    let query = this.db.selectFrom('tool').select(['id', 'version']);
    if (access) query = query.where(access);
    return query.orderBy('updated_at', 'desc').orderBy('id').execute();
  }

  async listed(ids: string[]): Promise<ToolListed[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('tool')
      .select(['id', 'version', 'user_id', 'name', 'specs', 'meta', 'updated_at', 'created_at'])
      .where('id', 'in', ids)
      .execute();
    return rows.map((row) => ({ ...row, updated_at: Number(row.updated_at), created_at: Number(row.created_at) }));
  }

  /** Whole records the access condition lets through (null: all), newest change first (export). */
  async records(access: Expression<SqlBool> | null): Promise<ToolRecord[]> {
    let query = this.db.selectFrom('tool').selectAll();
    if (access) query = query.where(access);
    const rows = await query.orderBy('updated_at', 'desc').orderBy('id').execute();
    return rows.map(toRecord);
  }

  /** `[{id, name, user_id}]` of every tool (the admin access previews). */
  async names(): Promise<{ id: string; name: string; user_id: string }[]> {
    return this.db.selectFrom('tool').select(['id', 'name', 'user_id']).orderBy('name').execute();
  }

  async insert(tool: Omit<ToolRecord, 'valves'>): Promise<void> {
    await this.db
      .insertInto('tool')
      .values({
        id: tool.id,
        user_id: tool.user_id,
        name: tool.name,
        content: tool.content,
        specs: JSON.stringify(tool.specs),
        meta: JSON.stringify(tool.meta),
        valves: null,
        version: randomUUID(),
        updated_at: tool.updated_at,
        created_at: tool.created_at,
      })
      .execute();
  }

  /** False when there is no such tool. */
  async update(id: string, fields: ToolWrite, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('tool')
      .set({
        name: fields.name,
        content: fields.content,
        specs: JSON.stringify(fields.specs),
        meta: JSON.stringify(fields.meta),
        version: randomUUID(),
        updated_at: now,
      })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** False when there is no such tool. */
  async setValves(id: string, valves: unknown, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('tool')
      .set({ valves: toJson(valves), version: randomUUID(), updated_at: now })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('tool').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
