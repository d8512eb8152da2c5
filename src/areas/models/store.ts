import { type Expression, type SqlBool, sql } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import { likeLiteral } from '../../core/db/like.js';
import type { ModelRow } from '../../core/db/tables.js';
import type { WorkspaceSearch } from '../../core/db/workspace-search.js';

/** A workspace model with its JSON columns decoded (the reference's ModelModel without grants). */
export interface ModelRecord {
  id: string;
  user_id: string;
  base_model_id: string | null;
  name: string;
  params: Record<string, unknown>;
  meta: Record<string, unknown>;
  is_active: boolean;
  updated_at: number;
  created_at: number;
}

export type ModelWrite = Pick<ModelRecord, 'base_model_id' | 'name' | 'params' | 'meta' | 'is_active'>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

export function toModelRecord(row: ModelRow): ModelRecord {
  const params = fromJson<unknown>(row.params, {});
  const meta = fromJson<unknown>(row.meta, {});
  return {
    id: row.id,
    user_id: row.user_id,
    base_model_id: row.base_model_id,
    name: row.name,
    params: isObject(params) ? params : {},
    meta: isObject(meta) ? meta : {},
    is_active: toBool(row.is_active),
    updated_at: Number(row.updated_at),
    created_at: Number(row.created_at),
  };
}

export class ModelStore {
  constructor(private readonly db: Db) {}

  async byId(id: string): Promise<ModelRecord | null> {
    const row = await this.db.selectFrom('model').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toModelRecord(row) : null;
  }

  async byIds(ids: string[]): Promise<ModelRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('model').selectAll().where('id', 'in', ids).execute();
    return rows.map(toModelRecord);
  }

  /** Every model; `presets` true: only those built on a base model, false: only overrides of provider models. */
  async all(presets?: boolean): Promise<ModelRecord[]> {
    let query = this.db.selectFrom('model').selectAll();
    if (presets === true) query = query.where('base_model_id', 'is not', null);
    if (presets === false) query = query.where('base_model_id', 'is', null);
    const rows = await query.orderBy('created_at', 'desc').orderBy('id').execute();
    return rows.map(toModelRecord);
  }

  /** Presets the access condition lets through. */
  async presetsWhere(access: Expression<SqlBool>): Promise<ModelRecord[]> {
    const rows = await this.db
      .selectFrom('model')
      .selectAll()
      .where('base_model_id', 'is not', null)
      .where(access)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
    return rows.map(toModelRecord);
  }

  /** Metas of presets (or of base overrides) the access condition lets through, for tag lists. */
  async metas(baseModels: boolean, access: Expression<SqlBool> | null): Promise<Record<string, unknown>[]> {
    let query = this.db.selectFrom('model').select('meta').where('base_model_id', baseModels ? 'is' : 'is not', null);
    if (access) query = query.where(access);
    const rows = await query.execute();
    return rows.map((r) => fromJson<unknown>(r.meta, {})).filter(isObject);
  }

  /** One page of presets for the workspace list, and how many match in all. */
  async search(search: WorkspaceSearch): Promise<{ items: ModelRecord[]; total: number }> {
    let query = this.db.selectFrom('model').leftJoin('user', 'user.id', 'model.user_id').where('model.base_model_id', 'is not', null).where(search.access);
    if (search.query) {
      const pattern = `%${search.query.toLowerCase()}%`;
      query = query.where((eb) =>
        eb.or([
          eb(sql`lower(model.name)`, 'like', pattern),
          eb(sql`lower(model.base_model_id)`, 'like', pattern),
          eb(sql`lower("user".name)`, 'like', pattern),
          eb(sql`lower("user".email)`, 'like', pattern),
          eb(sql`lower("user".username)`, 'like', pattern),
        ]),
      );
    }
    if (search.viewOption === 'created') query = query.where('model.user_id', '=', search.userId);
    else if (search.viewOption === 'shared') query = query.where('model.user_id', '!=', search.userId);
    if (search.tag) query = query.where(sql`lower(model.meta)`, 'like', `%${JSON.stringify(search.tag.toLowerCase())}%`);

    const counted = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    const asc = search.direction === 'asc';
    const column = search.orderBy === 'name' ? 'model.name' : search.orderBy === 'updated_at' ? 'model.updated_at' : 'model.created_at';
    const direction = search.orderBy && ['name', 'created_at', 'updated_at'].includes(search.orderBy) ? (asc ? 'asc' : 'desc') : 'desc';
    const rows = await query
      .selectAll('model')
      .orderBy(column, direction)
      .orderBy('model.id')
      .offset(search.offset)
      .limit(search.limit)
      .execute();
    return { items: rows.map(toModelRecord), total: Number(counted?.n ?? 0) };
  }

  /** Models whose meta text holds `text` (a JSON string, quoted): a quick filter before the meta is read. */
  async metaMentioning(text: string): Promise<ModelRecord[]> {
    const needle = likeLiteral(JSON.stringify(text));
    const rows = await this.db
      .selectFrom('model')
      .selectAll()
      .where(sql<boolean>`meta like ${`%${needle}%`} escape '\\'`)
      .execute();
    return rows.map(toModelRecord);
  }

  /** When a model's meta last changed, without the rest (profile images). */
  async metaOf(id: string): Promise<{ meta: Record<string, unknown>; updated_at: number } | null> {
    const row = await this.db.selectFrom('model').select(['meta', 'updated_at']).where('id', '=', id).executeTakeFirst();
    if (!row) return null;
    const meta = fromJson<unknown>(row.meta, {});
    return { meta: isObject(meta) ? meta : {}, updated_at: Number(row.updated_at) };
  }

  async insert(model: ModelRecord): Promise<void> {
    await this.db
      .insertInto('model')
      .values({ ...model, params: toJson(model.params) ?? '{}', meta: toJson(model.meta) ?? '{}' })
      .execute();
  }

  async update(id: string, fields: Partial<ModelWrite> & { user_id?: string }, now: number): Promise<void> {
    const values: Record<string, unknown> = { ...fields, updated_at: now };
    if (fields.params !== undefined) values.params = toJson(fields.params) ?? '{}';
    if (fields.meta !== undefined) values.meta = toJson(fields.meta) ?? '{}';
    await this.db.updateTable('model').set(values).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('model').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async ids(): Promise<string[]> {
    const rows = await this.db.selectFrom('model').select('id').execute();
    return rows.map((r) => r.id);
  }

  async deleteAll(): Promise<void> {
    await this.db.deleteFrom('model').execute();
  }

  /** Active models for the admin access previews. */
  async activeNames(): Promise<{ id: string; name: string; user_id: string }[]> {
    return this.db.selectFrom('model').select(['id', 'name', 'user_id']).where('is_active', '=', true).orderBy('name').execute();
  }
}
