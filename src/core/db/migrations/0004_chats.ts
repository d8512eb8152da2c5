import type { Kysely } from 'kysely';

/**
 * Chats, their messages, tags and share snapshots, and folders (issue 7).
 *
 * - `chat`: one small row per conversation, the columns every list reads.
 *   `internal` mirrors `meta.internal` (chats the server makes for its own work,
 *   hidden from every list) so no query has to look inside JSON.
 * - `chat_content`: the conversation itself (the frontend's JSON with
 *   `history.messages`), which can be large. Kept apart so that the rows lists
 *   walk stay small: on SQLite a row holding it would fill a page of its own,
 *   and every list would read a page per chat.
 * - `chat_message`: one row per message of a chat's history, kept in step with
 *   the JSON on every write: the searchable text, role, model, usage and whether
 *   an assistant answer is still streaming (unread counts, search, usage reports).
 * - `tag` (a user's tags) and `chat_tag` (which chat carries which tag; the
 *   chat's `meta.tags` keeps the same list for responses).
 * - `shared_chat`: the snapshot a share link shows.
 * - `folder`: a user's folder tree (`parent_id` is not a foreign key: a missing
 *   parent is repaired when the folders are listed, as the reference does).
 *
 * Everything a user owns goes with the user (`ON DELETE CASCADE`); a chat's
 * messages, tags and snapshots go with the chat; deleting a folder moves the
 * chats other users filed in it out of it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('folder')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('parent_id', 'text')
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('items', 'text')
    .addColumn('meta', 'text')
    .addColumn('data', 'text')
    .addColumn('is_expanded', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('folder_user_parent_idx').on('folder').columns(['user_id', 'parent_id']).execute();

  await db.schema
    .createTable('chat')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('folder_id', 'text', (c) => c.references('folder.id').onDelete('set null'))
    .addColumn('share_id', 'text', (c) => c.unique())
    .addColumn('archived', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('pinned', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('internal', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('current_message_id', 'text')
    .addColumn('last_read_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('meta', 'text', (c) => c.notNull())
    .addColumn('variables', 'text')
    .addColumn('tasks', 'text')
    .addColumn('summary', 'text')
    .execute();
  // Newest change first, the id breaking ties: each index gives a list's whole order without a sort.
  // The sidebar (`GET /chats/?page=N`: not pinned, not archived) and the pinned list:
  await db.schema.createIndex('chat_user_pinned_idx').on('chat').columns(['user_id', 'pinned', 'archived', 'updated_at', 'id']).execute();
  // Archived lists, and lists that include pinned chats:
  await db.schema.createIndex('chat_user_archived_idx').on('chat').columns(['user_id', 'archived', 'updated_at', 'id']).execute();
  // Every chat of a user (exports, admin lists):
  await db.schema.createIndex('chat_user_updated_idx').on('chat').columns(['user_id', 'updated_at', 'id']).execute();
  await db.schema.createIndex('chat_folder_idx').on('chat').columns(['folder_id', 'updated_at']).execute();

  await db.schema
    .createTable('chat_content')
    .addColumn('chat_id', 'text', (c) => c.primaryKey().references('chat.id').onDelete('cascade'))
    .addColumn('chat', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('chat_message')
    .addColumn('chat_id', 'text', (c) => c.notNull().references('chat.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('parent_id', 'text')
    .addColumn('content', 'text')
    .addColumn('model_id', 'text')
    .addColumn('done', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('usage', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('chat_message_pk', ['chat_id', 'id'])
    .execute();
  await db.schema.createIndex('chat_message_user_created_idx').on('chat_message').columns(['user_id', 'created_at']).execute();

  await db.schema
    .createTable('tag')
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('meta', 'text')
    .addPrimaryKeyConstraint('tag_pk', ['user_id', 'id'])
    .execute();

  await db.schema
    .createTable('chat_tag')
    .addColumn('chat_id', 'text', (c) => c.notNull().references('chat.id').onDelete('cascade'))
    .addColumn('tag_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('chat_tag_pk', ['chat_id', 'tag_id'])
    .execute();
  await db.schema.createIndex('chat_tag_user_tag_idx').on('chat_tag').columns(['user_id', 'tag_id']).execute();

  await db.schema
    .createTable('shared_chat')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('chat_id', 'text', (c) => c.notNull().references('chat.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('chat', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('shared_chat_chat_idx').on('shared_chat').column('chat_id').execute();
  await db.schema.createIndex('shared_chat_user_idx').on('shared_chat').columns(['user_id', 'updated_at']).execute();
}
