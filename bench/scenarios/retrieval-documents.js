import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { row } from '../lib/report.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CORPUS = path.join(root, 'bench', 'corpus', 'rag-corpus', 'docs');
const SET = path.join(root, 'bench', 'scenarios', 'documents', 'questions.json');
const K = 5;
const TARGET = 0.9;

const TYPES = { md: 'text/markdown', txt: 'text/plain', pdf: 'application/pdf', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' };
const collapsed = (text) => text.replace(/\s+/g, ' ');

async function upload(ctx, token, name) {
  const form = new FormData();
  form.append('file', new Blob([readFileSync(path.join(CORPUS, name))], { type: TYPES[path.extname(name).slice(1)] ?? 'application/octet-stream' }), name);
  const response = await fetch(`${ctx.url}/api/v1/files/`, { method: 'POST', body: form, headers: { authorization: `Bearer ${token}` } });
  const body = await response.json();
  if (response.status !== 200) throw new Error(`uploading ${name} answered ${response.status}: ${JSON.stringify(body).slice(0, 200)}`);
  for (const deadline = Date.now() + 120_000; ; ) {
    const { status, error } = await ctx.get(`/api/v1/files/${body.id}/process/status`, { token });
    if (status === 'completed') return body.id;
    if (status !== 'pending') throw new Error(`${name} ended ${status}: ${error}`);
    if (Date.now() > deadline) throw new Error(`${name} still pending after 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Recall of the embedded default on real documents (issue 17, "Numbers"), as a user gets it: the
 * 40 documents of the shared corpus (bench/corpus/rag-corpus: Markdown, text, PDF and DOCX of nine
 * projects, several on overlapping topics) uploaded over HTTP, extracted by the files queue, added
 * to one knowledge base with the default settings (no embedding engine: BM25), and questions
 * (bench/scenarios/documents/questions.json, written by hand by someone who had not seen the retrieval
 * code: half in the passage's own words, half paraphrased) asked through
 * `POST /api/v1/retrieval/query/collection` with k = 5. A question counts when one of the five
 * chunks is from its document (the held-out set's measure); the share whose five also hold the
 * answer's phrase is reported beside it.
 */
export default {
  name: 'retrieval-documents',
  async setup(ctx) {
    if (!existsSync(SET) || !existsSync(CORPUS)) return null;
    const { token } = await ctx.admin();
    const fileIds = [];
    for (const name of readdirSync(CORPUS).sort()) fileIds.push(await upload(ctx, token, name));
    const knowledge = await ctx.post('/api/v1/knowledge/create', { name: 'Real documents', description: 'bench' }, { token });
    await ctx.post(`/api/v1/knowledge/${knowledge.id}/files/batch/add`, fileIds.map((file_id) => ({ file_id })), { token });
    return { token, collection: knowledge.id, documents: fileIds.length };
  },
  async measure(ctx, prepared) {
    if (!prepared) return { rows: [], details: { skipped: 'no question set or corpus' } };
    const { token, collection, documents } = prepared;
    const { questions } = JSON.parse(readFileSync(SET, 'utf8'));
    const results = [];
    for (const { question, document, kind, answer } of questions) {
      const found = await ctx.post('/api/v1/retrieval/query/collection', { collection_names: [collection], query: question, k: K }, { token });
      const names = found.metadatas[0].map((metadata) => metadata.name);
      const passage = found.documents[0].some((text, i) => names[i] === document && collapsed(text).includes(collapsed(answer)));
      results.push({ question, document, kind, hit: names.includes(document), passage, found: names });
    }
    const share = (list, key = 'hit') => list.filter((result) => result[key]).length / Math.max(1, list.length);
    const ofKind = (kind) => results.filter((result) => result.kind === kind);
    const target = `≥ ${TARGET}`;
    const rows = [
      row({ figure: `retrieval recall@${K}, real documents (${questions.length} questions, ${documents} files), BM25: document found`, parley: share(results), unit: 'fraction', target, check: (value) => value >= TARGET }),
      row({ figure: '  questions in the passage’s own words', parley: share(ofKind('verbatim')), unit: 'fraction' }),
      row({ figure: '  paraphrased questions', parley: share(ofKind('paraphrase')), unit: 'fraction' }),
      row({ figure: '  passage found (its phrase in the five)', parley: share(results, 'passage'), unit: 'fraction' }),
    ];
    return { rows, details: { misses: results.filter((result) => !result.hit) } };
  },
};
