import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { machineCpuSeconds, pinning, spawnNode } from './processes.js';

const worker = fileURLToPath(new URL('./load-worker.js', import.meta.url));

/**
 * Loads `server` with `request` for `seconds` at `connections` from a separate
 * autocannon process. Besides the worker's figures it reports:
 * - `serverCpuShare`: the server's CPU seconds per second. Near 1 on its pinned core
 *   means the server was the limit; well below means something else was (the load
 *   generator, or other work on the machine) and the rate understates the server.
 * - `serverCpuMicrosPerRequest`: the server's CPU time per answer, which, unlike the
 *   rate, hardly changes when other work competes for the core.
 * - `otherCpuShare`: cores' worth of CPU used meanwhile by processes other than the
 *   server and the load generator.
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
  result.serverCpuMicrosPerRequest = (serverCpu / (result.ok + result.non2xx)) * 1e6;
  result.otherCpuShare = Math.max(0, machineAfter.busy - machineBefore.busy - serverCpu - result.generatorCpuSeconds) / wallSeconds;
  result.stealShare = (machineAfter.steal - machineBefore.steal) / wallSeconds;
  return result;
}
