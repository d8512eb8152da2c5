import type { Kysely } from 'kysely';

/**
 * Workspace models (issue 6): one row per model a user configured, either an
 * override of a provider's model (same id, no `base_model_id`) or a preset built
 * on one (`base_model_id` set). The owner is not a foreign key: as in the
 * reference, a model outlives its creator, because other users may rely on it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('model')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('base_model_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('params', 'text', (c) => c.notNull())
    .addColumn('meta', 'text', (c) => c.notNull())
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('model_user_idx').on('model').column('user_id').execute();
  await db.schema.createIndex('model_base_model_idx').on('model').column('base_model_id').execute();
}
