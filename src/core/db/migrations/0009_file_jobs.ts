import type { Kysely } from 'kysely';

/**
 * Content extraction jobs (issue 16): one row per file waiting for or under
 * extraction, shared by every instance. An instance claims a pending job (or
 * one whose lease ran out: its instance died) with one conditional UPDATE, and
 * the row goes when the job ends. Deleting the file deletes its job.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('file_job')
    .addColumn('file_id', 'text', (c) => c.primaryKey().references('file.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('file_job_claim_idx').on('file_job').columns(['status', 'lease_until']).execute();
}
