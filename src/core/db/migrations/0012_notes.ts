import type { Kysely } from 'kysely';

/**
 * Notes (issue 19). `data` and `meta` are JSON text as for prompts; timestamps are
 * nanoseconds, as the reference stores notes (models/notes.py uses time_ns).
 * A pin is one user's (the reference's pinned_note). `note_document_update` holds
 * the collaborative document (Yjs) as updates, base64 text on both dialects: an
 * update is stored before it is acknowledged, so a kill -9 loses nothing the editor
 * was told was kept; Yjs merges updates in any order, so rows need no sequence, and
 * a compaction replaces the rows it read by one merged update.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('note')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('note_user_idx').on('note').column('user_id').execute();
  await db.schema.createIndex('note_updated_idx').on('note').column('updated_at').execute();

  await db.schema
    .createTable('pinned_note')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('note_id', 'text', (c) => c.notNull().references('note.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('pinned_note_pk', ['user_id', 'note_id'])
    .execute();

  await db.schema
    .createTable('note_document_update')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('note_id', 'text', (c) => c.notNull().references('note.id').onDelete('cascade'))
    .addColumn('update', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('note_document_update_note_idx').on('note_document_update').column('note_id').execute();
}
