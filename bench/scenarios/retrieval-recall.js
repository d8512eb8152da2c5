import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { row } from '../lib/report.js';
import { bundledRetrieval, startFakeEmbeddings } from './retrieval.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SETS = path.join(root, 'bench', 'scenarios', 'recall');
const K = 5;
const TARGET = 0.9;

const collapsed = (text) => text.replace(/\s+/g, ' ');

/** The documents of each corpus, `{ name, text }`; null when this machine lacks them. */
const CORPORA = {
  fastify() {
    const folder = path.join(root, 'node_modules', 'fastify', 'docs', 'Reference');
    return readdirSync(folder)
      .filter((name) => name.endsWith('.md'))
      .map((name) => ({ name, text: readFileSync(path.join(folder, name), 'utf8') }));
  },
  licenses() {
    const names = ['Apache-2.0', 'Artistic', 'GFDL-1.3', 'GPL-2', 'GPL-3', 'LGPL-2.1', 'LGPL-3', 'MPL-2.0', 'CC0-1.0'];
    const folder = '/usr/share/common-licenses';
    if (!names.every((name) => existsSync(path.join(folder, name)))) return null;
    return names.map((name) => ({ name, text: readFileSync(path.join(folder, name), 'utf8') }));
  },
  python() {
    try {
      const topics = JSON.parse(execFileSync('python3', ['-c', 'import json, pydoc_data.topics as t; print(json.dumps(t.topics))'], { maxBuffer: 64 << 20 }).toString());
      return Object.entries(topics).map(([topic, text]) => ({ name: `${topic}.txt`, text }));
    } catch {
      return null;
    }
  },
};

/** A set whose answers are not all in its documents (another Python's topics, say) is left out. */
function loadSet(file) {
  const set = JSON.parse(readFileSync(path.join(SETS, file), 'utf8'));
  const documents = CORPORA[set.corpus]();
  if (!documents) return { set, skipped: 'documents not on this machine' };
  const byName = new Map(documents.map((document) => [document.name, collapsed(document.text)]));
  const stale = set.questions.filter((q) => !byName.get(q.document)?.includes(collapsed(q.answer)));
  if (stale.length > 0) return { set, skipped: `${stale.length} answers not in their documents` };
  return { set, documents };
}

/**
 * Retrieval quality (issue 17, "Numbers": recall@5 of the embedded default). Three corpora, each
 * indexed with the default settings (Markdown-header splitting, 1,000 characters, overlap 100)
 * into a collection of its own, and questions written by hand (bench/scenarios/recall/*.json),
 * each naming its document and a phrase of the answer:
 * - fastify: Fastify's reference documentation (Markdown, node_modules, pinned by the lock file);
 * - licenses: nine licenses of /usr/share/common-licenses (plain text);
 * - python: the Python language reference's topics (pydoc_data, one document per topic).
 * A question counts when one of the K chunks retrieved is from its document and holds the phrase.
 * BM25 only (no engine: the default), then with the fake embeddings of the retrieval scenario
 * (hashed bags of words: no semantics) by vectors only and hybrid. The licenses and python sets
 * were written by someone who had not seen the retrieval code. The issue's held-out set decides.
 */
export default {
  name: 'retrieval-recall',
  async measure() {
    const { RetrievalService, SqliteChunkStore, UpstreamClient, settings: s } = await bundledRetrieval();
    const fake = await startFakeEmbeddings();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-recall-'));
    const values = new Map([
      [s.RAG_EMBEDDING_ENGINE.key, 'openai'],
      [s.RAG_EMBEDDING_MODEL.key, 'fake-minilm'],
      [s.RAG_OPENAI_API_BASE_URL.key, fake.url],
      [s.TOP_K.key, K],
      [s.TOP_K_RERANKER.key, K],
    ]);
    const settingsStore = { get: (definition) => (values.has(definition.key) ? values.get(definition.key) : definition.default) };
    const client = new UpstreamClient({ connectionsPerOrigin: null });
    const retrieval = new RetrievalService(settingsStore, client, new SqliteChunkStore(dataDir), { queryPrefix: null, contentPrefix: null, prefixField: null, timeoutMs: 60_000 });
    const loaded = readdirSync(SETS)
      .filter((file) => file.endsWith('.json'))
      .sort()
      .map(loadSet);
    const sets = loaded.filter((entry) => entry.documents);
    const figures = { skipped: Object.fromEntries(loaded.filter((entry) => entry.skipped).map((entry) => [entry.set.corpus, entry.skipped])), sets: {} };
    const modes = { bm25: ['', false], vectors: ['openai', false], hybrid: ['openai', true] };
    try {
      for (const { set, documents } of sets) {
        let chunks = 0;
        for (const { name, text } of documents) chunks += (await retrieval.index(set.corpus, [{ text, metadata: { file_id: name, name, source: name } }])).chunks;
        const figure = { documents: documents.length, chunks, questions: set.questions.length };
        for (const [mode, [engine, hybrid]] of Object.entries(modes)) {
          values.set(s.RAG_EMBEDDING_ENGINE.key, engine);
          values.set(s.ENABLE_RAG_HYBRID_SEARCH.key, hybrid);
          const misses = [];
          for (const { question, document, answer } of set.questions) {
            const found = await retrieval.query([set.corpus], [question], { k: K });
            if (!found.some((chunk) => chunk.metadata.name === document && collapsed(chunk.text).includes(collapsed(answer)))) misses.push(question);
          }
          figure[mode] = { recall: 1 - misses.length / set.questions.length, misses };
        }
        figures.sets[set.corpus] = figure;
      }
    } finally {
      await retrieval.close();
      await client.close();
      await fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    const all = Object.values(figures.sets);
    const questions = all.reduce((sum, figure) => sum + figure.questions, 0);
    const overall = (mode) => all.reduce((sum, figure) => sum + figure[mode].recall * figure.questions, 0) / questions;
    const target = `≥ ${TARGET}`;
    const check = (share) => share >= TARGET;
    const rows = [
      row({ figure: `retrieval recall@${K} (${questions} questions, ${all.length} corpora), BM25 (no engine)`, parley: overall('bm25'), unit: 'fraction', target, check }),
      ...Object.entries(figures.sets).map(([corpus, figure]) =>
        row({ figure: `  ${corpus} (${figure.questions} questions, ${figure.documents} documents, ${figure.chunks} chunks), BM25`, parley: figure.bm25.recall, unit: 'fraction' }),
      ),
      row({ figure: `retrieval recall@${K}, vectors of the fake embeddings`, parley: overall('vectors'), unit: 'fraction' }),
      row({ figure: `retrieval recall@${K}, hybrid (fake embeddings + BM25)`, parley: overall('hybrid'), unit: 'fraction' }),
    ];
    return { rows, details: figures };
  },
};
