import type { Kysely } from 'kysely';

/**
 * Functions (issue 18): Python pipes, filters, actions and event handlers, run by
 * the plugin host. `type` is the class the source defines; `meta` holds the
 * description, the frontmatter (`manifest`), a filter's `toggle` flag and, for a
 * source that no longer loads, its `error`; `valves` is NULL until an admin sets
 * them (a dict, or a Fernet token with ENABLE_VALVE_ENCRYPTION). `traits` is
 * what the source declares that listings and the event bus read without
 * loading it (an action's buttons, an icon, an event function's events).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('function')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('meta', 'text', (c) => c.notNull())
    .addColumn('valves', 'text')
    .addColumn('traits', 'text')
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('is_global', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('function_type_idx').on('function').columns(['type', 'is_active']).execute();
}
