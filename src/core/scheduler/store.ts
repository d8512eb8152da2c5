import type { Db, DialectName } from '../db/database.js';
import type { ScheduledJobRow } from '../db/tables.js';

export interface ClaimedJob {
  id: string;
  kind: string;
  key: string;
  rule: string | null;
  timezone: string | null;
  /** The due time this claim is for (epoch ms). */
  slot: number;
  attempts: number;
}

export const jobId = (kind: string, key: string) => `${kind}:${key}`;

function toClaimed(row: Pick<ScheduledJobRow, 'id' | 'kind' | 'key' | 'rule' | 'timezone' | 'next_run_at' | 'attempts'>): ClaimedJob {
  return { id: row.id, kind: row.kind, key: row.key, rule: row.rule, timezone: row.timezone, slot: Number(row.next_run_at), attempts: Number(row.attempts) };
}

/** The scheduler's queries; every write that ends a run names the lease it holds. */
export class SchedulerStore {
  constructor(
    private readonly db: Db,
    private readonly dialect: DialectName,
  ) {}

  /** Creates or replaces the plan of `(kind, key)`; a run under way keeps its lease. */
  async upsert(kind: string, key: string, plan: { rule: string | null; timezone: string | null; nextRunAt: number | null }, now: number): Promise<void> {
    const values = { rule: plan.rule, timezone: plan.timezone, next_run_at: plan.nextRunAt, updated_at: now };
    await this.db
      .insertInto('scheduled_job')
      .values({ id: jobId(kind, key), kind, key, ...values, created_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ ...values, attempts: 0 }))
      .execute();
  }

  async remove(kind: string, keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.db.deleteFrom('scheduled_job').where('id', 'in', keys.map((key) => jobId(kind, key))).execute();
  }

  async nextRuns(kind: string, keys: string[]): Promise<Map<string, number | null>> {
    if (keys.length === 0) return new Map();
    const rows = await this.db.selectFrom('scheduled_job').select(['key', 'next_run_at']).where('id', 'in', keys.map((key) => jobId(kind, key))).execute();
    return new Map(rows.map((row) => [row.key, row.next_run_at === null ? null : Number(row.next_run_at)]));
  }

  /**
   * Claims up to `limit` due jobs of `kinds` for `owner` until `leaseUntil`, in
   * one statement: due, and not held by a live lease. On PostgreSQL the rows
   * are picked FOR UPDATE SKIP LOCKED, so instances claiming at the same moment
   * take different rows and a row another claim just took fails the re-check;
   * on SQLite the statement runs alone (one writer).
   */
  async claim(kinds: string[], now: number, owner: string, leaseUntil: number, limit: number): Promise<ClaimedJob[]> {
    if (kinds.length === 0) return [];
    let due = this.db
      .selectFrom('scheduled_job')
      .select('id')
      .where('kind', 'in', kinds)
      .where('next_run_at', '<=', now)
      .where('lease_until', '<', now)
      .orderBy('next_run_at')
      .limit(limit);
    if (this.dialect === 'postgres') due = due.forUpdate().skipLocked();
    const rows = await this.db
      .updateTable('scheduled_job')
      .set((eb) => ({ lease_owner: owner, lease_until: leaseUntil, attempts: eb('attempts', '+', 1) }))
      .where('id', 'in', due)
      .where('next_run_at', '<=', now)
      .where('lease_until', '<', now)
      .returning(['id', 'kind', 'key', 'rule', 'timezone', 'next_run_at', 'attempts'])
      .execute();
    return rows.map(toClaimed).sort((a, b) => a.slot - b.slot);
  }

  /** Extends the leases `owner` holds. */
  async renew(ids: string[], owner: string, leaseUntil: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.updateTable('scheduled_job').set({ lease_until: leaseUntil }).where('id', 'in', ids).where('lease_owner', '=', owner).execute();
  }

  /**
   * Ends a claimed run: the next due time is set only if the plan still has
   * the claimed slot (a plan replaced meanwhile keeps its own), and the lease is
   * let go. A finished one-off (`next` null, no rule) is deleted.
   */
  async finish(job: ClaimedJob, owner: string, next: number | null, now: number): Promise<void> {
    const mine = this.db.updateTable('scheduled_job').where('id', '=', job.id).where('lease_owner', '=', owner);
    if (job.rule === null && next === null) {
      await this.db.deleteFrom('scheduled_job').where('id', '=', job.id).where('lease_owner', '=', owner).where('next_run_at', '=', job.slot).where('rule', 'is', null).execute();
    } else {
      await mine.set({ next_run_at: next, attempts: 0, updated_at: now }).where('next_run_at', '=', job.slot).execute();
    }
    await this.db.updateTable('scheduled_job').set({ lease_owner: null, lease_until: 0 }).where('id', '=', job.id).where('lease_owner', '=', owner).execute();
  }

  /** Due jobs (for the bench and operators): how many are waiting now. */
  async dueCount(now: number): Promise<number> {
    const row = await this.db.selectFrom('scheduled_job').select((eb) => eb.fn.countAll<number>().as('n')).where('next_run_at', '<=', now).executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
