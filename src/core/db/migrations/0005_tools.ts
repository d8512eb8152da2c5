import type { Kysely } from 'kysely';

/**
 * Tools (issue 4): one row per Python tool. `specs` and `meta` are what the
 * plugin host derived from `content` when it was saved; `valves` is NULL until
 * an admin valves update (a JSON object, or a JSON string holding a Fernet token
 * with ENABLE_VALVE_ENCRYPTION). `version` changes with every write, so listings
 * can reuse what they rendered of an unchanged tool (timestamps are whole
 * seconds; several writes can share one). The owner is not a foreign key: as in
 * the reference, a tool outlives its creator, because other users may rely on it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tool')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('specs', 'text', (c) => c.notNull())
    .addColumn('meta', 'text', (c) => c.notNull())
    .addColumn('valves', 'text')
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tool_user_idx').on('tool').column('user_id').execute();
  await db.schema.createIndex('tool_updated_idx').on('tool').column('updated_at').execute();
}
