import type { Kysely } from 'kysely';

/**
 * Memories (issue 19): what a user asked to be remembered, strictly theirs.
 * `type` is 'user' (about the user, always in context) or 'context'; `path` files
 * it under a slash-separated topic (0.10.1). Timestamps are seconds, as the
 * reference's. The text is also indexed in the retrieval store (collection
 * `user-memory-<user id>`), which `query` ranks by.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('memory')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull().defaultTo('context'))
    .addColumn('path', 'text')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('memory_user_idx').on('memory').column('user_id').execute();
}
