import { randomUUID } from 'node:crypto';
import { RESOURCE_TYPES, type AccessGrant, type GrantPermission } from '../../core/access/grants.js';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import { InvalidatedCache, NOTICED_CACHE, deepFreeze } from '../../core/cache.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { type TokenCounts, countTokens, reportedTokens } from '../../core/tokens.js';
import { ERROR, HttpError, badRequest, forbidden, notFound, unauthorized } from '../../core/http/errors.js';
import type { CallContext } from '../../core/upstream/headers.js';
import { ADMIN_CONFIG_KEYS } from '../auths/settings.js';
import type { FolderChats, FolderChatsPage, FoldersService } from '../folders/service.js';
import type { CompletionsService } from '../models/completions.js';
import type { ModelsService } from '../models/service.js';
import type { UsersService } from '../users/service.js';
import { ChatSummarizer, compactionConfig, contextUsage, currentBranch, fromLatestSummary } from './compaction.js';
import {
  type Json,
  type Message,
  type MessageMap,
  cleanText,
  contentText,
  currentMessageIdOf,
  deleteMessageFromHistory,
  fileIdsOf,
  forkHistory,
  historyOf,
  isObject,
  mergeHistory,
  messageList,
  messageTimestamp,
  messagesOf,
  outputText,
  repairCurrentId,
  upsertMessageToHistory,
} from './history.js';
import type { ChatConfigForm, ChatForm, ChatImportForm, ChatListQuery, ChatResponse, ChatTitleIdResponse, CompactResponse, EventForm, FilteredListQuery } from './schemas.js';
import { CHAT_CONFIG_KEYS, type ChatOptions, readChatOptions } from './settings.js';
import { exportStats, usageStats } from './stats.js';
import {
  type ChatFilter,
  type ChatHead,
  type ChatOrder,
  type ChatPatch,
  type ChatRecord,
  ChatStore,
  type ChatSummary,
  type MessageRow,
  NEWEST_FIRST,
  type SortColumn,
  type TagRecord,
} from './store.js';

export type { ChatRecord } from './store.js';

/** Grants of a shared chat are kept under the chat's id with this resource type (the reference's). */
const SHARED = RESOURCE_TYPES.sharedChat;
const PAGE_SIZE = 60;
const FOLDER_PAGE_SIZE = 10;
const EXPORT_BATCH = 100;
const STATS_EXPORT_PAGE = 10;
const SEARCH_FILTER_PREFIXES = ['tag:', 'folder:', 'pinned:', 'archived:', 'shared:'];
const SHARE_RULE = { publicPermission: 'sharing.public_chats', openPermission: 'sharing.open_chats' };

/**
 * How each route refuses a chat the caller may not use, as the reference's
 * chats.py does, with one answer for unknown chats so no refusal tells that a
 * chat exists: 401 with `NOT_FOUND` (reads, tag removal, compaction, clone of a
 * share), `ACCESS_PROHIBITED` (update, messages, sharing) or the bare default
 * message (pin, archive, clone, folder, adding a tag); 404 where the reference
 * answers 404 (deletion, share grants, statistics) and on 0.11.0's routes (fork, unread).
 */
const REFUSAL = {
  notFound: () => unauthorized(ERROR.NOT_FOUND),
  prohibited: () => unauthorized(ERROR.ACCESS_PROHIBITED),
  failed: () => unauthorized(ERROR.DEFAULT()),
  unknown: () => notFound(),
} as const;
type Refusal = keyof typeof REFUSAL;

/** Which of the given chats have work under way (the chat pipeline's task registry answers). */
export type ActivityProbe = (chatIds: string[]) => Promise<Set<string>>;

/** Receives the `events` a chat's owner should see live: `{chat_id, message_id, data: {type, data}}`. */
export type RealtimeRelay = (userId: string, payload: Json) => void | Promise<void>;

const tagIdOf = (name: string) => name.replace(/ /g, '_').toLowerCase();
const titleOf = (chat: Json) => (typeof chat.title === 'string' ? cleanText(chat.title) : 'New Chat');
const tagsOfMeta = (meta: Json): string[] => (Array.isArray(meta.tags) ? meta.tags.filter((t): t is string => typeof t === 'string') : []);

/** The meta of an imported chat with its tags as ids (a tag name becomes its id, as tags are stored). */
function normalizeMeta(meta: Json): { meta: Json; tags: { id: string; name: string }[] } {
  const tags = new Map<string, string>();
  for (const name of tagsOfMeta(meta)) if (tagIdOf(name) !== 'none' && !tags.has(tagIdOf(name))) tags.set(tagIdOf(name), name);
  const normalized = 'tags' in meta ? { ...meta, tags: [...tags.keys()] } : meta;
  return { meta: normalized, tags: [...tags].map(([id, name]) => ({ id, name })) };
}

/**
 * A finished answer's tokens: the provider's usage, else estimated (its text out,
 * its prompt's text in). Other messages and answers still streaming count none.
 */
function answerTokens(message: Message, usage: unknown, text: string, messages: MessageMap): TokenCounts | null {
  if (message.role !== 'assistant' || message.done === false) return null;
  const reported = reportedTokens(usage);
  if (reported) return reported;
  const parent = typeof message.parentId === 'string' ? messages[message.parentId] : undefined;
  return { input: isObject(parent) ? countTokens(contentText(parent)) : 0, output: countTokens(text), estimated: true };
}

/** The `chat_message` row of a history message; none for messages without a role. */
function messageRow(chatId: string, userId: string, id: string, message: Message, now: number, messages: MessageMap = {}): MessageRow | null {
  if (!isObject(message) || typeof message.role !== 'string' || !message.role) return null;
  const usage = message.usage ?? (isObject(message.info) ? message.info.usage : undefined);
  const text = contentText(message);
  const model = message.model ?? message.model_id;
  const tokens = answerTokens(message, usage, text, messages);
  return {
    chat_id: chatId,
    id,
    user_id: userId,
    role: message.role,
    parent_id: typeof message.parentId === 'string' ? message.parentId : null,
    content: text ? cleanText(text) : null,
    model_id: typeof model === 'string' ? model : null,
    done: message.done !== false,
    usage: isObject(usage) ? usage : null,
    input_tokens: tokens?.input ?? null,
    output_tokens: tokens?.output ?? null,
    tokens_estimated: tokens?.estimated ?? false,
    created_at: messageTimestamp(message.timestamp, now),
    updated_at: now,
  };
}

const rowKey = (row: MessageRow) => JSON.stringify([row.role, row.parent_id, row.content, row.model_id, row.done, row.usage]);

/** The rows of `after` that are new or differ from `before`: a save rewrites only what changed. */
function changedRows(chatId: string, userId: string, before: MessageMap, after: MessageMap, now: number): MessageRow[] {
  const rows: MessageRow[] = [];
  for (const [id, message] of Object.entries(after)) {
    const row = messageRow(chatId, userId, id, message, now, after);
    if (!row) continue;
    const old = before[id] ? messageRow(chatId, userId, id, before[id], now, before) : null;
    if (!old || rowKey(old) !== rowKey(row)) rows.push(row);
  }
  return rows;
}

/** A passage of `content` around `text`, at most 200 characters, whitespace collapsed (chat_search_snippet). */
function snippetOf(content: string, text: string, maxLength = 200): string | null {
  const index = content.toLowerCase().indexOf(text);
  if (index < 0) return null;
  let start = Math.max(index - Math.floor(maxLength / 2), 0);
  let end = Math.min(start + maxLength, content.length);
  if (index + text.length > end) {
    end = Math.min(index + text.length, content.length);
    start = Math.max(end - maxLength, 0);
  }
  const snippet = content.slice(start, end).split(/\s+/).filter(Boolean).join(' ');
  return `${start ? '...' : ''}${snippet}${end < content.length ? '...' : ''}`;
}

export function toChatResponse(chat: ChatRecord, usage: Json | null = null): ChatResponse {
  return {
    id: chat.id,
    user_id: chat.user_id,
    title: chat.title,
    chat: chat.chat,
    updated_at: chat.updated_at,
    created_at: chat.created_at,
    share_id: chat.share_id,
    archived: chat.archived,
    pinned: chat.pinned,
    meta: chat.meta,
    variables: chat.variables,
    folder_id: chat.folder_id,
    tasks: chat.tasks,
    summary: chat.summary,
    current_message_id: chat.current_message_id,
    context_usage: usage,
  };
}

/** `order_by`/`direction` of the archived and per-user lists; both are needed, a bad value is a 400. */
function listOrder(query: FilteredListQuery): { by: SortColumn; direction: 'asc' | 'desc' } {
  if (!query.order_by || !query.direction) return { by: 'updated_at', direction: 'desc' };
  if (!['updated_at', 'created_at', 'title'].includes(query.order_by)) throw badRequest('Invalid order_by field');
  const direction = query.direction.toLowerCase();
  if (direction !== 'asc' && direction !== 'desc') throw badRequest('Invalid direction for ordering');
  return { by: query.order_by as SortColumn, direction };
}

/** `sort_by`/`sort_dir` of the sidebar lists (chat_list_order). */
function sidebarOrder(sortBy: string | undefined, sortDir: string | undefined, readerId?: string): ChatOrder {
  const direction = sortDir === 'asc' ? 'asc' : 'desc';
  if (sortBy === 'unread_updated_at') return { by: 'unread', direction, readerId };
  return { by: sortBy === 'title' ? 'title' : 'updated_at', direction };
}

/**
 * Chats: the stored conversations of each user, their lists, tags, share
 * snapshots and folder filing. See docs/chats.md, which also lists the calls
 * the chat pipeline makes (`readable`, `upsertMessage`, `markRead`, ...).
 */
export class ChatsService implements FolderChats {
  private readonly options: ChatOptions;
  private readonly summarizer: ChatSummarizer;
  private activity: ActivityProbe | null = null;
  /** The sidebar's pages, read on every page load and after every answer; dropped on any write they depend on. */
  private readonly sidebarPages = new InvalidatedCache<ChatSummary[]>(NOTICED_CACHE);
  private readonly relays: RealtimeRelay[] = [];

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
    private readonly folders: FoldersService,
    models: ModelsService,
    completions: CompletionsService,
  ) {
    this.options = readChatOptions(core.env.raw);
    this.summarizer = new ChatSummarizer(core.settings, models, completions);
    // Any write to chats (their messages decide the unread order), or to the folders and users lists depend on.
    core.database.onWrite(['chat', 'chat_message', 'folder', 'user'], () => core.changes.announce('chats'));
    core.changes.on('chats', () => this.sidebarPages.invalidate());
  }

  private store(db: Db = this.core.db): ChatStore {
    return new ChatStore(db, this.core.database.dialect);
  }

  private transaction<T>(run: (trx: Db) => Promise<T>, db?: Db): Promise<T> {
    return db ? run(db) : this.core.db.transaction().execute(run);
  }

  // ---- for the chat pipeline ------------------------------------------------

  /** The task registry tells which chats are busy; until one is set, no chat is `active`. */
  trackActivity(probe: ActivityProbe): void {
    this.activity = probe;
  }

  /** The realtime layer forwards message events and edits to the owner's sockets. */
  onRealtime(relay: RealtimeRelay): void {
    this.relays.push(relay);
  }

  private async relay(userId: string, payload: Json): Promise<void> {
    for (const relay of this.relays) await relay(userId, payload);
  }

  private async isBusy(chatId: string): Promise<boolean> {
    return this.activity !== null && (await this.activity([chatId])).has(chatId);
  }

  /** Admins reach other users' chats only while ENABLE_ADMIN_CHAT_ACCESS is on (the reference's #31413). */
  private reachesEveryChat(user: UserRecord): boolean {
    return isAdmin(user) && this.options.adminChatAccess;
  }

  /** Whether the chat exists and the user may continue and change it: its owner, or an admin reaching every chat. */
  async managedBy(user: UserRecord, id: string): Promise<boolean> {
    const chat = await this.store().headById(id);
    return chat !== null && (chat.user_id === user.id || this.reachesEveryChat(user));
  }

  /**
   * The chat if the user may read it: their own; any chat for admins while
   * ENABLE_ADMIN_CHAT_ACCESS is on (the server's internal chats always); a chat
   * shared with them by a grant; a chat filed in a folder they may read.
   */
  async readable(user: UserRecord, id: string, db?: Db): Promise<ChatRecord | null> {
    const chat = await this.store(db).byId(id);
    if (!chat) return null;
    if (chat.user_id === user.id) return chat;
    if (isAdmin(user) && (this.options.adminChatAccess || chat.meta.internal === true)) return chat;
    if ((await this.granted(user, 'read', [id])).has(id)) return chat;
    if (chat.folder_id && (await this.folders.canRead(user, chat.folder_id, db))) return chat;
    return null;
  }

  /** Share grants the user holds (admins included: a grant given to them counts whatever the bypass setting). */
  private async granted(user: UserRecord, permission: GrantPermission, chatIds: string[]): Promise<Set<string>> {
    const subject = { ...(await this.access.subjectOf(user)), bypass: false };
    return this.access.accessibleIds(subject, SHARED, permission, chatIds);
  }

  /** The user's own chat, or the route's refusal (a 404 by default). */
  async own(user: UserRecord, id: string, refusal: Refusal = 'unknown'): Promise<ChatRecord> {
    const chat = await this.store().byId(id, { userId: user.id });
    if (!chat) throw REFUSAL[refusal]();
    return chat;
  }

  private async ownHead(user: UserRecord, id: string, refusal: Refusal): Promise<ChatHead> {
    const chat = await this.store().headById(id, user.id);
    if (!chat) throw REFUSAL[refusal]();
    return chat;
  }

  /** `ownHead` inside a transaction that will write the chat's meta: the row is held until it ends. */
  private async lockedHead(trx: Db, user: UserRecord, id: string, refusal: Refusal): Promise<ChatHead> {
    const chat = await this.store(trx).headById(id, user.id, { lock: true });
    if (!chat) throw REFUSAL[refusal]();
    return chat;
  }

  /**
   * Inserts or merges one message into a chat's history and makes it current
   * (the chat's title follows `chat.title`); `touch` moves the chat to the top
   * of its list. An empty content takes the text of the message's `output`.
   * Null when the chat does not exist.
   */
  async upsertMessage(chatId: string, messageId: string, message: Message, options: { touch?: boolean; db?: Db } = {}): Promise<ChatRecord | null> {
    const update: Message = { ...message };
    if (!update.content) {
      const text = outputText(update.output);
      if (text) update.content = text;
    }
    if (typeof update.content === 'string') update.content = cleanText(update.content);
    return this.transaction(async (trx) => {
      const chat = await this.store(trx).byId(chatId, { lock: true });
      if (!chat) return null;
      const now = this.core.clock.now();
      repairCurrentId(chat.chat);
      const history = historyOf(chat.chat);
      const saved = upsertMessageToHistory(history, messageId, update, now);
      chat.chat.history = history;
      const patch: ChatPatch = { chat: chat.chat, title: titleOf(chat.chat), current_message_id: currentMessageIdOf(chat.chat) };
      if (options.touch !== false) patch.updated_at = now;
      await this.store(trx).update(chatId, patch);
      const row = messageRow(chatId, chat.user_id, messageId, saved, now, messagesOf(chat.chat));
      if (row) await this.store(trx).upsertMessages([row]);
      return { ...chat, ...patch };
    }, options.db);
  }

  /** One message of a chat's history (`{}` when the chat has no such message; null without the chat). */
  async messageOf(chatId: string, messageId: string): Promise<Message | null> {
    const chat = await this.store().byId(chatId);
    if (!chat) return null;
    return messagesOf(chat.chat)[messageId] ?? {};
  }

  /** The message map the pipeline walks to rebuild a conversation (`messageList` from `history.ts`). */
  async messages(chatId: string): Promise<MessageMap | null> {
    const chat = await this.store().byId(chatId);
    return chat ? messagesOf(chat.chat) : null;
  }

  /**
   * Applies a message event to the stored history, as the reference's event
   * emitter saves it: `status` appends to `statusHistory`; `message` appends
   * to the content and `replace` sets it; `embeds`, `files` and `source`/
   * `citation` add to those lists.
   */
  async applyMessageEvent(chatId: string, messageId: string, event: { type: string; data: Json }): Promise<void> {
    const data = isObject(event.data) ? event.data : {};
    const current = async () => (await this.messageOf(chatId, messageId)) ?? {};
    const list = (value: unknown) => (Array.isArray(value) ? value : []);
    switch (event.type) {
      case 'status': {
        const message = await current();
        if (Object.keys(message).length === 0) return;
        await this.upsertMessage(chatId, messageId, { statusHistory: [...list(message.statusHistory), data] }, { touch: false });
        return;
      }
      case 'message': {
        const message = await current();
        await this.upsertMessage(chatId, messageId, { content: `${typeof message.content === 'string' ? message.content : ''}${String(data.content ?? '')}` });
        return;
      }
      case 'replace':
        await this.upsertMessage(chatId, messageId, { content: String(data.content ?? '') });
        return;
      case 'embeds': {
        const embeds = list(data.embeds);
        const merged = data.replace ? embeds : [...embeds, ...list((await current()).embeds)];
        await this.upsertMessage(chatId, messageId, { embeds: merged }, { touch: false });
        return;
      }
      case 'files':
        await this.upsertMessage(chatId, messageId, { files: [...list(data.files), ...list((await current()).files)] }, { touch: false });
        return;
      case 'source':
      case 'citation':
        if (data.type === undefined || data.type === null) {
          await this.upsertMessage(chatId, messageId, { sources: [...list((await current()).sources), data] }, { touch: false });
        }
        return;
    }
  }

  /** Sets a chat's title (in the record and in `chat.title`) without moving it in its list. */
  async setTitle(chatId: string, title: string): Promise<void> {
    await this.transaction(async (trx) => {
      const chat = await this.store(trx).byId(chatId, { lock: true });
      if (!chat) return;
      const clean = cleanText(title);
      await this.store(trx).update(chatId, { title: clean, chat: { ...chat.chat, title: clean } });
    });
  }

  /** Replaces a chat's tags (generated tags); tags no chat uses any more are removed. */
  async setTags(owner: UserRecord, chatId: string, names: string[]): Promise<void> {
    await this.transaction(async (trx) => {
      const chat = await this.store(trx).headById(chatId, undefined, { lock: true });
      if (!chat) return;
      const named = names.filter((n) => tagIdOf(n) !== 'none');
      const ids = [...new Set(named.map(tagIdOf))];
      await this.store(trx).ensureTags(owner.id, named.map((name) => ({ id: tagIdOf(name), name })));
      await this.writeTags(trx, chat, ids);
      await this.pruneTags(trx, owner.id, tagsOfMeta(chat.meta).filter((t) => !ids.includes(t)));
    });
  }

  /** The owner opened the chat: read as of now. `was_unread` tells whether folder counts changed. */
  async markRead(user: UserRecord, chatId: string): Promise<{ last_read_at: number; was_unread: boolean } | null> {
    const chat = await this.store().headById(chatId, user.id);
    if (!chat) return null;
    const now = this.core.clock.now();
    await this.store().update(chatId, { last_read_at: now });
    return { last_read_at: now, was_unread: chat.last_read_at === null || chat.updated_at > chat.last_read_at };
  }

  async setTasks(chatId: string, tasks: unknown[]): Promise<void> {
    await this.store().update(chatId, { tasks });
  }

  async tasksOf(chatId: string): Promise<unknown[]> {
    return (await this.store().headById(chatId))?.tasks ?? [];
  }

  async setSummary(chatId: string, summary: string | null): Promise<void> {
    await this.store().update(chatId, { summary: summary === null ? null : cleanText(summary) });
  }

  async setVariables(chatId: string, variables: Json): Promise<void> {
    await this.store().update(chatId, { variables });
  }

  // ---- writing chats ----------------------------------------------------------

  private newRecord(userId: string, chat: Json, fields: Partial<ChatRecord>): ChatRecord {
    const now = this.core.clock.now();
    return {
      id: randomUUID(),
      user_id: userId,
      title: titleOf(chat),
      chat,
      folder_id: null,
      share_id: null,
      archived: false,
      pinned: false,
      meta: {},
      variables: {},
      tasks: null,
      summary: null,
      current_message_id: currentMessageIdOf(chat),
      last_read_at: null,
      created_at: now,
      updated_at: now,
      ...fields,
    };
  }

  /** Stores new chats with their message rows and tag rows. */
  private async insertChats(trx: Db, chats: ChatRecord[], tagNames: { id: string; name: string }[][] = []): Promise<void> {
    const store = this.store(trx);
    await store.insert(chats);
    const now = this.core.clock.now();
    await store.upsertMessages(chats.flatMap((c) => changedRows(c.id, c.user_id, {}, messagesOf(c.chat), now)));
    const byUser = new Map<string, { id: string; name: string }[]>();
    chats.forEach((c, i) => {
      const names = tagNames[i] ?? tagsOfMeta(c.meta).map((id) => ({ id, name: id }));
      byUser.set(c.user_id, [...(byUser.get(c.user_id) ?? []), ...names]);
    });
    for (const [userId, names] of byUser) await store.ensureTags(userId, names);
    await store.setChatTags(chats.filter((c) => tagsOfMeta(c.meta).length > 0).map((c) => ({ chatId: c.id, userId: c.user_id, tagIds: tagsOfMeta(c.meta) })));
  }

  /** Writes `meta.tags` and the tag rows behind it together. */
  private async writeTags(trx: Db, chat: ChatHead, tagIds: string[]): Promise<Json> {
    const meta = { ...chat.meta, tags: tagIds };
    await this.store(trx).update(chat.id, { meta });
    await this.store(trx).setChatTags([{ chatId: chat.id, userId: chat.user_id, tagIds }]);
    return meta;
  }

  /** Removes the user's tags among `tagIds` that no listed, unarchived chat carries any more. */
  private async pruneTags(trx: Db, userId: string, tagIds: string[]): Promise<void> {
    if (tagIds.length === 0) return;
    const counts = await this.store(trx).countByTags(userId, tagIds);
    await this.store(trx).deleteTags(userId, tagIds.filter((id) => (counts.get(id) ?? 0) === 0));
  }

  private async requireImportPermission(user: UserRecord): Promise<void> {
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'chat.import'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  private async requireFolder(user: UserRecord, folderId: string | null | undefined): Promise<void> {
    if (folderId && !(await this.folders.canFileIn(user, folderId))) throw notFound();
  }

  /** `POST /chats/new`: a chat in the user's list (or in a folder they may file in). */
  async create(user: UserRecord, form: ChatForm): Promise<ChatResponse> {
    await this.requireFolder(user, form.folder_id);
    const chat = this.newRecord(user.id, form.chat, {
      folder_id: form.folder_id ?? null,
      variables: form.variables ?? {},
      last_read_at: this.core.clock.now(),
    });
    await this.core.db.transaction().execute(async (trx) => {
      await this.insertChats(trx, [chat], [[]]);
      await this.core.events.publish(
        { event: 'chat.created', actor: user, subjectId: chat.id, subjectType: 'chat', data: { title: chat.title, folder_id: chat.folder_id } },
        trx,
      );
    });
    return toChatResponse(chat);
  }

  /**
   * A chat the server keeps for another feature (`meta.internal`: never listed), such as a
   * note's chats; `meta` says what it belongs to. `chat.id` is the chat's id.
   */
  async createInternal(user: UserRecord, chat: Json & { id: string }, meta: Json): Promise<ChatResponse> {
    const record = this.newRecord(user.id, chat, { id: chat.id, meta: { ...meta, internal: true }, last_read_at: this.core.clock.now() });
    await this.core.db.transaction().execute((trx) => this.insertChats(trx, [record], [[]]));
    return toChatResponse(record);
  }

  /** The user's internal chats whose meta holds every value of `match`, latest change first. */
  async internalChats(userId: string, match: Json): Promise<ChatResponse[]> {
    const ids = (await this.store().internalOf(userId)).filter((chat) => Object.entries(match).every(([key, value]) => chat.meta[key] === value)).map((chat) => chat.id);
    const records = (await Promise.all(ids.map((id) => this.store().byId(id)))).filter((chat): chat is ChatRecord => chat !== null);
    return records.sort((a, b) => b.updated_at - a.updated_at || b.created_at - a.created_at).map((chat) => toChatResponse(chat));
  }

  /** Builds imported chats: folders that are not the user's are dropped, tags become tag rows. */
  private async importRecords(user: UserRecord, forms: ChatImportForm[]): Promise<{ chats: ChatRecord[]; tags: { id: string; name: string }[][] }> {
    const own = await this.folders.ownIds(user.id, forms.flatMap((f) => (f.folder_id ? [f.folder_id] : [])));
    const chats: ChatRecord[] = [];
    const tags: { id: string; name: string }[][] = [];
    for (const form of forms) {
      const { meta, tags: names } = normalizeMeta(form.meta ?? {});
      const now = this.core.clock.now();
      chats.push(
        this.newRecord(user.id, form.chat, {
          meta,
          variables: form.variables ?? {},
          pinned: form.pinned === true,
          folder_id: form.folder_id && own.has(form.folder_id) ? form.folder_id : null,
          current_message_id: form.current_message_id || currentMessageIdOf(form.chat),
          created_at: form.created_at || now,
          updated_at: form.updated_at || now,
        }),
      );
      tags.push(names);
    }
    return { chats, tags };
  }

  /**
   * Chats carried over from an Open WebUI database (`parley import-openwebui`): stored
   * as they were there, ids and times kept, with their message and tag rows (`tagNames`:
   * each chat's tags with their display names).
   */
  async restore(chats: ChatRecord[], tagNames: { id: string; name: string }[][]): Promise<void> {
    await this.core.db.transaction().execute((trx) => this.insertChats(trx, chats, tagNames));
  }

  /** `POST /chats/import` (needs `chat.import`). */
  async import(user: UserRecord, forms: ChatImportForm[]): Promise<ChatResponse[]> {
    await this.requireImportPermission(user);
    const { chats, tags } = await this.importRecords(user, forms);
    await this.core.db.transaction().execute(async (trx) => {
      await this.insertChats(trx, chats, tags);
      await this.core.events.publish(
        { event: 'chat.imported', actor: user, subjectId: null, subjectType: 'chat.import', data: { count: chats.length, chat_ids: chats.map((c) => c.id) } },
        trx,
      );
    });
    return chats.map((c) => toChatResponse(c));
  }

  /**
   * `POST /chats/{id}` (owner): the sent chat JSON merged over the stored one;
   * a sent history is merged message by message (nothing is deleted here).
   * Only a new history or message list moves the chat up its list.
   */
  async update(user: UserRecord, id: string, form: ChatForm): Promise<ChatResponse> {
    const chat = await this.core.db.transaction().execute(async (trx) => {
      const current = await this.store(trx).byId(id, { userId: user.id, lock: true });
      if (!current) throw REFUSAL.prohibited();
      const updated: Json = { ...current.chat, ...form.chat };
      if ('history' in form.chat) updated.history = mergeHistory(historyOf(current.chat), isObject(form.chat.history) ? form.chat.history : {});
      const now = this.core.clock.now();
      const patch: ChatPatch = { chat: updated, title: titleOf(updated) };
      if (['history', 'messages', 'currentId', 'branchPointMessageId'].some((key) => key in updated)) patch.current_message_id = currentMessageIdOf(updated);
      if ('history' in form.chat || 'messages' in form.chat) patch.updated_at = now;
      if (form.variables !== undefined && form.variables !== null) patch.variables = form.variables;
      await this.store(trx).update(id, patch);
      await this.store(trx).upsertMessages(changedRows(id, current.user_id, messagesOf(current.chat), messagesOf(updated), now));
      const saved = { ...current, ...patch };
      await this.core.events.publish({ event: 'chat.updated', actor: user, subjectId: id, subjectType: 'chat', data: { title: saved.title } }, trx);
      return saved;
    });
    return toChatResponse(chat);
  }

  /** A chat whose messages the user may change: their own, or any for admins with ENABLE_ADMIN_CHAT_ACCESS. */
  private async editable(user: UserRecord, id: string): Promise<ChatHead> {
    const chat = await this.store().headById(id);
    if (!chat || (chat.user_id !== user.id && !this.reachesEveryChat(user))) throw REFUSAL.prohibited();
    return chat;
  }

  /** `POST /chats/{id}/messages/{message_id}`: sets a message's content (owner or admin). */
  async updateMessage(user: UserRecord, id: string, messageId: string, content: string): Promise<ChatResponse> {
    const head = await this.editable(user, id);
    const chat = await this.core.db.transaction().execute(async (trx) => {
      const saved = await this.upsertMessage(id, messageId, { content }, { db: trx });
      if (!saved) throw notFound();
      await this.core.events.publish(
        { event: 'message.updated', actor: user, subjectId: messageId, subjectType: 'message', data: { chat_id: id, content_preview: content.slice(0, 300) } },
        trx,
      );
      return saved;
    });
    await this.relay(head.user_id, { chat_id: id, message_id: messageId, data: { type: 'chat:message', data: { chat_id: id, message_id: messageId, content } } });
    return toChatResponse(chat);
  }

  /** `DELETE /chats/{id}/messages/{message_id}`: the message and its direct replies (owner or admin). */
  async deleteMessage(user: UserRecord, id: string, messageId: string): Promise<ChatResponse> {
    await this.editable(user, id);
    const chat = await this.core.db.transaction().execute(async (trx) => {
      const current = await this.store(trx).byId(id, { lock: true });
      if (!current) throw notFound();
      const before = structuredClone(messagesOf(current.chat));
      repairCurrentId(current.chat);
      const history = historyOf(current.chat);
      const deleted = deleteMessageFromHistory(history, messageId);
      current.chat.history = history;
      const now = this.core.clock.now();
      const patch: ChatPatch = { chat: current.chat, title: titleOf(current.chat), current_message_id: currentMessageIdOf(current.chat) };
      if (deleted.size > 0) patch.updated_at = now;
      await this.store(trx).update(id, patch);
      if (deleted.size > 0) {
        await this.store(trx).deleteMessages(id, [...deleted]);
        await this.store(trx).upsertMessages(changedRows(id, current.user_id, before, messagesOf(current.chat), now));
      }
      await this.core.events.publish({ event: 'message.deleted', actor: user, subjectId: messageId, subjectType: 'message', data: { chat_id: id } }, trx);
      return { ...current, ...patch };
    });
    return toChatResponse(chat);
  }

  /** `POST /chats/{id}/messages/{message_id}/event`: stores the event in the message and relays it live. */
  async messageEvent(user: UserRecord, id: string, messageId: string, event: EventForm): Promise<boolean> {
    const head = await this.editable(user, id);
    await this.applyMessageEvent(id, messageId, event);
    await this.relay(head.user_id, { chat_id: id, message_id: messageId, data: { type: event.type, data: event.data } });
    await this.core.events.publish({
      event: 'message.event_received',
      actor: user,
      subjectId: messageId,
      subjectType: 'message',
      data: { chat_id: id, event_type: event.type },
    });
    return true;
  }

  /**
   * `DELETE /chats/{id}`: admins delete any chat; users their own, with
   * `chat.delete`. The server's internal chats spawned from it go too.
   */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'chat.delete'))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    const chat = await this.store().headById(id, isAdmin(user) ? undefined : user.id);
    if (!chat) throw notFound();
    await this.core.db.transaction().execute(async (trx) => {
      const children = (await this.store(trx).internalOf(chat.user_id)).filter((c) => c.meta.parent_chat_id === id).map((c) => c.id);
      const ids = [id, ...children];
      for (const chatId of ids) await this.access.deleteGrantsOf(SHARED, chatId, trx);
      await this.store(trx).delete(ids);
      await this.pruneTags(trx, chat.user_id, tagsOfMeta(chat.meta));
      await this.core.events.publish({ event: 'chat.deleted', actor: user, subjectId: id, subjectType: 'chat', data: { owner_id: chat.user_id } }, trx);
    });
    return true;
  }

  /** `DELETE /chats/`: every chat of the user, their share snapshots and tags (users need `chat.delete`). */
  async deleteAll(user: UserRecord): Promise<boolean> {
    if (user.role === 'user' && !(await this.access.hasPermission(user, 'chat.delete'))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    await this.core.db.transaction().execute(async (trx) => {
      const shared = await this.store(trx).deleteSharesOfUser(user.id);
      for (const chatId of shared) await this.access.deleteGrantsOf(SHARED, chatId, trx);
      await this.store(trx).deleteOfUser(user.id);
      await this.store(trx).deleteTags(user.id);
      await this.core.events.publish({ event: 'chat.deleted_all', actor: user, subjectId: user.id, subjectType: 'user' }, trx);
    });
    return true;
  }

  /** `POST /chats/{id}/pin`: toggles pinned (owner). */
  async togglePin(user: UserRecord, id: string): Promise<ChatResponse> {
    const chat = await this.own(user, id, 'failed');
    const now = this.core.clock.now();
    const patch: ChatPatch = { pinned: !chat.pinned, updated_at: now, last_read_at: now };
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).update(id, patch);
      await this.core.events.publish({ event: patch.pinned ? 'chat.pinned' : 'chat.unpinned', actor: user, subjectId: id, subjectType: 'chat' }, trx);
    });
    return toChatResponse({ ...chat, ...patch });
  }

  /** `GET /chats/{id}/pinned`. */
  async pinnedStatus(user: UserRecord, id: string): Promise<boolean> {
    return (await this.ownHead(user, id, 'failed')).pinned;
  }

  /**
   * `POST /chats/{id}/archive`: toggles archived (owner); archiving takes the
   * chat out of its folder. Tags only archived chats carry are removed, and
   * come back when the chat does.
   */
  async toggleArchive(user: UserRecord, id: string): Promise<ChatResponse> {
    const chat = await this.own(user, id, 'failed');
    const now = this.core.clock.now();
    const patch: ChatPatch = { archived: !chat.archived, folder_id: null, updated_at: now, last_read_at: now };
    const tags = tagsOfMeta(chat.meta);
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).update(id, patch);
      if (patch.archived) await this.pruneTags(trx, user.id, tags);
      else await this.store(trx).ensureTags(user.id, tags.map((t) => ({ id: t, name: t })));
      await this.core.events.publish({ event: patch.archived ? 'chat.archived' : 'chat.unarchived', actor: user, subjectId: id, subjectType: 'chat' }, trx);
    });
    return toChatResponse({ ...chat, ...patch });
  }

  /** `POST /chats/archive/all` and `/unarchive/all`. */
  async setAllArchived(user: UserRecord, archived: boolean): Promise<boolean> {
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).updateOfUser(user.id, { archived });
      await this.core.events.publish({ event: archived ? 'chat.archived' : 'chat.unarchived', actor: user, subjectId: user.id, subjectType: 'user' }, trx);
    });
    return true;
  }

  /** `POST /chats/{id}/folder`: files the chat (owner) in a folder the user may file in, or takes it out (null). */
  async moveToFolder(user: UserRecord, id: string, folderId: string | null): Promise<ChatResponse> {
    const chat = await this.own(user, id, 'failed');
    await this.requireFolder(user, folderId);
    const now = this.core.clock.now();
    const patch: ChatPatch = { folder_id: folderId, updated_at: now, last_read_at: now, pinned: false };
    // Folder lists show unarchived chats only; filing an archived chat brings it back.
    if (folderId !== null) patch.archived = false;
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).update(id, patch);
      await this.core.events.publish({ event: 'chat.folder_updated', actor: user, subjectId: id, subjectType: 'chat', data: { folder_id: folderId } }, trx);
    });
    return toChatResponse({ ...chat, ...patch });
  }

  // ---- copies --------------------------------------------------------------

  /** `POST /chats/{id}/clone` (owner, `chat.import`): a copy titled `Clone of …` unless a title is given. */
  async clone(user: UserRecord, id: string, title?: string | null): Promise<ChatResponse> {
    await this.requireImportPermission(user);
    const source = await this.own(user, id, 'failed');
    const chat = await this.copy(user, source, title || `Clone of ${source.title}`, (trx, copy) =>
      this.core.events.publish({ event: 'chat.cloned', actor: user, subjectId: copy.id, subjectType: 'chat', data: { original_chat_id: id } }, trx).then(() => undefined),
    );
    return toChatResponse(chat);
  }

  /** `POST /chats/{id}/clone/shared` (`chat.import`): a copy of a share snapshot the user may read. No event, as the reference. */
  async cloneShared(user: UserRecord, shareId: string): Promise<ChatResponse> {
    await this.requireImportPermission(user);
    const share = await this.store().shareById(shareId);
    let source: ChatRecord | null = share ? this.snapshotRecord(share) : null;
    if (!source && isAdmin(user) && this.options.adminChatAccess) source = await this.store().byId(shareId);
    if (!source) throw REFUSAL.notFound();
    if (share && !isAdmin(user) && share.user_id !== user.id) {
      const open = await this.access.hasOpenAccess(SHARED, share.chat_id);
      if (!open && !(await this.granted(user, 'read', [share.chat_id])).has(share.chat_id)) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    }
    return toChatResponse(await this.copy(user, source, `Clone of ${source.title}`));
  }

  private async copy(user: UserRecord, source: ChatRecord, title: string, then?: (trx: Db, copy: ChatRecord) => Promise<void>): Promise<ChatRecord> {
    const chat = {
      ...source.chat,
      originalChatId: source.id,
      branchPointMessageId: historyOf(source.chat).currentId ?? null,
      title,
    };
    const { chats, tags } = await this.importRecords(user, [
      { chat, meta: source.meta, variables: source.variables, pinned: source.pinned, folder_id: source.folder_id },
    ]);
    await this.core.db.transaction().execute(async (trx) => {
      await this.insertChats(trx, chats, tags);
      await then?.(trx, chats[0]);
    });
    return chats[0];
  }

  /**
   * `POST /chats/{id}/fork` (owner, `chat.import`): a new chat holding the
   * branch that ends at `message_id` (the current message by default).
   */
  async fork(user: UserRecord, id: string, messageId?: string | null): Promise<ChatResponse> {
    await this.requireImportPermission(user);
    const source = await this.own(user, id);
    const busy = 'Wait for the current response to finish before forking.';
    if (await this.isBusy(id)) throw new HttpError(409, busy);
    const messages = messagesOf(source.chat);
    if (Object.values(messages).some((m) => isObject(m) && m.role === 'assistant' && m.done === false)) throw new HttpError(409, busy);
    const sourceId = messageId || source.current_message_id || (historyOf(source.chat).currentId as string | undefined);
    if (!sourceId) throw badRequest('chat has no messages to fork');
    let branch: ReturnType<typeof forkHistory>;
    try {
      branch = forkHistory(messages, sourceId);
    } catch (error) {
      const detail = (error as Error).message;
      throw new HttpError(detail === 'message not found' ? 404 : 400, detail);
    }
    const { currentId: _dropped, ...rest } = source.chat;
    const chatJson: Json = {
      ...rest,
      originalChatId: source.id,
      branchPointMessageId: sourceId,
      title: `${source.title} (fork)`,
      history: branch.history,
      messages: branch.list,
    };
    const fork = this.newRecord(user.id, chatJson, {
      folder_id: source.folder_id,
      meta: { ...source.meta, forked_from: source.id, forked_from_message_id: sourceId },
      variables: source.variables,
      pinned: source.pinned,
      last_read_at: this.core.clock.now(),
    });
    await this.core.db.transaction().execute(async (trx) => {
      await this.insertChats(trx, [fork]);
      await this.core.events.publish(
        { event: 'chat.forked', actor: user, subjectId: fork.id, subjectType: 'chat', data: { original_chat_id: id, forked_from_message_id: sourceId } },
        trx,
      );
    });
    return toChatResponse(fork);
  }

  // ---- reading ---------------------------------------------------------------

  /** Sets `active` on list rows: work under way (the task registry) and an answer still being written. */
  /** The rows with `active` set; unchanged (a cached page stays the same object) when no chat is busy. */
  private async withActivity<T extends ChatSummary>(rows: T[]): Promise<T[]> {
    if (!this.activity || rows.length === 0) return rows;
    const busy = await this.activity(rows.map((r) => r.id));
    if (busy.size === 0) return rows;
    const active = await this.store().withUnfinishedAnswer([...busy]);
    return rows.map((row) => (active.has(row.id) ? { ...row, active: true } : row));
  }

  /** `GET /chats/` and `/chats/list`: the sidebar, 60 per page (all without a page); pinned and filed chats only when asked. */
  async list(user: UserRecord, query: ChatListQuery): Promise<ChatTitleIdResponse[]> {
    const filter: ChatFilter = { userId: user.id, archived: false };
    if (!query.include_pinned) filter.pinned = false;
    if (!query.include_folders) filter.folder = 'none';
    const page = query.page ? { limit: PAGE_SIZE, offset: (query.page - 1) * PAGE_SIZE } : {};
    const order = sidebarOrder(query.sort_by, query.sort_dir);
    const key = `${user.id} ${filter.pinned ?? ''} ${filter.folder ?? ''} ${order.by} ${order.direction} ${query.page ?? ''}`;
    const rows = await this.sidebarPages.get(key, async () => deepFreeze(await this.store().summaries(filter, order, page)));
    return this.withActivity(rows);
  }

  /** `GET /chats/{id}`: the chat with its context usage. */
  async get(user: UserRecord, id: string): Promise<ChatResponse> {
    const chat = await this.readable(user, id);
    // One answer for unknown and unreadable chats, the reference's 401 (a deleted account's chats read so).
    if (!chat) throw unauthorized(ERROR.NOT_FOUND);
    return toChatResponse(chat, contextUsage(compactionConfig(this.core.settings), chat) as Json | null);
  }

  /** `GET /chats/pinned`. */
  async pinned(user: UserRecord): Promise<ChatTitleIdResponse[]> {
    return this.withActivity(await this.store().summaries({ userId: user.id, pinned: true, archived: false }));
  }

  /** `GET /chats/archived`: 60 per page, by title part and order. */
  async archivedList(user: UserRecord, query: FilteredListQuery): Promise<ChatTitleIdResponse[]> {
    const page = query.page ?? 1;
    const rows = await this.store().summaries({ userId: user.id, archived: true, titleContains: query.query }, listOrder(query), {
      limit: PAGE_SIZE,
      offset: (page - 1) * PAGE_SIZE,
    });
    return this.withActivity(rows);
  }

  async archivedCount(user: UserRecord): Promise<number> {
    return this.store().count({ userId: user.id, archived: true });
  }

  /** `GET /chats/list/user/{user_id}` (admin, ENABLE_ADMIN_CHAT_ACCESS): another user's chats, archived ones too. */
  async listOfUser(userId: string, query: FilteredListQuery): Promise<ChatTitleIdResponse[]> {
    if (!this.options.adminChatAccess) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    const page = query.page ?? 1;
    const rows = await this.store().summaries({ userId, titleContains: query.query }, listOrder(query), { limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE });
    return this.withActivity(rows);
  }

  /** `GET /chats/all/archived`. */
  async archivedChats(user: UserRecord): Promise<ChatResponse[]> {
    return (await this.store().records({ userId: user.id, archived: true })).map((c) => toChatResponse(c));
  }

  /** `GET /chats/all/db` (admin, ENABLE_ADMIN_EXPORT): every user's chats. */
  async everyChat(): Promise<ChatResponse[]> {
    if (!this.options.adminExport) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    return (await this.store().records({})).map((c) => toChatResponse(c));
  }

  /** `GET /chats/all`: every chat of the user as NDJSON lines, read a batch at a time. */
  async *exportAll(user: UserRecord): AsyncGenerator<string> {
    for (let offset = 0; ; offset += EXPORT_BATCH) {
      const batch = await this.store().records({ userId: user.id }, NEWEST_FIRST, { offset, limit: EXPORT_BATCH });
      for (const chat of batch) yield `${JSON.stringify(toChatResponse(chat))}\n`;
      if (batch.length < EXPORT_BATCH) return;
    }
  }

  /** `GET /chats/folder/{folder_id}`: the user's chats in a folder they may read and its subfolders. */
  async inFolderTree(user: UserRecord, folderId: string): Promise<ChatResponse[]> {
    const folder = await this.folders.byId(folderId);
    if (!folder || !(await this.folders.hasAccess(user, folder, 'read'))) throw notFound();
    const folderIds = folder.user_id === user.id ? await this.folders.subtreeIds(user.id, folderId) : [folderId];
    const chats = await this.store().records({ userId: user.id, folder: folderIds, pinned: false, archived: false });
    return chats.map((c) => toChatResponse(c));
  }

  /** `GET /chats/folder/{folder_id}/list`: 10 per page, unread first by default. */
  async folderList(user: UserRecord, folderId: string, query: { page?: number; sort_by?: string; sort_dir?: string }): Promise<ChatTitleIdResponse[]> {
    const folder = await this.folders.byId(folderId);
    if (!folder || !(await this.folders.hasAccess(user, folder, 'read'))) throw notFound();
    const page = query.page ?? 1;
    const rows = await this.store().summaries(
      { userId: user.id, folder: [folderId], pinned: false, archived: false },
      sidebarOrder(query.sort_by ?? 'unread_updated_at', query.sort_dir),
      { limit: FOLDER_PAGE_SIZE, offset: (page - 1) * FOLDER_PAGE_SIZE },
    );
    return this.withActivity(rows);
  }

  /**
   * `GET /chats/search?text=`: title or message text containing the words,
   * with `tag:<name>` (every one; `tag:none` for untagged chats),
   * `folder:<name>`, `pinned:`, `archived:` and `shared:` (`true`/`false`)
   * filters. Archived chats only with `archived:`. 60 per page, with a snippet
   * of the first matching message. A lone `tag:` search that finds nothing on
   * its first page removes that tag.
   */
  async search(user: UserRecord, text: string, page = 1): Promise<ChatTitleIdResponse[]> {
    const words = cleanText(text).toLowerCase().trim().split(' ');
    const flag = (name: string) => (words.includes(`${name}:true`) ? true : words.includes(`${name}:false`) ? false : undefined);
    const terms = words.filter((w) => !SEARCH_FILTER_PREFIXES.some((p) => w.startsWith(p))).join(' ').trim();
    const tagIds = words.filter((w) => w.startsWith('tag:')).map((w) => tagIdOf(w.replace(/tag:/g, '')));
    const folderNames = words.filter((w) => w.startsWith('folder:')).map((w) => w.replace(/folder:/g, ''));
    const filter: ChatFilter = { userId: user.id, archived: flag('archived') ?? false, pinned: flag('pinned'), shared: flag('shared') };
    if (terms) filter.textContains = terms;
    if (tagIds.includes('none')) filter.untagged = true;
    else if (tagIds.length > 0) filter.tagIds = tagIds;
    if (folderNames.length > 0) filter.folder = await this.folders.idsByNames(user.id, folderNames);
    const rows = await this.store().summaries(filter, NEWEST_FIRST, { limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE });

    const texts = terms ? await this.store().matchingTexts(rows.map((r) => r.id), terms) : new Map<string, string[]>();
    for (const row of rows) row.snippet = texts.get(row.id)?.map((t) => snippetOf(t, terms)).find((s) => s !== null) ?? null;

    const lone = text.trim().split(' ');
    if (page === 1 && lone.length === 1 && lone[0].startsWith('tag:') && rows.length === 0) {
      await this.store().deleteTags(user.id, [tagIdOf(lone[0].replace(/tag:/g, ''))]);
    }
    return this.withActivity(rows);
  }

  /** `POST /chats/tags`: the user's chats carrying a tag; a tag no chat carries is removed. */
  async byTag(user: UserRecord, name: string, skip = 0, limit = 50): Promise<ChatTitleIdResponse[]> {
    const rows = await this.store().summaries({ userId: user.id, tagIds: [tagIdOf(name)] }, NEWEST_FIRST, { offset: skip, limit });
    if (rows.length === 0) await this.store().deleteTags(user.id, [tagIdOf(name)]);
    return this.withActivity(rows);
  }

  // ---- read state ------------------------------------------------------------

  /** `POST /chats/read`: every listed chat of the user read as of its last change. */
  async markAllRead(user: UserRecord) {
    return this.core.db.transaction().execute(async (trx) => {
      const updated_count = await this.store(trx).markRead(user.id);
      await this.core.events.publish({ event: 'chat.read', actor: user, subjectId: user.id, subjectType: 'user', data: { updated_count } }, trx);
      return { updated_count, folder_unread_counts: await this.folders.unreadCounts(user.id, trx) };
    });
  }

  /** `POST /chats/{id}/unread` (owner): unread until opened again. */
  async markUnread(user: UserRecord, id: string) {
    const chat = await this.ownHead(user, id, 'unknown');
    return this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).update(id, { last_read_at: 0 });
      await this.core.events.publish({ event: 'chat.unread', actor: user, subjectId: id, subjectType: 'chat' }, trx);
      return { chat_id: id, last_read_at: 0, folder_id: chat.folder_id, folder_unread_counts: await this.folders.unreadCounts(user.id, trx) };
    });
  }

  // ---- tags ------------------------------------------------------------------

  private async tagRecords(userId: string, tagIds: string[], db?: Db): Promise<TagRecord[]> {
    const found = new Map((await this.store(db).tags(userId, tagIds)).map((t) => [t.id, t]));
    return tagIds.flatMap((id) => (found.has(id) ? [found.get(id)!] : []));
  }

  /** `GET /chats/all/tags`. */
  async allTags(user: UserRecord): Promise<TagRecord[]> {
    return this.store().tagsOfUser(user.id);
  }

  /** `GET /chats/{id}/tags`. */
  async tagsOf(user: UserRecord, id: string): Promise<TagRecord[]> {
    const chat = await this.ownHead(user, id, 'notFound');
    return this.tagRecords(user.id, tagsOfMeta(chat.meta));
  }

  /** `POST /chats/{id}/tags`: adds a tag (its id is the name, lower case, `_` for spaces; `None` is refused). */
  async addTag(user: UserRecord, id: string, name: string): Promise<TagRecord[]> {
    await this.ownHead(user, id, 'failed');
    const tagId = tagIdOf(name);
    if (tagId === 'none') throw badRequest(ERROR.DEFAULT("Tag name cannot be 'None'"));
    return this.transaction(async (trx) => {
      // Read again under the row's lock: tags added at once (here or on another instance) all stay.
      const chat = await this.lockedHead(trx, user, id, 'failed');
      let tags = tagsOfMeta(chat.meta);
      if (!tags.includes(tagId)) {
        tags = [...tags, tagId];
        await this.store(trx).ensureTags(user.id, [{ id: tagId, name }]);
        await this.writeTags(trx, chat, tags);
        await this.core.events.publish({ event: 'chat.tag_added', actor: user, subjectId: id, subjectType: 'chat', data: { tag: name } }, trx);
      }
      return this.tagRecords(user.id, tags, trx);
    });
  }

  /** `DELETE /chats/{id}/tags`: removes a tag from the chat, and the tag itself once no chat carries it. */
  async removeTag(user: UserRecord, id: string, name: string): Promise<TagRecord[]> {
    await this.ownHead(user, id, 'notFound');
    const tagId = tagIdOf(name);
    return this.transaction(async (trx) => {
      const chat = await this.lockedHead(trx, user, id, 'notFound');
      const tags = tagsOfMeta(chat.meta).filter((t) => t !== tagId);
      await this.writeTags(trx, chat, tags);
      await this.core.events.publish({ event: 'chat.tag_removed', actor: user, subjectId: id, subjectType: 'chat', data: { tag: name } }, trx);
      await this.pruneTags(trx, user.id, [tagId]);
      return this.tagRecords(user.id, tags, trx);
    });
  }

  // ---- sharing -------------------------------------------------------------

  private snapshotRecord(share: { id: string; user_id: string; title: string; chat: Json; created_at: number; updated_at: number }): ChatRecord {
    return {
      id: share.id,
      user_id: share.user_id,
      title: share.title,
      chat: share.chat,
      folder_id: null,
      share_id: share.id,
      archived: false,
      pinned: false,
      meta: {},
      variables: {},
      tasks: null,
      summary: null,
      current_message_id: null,
      last_read_at: null,
      created_at: share.created_at,
      updated_at: share.updated_at,
    };
  }

  /**
   * `POST /chats/{id}/share` (owner; users need `chat.share`): a snapshot of
   * the chat behind a share link; sharing again refreshes the snapshot.
   */
  async share(user: UserRecord, id: string): Promise<ChatResponse> {
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'chat.share'))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    const chat = await this.own(user, id, 'prohibited');
    const now = this.core.clock.now();
    return this.core.db.transaction().execute(async (trx) => {
      const snapshot = { title: chat.title, chat: chat.chat, updated_at: now };
      if (chat.share_id && (await this.store(trx).updateShare(chat.share_id, snapshot))) {
        await this.core.events.publish({ event: 'chat.shared', actor: user, subjectId: id, subjectType: 'chat', data: { share_id: chat.share_id, updated: true } }, trx);
        return toChatResponse(chat);
      }
      const shareId = randomUUID();
      await this.store(trx).insertShare({ id: shareId, chat_id: id, user_id: user.id, created_at: now, ...snapshot });
      await this.store(trx).update(id, { share_id: shareId });
      await this.core.events.publish({ event: 'chat.shared', actor: user, subjectId: id, subjectType: 'chat', data: { share_id: shareId } }, trx);
      return toChatResponse({ ...chat, share_id: shareId });
    });
  }

  /** `DELETE /chats/{id}/share` (owner): the snapshot and the grants go. */
  async unshare(user: UserRecord, id: string): Promise<boolean> {
    const chat = await this.ownHead(user, id, 'prohibited');
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).deleteSharesOfChat(id);
      if (chat.share_id) await this.store(trx).update(id, { share_id: null });
      await this.access.deleteGrantsOf(SHARED, id, trx);
      await this.core.events.publish({ event: 'chat.unshared', actor: user, subjectId: id, subjectType: 'chat', data: { share_id: chat.share_id } }, trx);
    });
    return true;
  }

  /** `DELETE /chats/share/all`: every snapshot of the user, and their grants. */
  async unshareAll(user: UserRecord): Promise<boolean> {
    await this.core.db.transaction().execute(async (trx) => {
      const chatIds = await this.store(trx).deleteSharesOfUser(user.id);
      for (const chatId of chatIds) await this.access.deleteGrantsOf(SHARED, chatId, trx);
      await this.core.events.publish(
        { event: 'chat.unshared', actor: user, subjectId: user.id, subjectType: 'user', data: { count: chatIds.length, chat_ids: chatIds } },
        trx,
      );
    });
    return true;
  }

  /** `GET /chats/shared`: the user's share snapshots (SharedChatResponse: `id` is the chat's). */
  async sharedList(user: UserRecord, query: FilteredListQuery) {
    const page = query.page ?? 1;
    const shares = await this.store().sharesOfUser(user.id, {
      titleContains: query.query,
      order: listOrder(query),
      limit: PAGE_SIZE,
      offset: (page - 1) * PAGE_SIZE,
    });
    return shares.map((s) => ({ id: s.chat_id, chat_id: s.chat_id, title: s.title, share_id: s.id, updated_at: s.updated_at, created_at: s.created_at }));
  }

  /**
   * `GET /chats/share/{share_id}`: the snapshot, for anyone when it is open
   * (`anyone:*`), else for its owner, admins (ENABLE_ADMIN_CHAT_ACCESS) and
   * grant holders; 401 for others. Admins may also open any chat by its id here.
   */
  async getShared(user: UserRecord | null, shareId: string): Promise<ChatResponse> {
    const viewer = user && user.role !== 'pending' ? user : null;
    const share = await this.store().shareById(shareId);
    if (share) {
      const allowed =
        (await this.access.hasOpenAccess(SHARED, share.chat_id)) ||
        (viewer !== null &&
          ((isAdmin(viewer) && this.options.adminChatAccess) || share.user_id === viewer.id || (await this.granted(viewer, 'read', [share.chat_id])).has(share.chat_id)));
      if (allowed) return toChatResponse(this.snapshotRecord(share));
      throw unauthorized(viewer ? ERROR.ACCESS_PROHIBITED : ERROR.INVALID_TOKEN);
    }
    if (viewer && isAdmin(viewer) && this.options.adminChatAccess) {
      const chat = await this.store().byId(shareId);
      if (chat) return toChatResponse(chat);
    }
    throw unauthorized(ERROR.NOT_FOUND);
  }

  /**
   * Whether a share snapshot the user may open (as `getShared` decides) shows
   * the file in a message's `files`: the reference's reach of a file through a
   * shared chat (`has_access_to_file`), read only.
   */
  async sharedChatShowsFile(user: UserRecord, fileId: string): Promise<boolean> {
    if (user.role === 'pending') return false;
    for (const share of await this.store().sharesMentioning(fileId)) {
      if (!Object.values(messagesOf(share.chat)).some((message) => fileIdsOf(message).includes(fileId))) continue;
      if (share.user_id === user.id || (await this.access.hasOpenAccess(SHARED, share.chat_id)) || (await this.granted(user, 'read', [share.chat_id])).has(share.chat_id)) {
        return true;
      }
    }
    return false;
  }

  /** The chat whose share grants the user manages: their own, any for admins with ENABLE_ADMIN_CHAT_ACCESS. */
  private async shareable(user: UserRecord, id: string): Promise<ChatRecord> {
    const chat = await this.store().byId(id, this.reachesEveryChat(user) ? {} : { userId: user.id });
    if (!chat) throw notFound();
    return chat;
  }

  /**
   * `POST /chats/shared/{id}/access/update`: who may open the share link
   * (`user:*` needs `sharing.public_chats`, `anyone:*` `sharing.open_chats`).
   */
  async updateShareAccess(user: UserRecord, id: string, accessGrants: unknown[]): Promise<ChatResponse> {
    const chat = await this.shareable(user, id);
    const grants = await this.access.prepareGrants(user, accessGrants, SHARE_RULE);
    await this.core.db.transaction().execute((trx) => this.access.replaceGrants(SHARED, id, grants, trx));
    return toChatResponse(chat);
  }

  /** `GET /chats/shared/{id}/access`. */
  async shareAccess(user: UserRecord, id: string): Promise<Pick<AccessGrant, 'id' | 'principal_type' | 'principal_id' | 'permission'>[]> {
    await this.shareable(user, id);
    return (await this.access.grantsOf(SHARED, id)).map((g) => ({ id: g.id, principal_type: g.principal_type, principal_id: g.principal_id, permission: g.permission }));
  }

  // ---- statistics ------------------------------------------------------------

  /** `GET /chats/stats/usage` (experimental in the reference). */
  async usage(user: UserRecord, itemsPerPage = 50, page = 1) {
    const store = this.store();
    const filter = { userId: user.id };
    const [chats, total] = await Promise.all([store.records(filter, NEWEST_FIRST, { limit: itemsPerPage, offset: (page - 1) * itemsPerPage }), store.count(filter)]);
    return { items: chats.flatMap((c) => usageStats(c) ?? []), total };
  }

  private requireStatsExport(user: UserRecord): void {
    if (!isAdmin(user) && !this.core.settings.get<boolean>(ADMIN_CONFIG_KEYS.ENABLE_COMMUNITY_SHARING)) throw unauthorized(ERROR.ACCESS_PROHIBITED);
  }

  /** `GET /chats/stats/export`: oldest change first, 10 per page, after `updated_at` when given. */
  async statsExport(user: UserRecord, updatedAt: number | undefined, page = 1) {
    this.requireStatsExport(user);
    const filter: ChatFilter = { userId: user.id, updatedAfter: updatedAt || undefined };
    const order: ChatOrder = { by: 'updated_at', direction: 'asc' };
    const [chats, total] = await Promise.all([
      this.store().records(filter, order, { limit: STATS_EXPORT_PAGE, offset: (page - 1) * STATS_EXPORT_PAGE }),
      this.store().count(filter),
    ]);
    return { type: 'chats', items: chats.map(exportStats), total, page };
  }

  /** The same as NDJSON, every chat, a batch at a time. */
  statsExportStream(user: UserRecord, updatedAt: number | undefined): AsyncGenerator<string> {
    this.requireStatsExport(user);
    const store = () => this.store();
    return (async function* () {
      for (let offset = 0; ; offset += STATS_EXPORT_PAGE) {
        const batch = await store().records({ userId: user.id, updatedAfter: updatedAt || undefined }, { by: 'updated_at', direction: 'asc' }, { offset, limit: STATS_EXPORT_PAGE });
        for (const chat of batch) yield `${JSON.stringify(exportStats(chat))}\n`;
        if (batch.length < STATS_EXPORT_PAGE) return;
      }
    })();
  }

  /** `GET /chats/stats/export/{chat_id}`: own chat (admins: any). */
  async chatStatsExport(user: UserRecord, chatId: string) {
    this.requireStatsExport(user);
    const chat = await this.store().byId(chatId);
    if (!chat || (chat.user_id !== user.id && !isAdmin(user))) throw notFound();
    return exportStats(chat);
  }

  // ---- configuration and compaction -------------------------------------------

  /** `GET /chats/config` (admin). */
  config() {
    const c = compactionConfig(this.core.settings);
    return {
      CONTEXT_COMPACTION_MODEL: c.model,
      ENABLE_CONTEXT_COMPACTION: c.enable,
      CONTEXT_COMPACTION_TOKEN_THRESHOLD: c.tokenThreshold,
      CONTEXT_COMPACTION_TOKEN_CAP: c.tokenCap,
      CONTEXT_COMPACTION_RETENTION_PERCENTAGE: c.retentionPercentage,
      CONTEXT_COMPACTION_PROMPT_TEMPLATE: c.promptTemplate,
    };
  }

  /** `POST /chats/config` (admin): threshold and cap at least 1, retention 10–50 %. */
  async setConfig(form: ChatConfigForm) {
    const threshold = Math.max(1, form.CONTEXT_COMPACTION_TOKEN_THRESHOLD);
    await this.core.settings.set(
      {
        [CHAT_CONFIG_KEYS.CONTEXT_COMPACTION_MODEL]: form.CONTEXT_COMPACTION_MODEL || '',
        [CHAT_CONFIG_KEYS.ENABLE_CONTEXT_COMPACTION]: form.ENABLE_CONTEXT_COMPACTION,
        [CHAT_CONFIG_KEYS.CONTEXT_COMPACTION_TOKEN_THRESHOLD]: threshold,
        [CHAT_CONFIG_KEYS.CONTEXT_COMPACTION_TOKEN_CAP]: Math.max(1, form.CONTEXT_COMPACTION_TOKEN_CAP || threshold),
        [CHAT_CONFIG_KEYS.CONTEXT_COMPACTION_RETENTION_PERCENTAGE]: Math.min(50, Math.max(10, form.CONTEXT_COMPACTION_RETENTION_PERCENTAGE ?? 40)),
        [CHAT_CONFIG_KEYS.CONTEXT_COMPACTION_PROMPT_TEMPLATE]: form.CONTEXT_COMPACTION_PROMPT_TEMPLATE,
      },
      this.core.clock.now(),
    );
    return this.config();
  }

  /**
   * `POST /chats/{id}/compact` (owner): summarises the current branch up to its
   * last message through the task model and stores the summary on that message.
   * Nothing happens while compaction is off (`reason: 'disabled'`).
   */
  async compact(user: UserRecord, id: string, model: string | null | undefined, context: CallContext): Promise<CompactResponse> {
    const chat = await this.own(user, id, 'notFound');
    if (await this.isBusy(id)) throw new HttpError(409, 'Wait for the current response to finish before compacting.');
    const branch = currentBranch(chat);
    const models = Array.isArray(chat.chat.models) ? chat.chat.models : [];
    const modelId =
      model || ([...branch].reverse().find((m) => typeof m.model === 'string' && m.model)?.model as string | undefined) || (typeof models[0] === 'string' ? models[0] : null);
    if (!modelId) throw badRequest('No model found for context compaction.');

    const config = compactionConfig(this.core.settings);
    const currentId = chat.current_message_id || currentMessageIdOf(chat.chat);
    let result: Omit<CompactResponse, 'context_usage'>;
    let saved = chat;
    if (!config.enable) result = { ok: true, compacted: false, reason: 'disabled' };
    else if (!currentId) result = { ok: true, compacted: false, reason: 'empty' };
    else {
      const { messages, summary: previous } = fromLatestSummary(messageList(messagesOf(chat.chat), currentId));
      const compacted = messages.slice(0, -1);
      const recent = messages.slice(-1);
      if (compacted.length === 0) result = { ok: true, compacted: false, reason: 'too_short' };
      else {
        const summary = await this.summarizer.summarize(user, modelId, { compacted, recent, previous }, context);
        saved = await this.core.db.transaction().execute(async (trx) => {
          const updated = await this.upsertMessage(id, currentId, { contextSummary: summary }, { touch: false, db: trx });
          await this.core.events.publish(
            { event: 'chat.compacted', actor: user, subjectId: id, subjectType: 'chat', data: { dropped_messages: compacted.length } },
            trx,
          );
          return updated ?? chat;
        });
        result = { ok: true, compacted: true, dropped_messages: compacted.length, kept_messages: recent.length, summary_chars: summary.length };
      }
    }
    return { ...result, context_usage: contextUsage(config, saved, modelId) as Json | null };
  }

  // ---- folders' chats (FolderChats) --------------------------------------------

  async countInFolders(ownerId: string, folderIds: string[], db?: Db): Promise<number> {
    return (await this.store(db).idsInFolders(ownerId, folderIds)).length;
  }

  async deleteInFolders(ownerId: string, folderIds: string[], db: Db): Promise<void> {
    const store = this.store(db);
    const ids = await store.idsInFolders(ownerId, folderIds);
    if (ids.length === 0) return;
    const tags = await store.tagIdsOfChats(ids);
    for (const id of ids) await this.access.deleteGrantsOf(SHARED, id, db);
    await store.delete(ids);
    await this.pruneTags(db, ownerId, tags);
  }

  async moveOutOfFolders(ownerId: string, folderIds: string[], db: Db): Promise<void> {
    await this.store(db).moveOutOfFolders(ownerId, folderIds);
  }

  async markReadInFolders(userId: string, folderIds: string[], db?: Db): Promise<number> {
    return this.store(db).markRead(userId, folderIds);
  }

  async unreadByFolder(userId: string, folderIds: string[], db?: Db): Promise<Map<string, number>> {
    return this.store(db).unreadByFolder(userId, folderIds);
  }

  async folderChats(
    reader: UserRecord,
    folderId: string,
    options: { offset: number; limit: number; sortBy: string; sortDir: string; withTotal: boolean },
  ): Promise<FolderChatsPage> {
    const filter: ChatFilter = { folder: [folderId], pinned: false, archived: false };
    const rows = await this.store().summariesWithOwner(filter, sidebarOrder(options.sortBy, options.sortDir, reader.id), { offset: options.offset, limit: options.limit });
    const owners = new Map((await this.users.byIds([...new Set(rows.map((r) => r.user_id))])).map((u) => [u.id, u.name]));
    await this.withActivity(rows);
    const chats = rows.map((row) => ({
      id: row.id,
      title: row.title,
      user_id: row.user_id,
      updated_at: row.updated_at,
      created_at: row.created_at,
      // Others' chats never count as unread for the reader.
      last_read_at: row.user_id === reader.id ? row.last_read_at : row.updated_at,
      owner_name: owners.get(row.user_id) ?? 'Unknown',
      active: row.active,
      readonly: row.user_id !== reader.id,
    }));
    return { chats, total: options.withTotal ? await this.store().count(filter) : chats.length };
  }
}
