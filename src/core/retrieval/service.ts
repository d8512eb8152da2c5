import { createHash } from 'node:crypto';
import type { SettingsStore } from '../../config/settings.js';
import { readBody, type UpstreamClient } from '../upstream/client.js';
import { type Chunk, chunkDocuments } from './chunking.js';
import { currentEmbedder, type Embedder, type EmbeddingOptions } from './embeddings.js';
import type { IndexOptions, QueryOptions, Retrieval, RetrievalDocument, RetrievedChunk } from './retrieval.js';
import {
  CHUNK_MIN_SIZE_TARGET,
  CHUNK_OVERLAP,
  CHUNK_SIZE,
  ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER,
  ENABLE_RAG_HYBRID_SEARCH,
  HYBRID_BM25_WEIGHT,
  RAG_EMBEDDING_ENGINE,
  RAG_EMBEDDING_MODEL,
  RAG_EXTERNAL_RERANKER_API_KEY,
  RAG_EXTERNAL_RERANKER_TIMEOUT,
  RAG_EXTERNAL_RERANKER_URL,
  RAG_RERANKING_ENGINE,
  RAG_RERANKING_MODEL,
  RELEVANCE_THRESHOLD,
  TEXT_SPLITTER,
  TIKTOKEN_ENCODING_NAME,
  TOP_K,
  TOP_K_RERANKER,
} from './settings.js';
import { type ChunkStore, cosine, documentTitle, type FoundChunk } from './store.js';

/** What a route may ask of one query beyond `k` (the reference's QueryDocForm). */
export interface SearchOptions extends QueryOptions {
  kReranker?: number;
  /** Relevance threshold of hybrid search. */
  threshold?: number;
  hybrid?: boolean;
  bm25Weight?: number;
}

/** Weighted reciprocal rank fusion, as LangChain's EnsembleRetriever (c = 60). */
const RRF_C = 60;

/** BM25 scores are unbounded; this maps them into 0..1 keeping their order. */
const boundedScore = (bm25: number) => (bm25 > 0 ? bm25 / (bm25 + 1) : 0);

const textHash = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The reference's merge_and_sort_query_results: one entry per distinct text (its best
 * score), best first, the first `k`.
 */
function mergeAndSort(found: RetrievedChunk[], k: number): RetrievedChunk[] {
  const best = new Map<string, RetrievedChunk>();
  for (const chunk of found) {
    const key = textHash(chunk.text);
    const seen = best.get(key);
    if (!seen || chunk.score > seen.score) best.set(key, chunk);
  }
  return [...best.values()].sort((a, b) => b.score - a.score).slice(0, k);
}

/**
 * What a chunk is under, for the lexical index: its document's title (a web page's) or name
 * (a file's, without its extension), then the Markdown headings above it. A passage rarely
 * repeats the words of its section's heading or its document's name, and questions use them.
 */
const titleOf = (chunk: Chunk) => [documentTitle(chunk.metadata), ...chunk.headings].filter(Boolean).join('\n');

const retrieved = (chunk: FoundChunk, score: number): RetrievedChunk => ({ collection: chunk.collection, text: chunk.text, metadata: chunk.metadata, score });

export class RetrievalService implements Retrieval {
  constructor(
    private readonly settings: SettingsStore,
    private readonly client: UpstreamClient,
    private readonly store: ChunkStore,
    private readonly embedding: EmbeddingOptions,
  ) {}

  /** The embedder of the current settings, or null: lexical retrieval only. */
  embedder(): Embedder | null {
    return currentEmbedder(this.settings, this.client, this.embedding);
  }

  /** The chunks `index` stores, each with the title it is under. */
  chunk(documents: RetrievalDocument[], options: IndexOptions = {}): Required<Omit<RetrievalDocument, 'outline'>>[] {
    if (options.whole) {
      return documents
        .filter((document) => document.text.trim() !== '')
        .map((document) => ({ text: document.text, metadata: { ...document.metadata }, title: document.title ?? documentTitle(document.metadata) }));
    }
    return chunkDocuments(documents, {
      splitter: this.settings.get(TEXT_SPLITTER) === 'token' ? 'token' : 'character',
      chunkSize: this.settings.get(CHUNK_SIZE),
      chunkOverlap: this.settings.get(CHUNK_OVERLAP),
      markdownHeaders: this.settings.get(ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER),
      minSizeTarget: this.settings.get(CHUNK_MIN_SIZE_TARGET),
      encoding: this.settings.get(TIKTOKEN_ENCODING_NAME),
    }).map((chunk) => ({ text: chunk.text, metadata: chunk.metadata, title: titleOf(chunk) }));
  }

  async index(collection: string, documents: RetrievalDocument[], options: IndexOptions = {}): Promise<{ chunks: number }> {
    const chunks = this.chunk(documents, options);
    const embedder = this.embedder();
    // The reference embeds chunk texts with their line breaks turned into spaces.
    const vectors = embedder && chunks.length > 0 ? { space: embedder.space, vectors: await embedder.embed(chunks.map((c) => c.text.replaceAll('\n', ' ')), 'content') } : null;
    const fileIdOf = (metadata: Record<string, unknown>) => (typeof metadata.file_id === 'string' ? metadata.file_id : null);
    // Every chunk names the engine and model that embedded it, as the reference's do.
    const embeddingConfig = { engine: this.settings.get(RAG_EMBEDDING_ENGINE), model: this.settings.get(RAG_EMBEDDING_MODEL) };
    await this.store.insert(
      collection,
      chunks.map((chunk) => ({ text: chunk.text, metadata: { ...chunk.metadata, embedding_config: embeddingConfig }, fileId: fileIdOf(chunk.metadata), title: chunk.title })),
      vectors,
      options.replaceFileId,
    );
    return { chunks: chunks.length };
  }

  removeFile(collection: string, fileId: string): Promise<void> {
    return this.store.removeFile(collection, fileId);
  }

  dropCollections(collections: string[]): Promise<void> {
    return this.store.drop(collections);
  }

  hasCollection(collection: string): Promise<boolean> {
    return this.store.has(collection);
  }

  /** Every chunk of every collection (the reference's reset/db). */
  reset(): Promise<void> {
    return this.store.clear();
  }

  async documents(collection: string): Promise<RetrievalDocument[]> {
    return (await this.store.chunks(collection)).map((chunk) => ({ text: chunk.text, metadata: chunk.metadata, title: chunk.title }));
  }

  async query(collections: string[], queries: string[], options: SearchOptions = {}): Promise<RetrievedChunk[]> {
    const asked = queries.filter((q) => q.trim() !== '');
    const names = [...new Set(collections)].filter(Boolean);
    if (asked.length === 0 || names.length === 0) return [];
    const k = options.k ?? this.settings.get(TOP_K);
    const embedder = this.embedder();
    const found: RetrievedChunk[] = [];
    // Twice k from each search: identical texts (one file twice in a knowledge base) count once in mergeAndSort.
    const fetched = 2 * k;
    if (!embedder) {
      for (const query of asked) for (const collection of names) for (const chunk of await this.store.lexical(collection, query, fetched)) found.push(retrieved(chunk, boundedScore(chunk.score)));
      return mergeAndSort(found, k);
    }
    const queryVectors = await embedder.embed(asked, 'query');
    const hybrid = options.hybrid ?? this.settings.get(ENABLE_RAG_HYBRID_SEARCH);
    for (const [i, query] of asked.entries()) {
      for (const collection of names) {
        if (hybrid) found.push(...(await this.hybrid(collection, query, queryVectors[i]!, embedder.space, k, options)));
        else for (const chunk of await this.store.nearest(collection, embedder.space, queryVectors[i]!, fetched)) found.push(retrieved(chunk, chunk.score));
      }
    }
    return mergeAndSort(found, k);
  }

  /** The reference's query_doc_with_hybrid_search: BM25 and vector results fused, then reranked, thresholded and cut. */
  private async hybrid(collection: string, query: string, vector: Float32Array, space: string, k: number, options: SearchOptions): Promise<RetrievedChunk[]> {
    const weight = options.bm25Weight ?? this.settings.get(HYBRID_BM25_WEIGHT);
    const kReranker = options.kReranker ?? this.settings.get(TOP_K_RERANKER);
    const threshold = options.threshold ?? this.settings.get(RELEVANCE_THRESHOLD);
    const lists: { weight: number; chunks: FoundChunk[] }[] = [];
    if (weight > 0) lists.push({ weight: weight >= 1 ? 1 : weight, chunks: await this.store.lexical(collection, query, k) });
    if (weight < 1) lists.push({ weight: weight <= 0 ? 1 : 1 - weight, chunks: await this.store.nearest(collection, space, vector, k) });
    const fused = new Map<string, { chunk: FoundChunk; score: number }>();
    for (const list of lists) {
      list.chunks.forEach((chunk, rank) => {
        const key = textHash(chunk.text);
        const entry = fused.get(key) ?? { chunk, score: 0 };
        entry.score += list.weight / (rank + 1 + RRF_C);
        fused.set(key, entry);
      });
    }
    const candidates = [...fused.values()].sort((a, b) => b.score - a.score).map((entry) => entry.chunk);
    if (candidates.length === 0) return [];
    const scores = (await this.rerank(query, candidates)) ?? (await this.similarities(candidates, space, vector));
    let ranked = candidates
      .map((chunk, i) => retrieved(chunk, scores[i]!))
      .filter((chunk) => !threshold || chunk.score >= threshold)
      .sort((a, b) => b.score - a.score)
      .slice(0, kReranker);
    if (k < kReranker) ranked = ranked.slice(0, k);
    return ranked;
  }

  /** Cosine similarity of the query with each candidate's stored vector (what the reference computes without a reranker). */
  private async similarities(candidates: FoundChunk[], space: string, vector: Float32Array): Promise<number[]> {
    const vectors = await this.store.vectorsOf(candidates.map((c) => c.id), space);
    return candidates.map((chunk) => {
      const stored = vectors.get(chunk.id);
      return stored ? cosine(stored, vector) : 0;
    });
  }

  /**
   * Scores from the external reranker (RAG_RERANKING_ENGINE 'external'): POST {model, query,
   * documents, top_n} to RAG_EXTERNAL_RERANKER_URL, answered {results: [{index, relevance_score}]}.
   * Null when none is configured or it fails (the reference then ranks by similarity).
   */
  private async rerank(query: string, candidates: FoundChunk[]): Promise<number[] | null> {
    const url = this.settings.get(RAG_EXTERNAL_RERANKER_URL);
    if (this.settings.get(RAG_RERANKING_ENGINE) !== 'external' || !url) return null;
    const seconds = Number.parseFloat(this.settings.get(RAG_EXTERNAL_RERANKER_TIMEOUT));
    try {
      const response = await this.client.send({
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.settings.get(RAG_EXTERNAL_RERANKER_API_KEY)}` },
        body: JSON.stringify({ model: this.settings.get(RAG_RERANKING_MODEL) || 'reranker', query, documents: candidates.map((c) => c.text), top_n: candidates.length }),
        timeoutMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : this.embedding.timeoutMs,
      });
      const answer = (await readBody(this.client, response)) as { results?: { index: number; relevance_score: number }[] } | null;
      if (response.status >= 400 || !Array.isArray(answer?.results)) return null;
      const scores = candidates.map(() => 0);
      for (const result of answer.results) if (Number.isInteger(result?.index) && result.index >= 0 && result.index < scores.length && Number.isFinite(result.relevance_score)) scores[result.index] = result.relevance_score;
      return scores;
    } catch {
      return null;
    }
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
