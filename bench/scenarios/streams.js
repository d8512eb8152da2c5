import { modelId, streamPrompt } from '../lib/fake-upstream.js';
import { sleep } from '../lib/processes.js';
import { median, row } from '../lib/report.js';
import { keepAliveAgent, streamChat } from '../lib/stream-client.js';

const STREAMS = 200;
const CHUNKS = 100;
const DELAY_MS = 10; // so every answer lasts about a second and all of them overlap
const ROUNDS = 5;
const SETTLE_MS = 1000; // after a round, before reading memory
const FLAT_MB = 2;
const MB = 2 ** 20;
const NAME = `${STREAMS} concurrent streams`;

/** Reads the process's resident memory every `everyMs` until `stop()`, which returns the largest. */
function sampleMemory(server, everyMs = 20) {
  let peak = server.memory().rss;
  const timer = setInterval(() => (peak = Math.max(peak, server.memory().rss)), everyMs);
  return () => (clearInterval(timer), Math.max(peak, server.memory().rss));
}

/**
 * 200 streams at once through `/openai/chat/completions` (issue 6: no errors,
 * flat memory), each 100 chunks 10 ms apart, in rounds; the same rounds straight
 * to the fake provider are the floor. A stream fails on any status but 200, a
 * socket error, a missing chunk or a missing `[DONE]`. Parley's resident memory
 * is read before the first round, every 20 ms during rounds (the peak) and 1 s
 * after each round; then its heap right after a full collection (see
 * ../lib/heap-probe.js): "flat" means the last round left no more reachable
 * memory than the first did, give or take 2 MB. Resident memory alone cannot
 * say: V8 lets garbage pile up over several rounds before a major collection.
 */
export default {
  name: NAME,
  async setup(ctx) {
    const [{ token }, upstream] = await Promise.all([ctx.admin(), ctx.upstream()]);
    return { token, upstream };
  },
  async measure(ctx, { token, upstream }) {
    const body = { model: modelId(0), stream: true, messages: [{ role: 'user', content: streamPrompt(CHUNKS, DELAY_MS) }] };
    const targets = {
      parley: { url: `${ctx.url}/openai/chat/completions`, headers: { authorization: `Bearer ${token}` }, agent: keepAliveAgent() },
      direct: { url: `${upstream.url}/chat/completions`, headers: { authorization: 'Bearer sk-bench' }, agent: keepAliveAgent() },
    };
    const runs = { parley: [], direct: [] };
    const rssBefore = ctx.parley.memory().rss;
    const heapBefore = (await ctx.parley.heapAfterGc()).heapUsed;
    let rssPeak = rssBefore;

    async function round(kind) {
      const cpuBefore = ctx.parley.cpuSeconds();
      const stopSampling = kind === 'parley' ? sampleMemory(ctx.parley) : null;
      const started = performance.now();
      const results = await Promise.all(Array.from({ length: STREAMS }, () => streamChat(targets[kind].url, body, targets[kind])));
      const seconds = (performance.now() - started) / 1000;
      const failures = results
        .map((r) => r.error ?? (r.deltas !== CHUNKS ? `${r.deltas} of ${CHUNKS} chunks` : !r.done ? 'no [DONE]' : null))
        .filter(Boolean);
      const run = { seconds, failures: failures.length, firstFailure: failures[0] ?? null, firstChunkMsMedian: median(results.map((r) => r.firstChunkMs)) };
      if (kind === 'parley') {
        rssPeak = Math.max(rssPeak, stopSampling());
        run.cpuSeconds = ctx.parley.cpuSeconds() - cpuBefore;
        await sleep(SETTLE_MS);
        run.rssAfter = ctx.parley.memory().rss;
        run.heapAfterGc = (await ctx.parley.heapAfterGc()).heapUsed;
      }
      runs[kind].push(run);
    }

    for (let i = 0; i < ROUNDS; i++) {
      for (const kind of i % 2 === 0 ? ['parley', 'direct'] : ['direct', 'parley']) await round(kind);
    }
    for (const target of Object.values(targets)) target.agent.destroy();

    const failed = (kind) => runs[kind].reduce((sum, run) => sum + run.failures, 0);
    const heapFirst = runs.parley[0].heapAfterGc;
    const chunks = STREAMS * CHUNKS;
    const rows = [
      row({
        figure: `${NAME}: failed streams, ${ROUNDS} rounds`,
        parley: failed('parley'),
        floor: failed('direct'),
        unit: 'count',
        target: '0',
        check: (n) => n === 0,
      }),
      row({ figure: `${NAME}: time to all done, median`, parley: median(runs.parley.map((r) => r.seconds)), floor: median(runs.direct.map((r) => r.seconds)), unit: 'seconds' }),
      row({ figure: `${NAME}: Parley CPU per streamed chunk`, parley: median(runs.parley.map((r) => (r.cpuSeconds / chunks) * 1e6)), unit: 'micros' }),
      row({ figure: `${NAME}: Parley RSS before`, parley: rssBefore, unit: 'megabytes' }),
      row({ figure: `${NAME}: Parley RSS peak during`, parley: rssPeak, unit: 'megabytes' }),
      row({ figure: `${NAME}: Parley RSS after`, parley: runs.parley.at(-1).rssAfter, unit: 'megabytes' }),
      row({ figure: `${NAME}: Parley heap after full GC, before`, parley: heapBefore, unit: 'megabytes' }),
      row({ figure: `${NAME}: Parley heap after full GC, round 1`, parley: heapFirst, unit: 'megabytes' }),
      row({
        figure: `${NAME}: Parley heap after full GC, round ${ROUNDS}`,
        parley: runs.parley.at(-1).heapAfterGc,
        unit: 'megabytes',
        target: `flat: ≤ round 1 + ${FLAT_MB} MB`,
        check: (bytes) => bytes - heapFirst <= FLAT_MB * MB,
      }),
    ];
    return { rows, details: { streams: STREAMS, chunks: CHUNKS, delayMs: DELAY_MS, rssBefore, rssPeak, heapBefore, runs } };
  },
};
