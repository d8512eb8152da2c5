import autocannon from 'autocannon';

/**
 * One load run, in its own process (started by load.js on the load generator's
 * CPU). Argument: JSON `{ url, connections, duration, method, headers, body }`.
 * Prints one JSON line: throughput of 2xx answers, latency percentiles computed
 * exactly from every 2xx answer (autocannon's own histogram has 1 ms resolution,
 * too coarse for sub-millisecond answers), error counts, and this process's CPU time.
 */
const options = JSON.parse(process.argv[2]);
const latencies = [];

const instance = autocannon({
  url: options.url,
  connections: options.connections,
  duration: options.duration,
  method: options.method,
  headers: options.headers,
  body: options.body,
});
instance.on('response', (_client, statusCode, _bytes, responseTime) => {
  if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
});
const result = await instance;
const cpu = process.cpuUsage(); // the whole process, start-up included

const sorted = Float64Array.from(latencies).sort();
const at = (fraction) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] : NaN);

process.stdout.write(
  `${JSON.stringify({
    durationSeconds: result.duration,
    ok: sorted.length,
    rps: sorted.length / result.duration,
    latencyMs: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted.length ? sorted[sorted.length - 1] : NaN },
    non2xx: result.non2xx,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, { count }]) => [code, Number(count)])),
    errors: result.errors,
    timeouts: result.timeouts,
    generatorCpuSeconds: (cpu.user + cpu.system) / 1e6,
  })}\n`,
);
