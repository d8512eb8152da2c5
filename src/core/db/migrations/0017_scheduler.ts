import type { Kysely } from 'kysely';

/**
 * The scheduler (issue 21, docs/scheduler.md): one row per piece of due work,
 * `(kind, key)` naming its owner (an automation, an event's alert). Times are
 * epoch milliseconds. A claimed row carries `lease_owner` and `lease_until`;
 * `next_run_at` moves on only when its run ended, so a run whose instance died
 * is claimed again once the lease ran out.
 *
 * Automations (routers/automations.py, with 0.11.0's `folder_id`): timestamps
 * are nanoseconds, as the reference's; their next run is the scheduler's row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('scheduled_job')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('rule', 'text')
    .addColumn('timezone', 'text')
    .addColumn('next_run_at', 'bigint')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('scheduled_job_key_idx').on('scheduled_job').columns(['kind', 'key']).unique().execute();
  await db.schema.createIndex('scheduled_job_due_idx').on('scheduled_job').columns(['next_run_at', 'lease_until']).execute();

  await db.schema
    .createTable('automation')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('meta', 'text')
    .addColumn('folder_id', 'text')
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('last_run_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('automation_user_idx').on('automation').columns(['user_id', 'created_at']).execute();

  await db.schema
    .createTable('automation_run')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('automation_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('output', 'text')
    .addColumn('duration_ms', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('automation_run_created_idx').on('automation_run').columns(['automation_id', 'created_at']).execute();
}
