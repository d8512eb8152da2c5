import { median, percentile, row } from '../lib/report.js';

const MEMORIES = 10_000;
const PER_REQUEST = 100;
const QUERIES = 200;
const NAME = `memory query over ${MEMORIES.toLocaleString('en-US')} memories`;
/** What a user asks, as the chat's memory step would send it: some words match a tenth of the memories, one matches all. */
const QUESTIONS = ['what does the user prefer about hiking?', 'any garden plans this week', 'which books about travel', 'cooking item 700'];

const TOPICS = ['cooking', 'hiking', 'music', 'travel', 'work', 'family', 'books', 'garden', 'fitness', 'cars'];

/** A memory as people keep them: a sentence filed under a topic path. */
function memory(i) {
  const topic = TOPICS[i % TOPICS.length];
  return { action: 'add', content: `Fact ${i} about ${topic}: prefers option ${i % 97} and mentioned item ${i * 7} last week`, path: `${topic}/${i % 13}` };
}

/**
 * Memory lookup (issue 19): `POST /api/v1/memories/query` ranks one user's
 * 10,000 memories by relevance through the retrieval store (BM25 here: no
 * embedding engine is configured), the lookup the chat's memory context makes
 * on every turn with memory on. 200 queries one after another: p50, p99 and
 * Parley's CPU per query. (Not a rate comparison: the floor would answer a
 * stored payload without ranking anything.)
 */
export default {
  name: NAME,
  async setup(ctx) {
    const admin = await ctx.admin();
    await ctx.repeat(
      MEMORIES / PER_REQUEST,
      (batch) => ctx.post('/api/v1/memories/update', { operations: Array.from({ length: PER_REQUEST }, (_, j) => memory(batch * PER_REQUEST + j)) }, { token: admin.token }),
      { concurrency: 4 },
    );
    return { token: admin.token };
  },
  async measure(ctx, { token }) {
    const latencies = [];
    const cpuBefore = ctx.parley.cpuSeconds();
    for (let i = 0; i < QUERIES; i++) {
      const started = performance.now();
      const res = await ctx.call('POST', '/api/v1/memories/query', { content: QUESTIONS[i % QUESTIONS.length], k: 3 }, { token });
      if (res.status !== 200) throw new Error(`memory query: HTTP ${res.status}`);
      latencies.push(performance.now() - started);
    }
    const cpuSeconds = ctx.parley.cpuSeconds() - cpuBefore;
    const rows = [
      row({ figure: `${NAME}: p50`, parley: median(latencies), unit: 'ms' }),
      row({ figure: `${NAME}: p99`, parley: percentile(latencies, 0.99), unit: 'ms' }),
      row({ figure: `${NAME}: Parley CPU per query`, parley: (cpuSeconds / QUERIES) * 1e6, unit: 'micros' }),
    ];
    return { rows, details: { memories: MEMORIES, queries: QUERIES, latencies } };
  },
};
