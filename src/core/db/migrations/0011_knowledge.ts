import { type Kysely, sql } from 'kysely';

/**
 * Knowledge bases (issue 17): the reference's `knowledge`, `knowledge_directory`
 * and `knowledge_file` tables. A knowledge base's chunks live in the retrieval
 * store under its id; these rows say which files it holds and in which folder.
 * Deleting a knowledge base or a file takes its links with it; deleting a folder
 * takes its subfolders (a link's folder becomes null: the service moves or removes
 * links first).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('knowledge')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('knowledge_updated_idx').on('knowledge').columns(['updated_at', 'id']).execute();
  await db.schema.createIndex('knowledge_user_idx').on('knowledge').column('user_id').execute();

  await db.schema
    .createTable('knowledge_directory')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('knowledge_id', 'text', (c) => c.notNull().references('knowledge.id').onDelete('cascade'))
    .addColumn('parent_id', 'text', (c) => c.references('knowledge_directory.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // One name per level; the root level's parent is null, which a plain unique constraint would not compare.
  await sql`create unique index knowledge_directory_name_idx on knowledge_directory (knowledge_id, coalesce(parent_id, ''), name)`.execute(db);
  await db.schema.createIndex('knowledge_directory_parent_idx').on('knowledge_directory').column('parent_id').execute();

  await db.schema
    .createTable('knowledge_file')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('knowledge_id', 'text', (c) => c.notNull().references('knowledge.id').onDelete('cascade'))
    .addColumn('file_id', 'text', (c) => c.notNull().references('file.id').onDelete('cascade'))
    .addColumn('directory_id', 'text', (c) => c.references('knowledge_directory.id').onDelete('set null'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('knowledge_file_unique', ['knowledge_id', 'file_id'])
    .execute();
  await db.schema.createIndex('knowledge_file_file_idx').on('knowledge_file').column('file_id').execute();
  await db.schema.createIndex('knowledge_file_directory_idx').on('knowledge_file').column('directory_id').execute();
}
