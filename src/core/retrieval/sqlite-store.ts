import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { chunks as slices } from '../db/batches.js';
import { SignIndex } from './sign-index.js';
import type { ChunkStore, ChunkVectors, FoundChunk, NewChunk, RawChunk, TitledChunk } from './store.js';
import { ASKED_FORM_CANDIDATES, ASKED_FORM_WEIGHT, askedFormScores, bm25Idf, cosine, documentTitle, folded, indexedText, queryWords, TITLE_WEIGHT, toStored } from './store.js';

/**
 * The embedded chunk store: one SQLite file of its own, DATA_DIR/vector_db/retrieval.db (the
 * reference keeps its vectors under DATA_DIR/vector_db too). Its own file because indexing a
 * large document writes for a while, and SQLite has one writer per file: in webui.db that would
 * hold up every chat write; and because its virtual tables need the sqlite-vec extension, which
 * no other reader of webui.db loads.
 *
 * - `chunk`: text, metadata (JSON), collection and file id;
 * - `chunk_fts`: FTS5 (contentless, rowid = chunk id) over the text and the title it is under
 *   (its document's, its headings: TITLE_WEIGHT), plus a `tag` column holding one token per
 *   collection, so a search matches inside its collection in the index itself;
 * - `chunk_exact`: the words of the text and title without stemming, documents only (no
 *   positions): how many chunks hold a word in the form asked, to rank the chunks `chunk_fts`
 *   found by their stems (ASKED_FORM_WEIGHT);
 * - per vector space (model and dimensions) `n`: `chunk_vector_<n>`, each chunk's vector (float32
 *   BLOB, key = chunk id), and `chunk_bits_<n>`, a sqlite-vec vec0 table of the vectors' signs (one
 *   bit per dimension), partitioned by collection.
 *
 * A vector search takes the CANDIDATES whose bits best agree with the query's values (a scan of
 * 48 bytes a chunk for 384 dimensions, not 1,536; see sign-index.ts), then ranks those by exact cosine similarity over
 * their float vectors: exact for a collection of up to CANDIDATES chunks, and for larger ones the
 * binary quantization with rescoring sqlite-vec documents (docs/retrieval.md § Numbers). The scan
 * runs over a copy of the collection's bits in memory (sign-index.ts), read from `chunk_bits_<n>`
 * at the collection's first search and kept up to date by this store's writes: one process
 * writes retrieval.db, the one Parley instance of the data directory.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS chunk (
  id INTEGER PRIMARY KEY,
  collection TEXT NOT NULL,
  file_id TEXT,
  text TEXT NOT NULL,
  metadata TEXT NOT NULL,
  title TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunk_collection_idx ON chunk (collection, id);
CREATE INDEX IF NOT EXISTS chunk_file_idx ON chunk (collection, file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts USING fts5(text, title, tag, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_exact USING fts5(words, content='', contentless_delete=1, detail=none, tokenize='unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS vector_space (
  id INTEGER PRIMARY KEY,
  space TEXT NOT NULL,
  dimensions INTEGER NOT NULL,
  UNIQUE (space, dimensions)
);
`;

/** One FTS token per collection name (names carry '-' and other separators the tokenizer splits on). */
export const tagOf = (collection: string) => `c${createHash('sha256').update(collection).digest('hex').slice(0, 32)}`;

/** A store this large leaves out the words of more than a tenth of its chunks (see weightedWords). */
const LARGE_STORE = 10_000;

/** Chunks a vector search ranks exactly, at least (see above). */
const CANDIDATES = 200;

/** Sign bits of a vector, padded to whole bytes (sqlite-vec's `bit[n]` wants n a multiple of 8). */
function signBits(vector: Float32Array): Uint8Array {
  const bits = new Uint8Array(Math.ceil(vector.length / 8));
  for (let i = 0; i < vector.length; i++) if (vector[i]! > 0) bits[i >> 3]! |= 1 << (7 - (i & 7));
  return bits;
}

const asBlob = (vector: Float32Array) => Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
const fromBlob = (blob: Buffer) => new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength));

/** Ids bound per statement (each deletion binds them once). */
const IDS_PER_STATEMENT = 500;

/** Chunks whose sign bits are kept in memory at most (52 bytes each at 384 dimensions): the least recently searched collections go first. */
const SIGN_INDEX_CHUNKS = 2_000_000;

/** Words whose chunk counts are remembered between writes, at most. */
const FREQUENCIES_KEPT = 10_000;

/** A chunk found by the stemmed index, with the title it was indexed under (scored again by byAskedForms). */
type LexicalHit = FoundChunk & { title: string };

interface Space {
  id: number;
  dimensions: number;
}

export class SqliteChunkStore implements ChunkStore {
  private readonly db: SQLite.Database;
  private readonly spaces = new Map<string, Space>();
  /** Chunks in the file, kept as they are written (FTS5's BM25 statistics are over all of them). */
  private total = 0;
  /** Chunks per collection, as counted at a search since the last deletion. */
  private readonly sizes = new Map<string, number>();
  /** Chunks matching a word (at most the cap it was counted with), since the last write. */
  private readonly frequencies = new Map<string, { chunks: number; capped: boolean }>();
  /** Chunks holding a word in the form asked (`chunk_exact`), since the last write. */
  private readonly formFrequencies = new Map<string, number>();
  /** Sign bits per vector space and collection (`<space id>\n<collection>`), most recently searched last. */
  private readonly signIndexes = new Map<string, SignIndex>();
  /** SQLite's `data_version` when the above was last known to match the file. */
  private seenVersion = 0;

  constructor(dataDir: string) {
    const folder = path.join(dataDir, 'vector_db');
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const file = path.join(folder, 'retrieval.db');
    this.db = new SQLite(file);
    if (existsSync(file)) chmodSync(file, 0o600);
    sqliteVec.load(this.db);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    const hadExactIndex = this.tableExists('chunk_exact');
    this.db.exec(SCHEMA);
    this.addTitles();
    if (!hadExactIndex) this.addExactIndex();
    // Each word's chunk count (fts5vocab reads it from the index); temp: it belongs to this connection only.
    this.db.exec("CREATE VIRTUAL TABLE temp.chunk_exact_terms USING fts5vocab(main, chunk_exact, 'row')");
    this.catchUp();
  }

  /**
   * A file written before chunks had titles (chunks of text and metadata, an FTS5 table of text
   * and tag): each chunk gets its document's name as its title, and the index is built again
   * with it (headings come back with a reindex). The schema above runs first, so `chunk_fts`
   * exists; only the old one lacks `title`.
   */
  private addTitles(): void {
    const columns = (table: string) => this.db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[];
    if (columns('chunk_fts').includes('title')) return;
    this.db.transaction(() => {
      if (!columns('chunk').includes('title')) this.db.exec("ALTER TABLE chunk ADD COLUMN title TEXT NOT NULL DEFAULT ''");
      this.db.exec('DROP TABLE chunk_fts');
      this.db.exec(SCHEMA);
      const setTitle = this.db.prepare('UPDATE chunk SET title = ? WHERE id = ?');
      const insertText = this.db.prepare('INSERT INTO chunk_fts (rowid, text, title, tag) VALUES (?, ?, ?, ?)');
      const page = this.db.prepare('SELECT id, collection, text, metadata FROM chunk WHERE id > ? ORDER BY id LIMIT 1000');
      for (let rows = page.all(0) as RawChunk[]; rows.length > 0; rows = page.all(rows.at(-1)!.id) as RawChunk[]) {
        for (const row of rows) {
          const title = documentTitle(toStored(row).metadata);
          setTitle.run(title, row.id);
          insertText.run(row.id, indexedText(row.text), title, tagOf(row.collection));
        }
      }
    })();
  }

  private tableExists(name: string): boolean {
    return this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
  }

  /** A file written before `chunk_exact`: its chunks are indexed in it (a new or empty file has none). */
  private addExactIndex(): void {
    this.db.transaction(() => {
      const insertExact = this.db.prepare('INSERT INTO chunk_exact (rowid, words) VALUES (?, ?)');
      const page = this.db.prepare('SELECT id, text, title FROM chunk WHERE id > ? ORDER BY id LIMIT 1000');
      type Row = { id: number; text: string; title: string };
      for (let rows = page.all(0) as Row[]; rows.length > 0; rows = page.all(rows.at(-1)!.id) as Row[]) {
        for (const row of rows) insertExact.run(row.id, `${indexedText(row.text)}\n${row.title}`);
      }
    })();
  }

  /**
   * Another process writing the same file (a second instance on one data folder) leaves what this
   * one keeps in memory stale. SQLite's `data_version` moves only with other connections' commits:
   * when it has, everything kept is read again.
   */
  private catchUp(): void {
    const version = this.db.pragma('data_version', { simple: true }) as number;
    if (version === this.seenVersion) return;
    this.seenVersion = version;
    this.forget();
    this.total = this.db.prepare('SELECT count(*) FROM chunk').pluck().get() as number;
    this.spaces.clear();
    for (const row of this.db.prepare('SELECT id, space, dimensions FROM vector_space').all() as { id: number; space: string; dimensions: number }[]) {
      this.spaces.set(`${row.space}\n${row.dimensions}`, { id: row.id, dimensions: row.dimensions });
    }
  }

  private spaceFor(space: string, dimensions: number, create: boolean): Space | null {
    const key = `${space}\n${dimensions}`;
    const known = this.spaces.get(key);
    if (known || !create) return known ?? null;
    const id = Number(this.db.prepare('INSERT INTO vector_space (space, dimensions) VALUES (?, ?)').run(space, dimensions).lastInsertRowid);
    this.db.exec(`CREATE TABLE chunk_vector_${id} (id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)`);
    this.db.exec(`CREATE VIRTUAL TABLE chunk_bits_${id} USING vec0(collection text partition key, bits bit[${Math.ceil(dimensions / 8) * 8}])`);
    const created = { id, dimensions };
    this.spaces.set(key, created);
    return created;
  }

  private deleteChunks(ids: number[]): void {
    if (ids.length === 0) return;
    this.sizes.clear();
    this.forgetCounts();
    const removed = new Set(ids);
    for (const index of this.signIndexes.values()) index.remove(removed);
    for (const batch of slices(ids, IDS_PER_STATEMENT)) {
      const marks = batch.map(() => '?').join(',');
      this.total -= this.db.prepare(`DELETE FROM chunk WHERE id IN (${marks})`).run(...batch).changes;
      this.db.prepare(`DELETE FROM chunk_fts WHERE rowid IN (${marks})`).run(...batch);
      this.db.prepare(`DELETE FROM chunk_exact WHERE rowid IN (${marks})`).run(...batch);
      for (const space of this.spaces.values()) {
        this.db.prepare(`DELETE FROM chunk_vector_${space.id} WHERE id IN (${marks})`).run(...batch);
        this.db.prepare(`DELETE FROM chunk_bits_${space.id} WHERE rowid IN (${marks})`).run(...batch.map(BigInt));
      }
    }
  }

  private idsWhere(where: string, ...params: unknown[]): number[] {
    return (this.db.prepare(`SELECT id FROM chunk WHERE ${where}`).pluck().all(...params) as number[]);
  }

  /** Runs `work` in one transaction; if it fails, what is kept in memory of the file is read again. */
  private write(work: () => void): void {
    this.catchUp();
    try {
      this.db.transaction(work)();
    } catch (error) {
      this.forget();
      this.total = this.db.prepare('SELECT count(*) FROM chunk').pluck().get() as number;
      throw error;
    }
  }

  private forget(): void {
    this.sizes.clear();
    this.forgetCounts();
    this.signIndexes.clear();
  }

  private forgetCounts(): void {
    this.frequencies.clear();
    this.formFrequencies.clear();
  }

  async insert(collection: string, chunks: NewChunk[], vectors: ChunkVectors | null, replaceFileId?: string): Promise<void> {
    this.write(() => {
      if (replaceFileId !== undefined) this.deleteChunks(this.idsWhere('collection = ? AND file_id = ?', collection, replaceFileId));
      const space = vectors && vectors.vectors.length > 0 ? this.spaceFor(vectors.space, vectors.vectors[0]!.length, true) : null;
      const insertChunk = this.db.prepare('INSERT INTO chunk (collection, file_id, text, metadata, title) VALUES (?, ?, ?, ?, ?)');
      const insertText = this.db.prepare('INSERT INTO chunk_fts (rowid, text, title, tag) VALUES (?, ?, ?, ?)');
      const insertExact = this.db.prepare('INSERT INTO chunk_exact (rowid, words) VALUES (?, ?)');
      const insertVector = space ? this.db.prepare(`INSERT INTO chunk_vector_${space.id} (id, embedding) VALUES (?, ?)`) : null;
      const insertBits = space ? this.db.prepare(`INSERT INTO chunk_bits_${space.id} (rowid, collection, bits) VALUES (?, ?, vec_bit(?))`) : null;
      const tag = tagOf(collection);
      const signIndex = space ? this.signIndexes.get(`${space.id}\n${collection}`) : undefined;
      const size = this.sizes.get(collection);
      if (size !== undefined) this.sizes.set(collection, size + chunks.length);
      if (chunks.length > 0) this.forgetCounts();
      chunks.forEach((chunk, index) => {
        const id = insertChunk.run(collection, chunk.fileId, chunk.text, JSON.stringify(chunk.metadata), chunk.title).lastInsertRowid;
        const text = indexedText(chunk.text);
        insertText.run(id, text, chunk.title, tag);
        insertExact.run(id, `${text}\n${chunk.title}`);
        this.total++;
        if (insertVector && insertBits) {
          const vector = vectors!.vectors[index]!;
          const bits = signBits(vector);
          insertVector.run(id, asBlob(vector));
          insertBits.run(BigInt(id), collection, bits);
          signIndex?.add(Number(id), bits);
        }
      });
    });
  }

  async removeFile(collection: string, fileId: string): Promise<void> {
    this.write(() => this.deleteChunks(this.idsWhere('collection = ? AND file_id = ?', collection, fileId)));
  }

  async drop(collections: string[]): Promise<void> {
    this.write(() => {
      for (const collection of collections) this.deleteChunks(this.idsWhere('collection = ?', collection));
    });
  }

  async clear(): Promise<void> {
    this.write(() => {
      this.db.exec('DELETE FROM chunk; DELETE FROM chunk_fts; DELETE FROM chunk_exact;');
      this.total = 0;
      for (const space of this.spaces.values()) this.db.exec(`DROP TABLE chunk_vector_${space.id}; DROP TABLE chunk_bits_${space.id};`);
      this.db.exec('DELETE FROM vector_space');
    });
    this.spaces.clear();
    this.forget();
  }

  async has(collection: string): Promise<boolean> {
    return this.db.prepare('SELECT 1 FROM chunk WHERE collection = ? LIMIT 1').get(collection) !== undefined;
  }

  async chunks(collection: string): Promise<TitledChunk[]> {
    const rows = this.db.prepare('SELECT id, collection, text, metadata, title FROM chunk WHERE collection = ? ORDER BY id').all(collection) as (RawChunk & { title: string })[];
    return rows.map((row) => ({ ...toStored(row), title: row.title }));
  }

  async lexical(collection: string, query: string, k: number): Promise<FoundChunk[]> {
    this.catchUp();
    const words = queryWords(query);
    const weighted = this.weightedWords(words);
    const candidates = ASKED_FORM_CANDIDATES * k;
    const found = this.matching(collection, weighted, candidates);
    // The words left out may be the only ones a small collection holds (in a store of a few
    // chunks every word is "in over half"): fewer than k found, all words are matched.
    if (found.length < k && weighted.length < words.length) return this.byAskedForms(this.matching(collection, words, candidates), words, k);
    return this.byAskedForms(found, weighted, k);
  }

  /** The best `k` of chunks found by stem, each scored up by its BM25 for the words as asked (ASKED_FORM_WEIGHT). */
  private byAskedForms(found: LexicalHit[], words: string[], k: number): FoundChunk[] {
    const idf = new Map(words.map(folded).map((word) => [word, bm25Idf(this.total, this.chunksHolding(word))]));
    const asked = askedFormScores(found, idf);
    return found
      .map(({ title: _title, ...chunk }, i) => ({ ...chunk, score: chunk.score + ASKED_FORM_WEIGHT * asked[i]! }))
      .sort((a, b) => b.score - a.score)
      .slice(0, k);
  }

  /** Chunks holding `word` as it is (fts5vocab reads the count from the unstemmed index, walking the word's chunks). */
  private chunksHolding(word: string): number {
    let chunks = this.formFrequencies.get(word);
    if (chunks === undefined) {
      chunks = (this.db.prepare('SELECT doc FROM temp.chunk_exact_terms WHERE term = ?').pluck().get(word) as number | undefined) ?? 0;
      if (this.formFrequencies.size >= FREQUENCIES_KEPT) this.formFrequencies.clear();
      this.formFrequencies.set(word, chunks);
    }
    return chunks;
  }

  private matching(collection: string, words: string[], k: number): LexicalHit[] {
    if (words.length === 0) return [];
    const text = `{text title} : (${words.map((word) => `"${word}"`).join(' OR ')})`;
    // Matching the collection's tag walks its whole doclist (FTS5's BM25 counts every phrase's
    // chunks): for a collection that is most of the store, the best chunks of the whole store are
    // ranked instead and the collection's kept, which is the same ranking (the tag column weighs
    // nothing) unless too few of them are the collection's.
    if (this.sizeOf(collection) * 2 > this.total) {
      const limit = 4 * k;
      const found = this.ranked(text, limit);
      const own = found.filter((chunk) => chunk.collection === collection);
      if (own.length >= k || found.length < limit) return this.read(own.slice(0, k));
    }
    return this.read(this.ranked(`tag : ${tagOf(collection)} AND ${text}`, k));
  }

  /** The best `limit` chunks by BM25 over the text column for an FTS5 query: their ids, collections and scores. */
  private ranked(match: string, limit: number): { id: number; collection: string; score: number }[] {
    return this.db
      .prepare(
        // bm25() ordered by SQLite measured a third faster than FTS5's `rank` column at 100,000 chunks (same scores).
        `SELECT c.id, c.collection, -f.bm25 AS score
         FROM (SELECT rowid, bm25(chunk_fts, 1.0, ${TITLE_WEIGHT}, 0.0) AS bm25 FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY bm25 LIMIT ?) f
         JOIN chunk c ON c.id = f.rowid ORDER BY f.bm25`,
      )
      .all(match, limit) as { id: number; collection: string; score: number }[];
  }

  /** The found chunks' text, metadata and title, in their order. */
  private read(found: { id: number; score: number }[]): LexicalHit[] {
    if (found.length === 0) return [];
    const rows = this.db.prepare(`SELECT id, collection, text, metadata, title FROM chunk WHERE id IN (${found.map(() => '?').join(',')})`).all(...found.map((chunk) => chunk.id)) as (RawChunk & { title: string })[];
    const byId = new Map(rows.map((row) => [Number(row.id), row]));
    return found.flatMap(({ id, score }) => {
      const row = byId.get(id);
      return row ? [{ ...toStored(row), title: row.title, score }] : [];
    });
  }

  private sizeOf(collection: string): number {
    let size = this.sizes.get(collection);
    if (size === undefined) {
      size = this.db.prepare('SELECT count(*) FROM chunk WHERE collection = ?').pluck().get(collection) as number;
      this.sizes.set(collection, size);
    }
    return size;
  }

  /**
   * The words worth matching: FTS5's BM25 gives a word in more than half of all chunks an IDF of
   * 1e-6, so it changes no ranking, yet matching it means scoring most of the table. Such words
   * are left out (all of them only when nothing else is left: then the rarest one is kept). In a
   * large store (LARGE_STORE chunks) words in more than a tenth of the chunks are left out too:
   * their IDF is at most ln 9 (a rare word's is 7 or more), and a search that finds fewer than k
   * chunks without them runs again with every word (`lexical`). A word's chunks are counted
   * through the index as a search matches it (its stem), and only up to that share unless every
   * word passes it.
   */
  private weightedWords(words: string[]): string[] {
    if (words.length === 0) return words;
    const cap = Math.floor(this.total * (this.total >= LARGE_STORE ? 0.1 : 0.5));
    const weighted = words.filter((word) => this.chunksMatching(word, cap) <= cap);
    if (weighted.length > 0) return weighted;
    const counted = words.map((word) => ({ word, chunks: this.chunksMatching(word, Infinity) }));
    return [counted.sort((a, b) => a.chunks - b.chunks)[0]!.word];
  }

  /** Chunks matching `word`, counted up to `cap` + 1. */
  private chunksMatching(word: string, cap: number): number {
    const known = this.frequencies.get(word);
    // A count stopped at an earlier cap says only that the word is in more chunks than that.
    if (known && (!known.capped || known.chunks > cap)) return known.chunks;
    const limit = Number.isFinite(cap) ? cap + 1 : -1;
    const chunks = this.db.prepare('SELECT count(*) FROM (SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? LIMIT ?)').pluck().get(`text : "${word}"`, limit) as number;
    if (this.frequencies.size >= FREQUENCIES_KEPT) this.frequencies.clear();
    this.frequencies.set(word, { chunks, capped: chunks === limit });
    return chunks;
  }

  async nearest(collection: string, space: string, vector: Float32Array, k: number): Promise<FoundChunk[]> {
    this.catchUp();
    const found = this.spaceFor(space, vector.length, false);
    if (!found) return [];
    const count = Math.max(CANDIDATES, 10 * k);
    // A collection of no more chunks than that is ranked whole, without keeping its bits in memory.
    const vectors =
      this.sizeOf(collection) <= count
        ? this.collectionVectors(found.id, collection)
        : this.vectorsIn(found.id, this.signIndexOf(found, collection).nearest(vector, count));
    const best = [...vectors].map(([id, stored]) => ({ id, score: cosine(stored, vector) })).sort((a, b) => b.score - a.score).slice(0, k);
    if (best.length === 0) return [];
    const rows = this.db.prepare(`SELECT id, collection, text, metadata FROM chunk WHERE id IN (${best.map(() => '?').join(',')})`).all(...best.map((b) => b.id)) as RawChunk[];
    const byId = new Map(rows.map((row) => [row.id, toStored(row)]));
    return best.flatMap((b) => {
      const chunk = byId.get(b.id);
      return chunk ? [{ ...chunk, score: b.score }] : [];
    });
  }

  /** The collection's sign bits in the space, read at its first search (see SIGN_INDEX_CHUNKS). */
  private signIndexOf(space: Space, collection: string): SignIndex {
    const key = `${space.id}\n${collection}`;
    let index = this.signIndexes.get(key);
    if (index) {
      this.signIndexes.delete(key);
    } else {
      index = new SignIndex(space.dimensions);
      for (const [id, bits] of this.db.prepare(`SELECT rowid, bits FROM chunk_bits_${space.id} WHERE collection = ?`).raw().all(collection) as [number, Buffer][]) index.add(id, bits);
      let kept = index.length;
      for (const other of this.signIndexes.values()) kept += other.length;
      for (const [otherKey, other] of this.signIndexes) {
        if (kept <= SIGN_INDEX_CHUNKS) break;
        kept -= other.length;
        this.signIndexes.delete(otherKey);
      }
    }
    this.signIndexes.set(key, index);
    return index;
  }

  private collectionVectors(spaceId: number, collection: string): Map<number, Float32Array> {
    const rows = this.db.prepare(`SELECT v.id, v.embedding FROM chunk c JOIN chunk_vector_${spaceId} v ON v.id = c.id WHERE c.collection = ?`).raw().all(collection) as [number, Buffer][];
    return new Map(rows.map(([id, embedding]) => [id, fromBlob(embedding)]));
  }

  private vectorsIn(spaceId: number, ids: number[]): Map<number, Float32Array> {
    const vectors = new Map<number, Float32Array>();
    for (const batch of slices(ids, IDS_PER_STATEMENT)) {
      const rows = this.db.prepare(`SELECT id, embedding FROM chunk_vector_${spaceId} WHERE id IN (${batch.map(() => '?').join(',')})`).all(...batch) as { id: number; embedding: Buffer }[];
      for (const row of rows) vectors.set(row.id, fromBlob(row.embedding));
    }
    return vectors;
  }

  async vectorsOf(ids: number[], space: string): Promise<Map<number, Float32Array>> {
    const vectors = new Map<number, Float32Array>();
    for (const [key, found] of this.spaces) if (key.startsWith(`${space}\n`)) for (const [id, vector] of this.vectorsIn(found.id, ids)) vectors.set(id, vector);
    return vectors;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
