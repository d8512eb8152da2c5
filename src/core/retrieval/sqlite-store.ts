import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { chunks as slices } from '../db/batches.js';
import type { ChunkStore, ChunkVectors, FoundChunk, NewChunk, StoredChunk } from './store.js';
import { queryWords } from './store.js';

/**
 * The embedded chunk store: one SQLite file of its own, DATA_DIR/vector_db/retrieval.db (the
 * reference keeps its vectors under DATA_DIR/vector_db too). Its own file because indexing a
 * large document writes for a while, and SQLite has one writer per file: in webui.db that would
 * hold up every chat write; and because its virtual tables need the sqlite-vec extension, which
 * no other reader of webui.db loads.
 *
 * - `chunk`: text, metadata (JSON), collection and file id;
 * - `chunk_fts`: FTS5 (contentless, rowid = chunk id) over the text, plus a `tag` column holding
 *   one token per collection, so a search matches inside its collection in the index itself;
 * - `chunk_vec_<n>`: a sqlite-vec vec0 table per vector space (model and dimensions), cosine
 *   distance, partitioned by collection, rowid = chunk id.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS chunk (
  id INTEGER PRIMARY KEY,
  collection TEXT NOT NULL,
  file_id TEXT,
  text TEXT NOT NULL,
  metadata TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunk_collection_idx ON chunk (collection, id);
CREATE INDEX IF NOT EXISTS chunk_file_idx ON chunk (collection, file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts USING fts5(text, tag, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS vector_space (
  id INTEGER PRIMARY KEY,
  space TEXT NOT NULL,
  dimensions INTEGER NOT NULL,
  UNIQUE (space, dimensions)
);
`;

/** One FTS token per collection name (names carry '-' and other separators the tokenizer splits on). */
const tagOf = (collection: string) => `c${createHash('sha256').update(collection).digest('hex').slice(0, 32)}`;

/** Ids bound per statement (each deletion binds them once). */
const IDS_PER_STATEMENT = 500;

interface Space {
  id: number;
  dimensions: number;
}

export class SqliteChunkStore implements ChunkStore {
  private readonly db: SQLite.Database;
  private readonly spaces = new Map<string, Space>();

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
    this.db.exec(SCHEMA);
    for (const row of this.db.prepare('SELECT id, space, dimensions FROM vector_space').all() as { id: number; space: string; dimensions: number }[]) {
      this.spaces.set(`${row.space}\n${row.dimensions}`, { id: row.id, dimensions: row.dimensions });
    }
  }

  private spaceFor(space: string, dimensions: number, create: boolean): Space | null {
    const key = `${space}\n${dimensions}`;
    const known = this.spaces.get(key);
    if (known || !create) return known ?? null;
    const id = Number(this.db.prepare('INSERT INTO vector_space (space, dimensions) VALUES (?, ?)').run(space, dimensions).lastInsertRowid);
    this.db.exec(`CREATE VIRTUAL TABLE chunk_vec_${id} USING vec0(collection text partition key, embedding float[${dimensions}] distance_metric=cosine)`);
    const created = { id, dimensions };
    this.spaces.set(key, created);
    return created;
  }

  private deleteChunks(ids: number[]): void {
    for (const batch of slices(ids, IDS_PER_STATEMENT)) {
      const marks = batch.map(() => '?').join(',');
      this.db.prepare(`DELETE FROM chunk WHERE id IN (${marks})`).run(...batch);
      this.db.prepare(`DELETE FROM chunk_fts WHERE rowid IN (${marks})`).run(...batch);
      for (const space of this.spaces.values()) this.db.prepare(`DELETE FROM chunk_vec_${space.id} WHERE rowid IN (${marks})`).run(...batch.map(BigInt));
    }
  }

  private idsWhere(where: string, ...params: unknown[]): number[] {
    return (this.db.prepare(`SELECT id FROM chunk WHERE ${where}`).pluck().all(...params) as number[]);
  }

  async insert(collection: string, chunks: NewChunk[], vectors: ChunkVectors | null, replaceFileId?: string): Promise<void> {
    this.db.transaction(() => {
      if (replaceFileId !== undefined) this.deleteChunks(this.idsWhere('collection = ? AND file_id = ?', collection, replaceFileId));
      const space = vectors && vectors.vectors.length > 0 ? this.spaceFor(vectors.space, vectors.vectors[0]!.length, true) : null;
      const insertChunk = this.db.prepare('INSERT INTO chunk (collection, file_id, text, metadata) VALUES (?, ?, ?, ?)');
      const insertText = this.db.prepare('INSERT INTO chunk_fts (rowid, text, tag) VALUES (?, ?, ?)');
      const insertVector = space ? this.db.prepare(`INSERT INTO chunk_vec_${space.id} (rowid, collection, embedding) VALUES (?, ?, ?)`) : null;
      const tag = tagOf(collection);
      chunks.forEach((chunk, index) => {
        const id = insertChunk.run(collection, chunk.fileId, chunk.text, JSON.stringify(chunk.metadata)).lastInsertRowid;
        insertText.run(id, chunk.text, tag);
        insertVector?.run(BigInt(id), collection, vectors!.vectors[index]!);
      });
    })();
  }

  async removeFile(collection: string, fileId: string): Promise<void> {
    this.db.transaction(() => this.deleteChunks(this.idsWhere('collection = ? AND file_id = ?', collection, fileId)))();
  }

  async drop(collections: string[]): Promise<void> {
    this.db.transaction(() => {
      for (const collection of collections) this.deleteChunks(this.idsWhere('collection = ?', collection));
    })();
  }

  async clear(): Promise<void> {
    this.db.transaction(() => {
      this.db.exec('DELETE FROM chunk; DELETE FROM chunk_fts;');
      for (const space of this.spaces.values()) this.db.exec(`DROP TABLE chunk_vec_${space.id}`);
      this.db.exec('DELETE FROM vector_space');
    })();
    this.spaces.clear();
  }

  async has(collection: string): Promise<boolean> {
    return this.db.prepare('SELECT 1 FROM chunk WHERE collection = ? LIMIT 1').get(collection) !== undefined;
  }

  async chunks(collection: string): Promise<StoredChunk[]> {
    const rows = this.db.prepare('SELECT id, collection, text, metadata FROM chunk WHERE collection = ? ORDER BY id').all(collection) as RawChunk[];
    return rows.map(toStored);
  }

  async lexical(collection: string, query: string, k: number): Promise<FoundChunk[]> {
    const words = queryWords(query);
    if (words.length === 0) return [];
    const match = `tag : ${tagOf(collection)} AND text : (${words.map((word) => `"${word}"`).join(' OR ')})`;
    const rows = this.db
      .prepare(
        `SELECT c.id, c.collection, c.text, c.metadata, -f.rank AS score
         FROM (SELECT rowid, rank FROM chunk_fts WHERE chunk_fts MATCH ? AND rank MATCH 'bm25(1.0, 0.0)' ORDER BY rank LIMIT ?) f
         JOIN chunk c ON c.id = f.rowid WHERE c.collection = ? ORDER BY f.rank`,
      )
      .all(match, k, collection) as (RawChunk & { score: number })[];
    return rows.map((row) => ({ ...toStored(row), score: row.score }));
  }

  async nearest(collection: string, space: string, vector: Float32Array, k: number): Promise<FoundChunk[]> {
    const found = this.spaceFor(space, vector.length, false);
    if (!found) return [];
    const rows = this.db
      .prepare(
        `SELECT c.id, c.collection, c.text, c.metadata, 1 - v.distance AS score
         FROM (SELECT rowid, distance FROM chunk_vec_${found.id} WHERE embedding MATCH ? AND k = ? AND collection = ?) v
         JOIN chunk c ON c.id = v.rowid ORDER BY v.distance`,
      )
      .all(vector, k, collection) as (RawChunk & { score: number })[];
    return rows.map((row) => ({ ...toStored(row), score: row.score }));
  }

  async vectorsOf(ids: number[], space: string): Promise<Map<number, Float32Array>> {
    const vectors = new Map<number, Float32Array>();
    for (const [key, found] of this.spaces) {
      if (!key.startsWith(`${space}\n`)) continue;
      for (const batch of slices(ids, IDS_PER_STATEMENT)) {
        const rows = this.db.prepare(`SELECT rowid, embedding FROM chunk_vec_${found.id} WHERE rowid IN (${batch.map(() => '?').join(',')})`).all(...batch.map(BigInt)) as { rowid: number; embedding: Buffer }[];
        for (const row of rows) vectors.set(Number(row.rowid), new Float32Array(row.embedding.buffer.slice(row.embedding.byteOffset, row.embedding.byteOffset + row.embedding.byteLength)));
      }
    }
    return vectors;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

interface RawChunk {
  id: number;
  collection: string;
  text: string;
  metadata: string;
}

function toStored(row: RawChunk): StoredChunk {
  return { id: row.id, collection: row.collection, text: row.text, metadata: JSON.parse(row.metadata) as Record<string, unknown> };
}
