import type { SettingsStore } from '../../config/settings.js';
import { type UserRecord, isAdmin, publicUser } from '../auth/user.js';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import type { UserDirectory } from '../directory.js';
import { isSensitiveKey } from '../events/publish.js';
import { ERROR, HttpError, badRequest, forbidden } from '../http/errors.js';
import type { CallContext } from '../upstream/headers.js';
import type { Answer } from '../upstream/service.js';
import type { BridgeCaller, PluginBridge } from './bridge.js';

type Json = Record<string, unknown>;

/** A chat as the chats area hands it out (its ChatRecord). */
export interface CompatChat {
  id: string;
  user_id: string;
  title: string;
  chat: Json;
  created_at: number;
  updated_at: number;
  share_id: string | null;
  archived: boolean;
  pinned: boolean;
  meta: Json;
  variables: Json | null;
  folder_id: string | null;
  tasks: unknown[] | null;
  summary: string | null;
  current_message_id: string | null;
  last_read_at: number | null;
}

/** What the plugin API needs of the chats area (ChatsService provides it). */
export interface CompatChats {
  /** The chat if the user may read it (their own, shared with them, admin access), else null. */
  readable(user: UserRecord, id: string): Promise<CompatChat | null>;
  /** The user's own chat; a 404 HttpError otherwise. */
  own(user: UserRecord, id: string): Promise<CompatChat>;
  /** `POST /chats/{id}`: the sent chat merged over the user's own one (refused with the route's 401 otherwise). */
  update(user: UserRecord, id: string, form: { chat: Json }): Promise<Json>;
  upsertMessage(chatId: string, messageId: string, message: Json): Promise<CompatChat | null>;
  messageOf(chatId: string, messageId: string): Promise<Json | null>;
}

/** What the plugin API needs of the users area (UsersService provides it). */
export interface CompatUsers extends UserDirectory {
  count(db?: Db): Promise<number>;
  activeCount(): Promise<number>;
  countActiveSince(since: number): Promise<number>;
  list(filter: { query?: string; orderBy?: string; direction?: string; skip?: number; limit?: number }): Promise<{ users: UserRecord[]; total: number }>;
}

/**
 * What the plugin API needs of the files area (FilesService provides it). Each call
 * checks the user's access; records go to plugins as they are.
 */
export interface CompatFiles {
  get(user: UserRecord, id: string): Promise<object | null>;
  getMany(user: UserRecord, ids: string[]): Promise<object[]>;
  insert(user: UserRecord, form: { id: string; hash: string | null; filename: string; path: string; data: Json; meta: Json }): Promise<object | null>;
  update(user: UserRecord, id: string, patch: { hash?: string; data?: Json; meta?: Json }): Promise<object | null>;
  /** Stores and records an upload; `process` queues content extraction (the answer then has `status: true`). */
  upload(user: UserRecord, upload: { filename: string; content: Buffer; contentType: string | null; metadata: Json; process: boolean }): Promise<{ status?: boolean }>;
  /** Stores bytes under the user's uploads; the path returned is the plugin's to use. */
  writeBytes(user: UserRecord, filename: string, content: Buffer): Promise<string>;
  localPath(user: UserRecord, stored: string, own: ReadonlySet<string>): Promise<string>;
  deleteBytes(user: UserRecord, stored: string, own: ReadonlySet<string>): Promise<void>;
}

/** What the plugin API needs of the models area: a chat completion on any model (CompletionsService provides it). */
export interface CompatCompletions {
  complete(user: UserRecord, payload: Json, context: CallContext, options: { bypassSystemPrompt?: boolean }): Promise<Answer>;
}

export interface CompatServices {
  users: CompatUsers;
  files: CompatFiles;
  completions: CompatCompletions;
  settings: SettingsStore;
  clock: Clock;
  /** Absent until the chats area is wired: chat operations then fail with 501. */
  chats?: CompatChats | null;
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

function text(args: Json, name: string): string {
  const value = args[name];
  if (typeof value !== 'string') throw badRequest(`${name} must be a string`);
  return value;
}

function object(args: Json, name: string): Json {
  const value = args[name];
  if (!isObject(value)) throw badRequest(`${name} must be a dict`);
  return value;
}

const optionalObject = (args: Json, name: string): Json | undefined => (args[name] === undefined || args[name] === null ? undefined : object(args, name));

function nonNegative(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** A plugin acts as its caller: a `user` it names must be that user (None means the caller). */
function requireSelf(caller: BridgeCaller, userId: unknown): UserRecord {
  if (userId !== undefined && userId !== null && userId !== caller.user.id) {
    throw forbidden(`This plugin runs for user ${caller.user.id} and cannot act as user ${String(userId)}`);
  }
  return caller.user;
}

const isVerified = (user: UserRecord) => user.role === 'user' || isAdmin(user);

/**
 * Another user as the caller may see them: the record itself for admins, the
 * public card for other signed-in users (what `GET /users/{id}/info` shows).
 */
function userView(viewer: UserRecord, user: UserRecord): Json | null {
  if (user.id === viewer.id || isAdmin(viewer)) return publicUser(user);
  if (!isVerified(viewer)) return null;
  const { id, name, email, role, bio, status_emoji, status_message, status_expires_at } = user;
  return { id, name, email, role, bio, status_emoji, status_message, status_expires_at, last_active_at: 0, updated_at: 0, created_at: 0 };
}

/** Config namespaces only admins may read through plugins: credentials and connection settings. */
const ADMIN_ONLY_NAMESPACES = new Set(['oauth', 'ldap', 'auth', 'openai', 'ollama', 'tool_server', 'terminal_server', 'events']);

function mayReadConfig(user: UserRecord, key: string): boolean {
  if (isAdmin(user)) return true;
  const segments = key.split('.');
  return !ADMIN_ONLY_NAMESPACES.has(segments[0]) && !segments.some((segment) => isSensitiveKey(segment) || /key|secret|password|token|credential/i.test(segment));
}

function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !isSensitiveKey(key)).map(([key, item]) => [key, withoutSecrets(item)]));
}

function chatModel(chat: CompatChat): Json {
  return {
    id: chat.id,
    user_id: chat.user_id,
    title: chat.title,
    chat: chat.chat,
    created_at: chat.created_at,
    updated_at: chat.updated_at,
    share_id: chat.share_id,
    archived: chat.archived,
    pinned: chat.pinned,
    meta: chat.meta,
    variables: chat.variables ?? {},
    folder_id: chat.folder_id,
    tasks: chat.tasks,
    summary: chat.summary,
    current_message_id: chat.current_message_id,
    last_read_at: chat.last_read_at,
  };
}

/** A 404 from the chats area reads as None, as the reference's model methods answer a missing chat. */
async function orNull<T>(run: () => Promise<T>): Promise<T | null> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof HttpError && error.statusCode === 404) return null;
    throw error;
  }
}

function fileModel(file: object | null): Json | null {
  return file ? { ...file } : null;
}

function bytes(args: Json, name: string): Buffer {
  return Buffer.from(text(args, name), 'base64');
}

async function readAll(stream: AsyncIterable<unknown>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The operations behind Parley's `open_webui` compatibility package
 * (plugin-host/open_webui): each one runs as the plugin's caller, through the
 * areas' services, so a plugin reaches exactly what its user could reach over
 * HTTP. See docs/plugin-compat.md for the table of methods.
 */
export function defineCompatApi(bridge: PluginBridge, services: CompatServices): void {
  const { users, files, completions, settings, clock } = services;
  const chats = (): CompatChats => {
    if (!services.chats) throw new HttpError(501, 'Chats are not available to plugins yet');
    return services.chats;
  };

  // ---- open_webui.models.users -------------------------------------------------

  bridge.define('users.get', async ({ user }, args) => {
    const found = typeof args.email === 'string' ? await users.byEmail(args.email) : await users.byId(text(args, 'id'));
    return found ? userView(user, found) : null;
  });

  bridge.define('users.list', async ({ user }, args) => {
    const filter = isObject(args.filter) ? args.filter : {};
    const skip = nonNegative(args.skip) ?? 0;
    const limit = nonNegative(args.limit);
    const ids = Array.isArray(filter.user_ids) ? filter.user_ids.filter((id): id is string => typeof id === 'string') : null;
    const roles = Array.isArray(filter.roles) ? filter.roles.filter((role): role is string => typeof role === 'string') : null;
    let found: UserRecord[];
    let total: number;
    if (!isVerified(user)) {
      found = [user].filter((u) => !ids || ids.includes(u.id));
      total = found.length;
    } else if (ids || roles) {
      // Filters the store does not know: match them on the whole list, then take the page.
      const all = ids ? await users.byIds(ids) : (await users.list({ query: str(filter.query), orderBy: str(filter.order_by), direction: str(filter.direction) })).users;
      const include = roles?.filter((role) => !role.startsWith('!')) ?? [];
      const exclude = roles?.filter((role) => role.startsWith('!')).map((role) => role.slice(1)) ?? [];
      const matching = all.filter((u) => (include.length === 0 || include.includes(u.role)) && !exclude.includes(u.role));
      total = matching.length;
      found = matching.slice(skip, limit === undefined ? undefined : skip + limit);
    } else {
      ({ users: found, total } = await users.list({ query: str(filter.query), orderBy: str(filter.order_by), direction: str(filter.direction), skip, limit }));
    }
    return { users: found.map((u) => userView(user, u)).filter(Boolean), total };
  });

  bridge.define('users.count', async ({ user }, args) => {
    if (!isVerified(user)) throw forbidden(ERROR.ACCESS_PROHIBITED);
    if (args.kind === 'active') return users.activeCount();
    if (args.kind === 'today') {
      const now = clock.now();
      return users.countActiveSince(now - (now % 86_400));
    }
    return users.count();
  });

  // ---- open_webui.models.files and open_webui.storage.provider ------------------

  bridge.define('files.get', async ({ user }, args) => fileModel(await files.get(user, text(args, 'id'))));

  bridge.define('files.get_many', async ({ user }, args) => {
    const ids = Array.isArray(args.ids) ? args.ids.filter((id): id is string => typeof id === 'string') : [];
    return (await files.getMany(user, ids)).map(fileModel);
  });

  bridge.define('files.insert', async (caller, args) => {
    const user = requireSelf(caller, args.user_id);
    const form = object(args, 'form');
    return fileModel(
      await files.insert(user, {
        id: text(form, 'id'),
        hash: typeof form.hash === 'string' ? form.hash : null,
        filename: text(form, 'filename'),
        path: text(form, 'path'),
        data: optionalObject(form, 'data') ?? {},
        meta: optionalObject(form, 'meta') ?? {},
      }),
    );
  });

  bridge.define('files.update', async ({ user }, args) =>
    fileModel(
      await files.update(user, text(args, 'id'), {
        ...(typeof args.hash === 'string' ? { hash: args.hash } : {}),
        data: optionalObject(args, 'data'),
        meta: optionalObject(args, 'meta'),
      }),
    ),
  );

  bridge.define('files.upload', async (caller, args) => {
    const user = requireSelf(caller, args.user_id);
    // The Python side adds `status: True` for a processed upload, as the reference.
    const { status: _queued, ...file } = await files.upload(user, {
      filename: text(args, 'filename'),
      content: bytes(args, 'content'),
      contentType: typeof args.content_type === 'string' ? args.content_type : null,
      metadata: optionalObject(args, 'metadata') ?? {},
      process: args.process === true,
    });
    return fileModel(file);
  });

  bridge.define('storage.upload', async (caller, args) => {
    const path = await files.writeBytes(caller.user, text(args, 'filename'), bytes(args, 'content'));
    caller.uploads.add(path);
    return { path };
  });

  bridge.define('storage.get', async (caller, args) => ({
    path: await caller.exportFile(await files.localPath(caller.user, text(args, 'path'), caller.uploads)),
  }));

  bridge.define('storage.delete', async (caller, args) => {
    await files.deleteBytes(caller.user, text(args, 'path'), caller.uploads);
    return null;
  });

  // ---- open_webui.models.chats --------------------------------------------------

  bridge.define('chats.get', async ({ user }, args) => {
    const chat = await chats().readable(user, text(args, 'id'));
    return chat ? chatModel(chat) : null;
  });

  bridge.define('chats.update', async ({ user }, args) =>
    orNull(async () => {
      // `own` first: its 404 is the missing chat the plugin reads as None; the route's own refusal is a 401.
      const chat = await chats().own(user, text(args, 'id'));
      return chats().update(user, chat.id, { chat: object(args, 'chat') });
    }),
  );

  bridge.define('chats.upsert_message', async ({ user }, args) =>
    orNull(async () => {
      const chat = await chats().own(user, text(args, 'id'));
      const saved = await chats().upsertMessage(chat.id, text(args, 'message_id'), object(args, 'message'));
      return saved ? chatModel(saved) : null;
    }),
  );

  bridge.define('chats.add_message_files', async ({ user }, args) =>
    orNull(async () => {
      const chat = await chats().own(user, text(args, 'id'));
      const messageId = text(args, 'message_id');
      const added = Array.isArray(args.files) ? args.files : [];
      const message = (await chats().messageOf(chat.id, messageId)) ?? {};
      // As the reference: a message that is not in the history gets nothing, and the answer is [].
      if (Object.keys(message).length === 0) return [];
      const messageFiles = [...(Array.isArray(message.files) ? message.files : []), ...added];
      await chats().upsertMessage(chat.id, messageId, { files: messageFiles });
      return messageFiles;
    }),
  );

  // ---- open_webui.models.config -------------------------------------------------

  bridge.define('config.get', async ({ user }, args) => {
    const key = text(args, 'key');
    if (!mayReadConfig(user, key)) throw forbidden(`Config key ${key} is readable by admins only`);
    const value = settings.get<unknown>(key);
    if (value === undefined) return { found: false, value: null };
    return { found: true, value: isAdmin(user) ? value : withoutSecrets(value) };
  });

  // ---- open_webui.utils.chat ----------------------------------------------------

  bridge.define('chat.completion', async (caller, args) => {
    const user = requireSelf(caller, args.user_id);
    if (!isVerified(user)) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const payload = object(args, 'form_data');
    const metadata = isObject(payload.metadata) ? payload.metadata : null;
    const answer = await completions.complete(user, payload, { user, metadata }, { bypassSystemPrompt: args.bypass_system_prompt === true });
    if (answer.kind === 'stream') return { stream: await readAll(answer.body) };
    if (answer.status >= 400) {
      const body = answer.body;
      throw new HttpError(answer.status, isObject(body) && body.detail !== undefined ? body.detail : body);
    }
    return { body: answer.body };
  });
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value ? value : undefined;
}
