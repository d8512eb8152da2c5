import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db, DialectName } from '../db/database.js';
import { Recurrence } from './recurrence.js';
import { type ClaimedJob, SchedulerStore } from './store.js';

export interface SchedulerOptions {
  /** How often each instance looks for due work (SCHEDULER_POLL_INTERVAL, seconds; ms here). */
  pollMs: number;
  /** How long a claimed run is its instance's unless renewed (SCHEDULER_LEASE_SECONDS; ms here). */
  leaseMs: number;
  /** Runs claimed at once by one instance. */
  batch: number;
}

export function readSchedulerOptions(raw: Record<string, string | undefined>): SchedulerOptions {
  const number = (value: string | undefined, fallback: number) => {
    const parsed = Number.parseFloat(value ?? '');
    return Number.isFinite(parsed) && parsed > 0 ? parsed : fallback;
  };
  return {
    pollMs: Math.round(number(raw.SCHEDULER_POLL_INTERVAL ?? raw.AUTOMATION_POLL_INTERVAL, 10) * 1000),
    leaseMs: Math.round(number(raw.SCHEDULER_LEASE_SECONDS, 300) * 1000),
    batch: Math.max(1, Math.floor(number(raw.SCHEDULER_BATCH_SIZE, 10))),
  };
}

/** One run handed to a kind's handler. */
export interface ScheduledRun {
  kind: string;
  key: string;
  /** The due time the run is for (epoch ms); later than now when the instance was down. */
  slot: number;
  /** 1 for a first try; more when instances died during earlier tries of this slot. */
  attempt: number;
}

export interface KindHandler {
  run(run: ScheduledRun): Promise<void>;
  /** Claimed only while this says so (ENABLE_AUTOMATIONS...): due work waits, and runs once when it is on again. */
  enabled?(): boolean;
}

/** What is due: a recurrence in a time zone (its next occurrence), or one instant. */
export type Plan = { rule: string; timezone: string | null } | { at: number };

/** A slot whose run was cut short this many times (its instance killed each time) is skipped. */
const MAX_ATTEMPTS = 3;

/**
 * Durable, multi-instance scheduling (docs/scheduler.md). Work is a row per
 * `(kind, key)` with its next due time; every instance polls, claims due rows
 * atomically with a lease, runs the kind's handler, then moves the row to its
 * next occurrence. A run whose instance died is claimed again when the lease
 * ran out. Missed slots (the instances were down) run once, not once each:
 * the next occurrence is counted from now.
 */
export class Scheduler {
  private readonly handlers = new Map<string, KindHandler>();
  private readonly store: SchedulerStore;
  private readonly owner = randomUUID();
  private readonly running = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private draining: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(
    db: Db,
    dialect: DialectName,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
    readonly options: SchedulerOptions,
  ) {
    this.store = new SchedulerStore(db, dialect);
  }

  /** The handler of one kind of work (one per kind, registered before `start`). */
  handle(kind: string, handler: KindHandler): void {
    if (this.handlers.has(kind)) throw new Error(`scheduler kind ${kind} already has a handler`);
    this.handlers.set(kind, handler);
  }

  /** Plans `(kind, key)`: returns its next due time (epoch ms), null when the rule has no more. Throws RecurrenceError for a bad rule or zone. */
  async schedule(kind: string, key: string, plan: Plan): Promise<number | null> {
    const now = this.clock.nowMs();
    if ('at' in plan) {
      await this.store.upsert(kind, key, { rule: null, timezone: null, nextRunAt: plan.at }, now);
      this.wake(plan.at);
      return plan.at;
    }
    const next = Recurrence.parse(plan.rule, plan.timezone).next(now);
    await this.store.upsert(kind, key, { rule: plan.rule, timezone: plan.timezone, nextRunAt: next }, now);
    return next;
  }

  async unschedule(kind: string, ...keys: string[]): Promise<void> {
    await this.store.remove(kind, keys);
  }

  nextRuns(kind: string, keys: string[]): Promise<Map<string, number | null>> {
    return this.store.nextRuns(kind, keys);
  }

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.kick(), this.options.pollMs);
    this.timer.unref();
    // Start-up: what came due while every instance was down runs now, once.
    this.kick();
  }

  /** Stops claiming; runs under way finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.draining;
  }

  /** Claims and runs what is due now, until nothing is (the poll; tests and benches call it directly). */
  async tick(): Promise<void> {
    this.kick(true);
    while (this.draining) await this.draining;
  }

  /** Work due before the next poll starts without waiting for it (a one-off planned for now). */
  private wake(at: number): void {
    if (!this.stopped && at <= this.clock.nowMs()) this.kick();
  }

  private kick(force = false): void {
    if (this.stopped && !force) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.drain()
      .catch((error) => this.log.error({ err: error }, 'scheduler: claiming due work failed'))
      .finally(() => {
        this.draining = null;
        if (this.again) {
          this.again = false;
          this.kick(force);
        }
      });
  }

  private async drain(): Promise<void> {
    for (;;) {
      const kinds = [...this.handlers].filter(([, handler]) => handler.enabled?.() ?? true).map(([kind]) => kind);
      const now = this.clock.nowMs();
      const jobs = await this.store.claim(kinds, now, this.owner, now + this.options.leaseMs, this.options.batch);
      if (jobs.length === 0) return;
      await this.runAll(jobs);
    }
  }

  /** Runs claimed jobs side by side, renewing their leases (every third of it) until each ended. */
  private async runAll(jobs: ClaimedJob[]): Promise<void> {
    for (const job of jobs) this.running.add(job.id);
    const renewal = setInterval(() => {
      this.store.renew([...this.running], this.owner, this.clock.nowMs() + this.options.leaseMs).catch(() => undefined);
    }, Math.max(500, this.options.leaseMs / 3));
    try {
      await Promise.all(jobs.map((job) => this.runOne(job)));
    } finally {
      clearInterval(renewal);
    }
  }

  private async runOne(job: ClaimedJob): Promise<void> {
    const handler = this.handlers.get(job.kind);
    try {
      if (job.attempts > MAX_ATTEMPTS) this.log.error({ kind: job.kind, key: job.key, slot: job.slot }, 'scheduler: a run was cut short too many times; its slot is skipped');
      else await handler?.run({ kind: job.kind, key: job.key, slot: job.slot, attempt: job.attempts });
    } catch (error) {
      // A handler records its own failures; this one escaped, and the schedule goes on regardless.
      this.log.error({ err: error, kind: job.kind, key: job.key }, 'scheduler: a run failed');
    } finally {
      this.running.delete(job.id);
      await this.finish(job).catch((error) => this.log.error({ err: error, kind: job.kind, key: job.key }, 'scheduler: ending a run failed'));
    }
  }

  private async finish(job: ClaimedJob): Promise<void> {
    const now = this.clock.nowMs();
    let next: number | null = null;
    if (job.rule !== null) {
      try {
        // From now, anchored at the slot: missed occurrences are not run one by one.
        next = Recurrence.parse(job.rule, job.timezone).next(Math.max(now, job.slot), job.slot);
      } catch (error) {
        this.log.error({ err: error, kind: job.kind, key: job.key }, 'scheduler: a stored rule no longer parses; the job stops');
      }
    }
    await this.store.finish(job, this.owner, next, now);
  }
}
