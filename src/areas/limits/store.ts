import type { Db } from '../../core/db/database.js';
import type { UsageLimit } from './schemas.js';

type LimitRow = { id: string; scope: string; subject_id: string; period: string; max_requests: unknown; max_tokens: unknown; max_cost: unknown; created_at: unknown; updated_at: unknown };

const nullableNumber = (value: unknown) => (value === null || value === undefined ? null : Number(value));

function limit(row: LimitRow): UsageLimit {
  return {
    id: row.id,
    scope: row.scope as UsageLimit['scope'],
    subject_id: row.subject_id,
    period: row.period as UsageLimit['period'],
    max_requests: nullableNumber(row.max_requests),
    max_tokens: nullableNumber(row.max_tokens),
    max_cost: nullableNumber(row.max_cost),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** `usage_limit`, `usage_counter` and the token sums of `message_rollup`. */
export class LimitsStore {
  constructor(private readonly db: Db) {}

  async all(): Promise<UsageLimit[]> {
    return (await this.db.selectFrom('usage_limit').selectAll().orderBy('created_at').orderBy('id').execute()).map(limit);
  }

  async byId(id: string): Promise<UsageLimit | null> {
    const row = await this.db.selectFrom('usage_limit').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? limit(row) : null;
  }

  async insert(value: UsageLimit): Promise<void> {
    await this.db.insertInto('usage_limit').values(value).execute();
  }

  async update(value: UsageLimit): Promise<void> {
    const { id, ...fields } = value;
    await this.db.updateTable('usage_limit').set(fields).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<boolean> {
    return Number((await this.db.deleteFrom('usage_limit').where('id', '=', id).executeTakeFirst()).numDeletedRows) > 0;
  }

  /** The limits that apply to a user: their own and their groups'. */
  async applying(userId: string): Promise<UsageLimit[]> {
    const rows = await this.db
      .selectFrom('usage_limit')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb.and([eb('scope', '=', 'user'), eb('subject_id', '=', userId)]),
          eb.and([eb('scope', '=', 'group'), eb('subject_id', 'in', eb.selectFrom('group_member').select('group_id').where('user_id', '=', userId))]),
        ]),
      )
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(limit);
  }

  async requests(userId: string, period: string, periodStart: number): Promise<number> {
    const row = await this.db.selectFrom('usage_counter').select('requests').where('user_id', '=', userId).where('period', '=', period).where('period_start', '=', periodStart).executeTakeFirst();
    return Number(row?.requests ?? 0);
  }

  /** Adds requests to the user's counter of a period (one statement: safe across instances). */
  async countRequests(userId: string, period: string, periodStart: number, requests: number): Promise<void> {
    await this.db
      .insertInto('usage_counter')
      .values({ user_id: userId, period, period_start: periodStart, requests, tokens: 0, cost: 0 })
      .onConflict((oc) => oc.columns(['user_id', 'period', 'period_start']).doUpdateSet((eb) => ({ requests: eb('usage_counter.requests', '+', requests) })))
      .execute();
  }

  /** The user's answer tokens per model since a UTC day (`day` = epoch seconds / 86400). */
  async tokensSince(userId: string, fromDay: number): Promise<{ model_id: string; input: number; output: number }[]> {
    const rows = await this.db
      .selectFrom('message_rollup')
      .select((eb) => ['model_id', eb.fn.sum<number>('input_tokens').as('input'), eb.fn.sum<number>('output_tokens').as('output')])
      .where('user_id', '=', userId)
      .where('day', '>=', fromDay)
      .groupBy('model_id')
      .execute();
    return rows.map((r) => ({ model_id: r.model_id, input: Number(r.input ?? 0), output: Number(r.output ?? 0) }));
  }
}
