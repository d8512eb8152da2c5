import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createContext } from './lib/context.js';
import { load } from './lib/load.js';
import { heapAfterGc, machineCpuSeconds, ownCpuSeconds, pinSelf, pinning, sleep, startServer } from './lib/processes.js';
import { markdownTable, median, row, textTable } from './lib/report.js';
import { scenarios as allScenarios } from './scenarios/index.js';

/**
 * `npm run bench`: measures Parley (built, in dist/) against a bare Fastify
 * "floor" on this machine and prints one table, also written to
 * bench/results/latest.json and latest.md. Reports only: exits 0 whatever the figures.
 * See docs/bench.md.
 */
const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string' },
    warmup: { type: 'string', default: '2' },
    reps: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    starts: { type: 'string', default: '5' },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
  },
});
const scenarios = allScenarios.filter((s) => !flags.only || s.name.includes(flags.only));
const isLoad = (scenario) => !scenario.measure;
const settings = {
  warmupSeconds: Number(flags.warmup),
  reps: Number(flags.reps),
  connections: Number(flags.connections),
  starts: Number(flags.starts),
  profile: flags.profile,
};
const TARGETS = { readySeconds: 0.5, idleRssBytes: 100 * 1024 * 1024, rpsRatio: 0.7 };
const SETTLE_MS = 1000; // after ready, before reading idle memory
/** A load run during which other processes used more CPU than this (cores) is run again, within a budget. */
const DISTURBED = 0.25;
const RETRIES_PER_SCENARIO = 2;

/**
 * Seconds per load run unless `--duration` says otherwise: 6, shortened (to 3 at
 * least) as scenarios are added so that the load phase stays near LOAD_BUDGET_SECONDS
 * and a whole `npm run bench` under 5 minutes.
 */
const LOAD_BUDGET_SECONDS = 170;
function defaultDuration(count) {
  const runs = 2 * settings.reps + RETRIES_PER_SCENARIO;
  const fixed = 2 * settings.warmupSeconds + runs * 0.5; // warm-ups, process start per run
  const fits = Math.floor((LOAD_BUDGET_SECONDS / Math.max(1, count) - fixed) / runs);
  return Math.max(3, Math.min(6, fits));
}
settings.seconds = flags.duration ? Number(flags.duration) : defaultDuration(scenarios.filter(isLoad).length);

const root = fileURLToPath(new URL('..', import.meta.url));
/** Node's flags for Parley, the same `npm start` uses (package.json `config.node_flags`). */
const NODE_FLAGS = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).config.node_flags.split(' ').filter(Boolean);
const resultsDir = path.join(root, 'bench', 'results');
const floorScript = path.join(root, 'bench', 'lib', 'floor-server.js');
const upstreamScript = path.join(root, 'bench', 'lib', 'fake-upstream.js');
const heapProbeScript = path.join(root, 'bench', 'lib', 'heap-probe.js');
const profileDir = path.join(root, '.tmp', 'bench-profiles');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-'));
const running = new Set();

const began = Date.now();
const log = (message) => process.stderr.write(`bench ${String(Math.round((Date.now() - began) / 1000)).padStart(3)} s: ${message}\n`);

/** A fresh, empty data folder for every Parley start; only the variables Parley reads. */
function parleyEnv() {
  const dataDir = mkdtempSync(path.join(scratch, 'data-'));
  return { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, WEBUI_SECRET_KEY: 'bench-secret-key' };
}

/**
 * Parley or a floor. `heapProbe`: Parley is preloaded with ./lib/heap-probe.js,
 * so that `server.heapAfterGc()` can read its heap right after a full collection.
 */
async function start(kind, { routeFile, profile = false, heapProbe = false } = {}) {
  let server;
  if (kind === 'parley') {
    const env = parleyEnv();
    const profiling = profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    const probing = heapProbe ? ['--expose-gc', `--import=${pathToFileURL(heapProbeScript).href}`] : [];
    server = await startServer({ name: 'Parley', args: [...NODE_FLAGS, ...profiling, ...probing, path.join(root, 'dist', 'parley.js')], env, cwd: root });
    // Scenarios that seed more than the API can in reasonable time write to its database directly.
    server.dataDir = env.DATA_DIR;
    if (heapProbe) server.heapAfterGc = () => heapAfterGc(server.pid, path.join(env.DATA_DIR, 'bench-heap.json'));
  } else {
    server = await startServer({ name: 'floor', args: routeFile ? [floorScript, routeFile] : [floorScript], env: { PATH: process.env.PATH }, cwd: root });
  }
  running.add(server);
  return server;
}

/** The fake model provider, on the load generator's CPU: it stands for a server outside Parley's machine. */
async function startUpstream() {
  const server = await startServer({ name: 'fake upstream', args: [upstreamScript], env: { PATH: process.env.PATH }, cwd: root, cpu: pinning?.load });
  running.add(server);
  return server;
}

async function stop(server) {
  running.delete(server);
  await server.stop();
}

function machine() {
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return null;
    }
  };
  return {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memoryBytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    commit: git('rev-parse', '--short', 'HEAD'),
    uncommittedChanges: git('status', '--porcelain', '--', 'src') ? true : false,
    pinning: pinning ? `servers on CPU ${pinning.server}, load generator and orchestrator on CPU ${pinning.load}` : 'none (taskset missing or one core)',
  };
}

/** Start to ready of Parley (fresh data folder each time) and of a bare Fastify, interleaved. */
async function measureStarts() {
  const times = { parley: [], floor: [], parleyCpu: [], floorCpu: [] };
  for (let i = 0; i < settings.starts; i++) {
    for (const kind of ['parley', 'floor']) {
      const server = await start(kind);
      times[kind].push(server.readyMs / 1000);
      times[`${kind}Cpu`].push(server.readyCpuSeconds);
      await stop(server);
    }
  }
  return times;
}

/**
 * Runs each scenario's setup on the running Parley: a load scenario's answer
 * becomes the floor's payload; a measuring one keeps what its setup returned.
 */
async function prepare(ctx) {
  const prepared = [];
  for (const scenario of scenarios) {
    try {
      log(`${scenario.name}: setup`);
      if (!isLoad(scenario)) {
        prepared.push({ scenario, prepared: scenario.setup ? await scenario.setup(ctx) : undefined });
        continue;
      }
      const request = { method: 'GET', headers: {}, ...scenario.request, ...(scenario.setup ? await scenario.setup(ctx) : {}) };
      const answer = await ctx.call(request.method, request.path, request.body, { headers: request.headers });
      if (answer.status < 200 || answer.status > 299) {
        throw new Error(`${request.method} ${request.path} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 200)}`);
      }
      const contentType = answer.headers.get('content-type') ?? 'application/json';
      const floorRoute = {
        method: request.method,
        path: request.path,
        status: answer.status,
        contentType,
        ...(contentType.includes('json') ? { json: answer.body } : { text: String(answer.body) }),
      };
      prepared.push({ scenario, request, floorRoute });
    } catch (error) {
      log(`scenario "${scenario.name}" skipped: ${error.message}`);
      prepared.push({ scenario, error: error.message });
    }
  }
  return prepared;
}

/** Warm-up, then `reps` runs each of Parley and the floor, alternating which goes first. */
async function measureScenario(parley, entry, index) {
  const routeFile = path.join(scratch, `floor-route-${index}.json`);
  writeFileSync(routeFile, JSON.stringify(entry.floorRoute));
  const floor = await start('floor', { routeFile });
  const options = { seconds: settings.seconds, connections: settings.connections };
  const runs = { parley: [], floor: [] };
  const disturbed = [];
  let retries = RETRIES_PER_SCENARIO;
  try {
    log(`${entry.scenario.name}: warm-up`);
    await load(parley, entry.request, { ...options, seconds: settings.warmupSeconds });
    await load(floor, entry.request, { ...options, seconds: settings.warmupSeconds });
    for (let rep = 0; rep < settings.reps; rep++) {
      const order = rep % 2 === 0 ? ['parley', 'floor'] : ['floor', 'parley'];
      for (const kind of order) {
        log(`${entry.scenario.name}: ${kind} run ${rep + 1}/${settings.reps}`);
        let result = await load(kind === 'parley' ? parley : floor, entry.request, options);
        while (result.otherCpuShare > DISTURBED && retries > 0) {
          retries--;
          log(`${entry.scenario.name}: other processes used ${result.otherCpuShare.toFixed(2)} cores; running it again`);
          disturbed.push({ kind, ...result });
          result = await load(kind === 'parley' ? parley : floor, entry.request, options);
        }
        runs[kind].push(result);
      }
    }
    return { runs, disturbed, floorMemoryAfter: floor.memory() };
  } finally {
    await stop(floor);
  }
}

/** A measuring scenario, and how much CPU other processes (not Parley, the fake provider or the bench) used meanwhile. */
async function measureOwn(ctx, entry) {
  log(`${entry.scenario.name}: measuring`);
  const live = [...running];
  const ours = () => live.reduce((sum, server) => sum + server.cpuSeconds(), ownCpuSeconds());
  const machineBefore = machineCpuSeconds().busy;
  const oursBefore = ours();
  const started = Date.now();
  const { rows, details } = await entry.scenario.measure(ctx, entry.prepared);
  const seconds = (Date.now() - started) / 1000;
  const otherCpuShare = Math.max(0, machineCpuSeconds().busy - machineBefore - (ours() - oursBefore)) / seconds;
  return { rows, details, seconds, otherCpuShare };
}

function summarise(runs) {
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.latencyMs.p50)),
    p99: median(runs.map((r) => r.latencyMs.p99)),
    failures: runs.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0),
    serverCpuShare: median(runs.map((r) => r.serverCpuShare)),
    cpuPerRequest: median(runs.map((r) => r.serverCpuMicrosPerRequest)),
    otherCpuShare: median(runs.map((r) => r.otherCpuShare)),
  };
}

function buildRows(results) {
  const rows = [];
  const { starts, memory } = results;
  rows.push(
    row({
      figure: `start to ready, median of ${starts.parley.length}`,
      parley: median(starts.parley),
      floor: median(starts.floor),
      unit: 'seconds',
      target: `≤ ${TARGETS.readySeconds} s`,
      check: (s) => s <= TARGETS.readySeconds,
    }),
    row({ figure: `start to ready, slowest of ${starts.parley.length}`, parley: Math.max(...starts.parley), floor: Math.max(...starts.floor), unit: 'seconds' }),
    row({ figure: 'start: CPU time to ready, median', parley: median(starts.parleyCpu), floor: median(starts.floorCpu), unit: 'seconds' }),
    row({
      figure: 'RSS idle after start',
      parley: memory.parleyIdle.rss,
      floor: memory.floorIdle.rss,
      unit: 'megabytes',
      target: `≤ ${TARGETS.idleRssBytes / 2 ** 20} MB`,
      check: (bytes) => bytes <= TARGETS.idleRssBytes,
    }),
    row({ figure: 'RSS after load', parley: memory.parleyAfterLoad?.rss ?? NaN, floor: memory.floorAfterLoad?.rss ?? NaN, unit: 'megabytes' }),
  );
  for (const entry of results.scenarios) {
    const name = entry.name;
    if (entry.error) {
      const figure = entry.kind === 'measure' ? name : `${name}: req/s`;
      rows.push({ ...row({ figure, parley: NaN, floor: NaN, unit: 'rps' }), verdict: `not run: ${entry.error.slice(0, 80)}` });
      continue;
    }
    if (entry.kind === 'measure') {
      rows.push(...entry.rows);
      continue;
    }
    const p = entry.parley;
    const f = entry.floor;
    const minRatio = entry.rpsRatioTarget;
    const invalid = p.failures || f.failures ? `${p.failures} Parley / ${f.failures} floor failed requests` : null;
    rows.push(
      row({
        figure: `${name}: req/s`,
        parley: p.rps,
        floor: f.rps,
        unit: 'rps',
        target: `≥ ${minRatio.toFixed(2)}× floor`,
        check: (_rps, ratio) => ratio >= minRatio,
        invalid,
      }),
      row({ figure: `${name}: latency median`, parley: p.p50, floor: f.p50, unit: 'ms' }),
      row({ figure: `${name}: latency p99`, parley: p.p99, floor: f.p99, unit: 'ms' }),
      row({ figure: `${name}: server CPU per request`, parley: p.cpuPerRequest, floor: f.cpuPerRequest, unit: 'micros' }),
    );
  }
  return rows;
}

/**
 * Cores' worth of CPU that processes other than the bench's used from now until
 * the returned function is called (when every child has exited, so its CPU time
 * is counted in this process's children time).
 */
function otherLoad() {
  const machineBefore = machineCpuSeconds().busy;
  const ownBefore = ownCpuSeconds();
  const started = Date.now();
  return () => Math.max(0, machineCpuSeconds().busy - machineBefore - (ownCpuSeconds() - ownBefore)) / ((Date.now() - started) / 1000);
}

function notesOf(results) {
  const notes = [];
  if (settings.profile) notes.push('Parley ran under --cpu-prof (--profile): its memory and load figures are worse than normal.');
  if (results.otherCpuShare > 0.5) {
    notes.push(
      `BUSY MACHINE: other processes used ${results.otherCpuShare.toFixed(2)} of ${results.machine.cores} cores on average during this run. ` +
        'Times and rates are far from what this machine does when quiet; only the CPU-time figures and, roughly, the ratios mean something. ' +
        'Run again when `uptime` shows a load average under 1.',
    );
  } else if (results.otherCpuShare > 0.1) {
    notes.push(
      `other processes used ${results.otherCpuShare.toFixed(2)} cores on average during this run: absolute figures are ` +
        'lower and noisier than on a quiet machine; ratios less so (Parley and floor runs alternate).',
    );
  }
  for (const entry of results.scenarios) {
    if (entry.error) continue;
    if (entry.kind === 'measure') {
      if (entry.otherCpuShare > DISTURBED) {
        notes.push(`${entry.name}: other processes used ${entry.otherCpuShare.toFixed(2)} cores meanwhile; its times are likely worse than on a quiet machine.`);
      }
      continue;
    }
    if (entry.disturbed.length) {
      notes.push(`${entry.name}: ${entry.disturbed.length} run(s) repeated because other processes used over ${DISTURBED} cores meanwhile.`);
    }
    for (const [kind, summary] of [['Parley', entry.parley], ['floor', entry.floor]]) {
      if (summary.serverCpuShare < 0.85) {
        notes.push(
          `${entry.name}: ${kind} used only ${(summary.serverCpuShare * 100).toFixed(0)}% of its core under load; ` +
            'something else (the load generator or other processes) was the limit, so its req/s is understated.',
        );
      }
    }
  }
  return notes;
}

function header(results) {
  const m = results.machine;
  return [
    `Parley bench, ${results.date}, commit ${m.commit ?? 'unknown'}${m.uncommittedChanges ? ' (with uncommitted changes in src/)' : ''}`,
    `${m.cores} cores (${m.cpu}), Node ${m.node}, ${m.platform}; pinning: ${m.pinning}`,
    `load: autocannon, ${settings.connections} connections, ${settings.reps} × ${settings.seconds} s per figure after ${settings.warmupSeconds} s warm-up; ` +
      'rates and latencies are medians over the runs; floor = bare Fastify returning the same payload ' +
      '(streaming figures: the fake model provider reached directly)',
    `other processes on the machine used ${results.otherCpuShare.toFixed(2)} cores on average; the bench took ${Math.round(results.seconds)} s`,
  ];
}

async function main() {
  if (!existsSync(path.join(root, 'dist', 'parley.js'))) throw new Error('dist/parley.js missing: run `npm run build` first');
  pinSelf();
  log(`${scenarios.length} scenarios; load runs ${settings.reps} × ${settings.seconds} s each`);
  const results = { date: new Date().toISOString(), machine: machine(), settings, targets: TARGETS, scenarios: [] };
  const others = otherLoad();

  log(`start to ready × ${settings.starts}`);
  results.starts = await measureStarts();

  const floorIdle = await start('floor');
  await sleep(SETTLE_MS);
  results.memory = { floorIdle: floorIdle.memory() };
  await stop(floorIdle);

  const parley = await start('parley', { profile: settings.profile, heapProbe: true });
  await sleep(SETTLE_MS);
  results.memory.parleyIdle = parley.memory();

  const ctx = createContext(parley, { startUpstream });
  const floorAfter = [];
  for (const [index, entry] of (await prepare(ctx)).entries()) {
    const base = isLoad(entry.scenario)
      ? { name: entry.scenario.name, kind: 'load', rpsRatioTarget: entry.scenario.rpsRatioTarget ?? TARGETS.rpsRatio }
      : { name: entry.scenario.name, kind: 'measure' };
    if (entry.error) {
      results.scenarios.push({ ...base, error: entry.error });
      continue;
    }
    try {
      if (base.kind === 'measure') {
        results.scenarios.push({ ...base, ...(await measureOwn(ctx, entry)) });
        continue;
      }
      const { runs, disturbed, floorMemoryAfter } = await measureScenario(parley, entry, index);
      floorAfter.push(floorMemoryAfter);
      results.scenarios.push({ ...base, request: entry.request, parley: summarise(runs.parley), floor: summarise(runs.floor), runs, disturbed });
    } catch (error) {
      log(`scenario "${entry.scenario.name}" failed: ${error.message}`);
      results.scenarios.push({ ...base, error: error.message });
    }
  }
  await sleep(SETTLE_MS);
  results.memory.parleyAfterLoad = parley.memory();
  // The floor restarts per scenario; its figure is the largest of those after their load.
  results.memory.floorAfterLoad = floorAfter.sort((a, b) => b.rss - a.rss)[0] ?? null;
  await Promise.all([...running].map(stop)); // Parley and the fake provider, so their CPU time is counted as the bench's own
  results.otherCpuShare = others();
  results.seconds = (Date.now() - Date.parse(results.date)) / 1000;

  const rows = buildRows(results);
  results.rows = rows;
  results.notes = notesOf(results);
  const lines = header(results);
  const text = [...lines, '', textTable(rows), ...(results.notes.length ? ['', ...results.notes.map((n) => `note: ${n}`)] : [])].join('\n');
  const markdown = [
    '# Parley bench: latest results',
    '',
    'Written by `npm run bench`; how to read it: [docs/bench.md](../../docs/bench.md).',
    '',
    ...lines.map((l) => `${l}  `),
    '',
    markdownTable(rows),
    ...(results.notes.length ? ['', ...results.notes.map((n) => `- ${n}`)] : []),
    '',
  ].join('\n');

  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(path.join(resultsDir, 'latest.md'), markdown);
  process.stdout.write(`\n${text}\n\nwritten to bench/results/latest.json and latest.md\n`);
  if (settings.profile) process.stdout.write(`CPU profile of the loaded Parley (open in Chrome DevTools): ${profileDir}\n`);
}

try {
  await main();
} catch (error) {
  // The bench reports and never fails a build: say what went wrong, exit 0.
  log(`could not complete: ${error.stack ?? error.message}`);
} finally {
  await Promise.all([...running].map((server) => server.stop()));
  rmSync(scratch, { recursive: true, force: true });
}
