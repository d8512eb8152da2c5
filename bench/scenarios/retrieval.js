import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, percentile, row } from '../lib/report.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const DIMENSIONS = 384; // all-MiniLM-L6-v2's, the reference's default model
const QUERIES = 300; // timed per figure, after WARMUP
const WARMUP = 30;
const CHUNKS_PER_DOCUMENT = 20;
const TARGET_P50_MS = 10;

/**
 * Retrieval (issue 17, "Numbers"): the embedded default (SQLite: FTS5 and sqlite-vec in
 * DATA_DIR/vector_db/retrieval.db) as bundled from src/, in the bench's own process, its
 * embeddings from a fake OpenAI-style provider in the same process (hashed bags of words,
 * 384 dimensions). One knowledge-base collection filled with generated documents of about 20
 * chunks (CHUNK_SIZE 1000, overlap 100) from a 5,000-word vocabulary with Zipf frequencies:
 * query p50/p95 when it holds 10,000 and 100,000 chunks, BM25 only (no engine) and hybrid
 * (vectors + BM25, fused, scored), ingestion chunks per second (chunking, embedding, storing),
 * and the process's resident memory at 100,000 chunks. Target: p50 ≤ 10 ms at 100,000.
 */
export async function bundledRetrieval() {
  const { build } = await import('esbuild');
  const outfile = path.join(root, '.tmp', 'bench', 'retrieval.js');
  const entry = path.join(root, '.tmp', 'bench', 'retrieval-entry.ts');
  const { writeFileSync, mkdirSync } = await import('node:fs');
  mkdirSync(path.dirname(entry), { recursive: true });
  writeFileSync(
    entry,
    [
      `export { RetrievalService } from '${path.join(root, 'src/core/retrieval/service.ts')}';`,
      `export { SqliteChunkStore } from '${path.join(root, 'src/core/retrieval/sqlite-store.ts')}';`,
      `export { UpstreamClient } from '${path.join(root, 'src/core/upstream/client.ts')}';`,
      `export * as settings from '${path.join(root, 'src/core/retrieval/settings.ts')}';`,
    ].join('\n'),
  );
  await build({ entryPoints: [entry], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'warning' });
  return import(pathToFileURL(outfile).href);
}

/** A deterministic pseudo-random generator (mulberry32). */
function random(seed) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VOCABULARY = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}${'aeiou'[i % 5]}${'nrstl'[(i >> 3) % 5]}`);
/** Cumulative Zipf weights over the vocabulary, for sampling words by rank. */
const ZIPF = (() => {
  const weights = VOCABULARY.map((_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  let sum = 0;
  return weights.map((w) => (sum += w / total));
})();
function word(next) {
  const x = next();
  let lo = 0;
  let hi = ZIPF.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ZIPF[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return VOCABULARY[lo];
}
function documentText(next) {
  const sentences = [];
  // About 20 chunks of 1,000 characters (with 100 of overlap).
  let length = 0;
  while (length < CHUNKS_PER_DOCUMENT * 900) {
    const sentence = `${Array.from({ length: 8 + Math.floor(next() * 10) }, () => word(next)).join(' ')}.`;
    sentences.push(sentence);
    length += sentence.length + 1;
  }
  return sentences.join(' ');
}

/** FNV-1a: a cheap hash, so the fake provider costs little of the ingestion figure. */
function fnv(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** A hashed bag of words, centred (each word adds 1 and takes 1/DIMENSIONS from the rest) as real embeddings are. */
export function fakeVector(text) {
  const vector = new Array(DIMENSIONS).fill(0);
  const tokens = text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  for (const token of tokens) vector[fnv(token) % DIMENSIONS] += 1;
  const mean = tokens.length / DIMENSIONS;
  return vector.map((v) => Math.round((v - mean) * 1000) / 1000);
}

export async function startFakeEmbeddings() {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: fakeVector(text) }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data }));
    });
  });
  // Idle longer than the upstream client keeps connections, as a provider behind a load balancer does.
  server.keepAliveTimeout = 65_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

export default {
  name: 'retrieval',
  async measure() {
    const { RetrievalService, SqliteChunkStore, UpstreamClient, settings: s } = await bundledRetrieval();
    const fake = await startFakeEmbeddings();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-retrieval-'));
    // The persistent settings as an administrator would set them.
    const values = new Map([
      [s.RAG_EMBEDDING_ENGINE.key, 'openai'],
      [s.RAG_EMBEDDING_MODEL.key, 'fake-minilm'],
      [s.RAG_OPENAI_API_BASE_URL.key, fake.url],
      [s.RAG_EMBEDDING_BATCH_SIZE.key, 64],
      [s.ENABLE_RAG_HYBRID_SEARCH.key, true],
      [s.ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER.key, false],
      [s.TOP_K.key, 5],
      [s.TOP_K_RERANKER.key, 5],
    ]);
    const settingsStore = { get: (definition) => (values.has(definition.key) ? values.get(definition.key) : definition.default) };
    const client = new UpstreamClient({ connectionsPerOrigin: null });
    const store = new SqliteChunkStore(dataDir);
    const retrieval = new RetrievalService(settingsStore, client, store, { queryPrefix: null, contentPrefix: null, prefixField: null, timeoutMs: 60_000 });
    const next = random(17);
    const collection = 'bench-knowledge';
    let chunks = 0;
    let ingestMs = 0;
    const rssBefore = process.memoryUsage().rss;

    const fill = async (target) => {
      let document = 0;
      const started = performance.now();
      const from = chunks;
      while (chunks < target) {
        const id = `doc-${chunks}-${document++}`;
        const { chunks: stored } = await retrieval.index(collection, [{ text: documentText(next), metadata: { file_id: id, name: `${id}.txt`, source: `${id}.txt` } }]);
        chunks += stored;
      }
      ingestMs += performance.now() - started;
      return { chunks: chunks - from, ms: performance.now() - started };
    };
    /** Query texts: 3 to 6 words of a random chunk's text. */
    const questions = async () => {
      const sample = random(99);
      const out = [];
      for (let i = 0; i < WARMUP + QUERIES; i++) {
        const text = documentText(sample);
        const words = text.split(/\W+/).filter(Boolean);
        const start = Math.floor(sample() * (words.length - 8));
        out.push(words.slice(start, start + 3 + Math.floor(sample() * 4)).join(' '));
      }
      return out;
    };
    const time = async (hybrid) => {
      values.set(s.RAG_EMBEDDING_ENGINE.key, hybrid ? 'openai' : '');
      const times = [];
      let found = 0;
      for (const [i, question] of (await questions()).entries()) {
        const started = performance.now();
        const result = await retrieval.query([collection], [question]);
        if (i >= WARMUP) times.push(performance.now() - started);
        if (result.length > 0) found++;
      }
      values.set(s.RAG_EMBEDDING_ENGINE.key, 'openai');
      return { p50: median(times), p95: percentile(times, 0.95), found };
    };

    const figures = {};
    try {
      await fill(10_000);
      figures.at10k = { bm25: await time(false), hybrid: await time(true), chunks };
      const rest = await fill(100_000);
      figures.at100k = { bm25: await time(false), hybrid: await time(true), chunks };
      figures.ingest = { chunks, ms: ingestMs, chunksPerSecond: (chunks / ingestMs) * 1000, lastBatch: rest };
      figures.rss = { before: rssBefore, at100k: process.memoryUsage().rss };
    } finally {
      await retrieval.close();
      await client.close();
      await fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    const target = `≤ ${TARGET_P50_MS} ms`;
    const check = (ms) => ms <= TARGET_P50_MS;
    const rows = [];
    for (const [label, at] of [['10,000', figures.at10k], ['100,000', figures.at100k]]) {
      for (const kind of ['bm25', 'hybrid']) {
        const name = kind === 'bm25' ? 'BM25 (no engine)' : 'hybrid (vectors + BM25)';
        rows.push(row({ figure: `retrieval query at ${label} chunks, ${name}: p50`, parley: at[kind].p50, unit: 'ms', ...(label === '100,000' ? { target, check } : {}) }));
        rows.push(row({ figure: `retrieval query at ${label} chunks, ${name}: p95`, parley: at[kind].p95, unit: 'ms' }));
      }
    }
    rows.push(row({ figure: 'retrieval ingestion (chunk, embed by the fake, store): chunks per second', parley: figures.ingest.chunksPerSecond, unit: 'count' }));
    rows.push(row({ figure: 'retrieval: RSS of the bench process at 100,000 chunks', parley: figures.rss.at100k, unit: 'megabytes' }));
    return { rows, details: { dimensions: DIMENSIONS, queries: QUERIES, ...figures } };
  },
};
