import type { Kysely } from 'kysely';

/**
 * Skills (issue 18): named instructions a chat can bring into the model's
 * context (models/skills.py). `name` is unique as in the reference's table; the
 * owner is not a foreign key (a skill outlives its creator, as tools and prompts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('skill')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('meta', 'text')
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('skill_user_idx').on('skill').column('user_id').execute();
  await db.schema.createIndex('skill_updated_idx').on('skill').column('updated_at').execute();
}
