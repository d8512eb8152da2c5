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
  /** What the chunk is under (its document's title, its headings): indexed with the text, weighed apart, not returned. */
  title: string;
}

export interface StoredChunk {
  id: number;
  collection: string;
  text: string;
  metadata: Record<string, unknown>;
}

/** A stored chunk with the title it is under (`chunks`: what a copy of it is indexed with). */
export interface TitledChunk extends StoredChunk {
  title: string;
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
  /** A collection's chunks in insertion order, with their titles. */
  chunks(collection: string): Promise<TitledChunk[]>;
  /** The best `k` chunks of a collection for the words of `query` (BM25 or the dialect's rank). */
  lexical(collection: string, query: string, k: number): Promise<FoundChunk[]>;
  /** The `k` chunks of a collection nearest `vector` in `space` (cosine similarity). */
  nearest(collection: string, space: string, vector: Float32Array, k: number): Promise<FoundChunk[]>;
  /** The vectors in `space` of these chunks (those without one are missing). */
  vectorsOf(ids: number[], space: string): Promise<Map<number, Float32Array>>;
  close(): Promise<void>;
}

/**
 * How much a word of the title a chunk is under counts in the lexical rank, against one of its
 * text (FTS5 column weight; ts_rank label weight). Measured with the recall sets of
 * bench/scenarios/retrieval-recall.js (docs/retrieval.md): 0.5, 1, 2 and 3 were tried.
 */
export const TITLE_WEIGHT = 1;

/**
 * A document's title for the lexical index: its stated title (a web page's, a PDF's info), and
 * its name without the extension (a file's; a PDF's stated title is often a tool's placeholder).
 */
export function documentTitle(metadata: Record<string, unknown>): string {
  const { title, name } = metadata;
  const titles = [typeof title === 'string' ? title.trim() : '', typeof name === 'string' ? name.replace(/\.[\p{L}\p{N}]{1,8}$/u, '').trim() : ''];
  return [...new Set(titles.filter(Boolean))].join('\n');
}

/**
 * The text the embedded lexical index reads for a chunk: the text, then the words a line break
 * split with a hyphen (`transmis-⏎sion`), joined, so a search for the word finds them (PDFs of
 * justified, hyphenated text). The chunk's stored text is left as it was extracted.
 */
export function indexedText(text: string): string {
  const joined = [...text.matchAll(/(\p{L}+)-[ \t]*\r?\n\s*(\p{Ll}+)/gu)].map((match) => match[1]! + match[2]!);
  return joined.length > 0 ? `${text}\n${joined.join(' ')}` : text;
}

/**
 * English function words a question is phrased with (articles, pronouns, prepositions,
 * auxiliaries, question words). In a small collection their IDF is not low enough to keep a
 * chunk full of them from outranking the one with the asked-about words. Negations and
 * quantifiers (not, no, only, all, ...) stay: they change what is asked. Measured against
 * fuller lists (NLTK's, the npm package `stopword`'s, Lucene's) on the recall sets of
 * bench/scenarios/retrieval-recall.js: this one ranked best (docs/retrieval.md).
 */
const QUESTION_WORDS = new Set(
  ('a an the and or but if as at by for from in into of on to with about i me my we our you your he him his she her it its they them their ' +
    'this that these those what which who whom whose when where why how am is are was were be been being have has had having do does did doing ' +
    'can could will would shall should may might must').split(' '),
);

/**
 * The words of a query, for the lexical index: letters and digits only (never operators),
 * without the question's function words unless nothing else is left.
 */
export function queryWords(query: string): string[] {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, 64);
  const asked = words.filter((word) => !QUESTION_WORDS.has(word));
  return asked.length > 0 ? asked : words;
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
