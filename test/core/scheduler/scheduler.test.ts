import { describe, expect, it } from 'vitest';
import { SchedulerStore } from '../../../src/core/scheduler/store.js';
import type { ScheduledRun } from '../../../src/core/scheduler/scheduler.js';
import { TestClock } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The core scheduler across instances on one database (two Parleys on the same
 * SQLite file, or on the same PostgreSQL database with TEST_DATABASE_URL): each
 * due run happens once, a run held by a dead instance is taken over after its
 * lease, and a recurring job moves to its next slot only when its run ended.
 */
describe('scheduler', () => {
  const clock = new TestClock(Date.UTC(2026, 5, 1, 8, 0, 0));
  const world = useServer({ clock, admin: false, env: { SCHEDULER_POLL_INTERVAL: '3600', SCHEDULER_LEASE_SECONDS: '60', SCHEDULER_BATCH_SIZE: '7' } });

  /** Registers kind `kind` on an instance; every run is recorded with the instance that ran it. */
  const record = (runs: (ScheduledRun & { instance: string })[], kind: string, instance: string, scheduler = world.server.parley.core.scheduler) =>
    scheduler.handle(kind, {
      run: async (run) => {
        runs.push({ ...run, instance });
        await sleep(Math.random() * 3);
      },
    });

  it('runs each due job once across two instances claiming at the same moment', async () => {
    const second = await world.addInstance();
    const runs: (ScheduledRun & { instance: string })[] = [];
    record(runs, 'race', 'a');
    record(runs, 'race', 'b', second.parley.core.scheduler);
    const scheduler = world.server.parley.core.scheduler;
    const now = clock.nowMs();
    // Due a minute from now, so that none starts while they are being planned.
    for (let i = 0; i < 150; i++) await scheduler.schedule('race', `once-${i}`, { at: now + 60_000 - i * 100 });
    for (let i = 0; i < 50; i++) await scheduler.schedule('race', `daily-${i}`, { rule: 'FREQ=DAILY;BYHOUR=7;BYMINUTE=0', timezone: 'Europe/Berlin' });
    // 07:00 in Berlin is 05:00 UTC in June: the daily ones are due tomorrow, not now.
    clock.advance(60);
    await Promise.all([scheduler.tick(), second.parley.core.scheduler.tick()]);
    expect(runs).toHaveLength(150);
    expect(new Set(runs.map((r) => r.key)).size).toBe(150);
    // Both instances took part (each claims batches of 7).
    expect(new Set(runs.map((r) => r.instance))).toEqual(new Set(['a', 'b']));
    // One-offs are gone once run.
    expect((await scheduler.nextRuns('race', ['once-0', 'once-1'])).size).toBe(0);

    runs.length = 0;
    clock.advance(21 * 3600 - 60); // 05:00 UTC the next day
    await Promise.all([scheduler.tick(), second.parley.core.scheduler.tick(), scheduler.tick()]);
    expect(runs.map((r) => r.key).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `daily-${i}`).sort());
    expect(runs.every((r) => r.slot === Date.UTC(2026, 5, 2, 5, 0, 0) && r.attempt === 1)).toBe(true);
    const next = await scheduler.nextRuns('race', ['daily-0']);
    expect(next.get('daily-0')).toBe(Date.UTC(2026, 5, 3, 5, 0, 0));
    await scheduler.unschedule('race', ...Array.from({ length: 50 }, (_, i) => `daily-${i}`));
  });

  it('takes over a run whose instance died, once its lease ran out', async () => {
    const runs: (ScheduledRun & { instance: string })[] = [];
    record(runs, 'lease', 'a');
    const { core } = world.server.parley;
    await core.scheduler.schedule('lease', 'job', { rule: 'FREQ=HOURLY', timezone: null });
    clock.advance(3600);
    // An instance that claims the run and dies before it ends.
    const dead = new SchedulerStore(core.db, core.database.dialect);
    const [claimed] = await dead.claim(['lease'], clock.nowMs(), 'dead-instance', clock.nowMs() + 60_000, 10);
    expect(claimed).toMatchObject({ key: 'job', attempts: 1 });

    await core.scheduler.tick();
    expect(runs).toEqual([]);
    clock.advance(61);
    await core.scheduler.tick();
    expect(runs).toEqual([expect.objectContaining({ key: 'job', slot: claimed.slot, attempt: 2 })]);
    // The slot is done: the next is an hour on, and the dead instance's late finish changes nothing.
    expect((await core.scheduler.nextRuns('lease', ['job'])).get('job')).toBe(claimed.slot + 3_600_000);
    await dead.finish({ ...claimed }, 'dead-instance', 0, clock.nowMs());
    expect((await core.scheduler.nextRuns('lease', ['job'])).get('job')).toBe(claimed.slot + 3_600_000);
    await core.scheduler.unschedule('lease', 'job');
  });

  it('skips a slot whose runs kept killing their instance, and keeps the schedule', async () => {
    const runs: ScheduledRun[] = [];
    const { core } = world.server.parley;
    core.scheduler.handle('poison', { run: async (run) => void runs.push(run) });
    await core.scheduler.schedule('poison', 'job', { rule: 'FREQ=HOURLY', timezone: null });
    clock.advance(3600);
    const dead = new SchedulerStore(core.db, core.database.dialect);
    for (let i = 0; i < 3; i++) {
      expect(await dead.claim(['poison'], clock.nowMs(), `dead-${i}`, clock.nowMs() + 1000, 10)).toHaveLength(1);
      clock.advance(2);
    }
    await core.scheduler.tick();
    expect(runs).toEqual([]);
    const next = (await core.scheduler.nextRuns('poison', ['job'])).get('job')!;
    expect(next).toBeGreaterThan(clock.nowMs());
    await core.scheduler.unschedule('poison', 'job');
  });

  it('leaves due work of a disabled kind waiting, then runs it once', async () => {
    const runs: ScheduledRun[] = [];
    let enabled = false;
    const { core } = world.server.parley;
    core.scheduler.handle('switch', { enabled: () => enabled, run: async (run) => void runs.push(run) });
    await core.scheduler.schedule('switch', 'job', { rule: 'FREQ=HOURLY', timezone: null });
    clock.advance(3 * 3600);
    await core.scheduler.tick();
    expect(runs).toEqual([]);
    enabled = true;
    await core.scheduler.tick();
    expect(runs).toHaveLength(1);
    await core.scheduler.unschedule('switch', 'job');
  });
});
