import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { machineCpuSeconds, pinning, spawnNode } from './processes.js';

const worker = fileURLToPath(new URL('./load-worker.js', import.meta.url));

/**
 * Loads `server` with `request` for `seconds` at `connections` from a separate
 * autocannon process. Also reports how busy the server was (CPU seconds per
 * second): near 1 on one pinned core means the server was the limit; well below
 * means something else was (the load generator, or other work on the machine),
 * and the figure understates the server. `otherCpuShare` is the CPU (in cores)
 * that processes other than the server and the load generator used meanwhile.
 */
export async function load(server, request, { seconds, connections }) {
  const headers = { ...request.headers };
  let body;
  if (request.body !== undefined) {
    body = typeof request.body === 'string' ? request.body : JSON.stringify(request.body);
    headers['content-type'] ??= 'application/json';
  }
  const options = { url: server.url + request.path, connections, duration: seconds, method: request.method ?? 'GET', headers, body };

  const cpuBefore = server.cpuSeconds();
  const machineBefore = machineCpuSeconds();
  const started = performance.now();
  const child = spawnNode([worker, JSON.stringify(options)], { cpu: pinning?.load, env: process.env });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const code = await new Promise((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`load generator failed (${code}): ${stderr.slice(-2000)}`);
  const wallSeconds = (performance.now() - started) / 1000;
  const machineAfter = machineCpuSeconds();
  const result = JSON.parse(stdout);
  const serverCpu = server.cpuSeconds() - cpuBefore;
  result.serverCpuShare = serverCpu / result.durationSeconds;
  result.otherCpuShare = Math.max(0, machineAfter.busy - machineBefore.busy - serverCpu - result.generatorCpuSeconds) / wallSeconds;
  result.stealShare = (machineAfter.steal - machineBefore.steal) / wallSeconds;
  return result;
}
