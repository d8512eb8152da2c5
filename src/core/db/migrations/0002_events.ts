import type { Kysely } from 'kysely';

/**
 * Event webhooks and their durable delivery (issue 5): one row per webhook (the
 * source of truth, so concurrent edits of different webhooks never collide), the
 * outbox of events that matched at least one webhook, and one delivery row per
 * (event, webhook) that the dispatcher claims, attempts and retries.
 * Scheduling columns are epoch milliseconds (`_ms`); record timestamps are seconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_webhook')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('targets', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', 'bigint')
    .addColumn('position', 'bigint', (c) => c.notNull())
    .addColumn('failing_since', 'bigint')
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('event_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('event_delivery')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull().references('event_outbox.id').onDelete('cascade'))
    // No foreign key: a delivery may be recorded against a webhook another instance just deleted; the dispatcher drops it.
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_ms', 'bigint')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_ms', 'bigint')
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_latency_ms', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Claims: every due delivery, or the due deliveries of one webhook; the log: one webhook's deliveries, newest first.
  await db.schema.createIndex('event_delivery_due_idx').on('event_delivery').columns(['status', 'next_attempt_ms']).execute();
  await db.schema.createIndex('event_delivery_webhook_due_idx').on('event_delivery').columns(['webhook_id', 'status', 'next_attempt_ms']).execute();
  await db.schema.createIndex('event_delivery_webhook_log_idx').on('event_delivery').columns(['webhook_id', 'id']).execute();
  await db.schema.createIndex('event_delivery_event_idx').on('event_delivery').column('event_id').execute();
}
