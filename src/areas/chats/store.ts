import { type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Db, DialectName } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import { containsPattern, likeLiteral } from '../../core/db/like.js';
import { chunks } from '../../core/db/batches.js';
import type { ChatRow, Database } from '../../core/db/tables.js';
import type { Json } from './history.js';

/** A chat with its JSON columns decoded (the reference's ChatModel). */
export interface ChatRecord {
  id: string;
  user_id: string;
  title: string;
  chat: Json;
  folder_id: string | null;
  share_id: string | null;
  archived: boolean;
  pinned: boolean;
  meta: Json;
  variables: Json;
  tasks: unknown[] | null;
  summary: string | null;
  current_message_id: string | null;
  last_read_at: number | null;
  created_at: number;
  updated_at: number;
}

/** Everything but the conversation, for rules that need no messages. */
export type ChatHead = Omit<ChatRecord, 'chat'>;

/** A row of the chat lists (ChatTitleIdResponse); the service fills `snippet` and `active`. */
export interface ChatSummary {
  id: string;
  title: string;
  updated_at: number;
  created_at: number;
  last_read_at: number | null;
  snippet: string | null;
  active: boolean;
}

/** The columns of `chat` a service may change; JSON fields as values. */
export type ChatPatch = Partial<Omit<ChatRecord, 'id' | 'user_id'>>;

/** One row of `chat_message`: what queries need of a message. */
export interface MessageRow {
  chat_id: string;
  id: string;
  user_id: string;
  role: string;
  parent_id: string | null;
  content: string | null;
  model_id: string | null;
  done: boolean;
  usage: unknown;
  /** An answer's tokens (null for other messages and unfinished answers); `tokens_estimated` when counted here. */
  input_tokens: number | null;
  output_tokens: number | null;
  tokens_estimated: boolean;
  created_at: number;
  updated_at: number;
}

export interface TagRecord {
  id: string;
  name: string;
  user_id: string;
  meta: Json | null;
}

export interface SharedChatRecord {
  id: string;
  chat_id: string;
  user_id: string;
  title: string;
  chat: Json;
  created_at: number;
  updated_at: number;
}

/** Which chats a listing covers. Chats the server keeps for itself (`internal`) are never listed. */
export interface ChatFilter {
  /** The owner; omitted: every owner (a shared folder's chats). */
  userId?: string;
  archived?: boolean;
  pinned?: boolean;
  /** 'none': outside any folder; a list: in one of these folders. */
  folder?: 'none' | string[];
  shared?: boolean;
  /** Part of the title, any case. */
  titleContains?: string;
  /** Part of the title or of any message's text, any case. */
  textContains?: string;
  /** Carries every one of these tags. */
  tagIds?: string[];
  untagged?: boolean;
  updatedAfter?: number;
}

export type SortColumn = 'updated_at' | 'created_at' | 'title';
/** A column and direction, or unread chats first (those changed since `readerId` last read them). */
export type ChatOrder = { by: SortColumn; direction: 'asc' | 'desc' } | { by: 'unread'; direction: 'asc' | 'desc'; readerId?: string };

export const NEWEST_FIRST: ChatOrder = { by: 'updated_at', direction: 'desc' };

export interface Page {
  offset?: number;
  limit?: number;
}

const HEAD_COLUMNS = [
  'chat.id',
  'chat.user_id',
  'chat.title',
  'chat.folder_id',
  'chat.share_id',
  'chat.archived',
  'chat.pinned',
  'chat.meta',
  'chat.variables',
  'chat.tasks',
  'chat.summary',
  'chat.current_message_id',
  'chat.last_read_at',
  'chat.created_at',
  'chat.updated_at',
] as const;

const SUMMARY_COLUMNS = ['chat.id', 'chat.title', 'chat.updated_at', 'chat.created_at', 'chat.last_read_at'] as const;

/** SQLite's limit on bound parameters is far above this; chunks keep statements small on both dialects. */
const ROWS_PER_INSERT = 200;

function toHead(row: Omit<ChatRow, 'internal'>): ChatHead {
  const variables = fromJson<unknown>(row.variables, null);
  const tasks = fromJson<unknown>(row.tasks, null);
  return {
    id: row.id,
    user_id: row.user_id,
    title: row.title,
    folder_id: row.folder_id,
    share_id: row.share_id,
    archived: toBool(row.archived),
    pinned: toBool(row.pinned),
    meta: fromJson<Json>(row.meta, {}),
    variables: variables && typeof variables === 'object' && !Array.isArray(variables) ? (variables as Json) : {},
    tasks: Array.isArray(tasks) ? tasks : null,
    summary: row.summary,
    current_message_id: row.current_message_id,
    last_read_at: row.last_read_at === null ? null : Number(row.last_read_at),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function toRecord(row: Omit<ChatRow, 'internal'> & { chat: string }): ChatRecord {
  return { ...toHead(row), chat: fromJson<Json>(row.chat, {}) };
}

const toSummary = (row: { id: string; title: string; updated_at: number; created_at: number; last_read_at: number | null }): ChatSummary => ({
  id: row.id,
  title: row.title,
  updated_at: Number(row.updated_at),
  created_at: Number(row.created_at),
  last_read_at: row.last_read_at === null ? null : Number(row.last_read_at),
  snippet: null,
  active: false,
});

/** A patch in column form (the conversation apart): JSON encoded, and `internal` following `meta.internal`. */
function toColumns(patch: Omit<ChatPatch, 'chat'>): Record<string, unknown> {
  const row: Record<string, unknown> = { ...patch };
  if ('meta' in patch) {
    row.meta = toJson(patch.meta ?? {});
    row.internal = patch.meta?.internal === true;
  }
  if ('variables' in patch) row.variables = toJson(patch.variables);
  if ('tasks' in patch) row.tasks = toJson(patch.tasks);
  return row;
}

type ChatExpressions = ExpressionBuilder<Database, 'chat'>;

/** An assistant answer of the chat is still being written. */
const unfinishedAnswer = sql<SqlBool>`exists (select 1 from chat_message m where m.chat_id = chat.id and m.role = 'assistant' and m.done = ${false})`;

function conditions(eb: ChatExpressions, filter: ChatFilter): Expression<SqlBool> {
  const terms: Expression<SqlBool>[] = [eb('chat.internal', '=', false)];
  if (filter.userId !== undefined) terms.push(eb('chat.user_id', '=', filter.userId));
  if (filter.archived !== undefined) terms.push(eb('chat.archived', '=', filter.archived));
  if (filter.pinned !== undefined) terms.push(eb('chat.pinned', '=', filter.pinned));
  if (filter.folder === 'none') terms.push(eb('chat.folder_id', 'is', null));
  else if (filter.folder) terms.push(filter.folder.length > 0 ? eb('chat.folder_id', 'in', filter.folder) : sql<SqlBool>`1 = 0`);
  if (filter.shared !== undefined) terms.push(eb('chat.share_id', filter.shared ? 'is not' : 'is', null));
  if (filter.updatedAfter !== undefined) terms.push(eb('chat.updated_at', '>', filter.updatedAfter));
  if (filter.titleContains) terms.push(sql<SqlBool>`lower(chat.title) like ${containsPattern(filter.titleContains)} escape '\\'`);
  if (filter.textContains !== undefined) {
    const pattern = containsPattern(filter.textContains);
    // A message row carries its chat owner's id: for one user's chats only that user's messages are
    // read (through their index), however many other users' messages the table holds.
    const inMessages =
      filter.userId !== undefined
        ? sql<SqlBool>`chat.id in (select m.chat_id from chat_message m where m.user_id = ${filter.userId} and lower(m.content) like ${pattern} escape '\\')`
        : sql<SqlBool>`exists (select 1 from chat_message m where m.chat_id = chat.id and lower(m.content) like ${pattern} escape '\\')`;
    terms.push(eb.or([sql<SqlBool>`lower(chat.title) like ${pattern} escape '\\'`, inMessages]));
  }
  for (const tagId of filter.tagIds ?? []) terms.push(sql<SqlBool>`exists (select 1 from chat_tag t where t.chat_id = chat.id and t.tag_id = ${tagId})`);
  if (filter.untagged) terms.push(sql<SqlBool>`not exists (select 1 from chat_tag t where t.chat_id = chat.id)`);
  return eb.and(terms);
}

/** The reference's tie-breaker is the id; it runs in the sort's direction so an index gives the whole order. */
function orderTerms(order: ChatOrder): RawBuilder<unknown>[] {
  const dir = order.direction === 'asc' ? sql`asc` : sql`desc`;
  if (order.by === 'unread') {
    const reader = order.readerId === undefined ? sql`` : sql` and chat.user_id = ${order.readerId}`;
    return [
      sql`case when chat.updated_at > coalesce(chat.last_read_at, 0) and not ${unfinishedAnswer}${reader} then 1 else 0 end ${dir}`,
      sql`chat.updated_at ${dir}`,
      sql`chat.id ${dir}`,
    ];
  }
  return [sql`${sql.ref(`chat.${order.by}`)} ${dir}`, sql`chat.id ${dir}`];
}

/** The queries of chats, their messages, tags and share snapshots. No rules. */
export class ChatStore {
  constructor(
    private readonly db: Db,
    private readonly dialect: DialectName,
  ) {}

  // ---- chats -------------------------------------------------------------

  private withContent() {
    return this.db.selectFrom('chat').innerJoin('chat_content', 'chat_content.chat_id', 'chat.id').select([...HEAD_COLUMNS, 'chat_content.chat']);
  }

  /**
   * One chat, with its conversation. `lock` holds the row for the rest of the
   * transaction on PostgreSQL, so read-modify-write of the JSON cannot lose a
   * concurrent change (SQLite's single connection already serialises them).
   */
  async byId(id: string, options: { userId?: string; lock?: boolean } = {}): Promise<ChatRecord | null> {
    let query = this.withContent().where('chat.id', '=', id);
    if (options.userId !== undefined) query = query.where('chat.user_id', '=', options.userId);
    if (options.lock && this.dialect === 'postgres') query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /** A chat without its conversation; `lock` holds the row for the transaction on PostgreSQL, as `byId`. */
  async headById(id: string, userId?: string, options: { lock?: boolean } = {}): Promise<ChatHead | null> {
    let query = this.db.selectFrom('chat').select(HEAD_COLUMNS).where('chat.id', '=', id);
    if (userId !== undefined) query = query.where('chat.user_id', '=', userId);
    if (options.lock && this.dialect === 'postgres') query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return row ? toHead(row) : null;
  }

  async insert(chats: ChatRecord[]): Promise<void> {
    for (const part of chunks(chats, ROWS_PER_INSERT)) {
      await this.db
        .insertInto('chat')
        .values(part.map(({ id, user_id, chat: _content, ...rest }) => ({ id, user_id, ...toColumns(rest) }) as never))
        .execute();
      await this.db
        .insertInto('chat_content')
        .values(part.map((c) => ({ chat_id: c.id, chat: toJson(c.chat) ?? '{}' })))
        .execute();
    }
  }

  async update(id: string, patch: ChatPatch): Promise<void> {
    const { chat, ...columns } = patch;
    if (chat !== undefined) await this.db.updateTable('chat_content').set({ chat: toJson(chat) ?? '{}' }).where('chat_id', '=', id).execute();
    if (Object.keys(columns).length > 0) await this.db.updateTable('chat').set(toColumns(columns)).where('id', '=', id).execute();
  }

  /** Sets columns on every chat of a user (archive all, unarchive all); the number changed. */
  async updateOfUser(userId: string, patch: Omit<ChatPatch, 'chat'>): Promise<number> {
    const result = await this.db.updateTable('chat').set(toColumns(patch)).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async delete(ids: string[]): Promise<void> {
    for (const part of chunks(ids, ROWS_PER_INSERT)) await this.db.deleteFrom('chat').where('id', 'in', part).execute();
  }

  async deleteOfUser(userId: string): Promise<void> {
    await this.db.deleteFrom('chat').where('user_id', '=', userId).execute();
  }

  /** Summaries for the sidebar and every other title list: the conversation is never read. */
  async summaries(filter: ChatFilter, order: ChatOrder = NEWEST_FIRST, page: Page = {}): Promise<ChatSummary[]> {
    let query = this.db
      .selectFrom('chat')
      .select(SUMMARY_COLUMNS)
      .where((eb) => conditions(eb, filter));
    for (const term of orderTerms(order)) query = query.orderBy(term);
    if (page.limit !== undefined) query = query.limit(page.limit);
    if (page.offset) query = query.offset(page.offset);
    const rows = await query.execute();
    return rows.map(toSummary);
  }

  /** Summaries with their owner, for a folder other users file chats in. */
  async summariesWithOwner(filter: ChatFilter, order: ChatOrder, page: Page): Promise<(ChatSummary & { user_id: string })[]> {
    let query = this.db
      .selectFrom('chat')
      .select([...SUMMARY_COLUMNS, 'chat.user_id'])
      .where((eb) => conditions(eb, filter));
    for (const term of orderTerms(order)) query = query.orderBy(term);
    if (page.limit !== undefined) query = query.limit(page.limit);
    if (page.offset) query = query.offset(page.offset);
    const rows = await query.execute();
    return rows.map((row) => Object.assign(toSummary(row), { user_id: row.user_id }));
  }

  async records(filter: ChatFilter, order: ChatOrder = NEWEST_FIRST, page: Page = {}): Promise<ChatRecord[]> {
    let query = this.withContent().where((eb) => conditions(eb, filter));
    for (const term of orderTerms(order)) query = query.orderBy(term);
    if (page.limit !== undefined) query = query.limit(page.limit);
    if (page.offset) query = query.offset(page.offset);
    const rows = await query.execute();
    return rows.map(toRecord);
  }

  async count(filter: ChatFilter): Promise<number> {
    const row = await this.db
      .selectFrom('chat')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => conditions(eb, filter))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Ids of chats of a user matching the filter (no conversation read). */
  async ids(filter: ChatFilter): Promise<string[]> {
    const rows = await this.db
      .selectFrom('chat')
      .select('chat.id')
      .where((eb) => conditions(eb, filter))
      .execute();
    return rows.map((r) => r.id);
  }

  /** The server's own chats of a user (internal), with their meta. */
  async internalOf(userId: string): Promise<{ id: string; meta: Json }[]> {
    const rows = await this.db.selectFrom('chat').select(['id', 'meta']).where('user_id', '=', userId).where('internal', '=', true).execute();
    return rows.map((r) => ({ id: r.id, meta: fromJson<Json>(r.meta, {}) }));
  }

  /** The chats of `userId` in `folderIds` (all of them: archived and pinned too). */
  async idsInFolders(userId: string, folderIds: string[]): Promise<string[]> {
    if (folderIds.length === 0) return [];
    const rows = await this.db.selectFrom('chat').select('id').where('user_id', '=', userId).where('folder_id', 'in', folderIds).execute();
    return rows.map((r) => r.id);
  }

  async moveOutOfFolders(userId: string, folderIds: string[]): Promise<void> {
    if (folderIds.length === 0) return;
    await this.db.updateTable('chat').set({ folder_id: null }).where('user_id', '=', userId).where('folder_id', 'in', folderIds).execute();
  }

  /** Marks a user's listed chats read as of their last change; with `folderIds`, only those in these folders. */
  async markRead(userId: string, folderIds?: string[]): Promise<number> {
    if (folderIds && folderIds.length === 0) return 0;
    let query = this.db
      .updateTable('chat')
      .set((eb) => ({ last_read_at: eb.ref('updated_at') }))
      .where('user_id', '=', userId)
      .where('archived', '=', false)
      .where('internal', '=', false);
    if (folderIds) query = query.where('folder_id', 'in', folderIds);
    const result = await query.executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Unread chats of a user per folder: changed since read, not archived, no answer still being written. */
  async unreadByFolder(userId: string, folderIds: string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    if (folderIds.length === 0) return counts;
    const rows = await this.db
      .selectFrom('chat')
      .select((eb) => ['chat.folder_id', eb.fn.countAll<number>().as('n')])
      .where('chat.user_id', '=', userId)
      .where('chat.folder_id', 'in', folderIds)
      .where('chat.archived', '=', false)
      .where(sql<SqlBool>`chat.updated_at > coalesce(chat.last_read_at, 0)`)
      .where(sql<SqlBool>`not ${unfinishedAnswer}`)
      .groupBy('chat.folder_id')
      .execute();
    for (const row of rows) if (row.folder_id) counts.set(row.folder_id, Number(row.n));
    return counts;
  }

  // ---- messages ----------------------------------------------------------

  /** Inserts or refreshes message rows; a row keeps its first `created_at`, and its usage (and the tokens it gave) when none is given. */
  async upsertMessages(rows: MessageRow[]): Promise<void> {
    for (const part of chunks(rows, ROWS_PER_INSERT)) {
      await this.db
        .insertInto('chat_message')
        .values(part.map((row) => ({ ...row, usage: toJson(row.usage) })))
        .onConflict((oc) =>
          oc.columns(['chat_id', 'id']).doUpdateSet((eb) => ({
            role: eb.ref('excluded.role'),
            parent_id: eb.ref('excluded.parent_id'),
            content: eb.ref('excluded.content'),
            model_id: eb.ref('excluded.model_id'),
            done: eb.ref('excluded.done'),
            usage: sql`coalesce(excluded.usage, chat_message.usage)`,
            // Counts from a kept usage stay; an estimate replaces only estimates.
            input_tokens: sql`case when excluded.usage is null and chat_message.usage is not null then chat_message.input_tokens else excluded.input_tokens end`,
            output_tokens: sql`case when excluded.usage is null and chat_message.usage is not null then chat_message.output_tokens else excluded.output_tokens end`,
            tokens_estimated: sql`case when excluded.usage is null and chat_message.usage is not null then chat_message.tokens_estimated else excluded.tokens_estimated end`,
            updated_at: eb.ref('excluded.updated_at'),
          })),
        )
        .execute();
    }
  }

  async deleteMessages(chatId: string, ids: string[]): Promise<void> {
    for (const part of chunks(ids, ROWS_PER_INSERT)) await this.db.deleteFrom('chat_message').where('chat_id', '=', chatId).where('id', 'in', part).execute();
  }

  /** Of `chatIds`, those with an assistant answer still being written. */
  async withUnfinishedAnswer(chatIds: string[]): Promise<Set<string>> {
    if (chatIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('chat_message')
      .select('chat_id')
      .distinct()
      .where('chat_id', 'in', chatIds)
      .where('role', '=', 'assistant')
      .where('done', '=', false)
      .execute();
    return new Set(rows.map((r) => r.chat_id));
  }

  /** Per chat, the texts of its messages containing `text` (any case), oldest first. */
  async matchingTexts(chatIds: string[], text: string): Promise<Map<string, string[]>> {
    const found = new Map<string, string[]>();
    if (chatIds.length === 0 || !text) return found;
    const rows = await this.db
      .selectFrom('chat_message')
      .select(['chat_id', 'content'])
      .where('chat_id', 'in', chatIds)
      .where(sql<SqlBool>`lower(content) like ${containsPattern(text)} escape '\\'`)
      .orderBy('created_at')
      .execute();
    for (const row of rows) if (row.content !== null) found.set(row.chat_id, [...(found.get(row.chat_id) ?? []), row.content]);
    return found;
  }

  // ---- tags --------------------------------------------------------------

  async tagsOfUser(userId: string): Promise<TagRecord[]> {
    const rows = await this.db.selectFrom('tag').selectAll().where('user_id', '=', userId).orderBy('id').execute();
    return rows.map((r) => ({ id: r.id, name: r.name, user_id: r.user_id, meta: fromJson(r.meta, null) }));
  }

  async tags(userId: string, ids: string[]): Promise<TagRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('tag').selectAll().where('user_id', '=', userId).where('id', 'in', ids).execute();
    return rows.map((r) => ({ id: r.id, name: r.name, user_id: r.user_id, meta: fromJson(r.meta, null) }));
  }

  /** Creates the tags a user does not have yet; existing ones keep their name. */
  async ensureTags(userId: string, tags: { id: string; name: string }[]): Promise<void> {
    if (tags.length === 0) return;
    await this.db
      .insertInto('tag')
      .values(tags.map((t) => ({ id: t.id, name: t.name, user_id: userId, meta: null })))
      .onConflict((oc) => oc.columns(['user_id', 'id']).doNothing())
      .execute();
  }

  async deleteTags(userId: string, ids?: string[]): Promise<void> {
    if (ids && ids.length === 0) return;
    let query = this.db.deleteFrom('tag').where('user_id', '=', userId);
    if (ids) query = query.where('id', 'in', ids);
    await query.execute();
  }

  /** Replaces the tag rows of chats (the index behind `meta.tags`). */
  async setChatTags(entries: { chatId: string; userId: string; tagIds: string[] }[]): Promise<void> {
    if (entries.length === 0) return;
    for (const part of chunks(entries.map((e) => e.chatId), ROWS_PER_INSERT)) await this.db.deleteFrom('chat_tag').where('chat_id', 'in', part).execute();
    const rows = entries.flatMap((e) => e.tagIds.map((tag_id) => ({ chat_id: e.chatId, tag_id, user_id: e.userId })));
    for (const part of chunks(rows, ROWS_PER_INSERT)) await this.db.insertInto('chat_tag').values(part).execute();
  }

  /** The tags the given chats carry. */
  async tagIdsOfChats(chatIds: string[]): Promise<string[]> {
    const tags = new Set<string>();
    for (const part of chunks(chatIds, ROWS_PER_INSERT)) {
      const rows = await this.db.selectFrom('chat_tag').select('tag_id').distinct().where('chat_id', 'in', part).execute();
      for (const row of rows) tags.add(row.tag_id);
    }
    return [...tags];
  }

  /** How many listed, unarchived chats of a user carry each tag. */
  async countByTags(userId: string, tagIds: string[]): Promise<Map<string, number>> {
    const counts = new Map(tagIds.map((id) => [id, 0]));
    if (tagIds.length === 0) return counts;
    const rows = await this.db
      .selectFrom('chat_tag')
      .innerJoin('chat', 'chat.id', 'chat_tag.chat_id')
      .select((eb) => ['chat_tag.tag_id', eb.fn.countAll<number>().as('n')])
      .where('chat_tag.user_id', '=', userId)
      .where('chat_tag.tag_id', 'in', tagIds)
      .where('chat.archived', '=', false)
      .where('chat.internal', '=', false)
      .groupBy('chat_tag.tag_id')
      .execute();
    for (const row of rows) counts.set(row.tag_id, Number(row.n));
    return counts;
  }

  // ---- share snapshots ----------------------------------------------------

  async insertShare(share: SharedChatRecord): Promise<void> {
    await this.db
      .insertInto('shared_chat')
      .values({ ...share, chat: toJson(share.chat) ?? '{}' })
      .execute();
  }

  async updateShare(id: string, patch: { title: string; chat: Json; updated_at: number }): Promise<boolean> {
    const result = await this.db
      .updateTable('shared_chat')
      .set({ ...patch, chat: toJson(patch.chat) ?? '{}' })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async shareById(id: string): Promise<SharedChatRecord | null> {
    const row = await this.db.selectFrom('shared_chat').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? { ...row, chat: fromJson<Json>(row.chat, {}), created_at: Number(row.created_at), updated_at: Number(row.updated_at) } : null;
  }

  /** A user's share snapshots, without their conversations. */
  async sharesOfUser(
    userId: string,
    options: { titleContains?: string; order?: { by: SortColumn; direction: 'asc' | 'desc' } } & Page = {},
  ): Promise<Omit<SharedChatRecord, 'chat' | 'user_id'>[]> {
    let query = this.db.selectFrom('shared_chat').select(['id', 'chat_id', 'title', 'created_at', 'updated_at']).where('user_id', '=', userId);
    if (options.titleContains) query = query.where(sql<SqlBool>`lower(title) like ${containsPattern(options.titleContains)} escape '\\'`);
    const order = options.order ?? NEWEST_FIRST;
    query = query.orderBy(sql.ref(order.by), order.direction).orderBy('id', order.direction);
    if (options.limit !== undefined) query = query.limit(options.limit);
    if (options.offset) query = query.offset(options.offset);
    const rows = await query.execute();
    return rows.map((r) => ({ ...r, created_at: Number(r.created_at), updated_at: Number(r.updated_at) }));
  }

  /** Snapshots whose conversation mentions `text` anywhere (a first cut; the caller checks where). */
  async sharesMentioning(text: string): Promise<Pick<SharedChatRecord, 'id' | 'chat_id' | 'user_id' | 'chat'>[]> {
    const pattern = `%${likeLiteral(text)}%`;
    const rows = await this.db
      .selectFrom('shared_chat')
      .select(['id', 'chat_id', 'user_id', 'chat'])
      .where(sql<SqlBool>`chat like ${pattern} escape '\\'`)
      .execute();
    return rows.map((row) => ({ ...row, chat: fromJson<Json>(row.chat, {}) }));
  }

  async deleteSharesOfChat(chatId: string): Promise<void> {
    await this.db.deleteFrom('shared_chat').where('chat_id', '=', chatId).execute();
  }

  /** Removes a user's snapshots and clears the share ids of their chats; the chats that had one. */
  async deleteSharesOfUser(userId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('shared_chat').select('chat_id').distinct().where('user_id', '=', userId).execute();
    await this.db.deleteFrom('shared_chat').where('user_id', '=', userId).execute();
    await this.db.updateTable('chat').set({ share_id: null }).where('user_id', '=', userId).where('share_id', 'is not', null).execute();
    return rows.map((r) => r.chat_id);
  }
}
