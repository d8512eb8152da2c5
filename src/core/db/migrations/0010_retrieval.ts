import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * The chunk store on PostgreSQL (issue 17): chunks with a generated tsvector for lexical
 * search, and their vectors, one row per chunk and vector space (embedding model and
 * dimensions) as real[]. With pgvector, core/retrieval/postgres-store.ts adds an HNSW index per
 * space on the cast `embedding::vector(n)`; without it, vectors are scored in the process.
 * On SQLite the chunk store is its own file (DATA_DIR/vector_db/retrieval.db, see
 * core/retrieval/sqlite-store.ts), so this migration creates nothing there.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`CREATE TABLE retrieval_chunk (
    id bigserial PRIMARY KEY,
    collection text NOT NULL,
    file_id text,
    text text NOT NULL,
    metadata text NOT NULL,
    fts tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
  )`.execute(db);
  await sql`CREATE INDEX retrieval_chunk_collection_idx ON retrieval_chunk (collection, id)`.execute(db);
  await sql`CREATE INDEX retrieval_chunk_file_idx ON retrieval_chunk (collection, file_id)`.execute(db);
  await sql`CREATE INDEX retrieval_chunk_fts_idx ON retrieval_chunk USING gin (fts)`.execute(db);
  await sql`CREATE TABLE retrieval_vector (
    chunk_id bigint NOT NULL REFERENCES retrieval_chunk (id) ON DELETE CASCADE,
    space text NOT NULL,
    dimensions integer NOT NULL,
    collection text NOT NULL,
    embedding real[] NOT NULL,
    PRIMARY KEY (chunk_id, space, dimensions)
  )`.execute(db);
  await sql`CREATE INDEX retrieval_vector_space_idx ON retrieval_vector (space, dimensions, collection)`.execute(db);
}
