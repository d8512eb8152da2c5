import { modelId, streamPrompt } from '../lib/fake-upstream.js';
import { median, percentile, row } from '../lib/report.js';
import { keepAliveAgent, streamChat } from '../lib/stream-client.js';

const REQUESTS = 400; // per path, after WARMUP
const WARMUP = 50;
const TARGET_EXTRA_MS = 2;

/**
 * Time to the first streamed chunk through Parley against straight to the fake
 * provider (issue 6: at most 2 ms more, median). One client, one keep-alive
 * connection per path, requests one at a time, the paths taking turns in every
 * round so that drift falls on all of them; each answer is 3 chunks, read to its
 * end. Parley's CPU time is read around every request (10 ms ticks, so only
 * the sum over all of them means something): unlike the times, it hardly moves
 * when other work competes for the cores. The target is on the proxy, `/openai/chat/completions`; the chat
 * pipeline's API mode, `/api/chat/completions`, is shown beside it.
 */
export default {
  name: 'first streamed chunk',
  async setup(ctx) {
    const [{ token }, upstream] = await Promise.all([ctx.admin(), ctx.upstream()]);
    return { token, upstream };
  },
  async measure(ctx, { token, upstream }) {
    const body = { model: modelId(0), stream: true, messages: [{ role: 'user', content: streamPrompt(3) }] };
    const paths = [
      { key: 'direct', url: `${upstream.url}/chat/completions`, headers: { authorization: 'Bearer sk-bench' } },
      { key: 'openai', url: `${ctx.url}/openai/chat/completions`, headers: { authorization: `Bearer ${token}` } },
      { key: 'api', url: `${ctx.url}/api/chat/completions`, headers: { authorization: `Bearer ${token}` } },
    ].map((path) => ({ ...path, agent: keepAliveAgent(1), times: [], failures: [], parleyCpuSeconds: 0 }));

    for (let i = 0; i < WARMUP + REQUESTS; i++) {
      for (let j = 0; j < paths.length; j++) {
        const path = paths[(i + j) % paths.length];
        const cpuBefore = ctx.parley.cpuSeconds();
        const result = await streamChat(path.url, body, path);
        if (i >= WARMUP) path.parleyCpuSeconds += ctx.parley.cpuSeconds() - cpuBefore;
        if (result.error || result.deltas !== 3 || !result.done) path.failures.push(result.error ?? `${result.deltas} of 3 chunks${result.done ? '' : ', no [DONE]'}`);
        else if (i >= WARMUP) path.times.push(result.firstChunkMs);
      }
    }
    for (const path of paths) path.agent.destroy();

    const [direct, openai, api] = paths;
    const invalid = (path) => (path.failures.length ? `${path.failures.length} failed (${path.failures[0]})` : direct.failures.length ? `${direct.failures.length} direct failed` : null);
    const rows = [];
    for (const [path, label, target] of [
      [openai, '/openai/chat/completions', true],
      [api, '/api/chat/completions (API mode)', false],
    ]) {
      const through = median(path.times);
      const straight = median(direct.times);
      rows.push(
        row({
          figure: `first streamed chunk, ${label}: median`,
          parley: through,
          floor: straight,
          unit: 'ms',
          ...(target ? { target: `≤ floor + ${TARGET_EXTRA_MS} ms`, check: (ms) => ms - straight <= TARGET_EXTRA_MS } : {}),
          invalid: invalid(path),
        }),
        row({ figure: `first streamed chunk, ${label}: p90`, parley: percentile(path.times, 0.9), floor: percentile(direct.times, 0.9), unit: 'ms' }),
        row({ figure: `first streamed chunk, ${label}: Parley CPU per request`, parley: (path.parleyCpuSeconds / REQUESTS) * 1e6, unit: 'micros' }),
      );
    }
    const summary = (path) => ({
      requests: path.times.length,
      failures: path.failures.length,
      parleyCpuMicrosPerRequest: (path.parleyCpuSeconds / REQUESTS) * 1e6,
      firstFailure: path.failures[0] ?? null,
      ms: { min: Math.min(...path.times), p10: percentile(path.times, 0.1), p50: median(path.times), p90: percentile(path.times, 0.9), p99: percentile(path.times, 0.99) },
    });
    return { rows, details: { warmup: WARMUP, direct: summary(direct), openai: summary(openai), api: summary(api) } };
  },
};
