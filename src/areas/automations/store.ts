import { sql } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import type { AutomationRow, AutomationRunRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

export interface AutomationRecord {
  id: string;
  user_id: string;
  name: string;
  data: Json & { prompt: string; model_id: string; rrule: string };
  meta: Json | null;
  folder_id: string | null;
  is_active: boolean;
  last_run_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface AutomationRunRecord {
  id: string;
  automation_id: string;
  chat_id: string | null;
  status: 'success' | 'error';
  error: string | null;
  output: string | null;
  duration_ms: number | null;
  created_at: number;
}

export type AutomationWrite = Pick<AutomationRecord, 'name' | 'data' | 'meta' | 'folder_id' | 'is_active'>;

const optionalNumber = (value: unknown) => (value === null || value === undefined ? null : Number(value));

function toRecord(row: AutomationRow): AutomationRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    name: row.name,
    data: fromJson(row.data, { prompt: '', model_id: '', rrule: '' }),
    meta: fromJson<Json | null>(row.meta, null),
    folder_id: row.folder_id,
    is_active: toBool(row.is_active),
    last_run_at: optionalNumber(row.last_run_at),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function toRun(row: AutomationRunRow): AutomationRunRecord {
  return { ...row, status: row.status === 'success' ? 'success' : 'error', duration_ms: optionalNumber(row.duration_ms), created_at: Number(row.created_at) };
}

export class AutomationStore {
  constructor(private readonly db: Db) {}

  async byId(id: string): Promise<AutomationRecord | null> {
    const row = await this.db.selectFrom('automation').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async countOf(userId: string): Promise<number> {
    const row = await this.db.selectFrom('automation').select((eb) => eb.fn.countAll<number>().as('n')).where('user_id', '=', userId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** A page of the user's automations, newest first: `query` in the name or the data, `status` active or paused. */
  async search(userId: string, filter: { query?: string; status?: string }, skip: number, limit: number): Promise<{ items: AutomationRecord[]; total: number }> {
    let query = this.db.selectFrom('automation').where('user_id', '=', userId);
    if (filter.query) {
      const pattern = `%${filter.query.toLowerCase()}%`;
      query = query.where((eb) => eb.or([eb(eb.fn('lower', ['name']), 'like', pattern), eb(eb.fn('lower', ['data']), 'like', pattern)]));
    }
    if (filter.status === 'active') query = query.where('is_active', '=', true);
    else if (filter.status === 'paused') query = query.where('is_active', '=', false);
    const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const rows = await query.selectAll().orderBy('created_at', 'desc').orderBy('id').offset(skip).limit(limit).execute();
    return { items: rows.map(toRecord), total: Number(total.n) };
  }

  async activeOf(userId: string): Promise<AutomationRecord[]> {
    return (await this.db.selectFrom('automation').selectAll().where('user_id', '=', userId).where('is_active', '=', true).orderBy('created_at', 'desc').execute()).map(toRecord);
  }

  /** The user's runs created in [start, end) (ns), oldest first, at most `limit`, with their automation. */
  async runsInRange(userId: string, start: number, end: number, limit: number): Promise<{ run: AutomationRunRecord; automation: AutomationRecord }[]> {
    const runs = (
      await this.db
        .selectFrom('automation_run')
        .innerJoin('automation', 'automation.id', 'automation_run.automation_id')
        .selectAll('automation_run')
        .where('automation.user_id', '=', userId)
        .where('automation_run.created_at', '>=', start)
        .where('automation_run.created_at', '<', end)
        .orderBy('automation_run.created_at')
        .limit(limit)
        .execute()
    ).map(toRun);
    const ids = [...new Set(runs.map((run) => run.automation_id))];
    const automations = new Map(ids.length > 0 ? (await this.db.selectFrom('automation').selectAll().where('id', 'in', ids).execute()).map((row) => [row.id, toRecord(row)]) : []);
    return runs.flatMap((run) => {
      const automation = automations.get(run.automation_id);
      return automation ? [{ run, automation }] : [];
    });
  }

  async insert(automation: AutomationRecord): Promise<void> {
    await this.db
      .insertInto('automation')
      .values({ ...automation, data: JSON.stringify(automation.data), meta: toJson(automation.meta) })
      .execute();
  }

  async update(id: string, fields: Partial<AutomationWrite> & { last_run_at?: number }, now: number | null): Promise<void> {
    const { data, meta, ...plain } = fields;
    await this.db
      .updateTable('automation')
      .set({ ...plain, ...(data !== undefined ? { data: JSON.stringify(data) } : {}), ...(meta !== undefined ? { meta: toJson(meta) } : {}), ...(now !== null ? { updated_at: now } : {}) })
      .where('id', '=', id)
      .execute();
  }

  async delete(id: string): Promise<boolean> {
    await this.db.deleteFrom('automation_run').where('automation_id', '=', id).execute();
    const result = await this.db.deleteFrom('automation').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async insertRun(run: AutomationRunRecord): Promise<void> {
    await this.db.insertInto('automation_run').values(run).execute();
  }

  async runs(automationId: string, skip: number, limit: number): Promise<AutomationRunRecord[]> {
    return (await this.db.selectFrom('automation_run').selectAll().where('automation_id', '=', automationId).orderBy('created_at', 'desc').orderBy('id').offset(skip).limit(limit).execute()).map(toRun);
  }

  /** The latest run of each automation, in one query. */
  async latestRuns(automationIds: string[]): Promise<Map<string, AutomationRunRecord>> {
    if (automationIds.length === 0) return new Map();
    const latest = this.db
      .selectFrom('automation_run')
      .select(['automation_id', sql<number>`max(created_at)`.as('max_created')])
      .where('automation_id', 'in', automationIds)
      .groupBy('automation_id')
      .as('latest');
    const rows = await this.db
      .selectFrom('automation_run')
      .innerJoin(latest, (join) => join.onRef('latest.automation_id', '=', 'automation_run.automation_id').onRef('latest.max_created', '=', 'automation_run.created_at'))
      .selectAll('automation_run')
      .execute();
    return new Map(rows.map((row) => [row.automation_id, toRun(row)]));
  }
}
