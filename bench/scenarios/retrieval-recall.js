import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { row } from '../lib/report.js';
import { bundledRetrieval, startFakeEmbeddings } from './retrieval.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const DOCUMENTS = path.join(root, 'node_modules', 'fastify', 'docs', 'Reference');
const SET = JSON.parse(readFileSync(path.join(root, 'bench', 'scenarios', 'retrieval-recall.json'), 'utf8'));
const K = 5;
const TARGET = 0.9;

const collapsed = (text) => text.replace(/\s+/g, ' ');

/**
 * Retrieval quality (issue 17, "Numbers": recall@5 of the embedded default): Fastify's reference
 * documentation (21 Markdown documents, node_modules/fastify/docs/Reference, pinned by the lock
 * file) indexed with the default settings (Markdown-header splitting, 1,000 characters, overlap
 * 100) into one collection, and the questions of retrieval-recall.json (beside this file), written by hand,
 * each with its document and a sentence of the answer. A question counts when one of the K
 * chunks retrieved is from its document and holds the sentence. BM25 only (no engine), then with
 * the fake embeddings of the retrieval scenario (hashed bags of words: no semantics) by vectors
 * only and hybrid. The held-out set decides; this one is written by the authors.
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
    const collection = 'recall-fastify';
    const figures = {};
    try {
      const names = [...new Set(SET.questions.map((q) => q.document))];
      const documents = (await import('node:fs')).readdirSync(DOCUMENTS).filter((name) => name.endsWith('.md'));
      for (const name of names) if (!documents.includes(name)) throw new Error(`recall set: ${name} is not in ${DOCUMENTS}`);
      let chunks = 0;
      for (const name of documents) {
        const text = readFileSync(path.join(DOCUMENTS, name), 'utf8');
        chunks += (await retrieval.index(collection, [{ text, metadata: { file_id: name, name, source: name } }])).chunks;
      }
      const recall = async (engine, hybrid) => {
        values.set(s.RAG_EMBEDDING_ENGINE.key, engine);
        values.set(s.ENABLE_RAG_HYBRID_SEARCH.key, hybrid);
        const misses = [];
        for (const { question, document, answer } of SET.questions) {
          const found = await retrieval.query([collection], [question], { k: K });
          if (!found.some((chunk) => chunk.metadata.name === document && collapsed(chunk.text).includes(collapsed(answer)))) misses.push(question);
        }
        return { recall: 1 - misses.length / SET.questions.length, misses };
      };
      figures.documents = documents.length;
      figures.chunks = chunks;
      figures.questions = SET.questions.length;
      figures.bm25 = await recall('', false);
      figures.vectors = await recall('openai', false);
      figures.hybrid = await recall('openai', true);
    } finally {
      await retrieval.close();
      await client.close();
      await fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    const target = `≥ ${TARGET}`;
    const check = (share) => share >= TARGET;
    const label = `${figures.questions} questions, ${figures.documents} documents, ${figures.chunks} chunks`;
    const rows = [
      row({ figure: `retrieval recall@${K} (${label}), BM25 (no engine)`, parley: figures.bm25.recall, unit: 'fraction', target, check }),
      row({ figure: `retrieval recall@${K}, vectors of the fake embeddings`, parley: figures.vectors.recall, unit: 'fraction' }),
      row({ figure: `retrieval recall@${K}, hybrid (fake embeddings + BM25)`, parley: figures.hybrid.recall, unit: 'fraction', target, check }),
    ];
    return { rows, details: figures };
  },
};
