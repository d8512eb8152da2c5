import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { SettingsStore } from '../../config/settings.js';
import { AccessGrantStore } from '../../core/access/store.js';
import { type AccessGrant, EVERYONE, type GrantSpec, RESOURCE_TYPES } from '../../core/access/grants.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { Db, DialectName } from '../../core/db/database.js';
import type { ChannelFileTable, Database } from '../../core/db/tables.js';
import { Recurrence, RecurrenceError } from '../../core/scheduler/recurrence.js';
import { type ApiKeyRecord, AuthStore, type Credential } from '../../areas/auths/store.js';
import type { AutomationsService } from '../../areas/automations/service.js';
import { AutomationStore, type AutomationRecord, type AutomationRunRecord } from '../../areas/automations/store.js';
import type { CalendarService } from '../../areas/calendar/service.js';
import { type AttendeeRecord, CalendarStore, type CalendarRecord, type EventRecord } from '../../areas/calendar/store.js';
import { currentMessageIdOf, fileIdsOf, type Json, messagesOf } from '../../areas/chats/history.js';
import type { ChatsService } from '../../areas/chats/service.js';
import { ChannelStore, type ChannelRecord, type MemberRecord, type MessageRecord } from '../../areas/channels/store.js';
import { ChatStore, type ChatRecord, type SharedChatRecord } from '../../areas/chats/store.js';
import type { EventsService } from '../../areas/events/service.js';
import { FeedbackStore, type FeedbackRecord } from '../../areas/evaluations/store.js';
import type { FilesService } from '../../areas/files/service.js';
import type { FileRecord } from '../../areas/files/store.js';
import { type DirectoryRecord, KnowledgeStore, type KnowledgeRecord } from '../../areas/knowledge/store.js';
import { FolderStore, type FolderRecord } from '../../areas/folders/store.js';
import { FunctionStore, type FunctionRecord } from '../../areas/functions/store.js';
import { GroupStore, type GroupMemberRecord, type GroupRecord } from '../../areas/groups/store.js';
import { MemoryStore, type MemoryRecord } from '../../areas/memories/store.js';
import { ModelStore, type ModelRecord } from '../../areas/models/store.js';
import { NoteStore, type NoteRecord } from '../../areas/notes/store.js';
import type { PromptsService } from '../../areas/prompts/service.js';
import { type PromptRecord, PromptStore, type PromptVersion } from '../../areas/prompts/store.js';
import { SkillStore, type SkillRecord } from '../../areas/skills/store.js';
import { ToolStore, type ToolRecord } from '../../areas/tools/store.js';
import { UserStore } from '../../areas/users/store.js';
import type { SourceRow } from './source.js';

/** What the tables' conversions share during one run. */
export interface ImportContext {
  db: Db;
  dialect: DialectName;
  chats: ChatsService;
  settings: SettingsStore;
  events: EventsService;
  files: FilesService;
  prompts: PromptsService;
  automations: AutomationsService;
  calendar: CalendarService;
  /** Open WebUI's uploads folder (its files' bytes), or null when unknown. */
  uploads: string | null;
  now: number;
  /** Users of the source that exist in Parley (imported now or before). */
  userIds: Set<string>;
  /** Tag display names by `user_id\ntag id`, read from the source's tag table. */
  tagNames: Map<string, string>;
  /** Columns of the source table being read. */
  columns: Set<string>;
}

export interface Refused {
  id: string;
  reason: string;
}

/** A row that cannot be carried over, and why (reported, never dropped silently). */
export class Unconvertible extends Error {}

/** One Open WebUI table and how its rows become Parley's. */
export interface TableImport<T extends { id: string } = { id: string }> {
  /** The source table (also the progress line's name). */
  source: string;
  /** The Parley table holding the converted rows, by id. */
  target: keyof Database & string;
  /** The target's id column when not `id`. */
  targetId?: string;
  /** The source's key to page by. */
  key?: string;
  /** Rows of the source that belong to this import (default: all). */
  accepts?(row: SourceRow, ctx: ImportContext): boolean;
  /** One record per row, or several (a config blob's keys). */
  convert(row: SourceRow, ctx: ImportContext): T | T[];
  /** Which of `records` Parley holds already (default: those whose id is in `target`). */
  present?(records: T[], ctx: ImportContext): Promise<Set<string>>;
  /** Writes new records (none of them present yet); returns those it could not write, and why. */
  write(records: T[], ctx: ImportContext): Promise<void | Refused[]>;
  /** Messages in a converted record (the bench's rate). */
  messages?(record: T): number;
}

// ---- reading source values ------------------------------------------------

/** A JSON column, as text (the PostgreSQL source gives JSON columns as text too). */
export function json<T = Json>(value: unknown, fallback: T): T {
  if (value === null || value === undefined) return fallback;
  if (typeof value !== 'string') return value as T;
  try {
    const parsed = JSON.parse(value) as unknown;
    return (parsed ?? fallback) as T;
  } catch {
    throw new Unconvertible(`invalid JSON: ${value.slice(0, 60)}`);
  }
}

const object = (value: unknown): Record<string, unknown> | null => {
  const parsed = json<unknown>(value, null);
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
};

const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

function required(row: SourceRow, column: string): string {
  const value = row[column];
  if (value === null || value === undefined || value === '') throw new Unconvertible(`no ${column}`);
  return String(value);
}

/** Epoch seconds; older tables hold datetimes in some columns (folder before 4ace53fd72c8). */
function seconds(value: unknown, fallback: number): number {
  if (value === null || value === undefined || value === '') return fallback;
  if (typeof value === 'number' || typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return Math.floor(value.getTime() / 1000);
  const number = Number(value);
  if (Number.isFinite(number)) return number;
  const parsed = Date.parse(String(value));
  return Number.isFinite(parsed) ? Math.floor(parsed / 1000) : fallback;
}

const flag = (value: unknown, fallback = false): boolean => (value === null || value === undefined ? fallback : value === true || value === 1 || value === '1' || value === 't');

function owner(row: SourceRow, ctx: ImportContext, column = 'user_id'): string {
  const id = required(row, column);
  if (!ctx.userIds.has(id)) throw new Unconvertible(`its user ${id} is not in the import`);
  return id;
}

/** A stable id for rows that had none in older versions, so a second run finds them again. */
const derivedId = (...parts: string[]) => createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32);

/** Records whose parent row (`parentOf(record)` in `table`) Parley holds; the others refused with why. */
type ParentTable = 'channel' | 'message' | 'file' | 'knowledge' | 'knowledge_directory' | 'chat' | 'prompt' | 'note' | 'calendar' | 'calendar_event' | 'automation';

async function withParent<T extends { id: string }>(db: Db, records: T[], table: ParentTable, parentOf: (record: T) => string): Promise<{ kept: T[]; refused: Refused[] }> {
  if (records.length === 0) return { kept: [], refused: [] };
  const parents = new Set((await db.selectFrom(table).select('id').where('id', 'in', [...new Set(records.map(parentOf))]).execute()).map((r) => r.id));
  const kept = records.filter((r) => parents.has(parentOf(r)));
  const refused = records.filter((r) => !parents.has(parentOf(r))).map((r) => ({ id: r.id, reason: `its ${table} ${parentOf(r)} is not in the import` }));
  return { kept, refused };
}

/** A `write` that hands the records whose parent Parley holds to a service's restore; the others are refused with why. */
function restoreUnder<T extends { id: string }>(table: ParentTable, parentOf: (record: T) => string, restore: (records: T[], ctx: ImportContext) => Promise<void>) {
  return async (records: T[], ctx: ImportContext): Promise<Refused[]> => {
    const { kept, refused } = await withParent(ctx.db, records, table, parentOf);
    await restore(kept, ctx);
    return refused;
  };
}

/** A `write` that inserts, in one transaction, the records whose parent Parley holds; the others are refused with why. */
function writeUnder<T extends { id: string }>(table: ParentTable, parentOf: (record: T) => string, insert: (trx: Db, record: T) => Promise<void>) {
  return (records: T[], ctx: ImportContext): Promise<Refused[]> =>
    ctx.db.transaction().execute(async (trx) => {
      const { kept, refused } = await withParent(trx, records, table, parentOf);
      for (const record of kept) await insert(trx, record);
      return refused;
    });
}

const channels: TableImport<WithGrants<ChannelRecord>> = {
  source: 'channel',
  target: 'channel',
  convert(row, ctx) {
    if (row.deleted_at != null) throw new Unconvertible('deleted in Open WebUI');
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: owner(row, ctx),
      type: text(row.type),
      name: required(row, 'name'),
      description: text(row.description),
      is_private: row.is_private == null ? null : flag(row.is_private),
      data: json(row.data, null),
      meta: json(row.meta, null),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
      updated_by: text(row.updated_by),
      grants: legacyGrants(row, ctx),
    };
  },
  write: (records, ctx) => writeGranted(ctx.db, RESOURCE_TYPES.channel, records, (trx, channel) => new ChannelStore(trx).insert(channel)),
};

const channelMembers: TableImport<MemberRecord> = {
  source: 'channel_member',
  target: 'channel_member',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    const at = (value: unknown) => (value == null ? null : seconds(value, 0));
    return {
      id: required(row, 'id'),
      channel_id: required(row, 'channel_id'),
      user_id: owner(row, ctx),
      role: text(row.role),
      status: text(row.status),
      is_active: flag(row.is_active, true),
      invited_at: at(row.invited_at),
      invited_by: text(row.invited_by),
      joined_at: at(row.joined_at),
      last_read_at: at(row.last_read_at),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  write: writeUnder('channel', (member) => member.channel_id, (trx, member) => new ChannelStore(trx).insertMember(member)),
};

/** Messages in the order they were written, so a reply's parent is there before it. */
const channelMessages: TableImport<MessageRecord> = {
  source: 'message',
  target: 'message',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      // A webhook's message names the webhook, not a user: kept as it is.
      user_id: required(row, 'user_id'),
      channel_id: required(row, 'channel_id'),
      reply_to_id: text(row.reply_to_id),
      parent_id: text(row.parent_id),
      is_pinned: flag(row.is_pinned),
      pinned_by: text(row.pinned_by),
      pinned_at: row.pinned_at == null ? null : seconds(row.pinned_at, 0),
      content: text(row.content) ?? '',
      data: json(row.data, null),
      meta: json(row.meta, null),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  write: writeUnder('channel', (message) => message.channel_id, (trx, message) => new ChannelStore(trx).insertMessage(message)),
};

interface ReactionRecord {
  id: string;
  message_id: string;
  user_id: string;
  name: string;
  created_at: number;
}

const reactions: TableImport<ReactionRecord> = {
  source: 'message_reaction',
  target: 'message_reaction',
  convert(row, ctx) {
    return { id: required(row, 'id'), message_id: required(row, 'message_id'), user_id: owner(row, ctx), name: required(row, 'name'), created_at: seconds(row.created_at, ctx.now) };
  },
  write: writeUnder('message', (reaction) => reaction.message_id, (trx, reaction) => new ChannelStore(trx).insertReaction(reaction)),
};

// ---- files and knowledge -----------------------------------------------------

type FileImport = Omit<FileRecord, 'path' | 'data'> & { bytes: string; grants: GrantSpec[] };

/** Files: their bytes read from Open WebUI's uploads folder by name, then extracted and indexed again by Parley. */
const files: TableImport<FileImport> = {
  source: 'file',
  target: 'file',
  convert(row, ctx) {
    const stored = text(row.path);
    if (!stored) throw new Unconvertible('no path to its bytes');
    if (!ctx.uploads) throw new Unconvertible('the uploads folder is not known (--uploads)');
    // Open WebUI records an absolute path (or s3://, gs://...): the name is looked up in the folder given.
    const name = path.basename(stored);
    const bytes = path.join(ctx.uploads, name);
    if (name === '..' || name === '.' || !statSync(bytes, { throwIfNoEntry: false })?.isFile()) throw new Unconvertible(`its bytes (${name}) are not in ${ctx.uploads}`);
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: owner(row, ctx),
      hash: text(row.hash),
      filename: required(row, 'filename'),
      meta: object(row.meta) ?? {},
      created_at: created,
      updated_at: seconds(row.updated_at, created),
      bytes,
      grants: legacyGrants(row, ctx).filter((g) => g.principal_id !== EVERYONE),
    };
  },
  async write(records, ctx) {
    for (const { bytes, grants: fileGrants, ...file } of records) {
      await ctx.files.restore(file, createReadStream(bytes));
      if (fileGrants.length > 0) await writeGrants(ctx.db, RESOURCE_TYPES.file, [{ id: file.id, grants: fileGrants, created_at: file.created_at }]);
    }
  },
};

interface KnowledgeLink {
  id: string;
  knowledge_id: string;
  file_id: string;
  directory_id: string | null;
  user_id: string;
  created_at: number;
}

const writeLinks = async (db: Db, links: KnowledgeLink[]): Promise<Refused[]> => {
  const { kept, refused } = await withParent(db, links, 'file', (l) => l.file_id);
  // Files a knowledge base held are indexed in it when their extraction ends (KnowledgeService.fileProcessed).
  for (const link of kept) await new KnowledgeStore(db).link(link, link.created_at);
  return refused;
};

const knowledgeBases: TableImport<WithGrants<KnowledgeRecord> & { links: KnowledgeLink[] }> = {
  source: 'knowledge',
  target: 'knowledge',
  convert(row, ctx) {
    const id = required(row, 'id');
    const userId = owner(row, ctx);
    const created = seconds(row.created_at, ctx.now);
    // Before 0.6.40 a knowledge base listed its files in data.file_ids.
    const fileIds = ctx.columns.has('data') ? json<{ file_ids?: unknown }>(row.data, {}).file_ids : undefined;
    const links = (Array.isArray(fileIds) ? fileIds : []).map((fileId) => ({ id: derivedId('knowledge_file', id, String(fileId)), knowledge_id: id, file_id: String(fileId), directory_id: null, user_id: userId, created_at: created }));
    return {
      id,
      user_id: userId,
      name: required(row, 'name'),
      description: text(row.description) ?? '',
      meta: json(row.meta, null),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
      grants: legacyGrants(row, ctx),
      links,
    };
  },
  async write(records, ctx) {
    return ctx.db.transaction().execute(async (trx) => {
      for (const { grants: _grants, links: _links, ...knowledge } of records) await new KnowledgeStore(trx).insert(knowledge);
      await writeGrants(trx, RESOURCE_TYPES.knowledge, records);
      return writeLinks(trx, records.flatMap((r) => r.links));
    });
  },
};

/**
 * 0.9.5 and later: folders inside knowledge bases, a parent before its children. A folder
 * whose parent is not in Parley (not converted, or in a later page: a second run places it)
 * is reported, and so is one whose name its level holds already (the reference allows two
 * of a name at the top level).
 */
const knowledgeDirectories: TableImport<DirectoryRecord> = {
  source: 'knowledge_directory',
  target: 'knowledge_directory',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      knowledge_id: required(row, 'knowledge_id'),
      parent_id: text(row.parent_id),
      name: required(row, 'name'),
      user_id: required(row, 'user_id'),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  async write(records, ctx) {
    return ctx.db.transaction().execute(async (trx) => {
      const { kept, refused } = await withParent(trx, records, 'knowledge', (d) => d.knowledge_id);
      if (kept.length === 0) return refused;
      const parentIds = [...new Set(kept.flatMap((d) => (d.parent_id ? [d.parent_id] : [])))];
      const placed = new Set(parentIds.length > 0 ? (await trx.selectFrom('knowledge_directory').select('id').where('id', 'in', parentIds).execute()).map((r) => r.id) : []);
      const levelName = (d: Pick<DirectoryRecord, 'knowledge_id' | 'parent_id' | 'name'>) => `${d.knowledge_id}\n${d.parent_id ?? ''}\n${d.name}`;
      const names = new Set(
        (await trx.selectFrom('knowledge_directory').select(['knowledge_id', 'parent_id', 'name']).where('knowledge_id', 'in', [...new Set(kept.map((d) => d.knowledge_id))]).execute()).map(levelName),
      );
      let waiting = kept;
      for (;;) {
        const ready = waiting.filter((d) => d.parent_id === null || placed.has(d.parent_id));
        if (ready.length === 0) break;
        for (const directory of ready) {
          if (names.has(levelName(directory))) {
            refused.push({ id: directory.id, reason: `its level already holds a folder named ${directory.name}` });
            continue;
          }
          await new KnowledgeStore(trx).createDirectory(directory);
          placed.add(directory.id);
          names.add(levelName(directory));
        }
        waiting = waiting.filter((d) => !ready.includes(d));
      }
      return [...refused, ...waiting.map((d) => ({ id: d.id, reason: `its parent folder ${d.parent_id} is not in the import` }))];
    });
  },
};

/** 0.6.40 and later: the knowledge_file table, each file in its folder (0.9.5 and later; at the top when its folder is not in Parley). */
const knowledgeFiles: TableImport<KnowledgeLink> = {
  source: 'knowledge_file',
  target: 'knowledge_file',
  convert(row, ctx) {
    return {
      id: required(row, 'id'),
      knowledge_id: required(row, 'knowledge_id'),
      file_id: required(row, 'file_id'),
      directory_id: text(row.directory_id),
      user_id: required(row, 'user_id'),
      created_at: seconds(row.created_at, ctx.now),
    };
  },
  async write(records, ctx) {
    return ctx.db.transaction().execute(async (trx) => {
      const { kept, refused } = await withParent(trx, records, 'knowledge', (l) => l.knowledge_id);
      const directoryIds = [...new Set(kept.flatMap((l) => (l.directory_id ? [l.directory_id] : [])))];
      const directories = new Set(directoryIds.length > 0 ? (await trx.selectFrom('knowledge_directory').select('id').where('id', 'in', directoryIds).execute()).map((r) => r.id) : []);
      const placed = kept.map((l) => ({ ...l, directory_id: l.directory_id && directories.has(l.directory_id) ? l.directory_id : null }));
      return [...refused, ...(await writeLinks(trx, placed))];
    });
  },
};

/** Whether a chat message names the file: by id, or by its content URL (a generated image's entry). */
const namesFile = (message: Json, fileId: string): boolean =>
  fileIdsOf(message).includes(fileId) ||
  (Array.isArray(message.files) && message.files.some((entry) => typeof (entry as { url?: unknown } | null)?.url === 'string' && (entry as { url: string }).url.includes(`/files/${fileId}/`)));

interface ChatFileLink {
  id: string;
  chat_id: string;
  message_id: string;
  file_id: string;
}

/**
 * 0.6.41 and later: links of chats to files. Parley links a chat to a file through the message
 * that names it (its `files`), as Open WebUI's messages do already: a link whose message names
 * its file is present; otherwise the file is added to the message's files through the chats service.
 */
const chatFiles: TableImport<ChatFileLink> = {
  source: 'chat_file',
  target: 'chat_message',
  convert(row) {
    const messageId = text(row.message_id);
    if (!messageId) throw new Unconvertible('it names no message (Parley links a chat to a file through one of its messages)');
    return { id: required(row, 'id'), chat_id: required(row, 'chat_id'), message_id: messageId, file_id: required(row, 'file_id') };
  },
  async present(records, ctx) {
    const present = new Set<string>();
    for (const link of records) {
      const message = await ctx.chats.messageOf(link.chat_id, link.message_id);
      if (message && namesFile(message, link.file_id)) present.add(link.id);
    }
    return present;
  },
  async write(records, ctx) {
    const inChats = await withParent(ctx.db, records, 'chat', (l) => l.chat_id);
    const { kept, refused } = await withParent(ctx.db, inChats.kept, 'file', (l) => l.file_id);
    const names = new Map((kept.length > 0 ? await ctx.db.selectFrom('file').select(['id', 'filename']).where('id', 'in', kept.map((l) => l.file_id)).execute() : []).map((f) => [f.id, f.filename]));
    for (const link of kept) {
      const message = await ctx.chats.messageOf(link.chat_id, link.message_id);
      if (!message || Object.keys(message).length === 0) {
        refused.push({ id: link.id, reason: `its message ${link.message_id} is not in chat ${link.chat_id}` });
        continue;
      }
      const entry = { type: 'file', id: link.file_id, name: names.get(link.file_id), url: `/api/v1/files/${link.file_id}` };
      await ctx.chats.applyMessageEvent(link.chat_id, link.message_id, { type: 'files', data: { files: [entry] } });
    }
    return [...inChats.refused, ...refused];
  },
};

/** 0.6.41 and later: links of channel messages to their files (channel members may read them). */
const channelFiles: TableImport<ChannelFileTable> = {
  source: 'channel_file',
  target: 'channel_file',
  convert(row, ctx) {
    return {
      id: required(row, 'id'),
      channel_id: required(row, 'channel_id'),
      message_id: text(row.message_id),
      file_id: required(row, 'file_id'),
      user_id: required(row, 'user_id'),
      created_at: seconds(row.created_at, ctx.now),
    };
  },
  async write(records, ctx) {
    return ctx.db.transaction().execute(async (trx) => {
      const inChannels = await withParent(trx, records, 'channel', (l) => l.channel_id);
      const withFiles = await withParent(trx, inChannels.kept, 'file', (l) => l.file_id);
      const ofMessages = await withParent(trx, withFiles.kept.filter((l) => l.message_id !== null), 'message', (l) => l.message_id!);
      for (const link of [...withFiles.kept.filter((l) => l.message_id === null), ...ofMessages.kept]) await new ChannelStore(trx).insertFile(link);
      return [...inChannels.refused, ...withFiles.refused, ...ofMessages.refused];
    });
  },
};

// ---- sharing ---------------------------------------------------------------

/**
 * Grants from the `access_control` column of versions before 0.7.2, as the reference's
 * migration f1e2d3c4b5a6 turns them into rows: null is public read, {} private, otherwise
 * the listed groups and users per permission.
 */
function legacyGrants(row: SourceRow, ctx: ImportContext): GrantSpec[] {
  if (!ctx.columns.has('access_control')) return [];
  const control = json<unknown>(row.access_control, null);
  if (control === null) return [{ principal_type: 'user', principal_id: EVERYONE, permission: 'read' }];
  if (typeof control !== 'object' || Array.isArray(control)) return [];
  const grants: GrantSpec[] = [];
  for (const permission of ['read', 'write'] as const) {
    const principals = (control as Record<string, { group_ids?: unknown; user_ids?: unknown } | undefined>)[permission];
    for (const id of Array.isArray(principals?.group_ids) ? principals.group_ids : []) grants.push({ principal_type: 'group', principal_id: String(id), permission });
    for (const id of Array.isArray(principals?.user_ids) ? principals.user_ids : []) grants.push({ principal_type: 'user', principal_id: String(id), permission });
  }
  return grants;
}

type WithGrants<T> = T & { grants: GrantSpec[] };

async function writeGrants(db: Db, resourceType: string, records: { id: string; grants: GrantSpec[]; created_at: number }[]): Promise<void> {
  for (const record of records) await new AccessGrantStore(db).insert(resourceType, record.id, record.grants, record.created_at);
}

/** Rows of a shareable resource: each row, then the grants of all, in one transaction. */
async function writeGranted<T extends { id: string; grants: GrantSpec[]; created_at: number }>(
  db: Db,
  resourceType: string,
  records: T[],
  insert: (trx: Db, record: Omit<T, 'grants'>) => Promise<unknown>,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const { grants: _grants, ...record } of records) await insert(trx, record);
    await writeGrants(trx, resourceType, records);
  });
}

/** The resource types Parley holds, by the tables the importer writes. */
const GRANTED_TABLES: Record<string, keyof Database> = {
  [RESOURCE_TYPES.model]: 'model',
  [RESOURCE_TYPES.tool]: 'tool',
  [RESOURCE_TYPES.prompt]: 'prompt',
  [RESOURCE_TYPES.note]: 'note',
  [RESOURCE_TYPES.channel]: 'channel',
  [RESOURCE_TYPES.knowledge]: 'knowledge',
  [RESOURCE_TYPES.file]: 'file',
  [RESOURCE_TYPES.skill]: 'skill',
  [RESOURCE_TYPES.folder]: 'folder',
  [RESOURCE_TYPES.calendar]: 'calendar',
  [RESOURCE_TYPES.sharedChat]: 'shared_chat',
};

/** 0.7.2 and later: the access_grant table, for the resources carried over. */
const grants: TableImport<AccessGrant> = {
  source: 'access_grant',
  target: 'access_grant',
  convert(row, ctx) {
    const resourceType = required(row, 'resource_type');
    if (!GRANTED_TABLES[resourceType]) throw new Unconvertible(`a grant on a ${resourceType}, which is not carried over`);
    const principalType = required(row, 'principal_type');
    if (principalType !== 'user' && principalType !== 'group') throw new Unconvertible(`unknown principal type ${principalType}`);
    const permission = required(row, 'permission');
    if (permission !== 'read' && permission !== 'write') throw new Unconvertible(`unknown permission ${permission}`);
    return {
      id: required(row, 'id'),
      resource_type: resourceType,
      resource_id: required(row, 'resource_id'),
      principal_type: principalType,
      principal_id: required(row, 'principal_id'),
      permission,
      created_at: seconds(row.created_at, ctx.now),
    };
  },
  async write(records, ctx) {
    const refused: Refused[] = [];
    await ctx.db.transaction().execute(async (trx) => {
      for (const [type, table] of Object.entries(GRANTED_TABLES)) {
        const ofType = records.filter((r) => r.resource_type === type);
        if (ofType.length === 0) continue;
        const existing = new Set(
          (await trx.selectFrom(table as 'model').select('id').where('id', 'in', ofType.map((r) => r.resource_id)).execute()).map((r) => r.id),
        );
        for (const grant of ofType) {
          if (existing.has(grant.resource_id)) await new AccessGrantStore(trx).insertGrant(grant);
          else refused.push({ id: grant.id, reason: `its ${type} ${grant.resource_id} is not in the import` });
        }
      }
    });
    return refused;
  },
};

// ---- settings --------------------------------------------------------------

/** Keys 0.9.6 renamed when it moved settings from one JSON blob to a row per key (migration 3ff2c63645b8). */
const RENAMED_SETTINGS: Record<string, string> = {
  'oauth.refresh_token_include_scope': 'oauth.refresh_token.include_scope',
  'rag.openai_api_base_url': 'rag.openai.api_base_url',
  'rag.openai_api_key': 'rag.openai.api_key',
  'rag.ollama.url': 'rag.ollama.base_url',
  'rag.ollama.key': 'rag.ollama.api_key',
  'oauth.oidc.avatar_claim': 'oauth.picture_claim',
  'oauth.oidc.client_id': 'oauth.client_id',
  'oauth.oidc.client_secret': 'oauth.client_secret',
  'oauth.oidc.code_challenge_method': 'oauth.code_challenge_method',
  'oauth.oidc.email_claim': 'oauth.email_claim',
  'oauth.oidc.end_session_endpoint': 'oauth.end_session_endpoint',
  'oauth.oidc.group_claim': 'oauth.group_claim',
  'oauth.oidc.oauth_timeout': 'oauth.timeout',
  'oauth.oidc.provider_name': 'oauth.provider_name',
  'oauth.oidc.provider_url': 'oauth.provider_url',
  'oauth.oidc.redirect_uri': 'oauth.redirect_uri',
  'oauth.oidc.scopes': 'oauth.scopes',
  'oauth.oidc.sub_claim': 'oauth.sub_claim',
  'oauth.oidc.token_endpoint_auth_method': 'oauth.token_endpoint_auth_method',
  'oauth.oidc.username_claim': 'oauth.username_claim',
};

interface SettingRecord {
  id: string;
  value: unknown;
}

/** A blob's values by dotted path; a path Parley declares keeps its value whole (connection configs are objects). */
function flattenBlob(blob: Record<string, unknown>, ctx: ImportContext, prefix = ''): SettingRecord[] {
  const records: SettingRecord[] = [];
  for (const [name, value] of Object.entries(blob)) {
    const key = prefix ? `${prefix}.${name}` : name;
    const renamed = RENAMED_SETTINGS[key] ?? key;
    if (ctx.settings.seededValue(renamed) === undefined && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      records.push(...flattenBlob(value as Record<string, unknown>, ctx, key));
    } else {
      records.push({ id: renamed, value });
    }
  }
  return records;
}

/**
 * Settings and connections: a row per key from 0.9.6, one JSON blob before. A key is taken
 * where Parley still has its first value; one an admin has changed in Parley is kept (and
 * counts as present), so a second run changes nothing.
 */
const settings: TableImport<SettingRecord> = {
  source: 'config',
  target: 'config',
  key: 'key',
  convert(row, ctx) {
    if (ctx.columns.has('key')) return { id: RENAMED_SETTINGS[required(row, 'key')] ?? String(row.key), value: json<unknown>(row.value, null) };
    const blob = object(row.data);
    if (!blob) throw new Unconvertible('its data is not a JSON object');
    return flattenBlob(blob, ctx);
  },
  async present(records, ctx) {
    return new Set(
      records
        .filter((r) => {
          const current = ctx.settings.get(r.id);
          return isDeepStrictEqual(current, r.value) || (ctx.settings.seededValue(r.id) !== undefined && !isDeepStrictEqual(current, ctx.settings.seededValue(r.id)));
        })
        .map((r) => r.id),
    );
  },
  async write(records, ctx) {
    const refused: Refused[] = [];
    const accepted: Record<string, unknown> = {};
    for (const record of records) {
      const problems = await ctx.settings.validate({ [record.id]: record.value });
      if (problems.length > 0) refused.push({ id: record.id, reason: problems.join('; ') });
      else accepted[record.id] = record.value;
    }
    await ctx.settings.set(accepted, ctx.now);
    // The old single webhook becomes the webhook `default`, as at a start-up.
    if ('webhook_url' in accepted) await ctx.events.migrateLegacyWebhook();
    return refused;
  },
};

// ---- the tables, in the order they are written ----------------------------

const users: TableImport<UserRecord> = {
  source: 'user',
  target: 'user',
  convert(row, ctx) {
    const id = required(row, 'id');
    const email = required(row, 'email').toLowerCase();
    const created = seconds(row.created_at, ctx.now);
    return {
      id,
      email,
      username: text(row.username),
      role: text(row.role) ?? 'pending',
      name: text(row.name) ?? email,
      profile_image_url: text(row.profile_image_url) || `/api/v1/users/${id}/profile/image`,
      profile_banner_image_url: text(row.profile_banner_image_url),
      bio: text(row.bio),
      gender: text(row.gender),
      date_of_birth: row.date_of_birth instanceof Date ? row.date_of_birth.toISOString().slice(0, 10) : text(row.date_of_birth),
      timezone: text(row.timezone),
      presence_state: text(row.presence_state),
      status_emoji: text(row.status_emoji),
      status_message: text(row.status_message),
      status_expires_at: row.status_expires_at == null ? null : seconds(row.status_expires_at, 0),
      info: object(row.info),
      variables: {},
      settings: object(row.settings),
      oauth: object(row.oauth) ?? (row.oauth_sub ? { oidc: { sub: String(row.oauth_sub) } } : null),
      scim: object(row.scim),
      last_active_at: seconds(row.last_active_at, created),
      updated_at: seconds(row.updated_at, created),
      created_at: created,
    };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      for (const user of records) await new UserStore(trx).insert(user);
    });
    for (const user of records) ctx.userIds.add(user.id);
  },
};

const credentials: TableImport<Credential> = {
  source: 'auth',
  target: 'auth',
  convert(row, ctx) {
    const id = owner(row, ctx, 'id');
    const password = text(row.password) ?? '';
    if (password && !/^\$(2[aby]?|argon2(id|i|d))\$/.test(password)) throw new Unconvertible('its password hash is neither bcrypt nor argon2');
    return { id, email: required(row, 'email').toLowerCase(), password, active: flag(row.active, true) };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      for (const credential of records) await new AuthStore(trx).insertCredential(credential);
    });
  },
};


const writeApiKeys = async (records: ApiKeyRecord[], ctx: ImportContext) => {
  await ctx.db.transaction().execute(async (trx) => {
    for (const key of records) await new AuthStore(trx).insertApiKey(key);
  });
};

/** 0.6.36 and later: the api_key table. */
const apiKeys: TableImport<ApiKeyRecord> = {
  source: 'api_key',
  target: 'api_key',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: owner(row, ctx),
      key: required(row, 'key'),
      data: row.data == null ? null : JSON.stringify(json(row.data, null)),
      expires_at: row.expires_at == null ? null : seconds(row.expires_at, 0),
      last_used_at: row.last_used_at == null ? null : seconds(row.last_used_at, 0),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  write: writeApiKeys,
};

/** Before 0.6.36: a user's key was a column of the user table (id `key_<user id>`, as the reference's migration names it). */
const legacyApiKeys: TableImport<ApiKeyRecord> = {
  source: 'user',
  target: 'api_key',
  accepts: (row) => typeof row.api_key === 'string' && row.api_key !== '',
  convert(row, ctx) {
    const userId = owner(row, ctx, 'id');
    const now = seconds(row.updated_at, ctx.now);
    return { id: `key_${userId}`, user_id: userId, key: String(row.api_key), data: null, expires_at: null, last_used_at: null, created_at: now, updated_at: now };
  },
  write: writeApiKeys,
};

const groups: TableImport<GroupRecord & { legacyMembers: string[] }> = {
  source: 'group',
  target: 'group',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: required(row, 'user_id'),
      name: required(row, 'name'),
      description: text(row.description) ?? '',
      data: object(row.data),
      meta: object(row.meta),
      permissions: object(row.permissions),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
      // Before 0.6.36 members were a JSON list in the group row.
      legacyMembers: json<unknown[]>(row.user_ids, []).filter((id): id is string => typeof id === 'string' && ctx.userIds.has(id)),
    };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      const store = new GroupStore(trx);
      for (const { legacyMembers, ...group } of records) {
        await store.insert(group);
        if (legacyMembers.length > 0) await store.addMembers(group.id, legacyMembers, group.updated_at);
      }
    });
  },
};

const groupMembers: TableImport<GroupMemberRecord> = {
  source: 'group_member',
  target: 'group_member',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return { id: required(row, 'id'), group_id: required(row, 'group_id'), user_id: owner(row, ctx), created_at: created, updated_at: seconds(row.updated_at, created) };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      const store = new GroupStore(trx);
      for (const member of records) await store.insertMember(member);
    });
  },
};

const folders: TableImport<FolderRecord> = {
  source: 'folder',
  target: 'folder',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      parent_id: text(row.parent_id),
      user_id: owner(row, ctx),
      name: required(row, 'name'),
      items: json(row.items, null),
      meta: json(row.meta, null),
      data: json(row.data, null),
      is_expanded: flag(row.is_expanded),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      for (const folder of records) await new FolderStore(trx).insert(folder);
    });
  },
};

/** Before 0.8.12, a shared chat was a copy in the chat table owned by `shared-<chat id>`, with the share id as its id. */
const isShareCopy = (row: SourceRow) => typeof row.user_id === 'string' && row.user_id.startsWith('shared-');

const chats: TableImport<ChatRecord & { tags: { id: string; name: string }[] }> = {
  source: 'chat',
  target: 'chat',
  accepts: (row) => !isShareCopy(row),
  convert(row, ctx) {
    const userId = owner(row, ctx);
    const chat = object(row.chat);
    if (!chat) throw new Unconvertible('its chat is not a JSON object');
    const meta = object(row.meta) ?? {};
    const tagIds = Array.isArray(meta.tags) ? meta.tags.filter((t): t is string => typeof t === 'string') : [];
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: userId,
      title: text(row.title) ?? (typeof chat.title === 'string' ? chat.title : 'New Chat'),
      chat: chat as Json,
      folder_id: text(row.folder_id),
      share_id: text(row.share_id),
      archived: flag(row.archived),
      pinned: flag(row.pinned),
      meta: { ...meta, tags: tagIds } as Json,
      variables: object(row.variables) ?? {},
      tasks: Array.isArray(json<unknown>(row.tasks, null)) ? json<unknown[]>(row.tasks, []) : null,
      summary: text(row.summary),
      current_message_id: text(row.current_message_id) ?? currentMessageIdOf(chat as Json),
      last_read_at: row.last_read_at == null ? null : seconds(row.last_read_at, 0),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
      tags: tagIds.map((id) => ({ id, name: ctx.tagNames.get(`${userId}\n${id}`) ?? id })),
    };
  },
  async write(records, ctx) {
    await ctx.chats.restore(
      records.map(({ tags: _tags, ...chat }) => chat),
      records.map((r) => r.tags),
    );
  },
  messages: (record) => Object.keys(messagesOf(record.chat)).length,
};

const writeShares = async (records: SharedChatRecord[], ctx: ImportContext) => {
  await ctx.db.transaction().execute(async (trx) => {
    for (const share of records) await new ChatStore(trx, ctx.dialect).insertShare(share);
  });
};

/** 0.8.12 and later: the shared_chat table. */
const shares: TableImport<SharedChatRecord> = {
  source: 'shared_chat',
  target: 'shared_chat',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    const chat = object(row.chat);
    if (!chat) throw new Unconvertible('its chat is not a JSON object');
    return { id: required(row, 'id'), chat_id: required(row, 'chat_id'), user_id: owner(row, ctx), title: text(row.title) ?? '', chat: chat as Json, created_at: created, updated_at: seconds(row.updated_at, created) };
  },
  write: writeShares,
};

const legacyShares: TableImport<SharedChatRecord & { ownerId: string }> = {
  source: 'chat',
  target: 'shared_chat',
  accepts: isShareCopy,
  convert(row, ctx) {
    const chatId = String(row.user_id).slice('shared-'.length);
    const created = seconds(row.created_at, ctx.now);
    const chat = object(row.chat);
    if (!chat) throw new Unconvertible('its chat is not a JSON object');
    return { id: required(row, 'id'), chat_id: chatId, user_id: '', ownerId: chatId, title: text(row.title) ?? '', chat: chat as Json, created_at: created, updated_at: seconds(row.updated_at, created) };
  },
  async write(records, ctx) {
    // The owner is the shared chat's: found among the chats imported before.
    const owners = new Map(
      (await ctx.db.selectFrom('chat').select(['id', 'user_id']).where('id', 'in', records.map((r) => r.ownerId)).execute()).map((r) => [r.id, r.user_id]),
    );
    const known = records.filter((r) => owners.has(r.ownerId));
    await writeShares(known.map(({ ownerId, ...share }) => ({ ...share, user_id: owners.get(ownerId)! })), ctx);
    return records.filter((r) => !owners.has(r.ownerId)).map((r) => ({ id: r.id, reason: `a share of chat ${r.ownerId}, which is not in the import` }));
  },
};

const models: TableImport<WithGrants<ModelRecord>> = {
  source: 'model',
  target: 'model',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: required(row, 'user_id'),
      base_model_id: text(row.base_model_id),
      name: text(row.name) ?? String(row.id),
      params: object(row.params) ?? {},
      meta: object(row.meta) ?? {},
      is_active: flag(row.is_active, true),
      updated_at: seconds(row.updated_at, created),
      created_at: created,
      grants: legacyGrants(row, ctx),
    };
  },
  write: (records, ctx) => writeGranted(ctx.db, RESOURCE_TYPES.model, records, (trx, model) => new ModelStore(trx).insert(model)),
};

/** ToolMeta keeps exactly its three keys. */
const toolMeta = (meta: Record<string, unknown>): ToolRecord['meta'] => ({
  description: typeof meta.description === 'string' ? meta.description : null,
  manifest: object(meta.manifest),
  has_user_valves: meta.has_user_valves === true,
});

const tools: TableImport<WithGrants<ToolRecord>> = {
  source: 'tool',
  target: 'tool',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: required(row, 'user_id'),
      name: text(row.name) ?? String(row.id),
      content: text(row.content) ?? '',
      specs: json<Json[]>(row.specs, []),
      meta: toolMeta(object(row.meta) ?? {}),
      valves: json(row.valves, null),
      updated_at: seconds(row.updated_at, created),
      created_at: created,
      grants: legacyGrants(row, ctx),
    };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      const store = new ToolStore(trx);
      for (const { valves, grants: _grants, ...tool } of records) {
        await store.insert(tool);
        if (valves !== null) await store.setValves(tool.id, valves, tool.updated_at);
      }
      await writeGrants(trx, RESOURCE_TYPES.tool, records);
    });
  },
};

const FUNCTION_TYPES = new Set(['pipe', 'filter', 'action']);

const functions: TableImport<FunctionRecord> = {
  source: 'function',
  target: 'function',
  convert(row, ctx) {
    const type = required(row, 'type');
    if (!FUNCTION_TYPES.has(type)) throw new Unconvertible(`unknown function type ${type}`);
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: required(row, 'user_id'),
      name: text(row.name) ?? String(row.id),
      type: type as FunctionRecord['type'],
      content: text(row.content) ?? '',
      meta: (object(row.meta) ?? {}) as Json,
      valves: json(row.valves, null),
      // Read from the source when the function is first loaded.
      traits: null,
      is_active: flag(row.is_active),
      is_global: flag(row.is_global),
      updated_at: seconds(row.updated_at, created),
      created_at: created,
    };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      for (const fn of records) await new FunctionStore(trx).insert(fn);
    });
  },
};

const prompts: TableImport<WithGrants<PromptRecord>> = {
  source: 'prompt',
  target: 'prompt',
  key: 'command',
  convert(row, ctx) {
    const command = required(row, 'command');
    const created = seconds(row.created_at ?? row.timestamp, ctx.now);
    return {
      // Before 0.7.2 the command was the key; the id is derived from it so a second run finds it.
      id: text(row.id) ?? derivedId('prompt', command),
      command,
      user_id: required(row, 'user_id'),
      name: text(row.name) ?? text(row.title) ?? command,
      content: text(row.content) ?? '',
      data: (object(row.data) ?? {}) as Json,
      meta: (object(row.meta) ?? {}) as Json,
      tags: json<(string | null)[]>(row.tags, []),
      is_active: flag(row.is_active, true),
      version_id: text(row.version_id),
      created_at: created,
      updated_at: seconds(row.updated_at ?? row.timestamp, created),
      grants: legacyGrants(row, ctx),
    };
  },
  async write(records, ctx) {
    await ctx.prompts.restore(records.map(({ grants, ...prompt }) => ({ prompt, grants })));
  },
};

/** 0.7.2 and later: each prompt's versions, ids, authors and times kept, in the order of their times. */
const promptHistory: TableImport<PromptVersion> = {
  source: 'prompt_history',
  target: 'prompt_history',
  convert(row, ctx) {
    const snapshot = object(row.snapshot);
    if (!snapshot) throw new Unconvertible('its snapshot is not a JSON object');
    return {
      id: required(row, 'id'),
      prompt_id: required(row, 'prompt_id'),
      parent_id: text(row.parent_id),
      snapshot,
      user_id: required(row, 'user_id'),
      commit_message: text(row.commit_message),
      created_at: seconds(row.created_at, ctx.now),
    };
  },
  // The version in use is written first by the prompt's import: present once it is as Open WebUI had it.
  async present(records, ctx) {
    const stored = new Map((await new PromptStore(ctx.db).versionsByIds(records.map((r) => r.id))).map((v) => [v.id, v]));
    return new Set(
      records
        .filter((r) => {
          const version = stored.get(r.id);
          return version && version.parent_id === r.parent_id && version.user_id === r.user_id && version.commit_message === r.commit_message && version.created_at === r.created_at;
        })
        .map((r) => r.id),
    );
  },
  write: restoreUnder('prompt', (version) => version.prompt_id, (versions, ctx) => ctx.prompts.restoreVersions(versions)),
};

/** 0.8.0 and later (their sharing is in access_grant). */
const skills: TableImport<SkillRecord> = {
  source: 'skill',
  target: 'skill',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    const tags = object(row.meta)?.tags;
    return {
      id: required(row, 'id'),
      user_id: required(row, 'user_id'),
      name: required(row, 'name'),
      description: text(row.description),
      content: text(row.content) ?? '',
      meta: { tags: Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [] },
      is_active: flag(row.is_active, true),
      updated_at: seconds(row.updated_at, created),
      created_at: created,
    };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      for (const skill of records) await new SkillStore(trx).insert(skill);
    });
  },
};

const notes: TableImport<WithGrants<NoteRecord>> = {
  source: 'note',
  target: 'note',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: owner(row, ctx),
      title: text(row.title) ?? '',
      data: json(row.data, null),
      meta: json(row.meta, null),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
      grants: legacyGrants(row, ctx),
    };
  },
  write: (records, ctx) => writeGranted(ctx.db, RESOURCE_TYPES.note, records, (trx, note) => new NoteStore(trx).insert(note)),
};

interface NotePin {
  id: string;
  user_id: string;
  note_id: string;
  created_at: number;
}

/** Parley keeps a pin by user and note: the source's id only names it in reports. */
const pinsPresent = async (records: NotePin[], ctx: ImportContext): Promise<Set<string>> => {
  if (records.length === 0) return new Set();
  const pins = new Set(
    (await ctx.db.selectFrom('pinned_note').select(['user_id', 'note_id']).where('note_id', 'in', [...new Set(records.map((r) => r.note_id))]).execute()).map((p) => `${p.user_id}\n${p.note_id}`),
  );
  return new Set(records.filter((r) => pins.has(`${r.user_id}\n${r.note_id}`)).map((r) => r.id));
};

const writePins = writeUnder<NotePin>('note', (pin) => pin.note_id, (trx, pin) => new NoteStore(trx).pin(pin.user_id, pin.note_id, pin.created_at));

/** 0.9.2 and later: the pinned_note table. */
const notePins: TableImport<NotePin> = {
  source: 'pinned_note',
  target: 'pinned_note',
  convert(row, ctx) {
    return { id: required(row, 'id'), user_id: owner(row, ctx), note_id: required(row, 'note_id'), created_at: seconds(row.created_at, ctx.now) };
  },
  present: pinsPresent,
  write: writePins,
};

/** 0.8.12 to 0.9.1: a pin was the note row's `is_pinned`, its owner's (as the reference's migration 4de81c2a3af1 reads it). */
const legacyNotePins: TableImport<NotePin> = {
  source: 'note',
  target: 'pinned_note',
  accepts: (row) => flag(row.is_pinned),
  convert(row, ctx) {
    return { id: required(row, 'id'), user_id: owner(row, ctx), note_id: required(row, 'id'), created_at: seconds(row.updated_at, ctx.now) };
  },
  present: pinsPresent,
  write: writePins,
};

const memories: TableImport<MemoryRecord> = {
  source: 'memory',
  target: 'memory',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: owner(row, ctx),
      type: row.type === 'user' ? 'user' : 'context',
      path: text(row.path),
      content: text(row.content) ?? '',
      meta: json(row.meta, null),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      for (const memory of records) await new MemoryStore(trx).insert(memory);
    });
  },
};

const feedback: TableImport<FeedbackRecord> = {
  source: 'feedback',
  target: 'feedback',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: owner(row, ctx),
      version: Number(row.version ?? 0),
      type: text(row.type) ?? 'rating',
      data: json(row.data, null),
      meta: json(row.meta, null),
      snapshot: json(row.snapshot, null),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  async write(records, ctx) {
    await ctx.db.transaction().execute(async (trx) => {
      for (const item of records) await new FeedbackStore(trx, ctx.dialect).insert(item);
    });
  },
};

/** 0.8.12 and later: automations, scheduled again from now on in their owner's time zone (their runs are not carried over). */
const automations: TableImport<AutomationRecord> = {
  source: 'automation',
  target: 'automation',
  convert(row, ctx) {
    const data = object(row.data);
    if (!data || typeof data.prompt !== 'string' || typeof data.model_id !== 'string' || typeof data.rrule !== 'string') throw new Unconvertible('its data has no prompt, model_id and rrule');
    try {
      Recurrence.parse(data.rrule);
    } catch (error) {
      if (error instanceof RecurrenceError) throw new Unconvertible(`its rrule: ${error.message}`);
      throw error;
    }
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: owner(row, ctx),
      name: required(row, 'name'),
      data: data as AutomationRecord['data'],
      meta: object(row.meta),
      folder_id: null,
      is_active: flag(row.is_active, true),
      last_run_at: row.last_run_at == null ? null : seconds(row.last_run_at, 0),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  write: (records, ctx) => ctx.automations.restore(records),
};

/** 0.8.12 and later: the automations' past runs; one Open WebUI left unfinished (stopped meanwhile) is kept as failed. */
const automationRuns: TableImport<AutomationRunRecord> = {
  source: 'automation_run',
  target: 'automation_run',
  convert(row, ctx) {
    const status = required(row, 'status');
    return {
      id: required(row, 'id'),
      automation_id: required(row, 'automation_id'),
      chat_id: text(row.chat_id),
      status: status === 'success' ? 'success' : 'error',
      error: text(row.error) ?? (status === 'error' ? null : `left ${status} in Open WebUI`),
      output: null,
      duration_ms: null,
      created_at: seconds(row.created_at, ctx.now),
    };
  },
  write: writeUnder('automation', (run) => run.automation_id, (trx, run) => new AutomationStore(trx).insertRun(run)),
};

/** 0.9.0 and later; their sharing is in access_grant. */
const calendars: TableImport<CalendarRecord> = {
  source: 'calendar',
  target: 'calendar',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      user_id: owner(row, ctx),
      name: required(row, 'name'),
      color: text(row.color),
      is_default: flag(row.is_default),
      data: object(row.data),
      meta: object(row.meta),
      // A feed link is made again in Parley when wanted.
      feed_token: null,
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  write: (records, ctx) => ctx.calendar.restoreCalendars(records),
};

const calendarEvents: TableImport<EventRecord> = {
  source: 'calendar_event',
  target: 'calendar_event',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      calendar_id: required(row, 'calendar_id'),
      user_id: owner(row, ctx),
      title: required(row, 'title'),
      description: text(row.description),
      start_at: Number(required(row, 'start_at')),
      end_at: row.end_at == null ? null : Number(row.end_at),
      all_day: flag(row.all_day),
      rrule: text(row.rrule),
      color: text(row.color),
      location: text(row.location),
      data: object(row.data),
      meta: object(row.meta),
      is_cancelled: flag(row.is_cancelled),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  write: restoreUnder('calendar', (event) => event.calendar_id, (events, ctx) => ctx.calendar.restoreEvents(events)),
};

/** 0.9.0 and later: who is invited to an event, with their answer. */
const eventAttendees: TableImport<AttendeeRecord> = {
  source: 'calendar_event_attendee',
  target: 'calendar_event_attendee',
  convert(row, ctx) {
    const created = seconds(row.created_at, ctx.now);
    return {
      id: required(row, 'id'),
      event_id: required(row, 'event_id'),
      user_id: owner(row, ctx),
      status: required(row, 'status'),
      meta: object(row.meta),
      created_at: created,
      updated_at: seconds(row.updated_at, created),
    };
  },
  write: writeUnder('calendar_event', (attendee) => attendee.event_id, (trx, attendee) => new CalendarStore(trx).insertAttendee(attendee)),
};

/** Every table this importer carries over, in the order they are written (owners before what they own). */
export const TABLE_IMPORTS: TableImport<{ id: string }>[] = [
  users,
  credentials,
  apiKeys,
  legacyApiKeys,
  groups,
  groupMembers,
  folders,
  chats,
  shares,
  legacyShares,
  models,
  tools,
  functions,
  prompts,
  promptHistory,
  skills,
  notes,
  notePins,
  legacyNotePins,
  memories,
  feedback,
  automations,
  automationRuns,
  calendars,
  calendarEvents,
  eventAttendees,
  channels,
  channelMembers,
  channelMessages,
  reactions,
  files,
  chatFiles,
  channelFiles,
  knowledgeBases,
  knowledgeDirectories,
  knowledgeFiles,
  grants,
  settings,
] as unknown as TableImport<{ id: string }>[];

/**
 * Tables of the source this version of the importer does not carry over: their rows
 * are counted and reported in every run (dry or not), never passed over in silence.
 */
export const NOT_CARRIED_OVER: Record<string, string> = {
  oauth_session: 'OAuth sessions are not carried over (users sign in again)',
};
