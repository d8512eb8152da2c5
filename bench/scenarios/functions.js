import { modelId, streamPrompt } from '../lib/fake-upstream.js';
import { median, percentile, row } from '../lib/report.js';
import { keepAliveAgent, streamChat } from '../lib/stream-client.js';

const CHATS = 100; // per model, after WARMUP
const WARMUP = 20;
const TARGET_FILTER_MS = 3;

const FILTER = `
class Filter:
    def inlet(self, body: dict) -> dict:
        return body

    def outlet(self, body: dict) -> dict:
        return body
`;

const PIPE = `
class Pipe:
    def pipe(self, body: dict):
        return (word for word in ["one ", "two ", "three"])
`;

/**
 * Functions (issue 18, "Numbers"). Filter cost: one chat is `POST
 * /api/chat/completions` (API mode, not streamed) then `POST /api/chat/completed`,
 * on two workspace models over the same provider model, one naming a
 * pass-through filter (inlet + outlet) in `meta.filterIds`, taking turns; the
 * time a filter adds is the difference of the medians (target ≤ 3 ms). Pipe:
 * first streamed chunk of a pipe model whose generator yields 3 chunks, against
 * the fake provider's first chunk reached directly.
 */
export default {
  name: 'functions',
  async setup(ctx) {
    const [{ token }, upstream] = await Promise.all([ctx.admin(), ctx.upstream()]);
    const auth = { token };
    for (const [id, content] of [
      ['bench_filter', FILTER],
      ['bench_pipe', PIPE],
    ]) {
      await ctx.post('/api/v1/functions/create', { id, name: id, content, meta: {} }, auth);
      await ctx.post(`/api/v1/functions/id/${id}/toggle`, undefined, auth);
    }
    for (const [id, filterIds] of [
      ['bench-filtered', ['bench_filter']],
      ['bench-plain', []],
    ]) {
      await ctx.post('/api/v1/models/create', { id, name: id, base_model_id: modelId(0), meta: { filterIds }, params: {} }, auth);
    }
    return { token, upstream };
  },
  async measure(ctx, { token, upstream }) {
    const auth = { token };
    const models = [
      { id: 'bench-filtered', times: [] },
      { id: 'bench-plain', times: [] },
    ];
    for (let i = 0; i < WARMUP + CHATS; i++) {
      for (const model of i % 2 ? [...models].reverse() : models) {
        const started = performance.now();
        const messages = [{ role: 'user', content: streamPrompt(1) }];
        const answer = await ctx.post('/api/chat/completions', { model: model.id, stream: false, messages }, auth);
        await ctx.post('/api/chat/completed', { model: model.id, id: `m${i}`, messages: [...messages, { role: 'assistant', content: answer.choices[0].message.content }] }, auth);
        if (i >= WARMUP) model.times.push(performance.now() - started);
      }
    }
    const [filtered, plain] = models;
    const added = median(filtered.times) - median(plain.times);

    const paths = [
      { key: 'direct', url: `${upstream.url}/chat/completions`, headers: { authorization: 'Bearer sk-bench' }, model: modelId(0) },
      { key: 'pipe', url: `${ctx.url}/api/chat/completions`, headers: { authorization: `Bearer ${token}` }, model: 'bench_pipe' },
    ].map((path) => ({ ...path, agent: keepAliveAgent(1), times: [], failures: [] }));
    for (let i = 0; i < WARMUP + CHATS; i++) {
      for (const path of i % 2 ? [...paths].reverse() : paths) {
        const result = await streamChat(path.url, { model: path.model, stream: true, messages: [{ role: 'user', content: streamPrompt(3) }] }, path);
        if (result.error || result.deltas !== 3) path.failures.push(result.error ?? `${result.deltas} of 3 chunks`);
        else if (i >= WARMUP) path.times.push(result.firstChunkMs);
      }
    }
    for (const path of paths) path.agent.destroy();
    const [direct, pipe] = paths;

    const rows = [
      row({ figure: 'chat with a filter (inlet + outlet): median', parley: median(filtered.times), floor: median(plain.times), unit: 'ms', target: `≤ floor + ${TARGET_FILTER_MS} ms`, check: () => added <= TARGET_FILTER_MS }),
      row({ figure: 'chat with a filter (inlet + outlet): p90', parley: percentile(filtered.times, 0.9), floor: percentile(plain.times, 0.9), unit: 'ms' }),
      row({
        figure: 'first streamed chunk of a pipe model (floor: provider direct): median',
        parley: median(pipe.times),
        floor: median(direct.times),
        unit: 'ms',
        invalid: pipe.failures.length ? `${pipe.failures.length} failed (${pipe.failures[0]})` : null,
      }),
    ];
    return { rows, details: { chats: CHATS, filterAddedMs: added, pipeFailures: pipe.failures.slice(0, 3) } };
  },
};
