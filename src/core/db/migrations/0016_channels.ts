import type { Kysely } from 'kysely';

/**
 * Channels (issue 20): rooms, their members (group and direct-message channels,
 * and the read state of everyone who opened a standard channel), incoming
 * webhooks, messages with threads (`parent_id`), reactions and pins. Timestamps
 * are nanoseconds, as the reference stores them (time_ns). Deleting a channel
 * takes its members, webhooks, files, messages and their reactions with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('channel')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('is_private', 'boolean')
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .execute();

  await db.schema
    .createTable('channel_member')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('channel_id', 'text', (c) => c.notNull().references('channel.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('role', 'text')
    .addColumn('status', 'text')
    .addColumn('is_active', 'boolean', (c) => c.notNull())
    .addColumn('invited_at', 'bigint')
    .addColumn('invited_by', 'text')
    .addColumn('joined_at', 'bigint')
    .addColumn('last_read_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('channel_member_channel_user_uq', ['channel_id', 'user_id'])
    .execute();
  await db.schema.createIndex('channel_member_user_idx').on('channel_member').column('user_id').execute();

  await db.schema
    .createTable('channel_webhook')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('channel_id', 'text', (c) => c.notNull().references('channel.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('profile_image_url', 'text')
    .addColumn('token', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('channel_webhook_channel_idx').on('channel_webhook').column('channel_id').execute();

  await db.schema
    .createTable('message')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull().references('channel.id').onDelete('cascade'))
    .addColumn('reply_to_id', 'text')
    .addColumn('parent_id', 'text')
    .addColumn('is_pinned', 'boolean', (c) => c.notNull())
    .addColumn('pinned_at', 'bigint')
    .addColumn('pinned_by', 'text')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // A channel's page of messages and a thread's replies, newest first: the index gives the order
  // (`id` breaks ties), so a page reads its rows instead of sorting the whole channel.
  await db.schema.createIndex('message_channel_created_idx').on('message').columns(['channel_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('message_parent_idx').on('message').columns(['parent_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('message_reaction')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('message_id', 'text', (c) => c.notNull().references('message.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('message_reaction_uq', ['message_id', 'user_id', 'name'])
    .execute();

  await db.schema
    .createTable('channel_file')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('channel_id', 'text', (c) => c.notNull().references('channel.id').onDelete('cascade'))
    .addColumn('message_id', 'text', (c) => c.references('message.id').onDelete('cascade'))
    .addColumn('file_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('channel_file_uq', ['channel_id', 'file_id'])
    .execute();
  await db.schema.createIndex('channel_file_file_idx').on('channel_file').column('file_id').execute();
}
