import type { Kysely } from 'kysely';

/**
 * Prompts (issue 19): one row per `/` command, and its versions. `command` is
 * unique (the reference's duplicate-command error relies on it). `version_id`
 * names the version in use; `version` (not a history entry) changes with every
 * write of the row, so the `/` picker can reuse what it rendered of an unchanged
 * prompt (timestamps are whole seconds). A history entry's `seq` counts the prompt's versions from
 * 1, so history lists in write order even when several writes share a second;
 * the unique index makes two concurrent updates unable to take the same place.
 * As for tools, the owner is not a foreign key: a prompt outlives its creator.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('prompt')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('command', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('tags', 'text')
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('version_id', 'text')
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('prompt_user_idx').on('prompt').column('user_id').execute();
  await db.schema.createIndex('prompt_updated_idx').on('prompt').column('updated_at').execute();

  await db.schema
    .createTable('prompt_history')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('prompt_id', 'text', (c) => c.notNull().references('prompt.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('parent_id', 'text')
    .addColumn('snapshot', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('commit_message', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('prompt_history_seq_idx').on('prompt_history').columns(['prompt_id', 'seq']).unique().execute();
}
