/**
 * Where chunks live: their text and metadata, the lexical index over them, and their vectors,
 * one vector space per embedding model (and dimension count), so a query only ever meets
 * vectors of the model that embedded it. Implementations: SQLite (sqlite-store.ts: FTS5 and
 * sqlite-vec in DATA_DIR/vector_db/retrieval.db) and PostgreSQL (postgres-store.ts: a
 * tsvector column, and pgvector or real[] vectors).
 */
export interface NewChunk {
  text: string;
  metadata: Record<string, unknown>;
  fileId: string | null;
}

export interface StoredChunk {
  id: number;
  collection: string;
  text: string;
  metadata: Record<string, unknown>;
}

/** A chunk row as both stores read it: the metadata still JSON text, the id a number or (PostgreSQL bigint) its text. */
export interface RawChunk {
  id: number | string;
  collection: string;
  text: string;
  metadata: string;
}

export function toStored(row: RawChunk): StoredChunk {
  return { id: Number(row.id), collection: row.collection, text: row.text, metadata: JSON.parse(row.metadata) as Record<string, unknown> };
}

/** A chunk found by a search: `score` higher is better (BM25, or cosine similarity). */
export interface FoundChunk extends StoredChunk {
  score: number;
}

export interface ChunkVectors {
  space: string;
  vectors: Float32Array[];
}

export interface ChunkStore {
  /** Stores the chunks (and their vectors, one per chunk) in one transaction; `replaceFileId`'s chunks go first. */
  insert(collection: string, chunks: NewChunk[], vectors: ChunkVectors | null, replaceFileId?: string): Promise<void>;
  removeFile(collection: string, fileId: string): Promise<void>;
  drop(collections: string[]): Promise<void>;
  /** Every chunk of every collection (reset). */
  clear(): Promise<void>;
  /** Whether the collection holds any chunk. */
  has(collection: string): Promise<boolean>;
  /** A collection's chunks in insertion order. */
  chunks(collection: string): Promise<StoredChunk[]>;
  /** The best `k` chunks of a collection for the words of `query` (BM25 or the dialect's rank). */
  lexical(collection: string, query: string, k: number): Promise<FoundChunk[]>;
  /** The `k` chunks of a collection nearest `vector` in `space` (cosine similarity). */
  nearest(collection: string, space: string, vector: Float32Array, k: number): Promise<FoundChunk[]>;
  /** The vectors in `space` of these chunks (those without one are missing). */
  vectorsOf(ids: number[], space: string): Promise<Map<number, Float32Array>>;
  close(): Promise<void>;
}

/** The words of a query, for the lexical index: letters and digits only (never operators). */
export function queryWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, 64);
}

export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
