import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { chunks as slices, IDS_PER_QUERY } from '../db/batches.js';
import type { Db } from '../db/database.js';
import { ASKED_FORM_CANDIDATES, ASKED_FORM_WEIGHT, type ChunkStore, type ChunkVectors, cosine, type FoundChunk, type NewChunk, queryWords, type RawChunk, type TitledChunk, TITLE_WEIGHT, toStored } from './store.js';

/** ts_rank's weights of the labels {D, C, B, A}: text is D, the title A, weighed TITLE_WEIGHT times as much. */
const TITLE_RANK_WEIGHTS = `{0.1, 0.2, 0.4, ${0.1 * TITLE_WEIGHT}}`;

/** Rows per insert statement: 6 parameters per chunk row, under PostgreSQL's 65,535. */
const ROWS_PER_INSERT = 1000;

/**
 * The chunk store in PostgreSQL (tables of migration 0010). Lexical search ranks the generated
 * `tsvector` ('english' configuration: lower-cased, stemmed words, as FTS5's porter tokenizer on
 * SQLite) with ts_rank. Vector search uses pgvector when `CREATE EXTENSION vector` succeeds at start-up (an
 * HNSW cosine index per vector space, on `embedding::vector(n)`); otherwise the collection's
 * vectors of the space are read and scored here, which is exact and fine for the
 * collection sizes of a chat's files and knowledge bases.
 */
export class PostgresChunkStore implements ChunkStore {
  private pgvector = false;
  /** pgvector 0.8 and later can scan an HNSW index on until enough rows pass a filter (hnsw.iterative_scan). */
  private iterativeScan = false;
  private readonly indexed = new Set<string>();

  constructor(private readonly db: Db) {}

  /** Turns pgvector on when the database has it (or lets this role create it). */
  async start(): Promise<{ pgvector: boolean }> {
    try {
      await sql`CREATE EXTENSION IF NOT EXISTS vector`.execute(this.db);
      this.pgvector = true;
      const version = await sql<{ extversion: string }>`SELECT extversion FROM pg_extension WHERE extname = 'vector'`.execute(this.db);
      const [major = 0, minor = 0] = (version.rows[0]?.extversion ?? '0').split('.').map(Number);
      this.iterativeScan = major > 0 || minor >= 8;
    } catch {
      this.pgvector = false;
    }
    return { pgvector: this.pgvector };
  }

  /** One partial HNSW index per vector space, created when the space first gets vectors. */
  private async ensureIndex(space: string, dimensions: number): Promise<void> {
    const key = `${space}\n${dimensions}`;
    if (!this.pgvector || this.indexed.has(key)) return;
    const name = `retrieval_vector_hnsw_${createHash('sha256').update(`${space}\n${dimensions}`).digest('hex').slice(0, 32)}`;
    await sql`CREATE INDEX IF NOT EXISTS ${sql.id(name)} ON retrieval_vector USING hnsw ((embedding::vector(${sql.raw(String(dimensions))})) vector_cosine_ops) WHERE space = ${sql.lit(space)} AND dimensions = ${sql.lit(dimensions)}`.execute(this.db);
    this.indexed.add(key);
  }

  async insert(collection: string, chunks: NewChunk[], vectors: ChunkVectors | null, replaceFileId?: string): Promise<void> {
    const dimensions = vectors?.vectors[0]?.length ?? 0;
    if (vectors && dimensions > 0) await this.ensureIndex(vectors.space, dimensions);
    await this.db.transaction().execute(async (trx) => {
      if (replaceFileId !== undefined) await trx.deleteFrom('retrieval_chunk').where('collection', '=', collection).where('file_id', '=', replaceFileId).execute();
      let offset = 0;
      for (const slice of slices(chunks, ROWS_PER_INSERT)) {
        const rows = await trx
          .insertInto('retrieval_chunk')
          .values(slice.map((chunk) => ({ collection, file_id: chunk.fileId, text: chunk.text.replaceAll('\u0000', ''), metadata: JSON.stringify(chunk.metadata), title: chunk.title.replaceAll('\u0000', '') })))
          .returning('id')
          .execute();
        if (vectors && dimensions > 0) {
          await trx
            .insertInto('retrieval_vector')
            .values(rows.map((row, i) => ({ chunk_id: row.id, space: vectors.space, dimensions, collection, embedding: Array.from(vectors.vectors[offset + i]!) })))
            .execute();
        }
        offset += slice.length;
      }
    });
  }

  async removeFile(collection: string, fileId: string): Promise<void> {
    await this.db.deleteFrom('retrieval_chunk').where('collection', '=', collection).where('file_id', '=', fileId).execute();
  }

  async drop(collections: string[]): Promise<void> {
    for (const slice of slices(collections, IDS_PER_QUERY)) await this.db.deleteFrom('retrieval_chunk').where('collection', 'in', slice).execute();
  }

  async clear(): Promise<void> {
    await sql`TRUNCATE retrieval_chunk, retrieval_vector`.execute(this.db);
  }

  async has(collection: string): Promise<boolean> {
    return (await this.db.selectFrom('retrieval_chunk').select('id').where('collection', '=', collection).limit(1).executeTakeFirst()) !== undefined;
  }

  async chunks(collection: string): Promise<TitledChunk[]> {
    const rows = await this.db.selectFrom('retrieval_chunk').select(['id', 'collection', 'text', 'metadata', 'title']).where('collection', '=', collection).orderBy('id').execute();
    return rows.map((row) => ({ ...toStored(row), title: row.title }));
  }

  async lexical(collection: string, query: string, k: number): Promise<FoundChunk[]> {
    const words = queryWords(query);
    if (words.length === 0) return [];
    // Words are letters and digits only, so quoting them makes each a plain lexeme.
    const tsquery = words.map((word) => `'${word}'`).join(' | ');
    // The best chunks by stem, then each scored up by its rank for the words as asked (the
    // 'simple' configuration does not stem): ASKED_FORM_WEIGHT.
    const rows = await sql<RawChunk & { score: number }>`
      SELECT id, collection, text, metadata,
        score + ${ASKED_FORM_WEIGHT} * ts_rank(${TITLE_RANK_WEIGHTS}, setweight(to_tsvector('simple', title), 'A') || to_tsvector('simple', text), to_tsquery('simple', ${tsquery})) AS score
      FROM (
        SELECT id, collection, text, metadata, title, ts_rank(${TITLE_RANK_WEIGHTS}, fts, q) AS score
        FROM retrieval_chunk, to_tsquery('english', ${tsquery}) q
        WHERE collection = ${collection} AND fts @@ q
        ORDER BY score DESC, id LIMIT ${ASKED_FORM_CANDIDATES * k}
      ) found
      ORDER BY score DESC, id LIMIT ${k}`.execute(this.db);
    return rows.rows.map((row) => ({ ...toStored(row), score: Number(row.score) }));
  }

  async nearest(collection: string, space: string, vector: Float32Array, k: number): Promise<FoundChunk[]> {
    const dimensions = vector.length;
    if (this.pgvector) {
      const cast = sql.raw(`vector(${dimensions})`);
      const literal = `[${Array.from(vector).join(',')}]`;
      // An HNSW index scan yields its ef_search nearest of the whole space, and the collection
      // filter comes after: a collection that is a small part of the space gets fewer than k.
      // Iterative scans go on until k pass; otherwise (or past their limits) the collection's
      // vectors are ranked without the index (`+ 0` is an order the index cannot give).
      const nearestBy = (order: 'index' | 'exact') => sql<RawChunk & { distance: number }>`
        SELECT c.id, c.collection, c.text, c.metadata, v.embedding::${cast} <=> ${literal}::${cast} AS distance
        FROM retrieval_vector v JOIN retrieval_chunk c ON c.id = v.chunk_id
        WHERE v.space = ${space} AND v.dimensions = ${dimensions} AND v.collection = ${collection}
        ORDER BY ${order === 'index' ? sql`v.embedding::${cast} <=> ${literal}::${cast}` : sql`(v.embedding::${cast} <=> ${literal}::${cast}) + 0`} LIMIT ${k}`;
      let rows = await this.db.transaction().execute(async (trx) => {
        if (this.iterativeScan) await sql`SET LOCAL hnsw.iterative_scan = strict_order`.execute(trx);
        return (await nearestBy('index').execute(trx)).rows;
      });
      if (rows.length < k) rows = (await nearestBy('exact').execute(this.db)).rows;
      return rows.map((row) => ({ ...toStored(row), score: 1 - Number(row.distance) }));
    }
    const rows = await this.db
      .selectFrom('retrieval_vector')
      .select(['chunk_id', 'embedding'])
      .where('space', '=', space)
      .where('dimensions', '=', dimensions)
      .where('collection', '=', collection)
      .execute();
    const best = rows
      .map((row) => ({ id: row.chunk_id, score: cosine(Float32Array.from(row.embedding), vector) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, k);
    if (best.length === 0) return [];
    const byId = new Map((await this.db.selectFrom('retrieval_chunk').select(['id', 'collection', 'text', 'metadata']).where('id', 'in', best.map((b) => b.id)).execute()).map((row) => [row.id, toStored(row)]));
    return best.flatMap((b) => {
      const chunk = byId.get(b.id);
      return chunk ? [{ ...chunk, score: b.score }] : [];
    });
  }

  async vectorsOf(ids: number[], space: string): Promise<Map<number, Float32Array>> {
    const vectors = new Map<number, Float32Array>();
    for (const slice of slices(ids, IDS_PER_QUERY)) {
      const rows = await this.db.selectFrom('retrieval_vector').select(['chunk_id', 'embedding']).where('space', '=', space).where('chunk_id', 'in', slice).execute();
      for (const row of rows) vectors.set(row.chunk_id, Float32Array.from(row.embedding));
    }
    return vectors;
  }

  async close(): Promise<void> {}
}
