import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import type { FunctionRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

export type FunctionType = 'pipe' | 'filter' | 'action' | 'event';

/** A function with its JSON columns decoded; `valves` is the stored value (a dict, a Fernet token string, or null). */
export interface FunctionRecord {
  id: string;
  user_id: string;
  name: string;
  type: FunctionType;
  content: string;
  /** FunctionMeta: `description`, `manifest`, and extra keys (`toggle`, `error`, ...). */
  meta: Json;
  valves: unknown;
  /** What the source declares, read without loading it (listings, the event bus); null when it did not load. */
  traits: FunctionTraits | null;
  is_active: boolean;
  is_global: boolean;
  updated_at: number;
  created_at: number;
}

export interface FunctionTraits {
  /** An action's buttons (`actions`), as declared. */
  actions: Json[] | null;
  /** An event function's `events`. */
  events: string[] | null;
  icon: string | null;
  has_user_valves: boolean;
  /** A filter handling the request's files itself. */
  file_handler?: boolean;
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

function toRecord(row: FunctionRow): FunctionRecord {
  const meta = fromJson<unknown>(row.meta, {});
  return {
    id: row.id,
    user_id: row.user_id,
    name: row.name,
    type: row.type as FunctionType,
    content: row.content,
    meta: isObject(meta) ? meta : {},
    valves: fromJson<unknown>(row.valves, null),
    traits: fromJson<FunctionTraits | null>(row.traits, null),
    is_active: toBool(row.is_active),
    is_global: toBool(row.is_global),
    updated_at: Number(row.updated_at),
    created_at: Number(row.created_at),
  };
}

export type FunctionWrite = Partial<Pick<FunctionRecord, 'name' | 'type' | 'content' | 'meta' | 'traits' | 'is_active' | 'is_global'>>;

export class FunctionStore {
  constructor(private readonly db: Db) {}

  async byId(id: string): Promise<FunctionRecord | null> {
    const row = await this.db.selectFrom('function').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /** Every function, newest change first; of one type (and only active ones) when asked. */
  async all(filter: { type?: FunctionType; activeOnly?: boolean } = {}): Promise<FunctionRecord[]> {
    let query = this.db.selectFrom('function').selectAll();
    if (filter.type) query = query.where('type', '=', filter.type);
    if (filter.activeOnly) query = query.where('is_active', '=', true);
    const rows = await query.orderBy('updated_at', 'desc').orderBy('id').execute();
    return rows.map(toRecord);
  }

  async insert(fn: FunctionRecord): Promise<void> {
    await this.db
      .insertInto('function')
      .values({
        id: fn.id,
        user_id: fn.user_id,
        name: fn.name,
        type: fn.type,
        content: fn.content,
        meta: toJson(fn.meta) ?? '{}',
        valves: toJson(fn.valves),
        traits: toJson(fn.traits),
        is_active: fn.is_active,
        is_global: fn.is_global,
        updated_at: fn.updated_at,
        created_at: fn.created_at,
      })
      .execute();
  }

  async update(id: string, fields: FunctionWrite, now: number): Promise<boolean> {
    const { meta, traits, ...rest } = fields;
    const result = await this.db
      .updateTable('function')
      .set({ ...rest, ...(meta ? { meta: toJson(meta) ?? '{}' } : {}), ...(traits !== undefined ? { traits: toJson(traits) } : {}), updated_at: now })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async setValves(id: string, valves: unknown, now: number): Promise<boolean> {
    const result = await this.db.updateTable('function').set({ valves: toJson(valves), updated_at: now }).where('id', '=', id).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('function').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
