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
 * How much a chunk's score for the words as asked (unstemmed) adds to its score for their stems,
 * and how many times k chunks found by stem are ranked so. Stemming finds `interactive` for
 * `interact` and `version` for `versions`; among the chunks it finds, the ones with the asked
 * form are usually the ones meant. Measured (docs/retrieval.md § Numbers): on the passage sets
 * of bench/scenarios/retrieval-recall.js weights 0.4 to 0.75 found the most passages, but above
 * 0.2 the real-document set of retrieval-documents.js lost documents (paraphrased questions);
 * 0.2 keeps every document found there and finds more passages on both. Pools of 2 to 8 times
 * k ranked alike.
 */
export const ASKED_FORM_WEIGHT = 0.2;
export const ASKED_FORM_CANDIDATES = 2;

/** Text as the embedded index's unstemmed tokenizer reads it (unicode61, remove_diacritics 2): lower case, no accents. */
export const folded = (text: string) => (/[^\x00-\x7f]/.test(text) ? text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase() : text.toLowerCase());

/** BM25's IDF as FTS5 computes it: never below 1e-6, so a word in over half the chunks still counts a little. */
export const bm25Idf = (chunks: number, containing: number) => Math.max(1e-6, Math.log((chunks - containing + 0.5) / (containing + 0.5)));

/**
 * Each chunk's BM25 (FTS5's k1 1.2, b 0.75) for the asked words, over its indexed text and
 * title, given each folded word's IDF (its letters and digits only, as `queryWords` gives them).
 * Lengths, in characters, are normalised by the chunks' own average: these are a search's few
 * best, scored against each other.
 */
export function askedFormScores(chunks: { text: string; title: string }[], idf: Map<string, number>): number[] {
  const counted = chunks.map((chunk) => {
    const text = folded(`${indexedText(chunk.text)}\n${chunk.title}`);
    const frequencies = new Map<string, number>();
    for (const word of idf.keys()) {
      const f = occurrences(text, word);
      if (f > 0) frequencies.set(word, f);
    }
    return { frequencies, length: text.length };
  });
  const average = counted.reduce((sum, chunk) => sum + chunk.length, 0) / counted.length || 1;
  return counted.map(({ frequencies, length }) => {
    let score = 0;
    for (const [word, f] of frequencies) score += (idf.get(word)! * (f * 2.2)) / (f + 1.2 * (0.25 + (0.75 * length) / average));
    return score;
  });
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const isWordCharacter = (text: string, at: number) => {
  const code = text.charCodeAt(at);
  if (Number.isNaN(code)) return false;
  if (code < 128) return (code >= 97 && code <= 122) || (code >= 48 && code <= 57) || (code >= 65 && code <= 90);
  return LETTER_OR_DIGIT.test(String.fromCodePoint(text.codePointAt(at) ?? code));
};

/**
 * How often `word` is in `text` with no letter or digit on either side: a token of the
 * tokenizer. Searched with indexOf, as a regular expression per query would be compiled per query.
 */
function occurrences(text: string, word: string): number {
  let count = 0;
  for (let at = text.indexOf(word); at !== -1; at = text.indexOf(word, at + word.length)) {
    if (!isWordCharacter(text, at - 1) && !isWordCharacter(text, at + word.length)) count++;
  }
  return count;
}

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
  // The quick test first: most chunks have no such break.
  if (!/-[ \t]*\r?\n/.test(text)) return text;
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
