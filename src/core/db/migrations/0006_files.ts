import type { Kysely } from 'kysely';

/**
 * Files (issue 8): one row per stored file, the reference's `file` table. The
 * bytes live on disk under DATA_DIR/uploads and `path` says where; `data`
 * (processing state, extracted content) and `meta` (name, content type, size,
 * upload metadata) are JSON. A user's files go with the user; their bytes stay
 * on disk, as in the reference.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('file')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('hash', 'text')
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('path', 'text')
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('file_user_idx').on('file').columns(['user_id', 'updated_at']).execute();
  await db.schema.createIndex('file_path_idx').on('file').column('path').execute();
}
