/**
 * The scheduler's numbers (issue 21; docs/scheduler.md § Bench), in-process on a
 * fresh database: SQLite in a temporary folder, or PostgreSQL with DATABASE_URL.
 *
 *   npx vite-node bench/scheduler.ts [-- --idle-seconds 60]
 *
 * 1. 10,000 recurring jobs planned (RRULE, time zones): CPU of the process over
 *    an idle period with the real clock and the default 10 s poll, per minute.
 * 2. Claim latency: one poll with nothing due among the 10,000 (the idle cost),
 *    and one claim of a batch of 10 when due.
 * 3. 1,000 one-off runs due at the same minute, two schedulers (two instances'
 *    worth) claiming side by side: every run once, and the time to drain.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { Clock } from '../src/core/clock.js';
import { migrate, openDatabase } from '../src/core/db/database.js';
import { Scheduler } from '../src/core/scheduler/scheduler.js';
import { SchedulerStore } from '../src/core/scheduler/store.js';

const { values: flags } = parseArgs({ options: { 'idle-seconds': { type: 'string', default: '60' } } });
const JOBS = 10_000;
const DUE_AT_ONCE = 1_000;
const ZONES = ['Europe/Paris', 'America/New_York', 'Asia/Tokyo', 'UTC'];

class SettableClock implements Clock {
  constructor(public ms: number) {}
  now() {
    return Math.floor(this.ms / 1000);
  }
  nowMs() {
    return this.ms;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

async function main() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-scheduler-bench-'));
  const database = openDatabase({ databaseUrl: process.env.DATABASE_URL ?? null, dataDir });
  const log = pino({ level: 'warn' });
  try {
    await migrate(database.db);
    const options = { pollMs: 10_000, leaseMs: 300_000, batch: 10 };
    const realClock: Clock = { now: () => Math.floor(Date.now() / 1000), nowMs: () => Date.now() };
    const idle = new Scheduler(database.db, database.dialect, realClock, log, options);
    idle.handle('bench', { run: async () => undefined });

    let started = performance.now();
    for (let i = 0; i < JOBS; i++) await idle.schedule('bench', `job-${i}`, { rule: `FREQ=DAILY;BYHOUR=${i % 24};BYMINUTE=${i % 60}`, timezone: ZONES[i % ZONES.length] });
    const planMs = performance.now() - started;

    // 1. Idle: the real clock, nothing due for hours (the earliest is tomorrow or later today).
    const idleSeconds = Number(flags['idle-seconds']);
    const store = new SchedulerStore(database.db, database.dialect);
    const dueNow = await store.dueCount(Date.now());
    const before = cpuMs();
    idle.start();
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    await idle.stop();
    const idleCpuPerMinute = ((cpuMs() - before) / idleSeconds) * 60;

    // 2. Claim latency: nothing due (a poll), then a batch due.
    const pollTimes: number[] = [];
    for (let i = 0; i < 50; i++) {
      started = performance.now();
      await store.claim(['bench'], Date.now() - 86_400_000, 'bench', Date.now(), 10);
      pollTimes.push(performance.now() - started);
    }
    const claimTimes: number[] = [];
    for (let i = 0; i < 50; i++) {
      started = performance.now();
      const claimed = await store.claim(['bench'], Date.now() + 2 * 86_400_000, `bench-${i}`, Date.now() + 2 * 86_400_000 + 1, 10);
      claimTimes.push(performance.now() - started);
      if (claimed.length !== 10) throw new Error(`claimed ${claimed.length}`);
    }

    // 3. 1,000 runs due at the same minute, two instances.
    const clock = new SettableClock(Date.UTC(2026, 0, 1, 12, 0, 0));
    const runs = new Map<string, number>();
    const instances = [0, 1].map((n) => {
      const scheduler = new Scheduler(database.db, database.dialect, clock, log, options);
      scheduler.handle('burst', {
        run: async ({ key }) => {
          runs.set(key, (runs.get(key) ?? 0) + 1);
          await new Promise((resolve) => setTimeout(resolve, 1));
        },
      });
      return { n, scheduler };
    });
    for (let i = 0; i < DUE_AT_ONCE; i++) await instances[0].scheduler.schedule('burst', `run-${i}`, { at: clock.ms + 60_000 + (i % 60) * 1000 });
    clock.ms += 120_000;
    started = performance.now();
    await Promise.all(instances.map(({ scheduler }) => scheduler.tick()));
    const drainMs = performance.now() - started;
    const duplicates = [...runs.values()].filter((count) => count > 1).length;

    const result = {
      dialect: database.dialect,
      jobs: JOBS,
      planMsPerJob: +(planMs / JOBS).toFixed(3),
      dueAtIdleStart: dueNow,
      idleSeconds,
      idleCpuMsPerMinute: +idleCpuPerMinute.toFixed(1),
      pollMsMedian: +median(pollTimes).toFixed(2),
      claimBatchOf10MsMedian: +median(claimTimes).toFixed(2),
      burst: { due: DUE_AT_ONCE, ran: runs.size, duplicates, drainMs: Math.round(drainMs) },
    };
    console.log(JSON.stringify(result, null, 2));
    if (runs.size !== DUE_AT_ONCE || duplicates > 0) process.exitCode = 1;
  } finally {
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
