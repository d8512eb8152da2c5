import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * Child processes of the bench: servers (Parley, the floor) and load runs, each
 * pinned to its own CPU when `taskset` exists, so the server under load and the
 * load generator do not share a core.
 */

function hasTaskset() {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const cores = Number(execFileSync('nproc', { encoding: 'utf8' }).trim()) || 1;

/** CPU of the servers, and CPU of the load generator and this orchestrator; null when not pinned. */
export const pinning = hasTaskset() && cores >= 2 ? { server: '0', load: String(cores - 1) } : null;

/** Moves this process (the orchestrator) to the load generator's CPU, away from the servers'. */
export function pinSelf() {
  if (pinning) execFileSync('taskset', ['-p', '-c', pinning.load, String(process.pid)], { stdio: 'ignore' });
}

/** Spawns `node args...` on the given CPU (taskset execs node, so the pid is node's). */
export function spawnNode(args, { cpu, env, cwd, stdio = ['ignore', 'pipe', 'pipe'] }) {
  const command = pinning ? 'taskset' : process.execPath;
  const argv = pinning ? ['-c', cpu, process.execPath, ...args] : args;
  return spawn(command, argv, { env, cwd, stdio });
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function probe(url) {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** Keeps the last few kilobytes a child wrote, to explain a failure. */
function tail(stream, limit = 4096) {
  let text = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk) => {
    text = (text + chunk).slice(-limit);
  });
  return () => text;
}

/**
 * A server process started from `args` (on the servers' CPU unless `cpu` says
 * otherwise); resolves once `GET readyPath` answers 200, with `readyMs` =
 * milliseconds from spawn to that answer and `readyCpuSeconds` = the CPU time the
 * process had used by then (barely affected by other work on the machine).
 */
export async function startServer({ name, args, env, cwd, cpu = pinning?.server, readyPath = '/health', timeoutMs = 30_000 }) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawnNode(args, { cpu, env: { ...env, HOST: '127.0.0.1', PORT: String(port) }, cwd });
  const output = tail(child.stdout);
  const errors = tail(child.stderr);
  let exited = null;
  const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve((exited = { code, signal }))));

  for (;;) {
    if (exited) throw new Error(`${name} exited (${exited.code ?? exited.signal}) before ready:\n${errors() || output()}`);
    if ((await probe(url + readyPath)) === 200) break;
    if (performance.now() - started > timeoutMs) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not answer 200 on ${readyPath} within ${timeoutMs / 1000} s:\n${errors() || output()}`);
    }
    await sleep(5);
  }
  const readyMs = performance.now() - started;
  const readyCpuSeconds = cpuSecondsOf(child.pid);

  const alive = () => {
    if (exited) throw new Error(`${name} exited (${exited.code ?? exited.signal}) while running:\n${errors() || output()}`);
  };
  return {
    name,
    url,
    pid: child.pid,
    readyMs,
    readyCpuSeconds,
    memory: () => (alive(), memoryOf(child.pid)),
    cpuSeconds: () => (alive(), cpuSecondsOf(child.pid)),
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exit;
      clearTimeout(timer);
    },
  };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `process.memoryUsage()` of a server preloaded with ./heap-probe.js, right after
 * a full garbage collection: asks with SIGUSR2 and reads the answer from `file`.
 */
export async function heapAfterGc(pid, file, timeoutMs = 5000) {
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  const started = performance.now();
  while (!existsSync(file)) {
    if (performance.now() - started > timeoutMs) throw new Error(`no heap figures from ${pid} within ${timeoutMs / 1000} s`);
    await sleep(10);
  }
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Resident memory now and at its peak, in bytes, from /proc/<pid>/status. */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** Fields of /proc/<pid>/stat from the 3rd on (after the parenthesised command name). */
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
}

/** User + system CPU seconds the process has used (fields 14 and 15). */
export function cpuSecondsOf(pid) {
  const fields = statFields(pid);
  return (fields[11] + fields[12]) / ticksPerSecond;
}

/** CPU seconds of this process and of its children that have exited (fields 14 to 17). */
export function ownCpuSeconds() {
  const fields = statFields('self');
  return (fields[11] + fields[12] + fields[13] + fields[14]) / ticksPerSecond;
}

/** CPU seconds the whole machine has spent busy (all cores) and lost to the hypervisor (steal), from /proc/stat. */
export function machineCpuSeconds() {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).map(Number);
  return { busy: (user + nice + system + irq + softirq) / ticksPerSecond, steal: steal / ticksPerSecond };
}
