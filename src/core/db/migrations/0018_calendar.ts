import type { Kysely } from 'kysely';

/**
 * Calendars (issue 21, routers/calendar.py): calendars shared through access
 * grants (resource type `calendar`), events with an optional RFC 5545 rule
 * (EXDATE lines for exceptions) and attendees with their RSVP. Timestamps are
 * nanoseconds, as the reference's. `feed_token` is Parley's: the secret of the
 * calendar's read-only iCalendar feed URL (null: no feed).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('calendar')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('color', 'text')
    .addColumn('is_default', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('feed_token', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('calendar_user_idx').on('calendar').column('user_id').execute();
  await db.schema.createIndex('calendar_feed_idx').on('calendar').column('feed_token').unique().execute();

  await db.schema
    .createTable('calendar_event')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('calendar_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('start_at', 'bigint', (c) => c.notNull())
    .addColumn('end_at', 'bigint')
    .addColumn('all_day', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('rrule', 'text')
    .addColumn('color', 'text')
    .addColumn('location', 'text')
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('is_cancelled', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('calendar_event_calendar_idx').on('calendar_event').columns(['calendar_id', 'start_at']).execute();

  await db.schema
    .createTable('calendar_event_attendee')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('calendar_event_attendee_key_idx').on('calendar_event_attendee').columns(['event_id', 'user_id']).unique().execute();
  await db.schema.createIndex('calendar_event_attendee_user_idx').on('calendar_event_attendee').column('user_id').execute();
}
