import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Chunks on PostgreSQL get the title they are under (their document's title or name, their
 * Markdown headings; core/retrieval/store.ts `NewChunk.title`), weighed in the lexical index
 * apart from the text (label A; text D). Existing chunks take their document's stated title and
 * name without its extension (store.ts `documentTitle`), as the embedded store's upgrade does;
 * headings come with a reindex. SQLite's
 * chunks are in their own file (core/retrieval/sqlite-store.ts upgrades it at start-up).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`ALTER TABLE retrieval_chunk ADD COLUMN title text NOT NULL DEFAULT ''`.execute(db);
  await sql`UPDATE retrieval_chunk SET title = concat_ws(E'\n',
    nullif(trim(metadata::jsonb ->> 'title'), ''),
    nullif(trim(regexp_replace(metadata::jsonb ->> 'name', '\\.[[:alnum:]]{1,8}$', '')), ''))`.execute(db);
  await sql`ALTER TABLE retrieval_chunk DROP COLUMN fts`.execute(db);
  // A word a line break split with a hyphen (`transmis-⏎sion`, justified PDFs) is indexed joined too (store.ts `indexedText`).
  await sql`ALTER TABLE retrieval_chunk ADD COLUMN fts tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', title), 'A') ||
    setweight(to_tsvector('english', regexp_replace(text, '([[:alpha:]]+)-[ \\t]*\\r?\\n\\s*([[:lower:]]+)', '\\1-\\2 \\1\\2', 'g')), 'D')
  ) STORED`.execute(db);
  await sql`CREATE INDEX retrieval_chunk_fts_idx ON retrieval_chunk USING gin (fts)`.execute(db);
}
