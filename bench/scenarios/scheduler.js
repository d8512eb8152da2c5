import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, row } from '../lib/report.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const JOBS = 10_000;
const DUE_AT_ONCE = 1_000;
const IDLE_SECONDS = 30;
const ZONES = ['Europe/Paris', 'America/New_York', 'Asia/Tokyo', 'UTC'];

/** The scheduler, its store and the database as bundled from src/ (the bench runs them in its own process). */
async function bundledScheduler() {
  const { build } = await import('esbuild');
  const entry = path.join(root, '.tmp', 'bench', 'scheduler-entry.ts');
  const outfile = path.join(root, '.tmp', 'bench', 'scheduler.js');
  mkdirSync(path.dirname(entry), { recursive: true });
  writeFileSync(
    entry,
    [
      `export { migrate, openDatabase } from '${path.join(root, 'src/core/db/database.ts')}';`,
      `export { Scheduler } from '${path.join(root, 'src/core/scheduler/scheduler.ts')}';`,
      `export { SchedulerStore } from '${path.join(root, 'src/core/scheduler/store.ts')}';`,
    ].join('\n'),
  );
  await build({ entryPoints: [entry], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'warning' });
  return import(pathToFileURL(outfile).href);
}

const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
const quietLog = { warn() {}, error() {}, info() {}, debug() {}, child() { return quietLog; } };

/**
 * The scheduler (issue 21; docs/scheduler.md § Bench), in the bench's own process on a fresh SQLite
 * database: 10,000 recurring jobs planned (RRULEs in four time zones), the process's CPU over 30 s
 * idle with the real clock and the default 10 s poll (per minute), the latency of a poll with nothing
 * due and of a claim of a batch of 10, and 1,000 one-off runs due in the same minute drained by two
 * schedulers side by side (two instances' worth): every run once, no duplicate.
 */
export default {
  name: 'scheduler',
  async measure() {
    const { migrate, openDatabase, Scheduler, SchedulerStore } = await bundledScheduler();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-scheduler-'));
    const database = openDatabase({ databaseUrl: null, dataDir });
    try {
      await migrate(database.db);
      const options = { pollMs: 10_000, leaseMs: 300_000, batch: 10 };
      const realClock = { now: () => Math.floor(Date.now() / 1000), nowMs: () => Date.now() };
      const idle = new Scheduler(database.db, database.dialect, realClock, quietLog, options);
      idle.handle('bench', { run: async () => undefined });
      for (let i = 0; i < JOBS; i++) await idle.schedule('bench', `job-${i}`, { rule: `FREQ=DAILY;BYHOUR=${i % 24};BYMINUTE=${i % 60}`, timezone: ZONES[i % ZONES.length] });

      const before = cpuMs();
      idle.start();
      await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
      await idle.stop();
      const idleCpuPerMinute = ((cpuMs() - before) / IDLE_SECONDS) * 60;

      const store = new SchedulerStore(database.db, database.dialect);
      const polls = [];
      for (let i = 0; i < 50; i++) {
        const started = performance.now();
        await store.claim(['bench'], Date.now() - 86_400_000, 'bench', Date.now(), 10);
        polls.push(performance.now() - started);
      }
      const claims = [];
      for (let i = 0; i < 50; i++) {
        const started = performance.now();
        const claimed = await store.claim(['bench'], Date.now() + 2 * 86_400_000, `bench-${i}`, Date.now() + 2 * 86_400_000 + 1, 10);
        claims.push(performance.now() - started);
        if (claimed.length !== 10) throw new Error(`claimed ${claimed.length} of 10`);
      }

      let ms = Date.UTC(2026, 0, 1, 12, 0, 0);
      const clock = { now: () => Math.floor(ms / 1000), nowMs: () => ms };
      const runs = new Map();
      const schedulers = [0, 1].map(() => {
        const scheduler = new Scheduler(database.db, database.dialect, clock, quietLog, options);
        scheduler.handle('burst', {
          run: async ({ key }) => {
            runs.set(key, (runs.get(key) ?? 0) + 1);
            await new Promise((resolve) => setTimeout(resolve, 1));
          },
        });
        return scheduler;
      });
      for (let i = 0; i < DUE_AT_ONCE; i++) await schedulers[0].schedule('burst', `run-${i}`, { at: ms + 60_000 + (i % 60) * 1000 });
      ms += 120_000;
      const started = performance.now();
      await Promise.all(schedulers.map((scheduler) => scheduler.tick()));
      const drainMs = performance.now() - started;
      const duplicates = [...runs.values()].filter((count) => count > 1).length;

      const onceEach = runs.size === DUE_AT_ONCE && duplicates === 0;
      const rows = [
        row({ figure: `scheduler: CPU per idle minute with ${JOBS.toLocaleString('en-US')} jobs planned`, parley: idleCpuPerMinute, unit: 'ms' }),
        row({ figure: 'scheduler: a poll with nothing due (median)', parley: median(polls), unit: 'ms' }),
        row({ figure: 'scheduler: a claim of 10 due jobs (median)', parley: median(claims), unit: 'ms' }),
        row({
          figure: `scheduler: ${DUE_AT_ONCE.toLocaleString('en-US')} runs due in one minute, two instances: time to run them all`,
          parley: drainMs,
          unit: 'ms',
          target: 'each once',
          check: () => onceEach,
        }),
      ];
      return { rows, details: { jobs: JOBS, idleSeconds: IDLE_SECONDS, ran: runs.size, duplicates } };
    } finally {
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
};
