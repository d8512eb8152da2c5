import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { readJson, type RecordedRequest, sendJson } from './fake-upstreams.js';
import { listenLocally } from './server.js';
import type { Fakes } from './world.js';

/**
 * An embedding and reranking provider for retrieval tests, speaking each engine's documented
 * format: OpenAI `POST /embeddings` ({input, model} → {data: [{embedding, index}]}), Azure
 * `POST /openai/deployments/{model}/embeddings?api-version=`, Ollama `POST /api/embed`
 * ({input, model} → {embeddings}), and a Cohere/Jina-style reranker `POST /rerank`
 * ({query, documents} → {results: [{index, relevance_score}]}).
 *
 * Vectors are deterministic hashed bags of words: each word (lower-cased, a plural `s` dropped)
 * adds 1 to a dimension chosen by hashing it with the model name, so texts sharing words are
 * near, and two models' vectors of one text have nothing in common.
 * A model named `*fail*` answers 500; `failing` makes every model fail.
 */
export interface FakeEmbeddings {
  url: string;
  requests: RecordedRequest[];
  /** Every embedding request answers 500 (mutable). */
  failing: boolean;
  close(): Promise<void>;
}

export const FAKE_DIMENSIONS = 256;

export function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((word) => (word.length > 3 && word.endsWith('s') ? word.slice(0, -1) : word));
}

export function fakeVector(model: string, text: string): number[] {
  const vector = new Array<number>(FAKE_DIMENSIONS).fill(0);
  for (const word of words(text)) vector[createHash('sha256').update(`${model}\n${word}`).digest().readUInt32BE(0) % FAKE_DIMENSIONS]! += 1;
  // An empty text still gets a direction, so cosine stays defined.
  if (vector.every((v) => v === 0)) vector[0] = 1;
  return vector;
}

/** The reranker's relevance: the share of the query's words a document contains. */
export function fakeRelevance(query: string, document: string): number {
  const asked = new Set(words(query));
  const present = new Set(words(document));
  return asked.size === 0 ? 0 : [...asked].filter((word) => present.has(word)).length / asked.size;
}

export async function startFakeEmbeddings(): Promise<FakeEmbeddings> {
  const fake = { requests: [] as RecordedRequest[], failing: false } as FakeEmbeddings;
  const server = createServer(async (req, res) => {
    const body = await readJson(req);
    const path = (req.url ?? '').split('?')[0]!;
    fake.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    if (path === '/rerank') {
      const documents: string[] = Array.isArray(body?.documents) ? body.documents : [];
      return sendJson(res, 200, { results: documents.map((document, index) => ({ index, relevance_score: fakeRelevance(String(body?.query ?? ''), document) })).reverse() });
    }
    const azure = /^\/openai\/deployments\/([^/]+)\/embeddings$/.exec(path);
    const model = azure ? decodeURIComponent(azure[1]!) : String(body?.model ?? '');
    if (fake.failing || model.includes('fail')) return sendJson(res, 500, { error: { message: `The embedding model ${model} is unavailable` } });
    const inputs: string[] = Array.isArray(body?.input) ? body.input : [String(body?.input ?? '')];
    const vectors = inputs.map((text) => fakeVector(model, text));
    if (path === '/api/embed') return sendJson(res, 200, { model, embeddings: vectors });
    if (path === '/embeddings' || azure) return sendJson(res, 200, { object: 'list', model, data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })) });
    sendJson(res, 404, { error: 'not found' });
  });
  fake.url = await listenLocally(server);
  fake.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return fake;
}

/** The fake as the server's OpenAI-style embedding engine, with `model`. */
export function fakeEmbeddingEngine(model = 'hash-embed-a'): Fakes<{ embeddings: FakeEmbeddings }> {
  return {
    start: async () => ({ embeddings: await startFakeEmbeddings() }),
    env: ({ embeddings }) => ({ RAG_EMBEDDING_ENGINE: 'openai', RAG_EMBEDDING_MODEL: model, RAG_OPENAI_API_BASE_URL: embeddings.url, RAG_OPENAI_API_KEY: 'sk-embed' }),
  };
}
