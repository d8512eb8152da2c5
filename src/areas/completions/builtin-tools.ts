import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { SettingsStore } from '../../config/settings.js';
import { type Json, contentText, isObject, messageList } from '../chats/history.js';
import type { ChatsService } from '../chats/service.js';
import type { RetrievalService } from '../../core/retrieval/service.js';
import type { KnowledgeService } from '../knowledge/service.js';
import type { MemoriesService } from '../memories/service.js';
import type { NotesService } from '../notes/service.js';
import type { SkillsService } from '../skills/service.js';
import type { WebService } from '../web/service.js';
import type { ImagesService } from '../images/service.js';
import { MAX_IMAGES } from '../images/schemas.js';
import { errorText } from './generation.js';
import type { SkillRecord } from '../skills/store.js';
import { viewSkillFunction } from './skills.js';
import { type ChatFunction, type ToolCallExtras, textOutcome } from './tools.js';

/**
 * Built-in tools (utils/tools.get_builtin_tools, tools/builtin.py): functions
 * Parley itself offers in native function calling, only to answers the web
 * client asked for (a socket session), as the reference. Each category can be
 * switched off per model (`meta.builtinTools.<category>: false`), and the ones
 * that reach other areas are gated as the reference gates them.
 */
export interface BuiltinDeps {
  skills: SkillsService;
  access: AccessService;
  memories: MemoriesService;
  notes: NotesService;
  web: WebService;
  images: ImagesService;
  chats: ChatsService;
  knowledge: KnowledgeService;
  retrieval: RetrievalService;
  settings: SettingsStore;
}

export interface BuiltinRequest {
  user: UserRecord;
  model: Json;
  /** The request's `features` (`memory`, `web_search`, ...). */
  features: Json;
  /** Skills listed in the `<available_skills>` manifest. */
  viewableSkills: SkillRecord[];
}

const modelMeta = (model: Json): Json => (isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {});

/** `meta.builtinTools.<category>`, true unless switched off. */
function categoryEnabled(model: Json, category: string): boolean {
  const builtin = modelMeta(model).builtinTools;
  return !isObject(builtin) || builtin[category] !== false;
}

/** Whether an answer gets built-in tools at all: a web client's, native function calling, and the model's `builtin_tools` capability. */
export function usesBuiltinTools(sessionId: string | null, params: Json, model: Json): boolean {
  const capabilities = modelMeta(model).capabilities;
  return Boolean(sessionId) && params.function_calling !== 'legacy' && !(isObject(capabilities) && capabilities.builtin_tools === false);
}

/** The model's capability, true unless switched off. */
function capable(model: Json, name: string): boolean {
  const capabilities = modelMeta(model).capabilities;
  return !isObject(capabilities) || capabilities[name] !== false;
}

export async function builtinFunctions(deps: BuiltinDeps, request: BuiltinRequest): Promise<ChatFunction[]> {
  const { user, model, features } = request;
  const permitted = async (feature: string) => isAdmin(user) || (await deps.access.hasPermission(user, `features.${feature}`));
  const functions: ChatFunction[] = [];
  if (categoryEnabled(model, 'time')) functions.push(currentTimestamp, calculateTimestamp);
  if (categoryEnabled(model, 'knowledge')) functions.push(...knowledgeFunctions(deps.knowledge, deps.retrieval, modelKnowledge(model)));
  if (categoryEnabled(model, 'chats')) functions.push(...chatFunctions(deps.chats));
  if (categoryEnabled(model, 'memory') && features.memory && capable(model, 'memory') && (await permitted('memories'))) functions.push(...memoryFunctions(deps.memories));
  if (categoryEnabled(model, 'web_search') && features.web_search && capable(model, 'web_search') && (await deps.web.maySearch(user))) {
    functions.push(...webFunctions(deps.web, deps.settings));
  }
  if (categoryEnabled(model, 'image_generation') && features.image_generation && capable(model, 'image_generation') && (await deps.images.mayGenerate(user))) {
    functions.push(...imageFunctions(deps.images));
  }
  if (categoryEnabled(model, 'notes') && deps.settings.get<boolean>('notes.enable') && (await permitted('notes'))) functions.push(...noteFunctions(deps.notes));
  if (request.viewableSkills.length > 0) functions.push(viewSkillFunction(deps.skills));
  return functions;
}

/** A built-in function: its spec, and a runner whose value becomes JSON (failures as `{error}`, as the reference). */
function builtin(
  name: string,
  description: string,
  properties: Json,
  required: string[],
  run: (args: Json, user: UserRecord, extras: ToolCallExtras) => Promise<unknown>,
): ChatFunction {
  return {
    source: 'builtin',
    spec: { name, description, parameters: { type: 'object', properties, ...(required.length > 0 ? { required } : {}) } },
    async run(args, user, extras) {
      try {
        const value = await run(args, user, extras);
        return textOutcome(typeof value === 'string' ? value : JSON.stringify(value));
      } catch (error) {
        return textOutcome(JSON.stringify({ error: errorText(error) }));
      }
    },
  };
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const optionalStr = (value: unknown): string | null => (typeof value === 'string' && value ? value : null);
const count = (value: unknown, fallback: number): number => {
  const n = wholeNumber(value ?? fallback);
  return n > 0 ? n : fallback;
};
const day = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);
const memoryType = (value: unknown) => (value === 'user' || value === 'context' || value === 'all' ? value : 'all');

// ---- memory ------------------------------------------------------------------------

function memoryFunctions(memories: MemoriesService): ChatFunction[] {
  return [
    builtin(
      'search_memories',
      'Search or browse saved memories by content, path, type, or memory ID.',
      {
        query: { type: 'string', description: 'Optional query to search memory content and path', default: '' },
        count: { type: 'integer', description: 'Number of memories to return (default 5)', default: 5 },
        type: { type: 'string', description: '"user", "context", or "all"', default: 'all' },
        path: { type: 'string', description: 'Optional memory path to search around' },
        memory_id: { type: 'string', description: 'Optional exact memory ID to read' },
      },
      [],
      async (args, user) => {
        const found = await memories.search(user, { query: optionalStr(args.query), type: memoryType(args.type), path: optionalStr(args.path), memory_id: optionalStr(args.memory_id), limit: count(args.count, 5) });
        return found.map((m) => ({ id: m.id, type: m.type, path: m.path, content: m.content, created_at: day(m.created_at), updated_at: day(m.updated_at) }));
      },
    ),
    builtin(
      'list_memory_paths',
      'List saved memory paths to find existing memory groups before writing or moving memories.',
      {
        query: { type: 'string', description: 'Optional query to filter memory paths or contents', default: '' },
        count: { type: 'integer', description: 'Maximum number of paths to return', default: 100 },
        type: { type: 'string', description: '"user", "context", or "all"', default: 'all' },
      },
      [],
      (args, user) => memories.paths(user, { query: optionalStr(args.query), type: memoryType(args.type), limit: count(args.count, 100) }),
    ),
    builtin(
      'read_memory_path',
      'Read saved memories at a memory path, including nearby parent and child paths.',
      {
        path: { type: 'string', description: 'Memory path to read' },
        count: { type: 'integer', description: 'Maximum number of memories to return', default: 50 },
        type: { type: 'string', description: '"user", "context", or "all"', default: 'all' },
        include_children: { type: 'boolean', description: 'Include memories under child paths', default: true },
      },
      ['path'],
      (args, user) => memories.path(user, { path: str(args.path), type: memoryType(args.type), include_children: args.include_children !== false, limit: count(args.count, 50) }),
    ),
    builtin('list_memories', 'List all stored memories for the user, including IDs and timestamps.', {}, [], async (_args, user) =>
      (await memories.list(user)).map((m) => ({ id: m.id, type: m.type, path: m.path, content: m.content, created_at: day(m.created_at), updated_at: day(m.updated_at) })),
    ),
    builtin(
      'update_memory',
      'Apply a batch of memory changes after learning enduring information.\n\nOperation shapes:\n- {"action": "add", "content": "...", "type": "user"|"context", "path": "..."}\n- {"action": "replace", "id": "...", "content": "...", "type": "user"|"context", "path": "..."}\n- {"action": "move", "id": "...", "path": "..."}\n- {"action": "remove", "id": "..."}',
      { operations: { type: 'array', items: { type: 'object' }, description: 'Memory operations to apply in one request' } },
      ['operations'],
      async (args, user) => ({ results: await memories.applyOperations(user, { operations: Array.isArray(args.operations) ? (args.operations as never) : [], source: 'tool' }) }),
    ),
    builtin(
      'add_memory',
      'Save enduring information that can improve future chats.\n\nSave stable preferences, goals, projects, relationships, habits, and standing instructions.\nDo not save one-off activity, meals, routine daily events, temporary mood, or other short-lived details\nunless the user explicitly asks you to remember them.',
      {
        content: { type: 'string', description: 'The memory content to store' },
        type: { type: 'string', description: 'Use "user" for facts/preferences about the user, or "context" for other durable context', default: 'user' },
        path: { type: 'string', description: 'Optional stable memory address for grouping related memories' },
      },
      ['content'],
      async (args, user) => {
        const memory = await memories.add(user, { content: str(args.content), type: args.type === 'context' ? 'context' : 'user', path: optionalStr(args.path) });
        return { status: 'success', id: memory.id, type: memory.type, path: memory.path };
      },
    ),
    builtin(
      'replace_memory_content',
      'Update an existing saved memory by its ID when its content needs correction.',
      {
        memory_id: { type: 'string', description: 'The ID of the memory to update' },
        content: { type: 'string', description: 'The new content for the memory' },
        type: { type: 'string', description: 'Optional "user" or "context" type for the updated memory' },
        path: { type: 'string', description: 'Optional stable memory address for grouping related memories' },
      },
      ['memory_id', 'content'],
      async (args, user) => {
        const type = args.type === 'user' || args.type === 'context' ? args.type : null;
        const memory = await memories.update(user, str(args.memory_id), { content: str(args.content), type, ...(typeof args.path === 'string' ? { path: args.path } : {}) });
        return { status: 'success', id: memory.id, type: memory.type, path: memory.path, content: memory.content };
      },
    ),
    builtin('delete_memory', 'Delete a saved memory by its ID.', { memory_id: { type: 'string', description: 'The ID of the memory to delete' } }, ['memory_id'], async (args, user) => {
      await memories.delete(user, str(args.memory_id));
      return { status: 'success', message: `Memory ${str(args.memory_id)} deleted` };
    }),
  ];
}

// ---- web ---------------------------------------------------------------------------

function webFunctions(web: WebService, settings: SettingsStore): ChatFunction[] {
  return [
    builtin(
      'search_web',
      'Search the public web for information. Best for current events, external references,\nor topics not covered in internal documents.',
      {
        query: { type: 'string', description: 'The search query to look up' },
        count: { type: 'integer', description: 'Number of results to return (default: admin-configured value)' },
      },
      ['query'],
      async (args) => {
        const configured = settings.get<number | null>('web.search.result_count') ?? 5;
        const limit = args.count === undefined || args.count === null ? configured : Math.max(1, Math.min(wholeNumber(args.count), configured));
        const results = await web.search(str(args.query));
        return results.slice(0, limit).map((r) => ({ title: r.title, link: r.link, snippet: r.snippet }));
      },
    ),
    builtin('fetch_url', 'Fetch and extract the main text content from a web page URL.', { url: { type: 'string', description: 'The URL to fetch content from' } }, ['url'], async (args) => {
      const page = await web.loadOne(str(args.url));
      return page.text;
    }),
  ];
}

// ---- images ------------------------------------------------------------------------------

const IMAGES_SHOWN = 'The image has been successfully generated and is already visible to the user in the chat. You do not need to display or embed the image again - just acknowledge that it has been created.';

/**
 * `generate_image` (image generation on) and `edit_image` (editing on): the images are stored as the
 * user's files and shown on the answer with a `files` event (tools/builtin.py).
 */
function imageFunctions(images: ImagesService): ChatFunction[] {
  const shown = async (extras: ToolCallExtras, made: { url: string }[]) => {
    if (!extras.eventEmitter || made.length === 0) return { status: 'success', images: made };
    await extras.eventEmitter({ type: 'files', data: { files: made.map((image) => ({ type: 'image', url: image.url })) } });
    return { status: 'success', message: IMAGES_SHOWN, images: made };
  };
  const where = (extras: ToolCallExtras) => ({ chat_id: optionalStr(extras.metadata?.chat_id), message_id: optionalStr(extras.metadata?.message_id) });
  const functions: ChatFunction[] = [];
  if (images.generationEnabled) {
    functions.push(
      builtin('generate_image', 'Generate an image based on a text prompt.', { prompt: { type: 'string', description: 'A detailed description of the image to generate' } }, ['prompt'], async (args, user, extras) =>
        shown(extras, await images.generations(user, { prompt: str(args.prompt), n: 1 }, where(extras))),
      ),
    );
  }
  if (images.editEnabled) {
    functions.push(
      builtin(
        'edit_image',
        'Transform one or more existing images according to a text prompt.\nSupports targeted edits such as adding, removing, replacing, inpainting, extending, or compositing image content.',
        {
          prompt: { type: 'string', description: 'A description of the transformation to apply to the provided images' },
          image_urls: { type: 'array', items: { type: 'string' }, description: 'Source image URLs to modify or use as composition inputs' },
        },
        ['prompt', 'image_urls'],
        async (args, user, extras) => {
          const urls = Array.isArray(args.image_urls) ? args.image_urls.filter((url): url is string => typeof url === 'string' && url !== '') : [];
          if (urls.length === 0) throw new Error('image_urls must list at least one image');
          return shown(extras, await images.edits(user, { prompt: str(args.prompt), image: urls.slice(0, MAX_IMAGES) }, where(extras)));
        },
      ),
    );
  }
  return functions;
}

// ---- knowledge -------------------------------------------------------------------------

/** The model's attached knowledge (`meta.knowledge`): its knowledge bases' ids. */
function modelKnowledge(model: Json): string[] | null {
  const items = modelMeta(model).knowledge;
  if (!Array.isArray(items) || items.length === 0) return null;
  return items.filter(isObject).flatMap((item) => (item.type === 'collection' || (item.type === undefined && typeof item.id === 'string') ? [String(item.id)] : []));
}

/**
 * Without attached knowledge the model browses the user's knowledge bases and queries them; with it,
 * it queries only those (get_builtin_tools without ENABLE_KB_EXEC). Attached files and notes, and
 * external knowledge bases, are not searched by the tool.
 */
function knowledgeFunctions(knowledge: KnowledgeService, retrieval: RetrievalService, attached: string[] | null): ChatFunction[] {
  const listed = async (user: UserRecord, query: string, skip: number, limit: number) =>
    (await knowledge.search(user, { query })).items.slice(skip, skip + limit).map((k) => ({ id: k.id, name: k.name, description: k.description || '', file_count: k.file_count, updated_at: k.updated_at }));
  const query = builtin(
    'query_knowledge_files',
    'Search knowledge base files using semantic/vector search. Searches across collections (KBs),\nindividual files, and notes that the user has access to.\nHelpful for internal documentation, uploaded knowledge, and attached model knowledge.',
    {
      query: { type: 'string', description: 'The search query to find semantically relevant content' },
      ...(attached ? {} : { knowledge_ids: { type: 'array', items: { type: 'string' }, description: 'Optional list of KB ids to limit search to specific knowledge bases' } }),
      count: { type: 'integer', description: 'Maximum number of results to return (default: 5)', default: 5 },
    },
    ['query'],
    async (args, user) => {
      const named = Array.isArray(args.knowledge_ids) ? args.knowledge_ids.map(String) : typeof args.knowledge_ids === 'string' && args.knowledge_ids ? [args.knowledge_ids] : [];
      const ids = attached ?? (named.length > 0 ? named : (await knowledge.search(user, {})).items.map((k) => k.id));
      const collections = await knowledge.knowledgeCollectionsFor(user, ids);
      const chunks = await retrieval.query(collections, [str(args.query)], { k: count(args.count, 5) });
      return chunks.slice(0, count(args.count, 5)).map((chunk) => ({
        content: chunk.text,
        source: chunk.metadata.source ?? chunk.metadata.name ?? 'Unknown',
        file_id: chunk.metadata.file_id ?? '',
        distance: chunk.score,
      }));
    },
  );
  if (attached) return [query];
  return [
    builtin(
      'list_knowledge_bases',
      "List the user's accessible knowledge bases so a relevant internal source\ncan be chosen.",
      {
        count: { type: 'integer', description: 'Maximum number of KBs to return (default: 10)', default: 10 },
        skip: { type: 'integer', description: 'Number of results to skip for pagination (default: 0)', default: 0 },
      },
      [],
      (args, user) => listed(user, '', Math.max(0, wholeNumber(args.skip)), count(args.count, 10)),
    ),
    builtin(
      'search_knowledge_bases',
      "Search the user's accessible knowledge bases by name and description to find\na relevant internal source.",
      {
        query: { type: 'string', description: 'The search query to find matching knowledge bases' },
        count: { type: 'integer', description: 'Maximum number of results to return (default: 5)', default: 5 },
        skip: { type: 'integer', description: 'Number of results to skip for pagination (default: 0)', default: 0 },
      },
      ['query'],
      (args, user) => listed(user, str(args.query), Math.max(0, wholeNumber(args.skip)), count(args.count, 5)),
    ),
    query,
  ];
}

// ---- chats -------------------------------------------------------------------------

const timestampFilter = {
  start_timestamp: { type: 'integer', description: 'Only include chats updated after this Unix timestamp (seconds)' },
  end_timestamp: { type: 'integer', description: 'Only include chats updated before this Unix timestamp (seconds)' },
};

function chatFunctions(chats: ChatsService): ChatFunction[] {
  return [
    builtin(
      'search_chats',
      "Search the user's previous chat conversations by title and message content.\nHelpful for finding details from earlier conversations.",
      {
        query: { type: 'string', description: 'The search query to find matching chats' },
        count: { type: 'integer', description: 'Maximum number of results to return (default: 5)', default: 5 },
        ...timestampFilter,
      },
      ['query'],
      async (args, user, extras) => {
        const query = str(args.query);
        const start = wholeNumber(args.start_timestamp);
        const end = wholeNumber(args.end_timestamp);
        const results: Json[] = [];
        for (const chat of await chats.search(user, query)) {
          // The chat being answered is not a previous conversation.
          if (chat.id === extras.metadata?.chat_id) continue;
          if ((start && chat.updated_at < start) || (end && chat.updated_at > end)) continue;
          const snippet = chat.snippet ?? (chat.title.toLowerCase().includes(query.toLowerCase()) ? `Title match: ${chat.title}` : '');
          results.push({ id: chat.id, title: chat.title, snippet, updated_at: chat.updated_at });
          if (results.length >= count(args.count, 5)) break;
        }
        return results;
      },
    ),
    builtin(
      'view_chat',
      'Get the full conversation history of a chat by its ID after a relevant\nprevious chat has been identified.',
      { chat_id: { type: 'string', description: 'The ID of the chat to retrieve' } },
      ['chat_id'],
      async (args, user) => {
        const chat = await chats.own(user, str(args.chat_id)).catch(() => null);
        if (!chat || chat.user_id !== user.id) return { error: 'Chat not found or access denied' };
        const history = isObject(chat.chat.history) ? chat.chat.history : {};
        const branch = messageList((await chats.messages(chat.id)) ?? {}, typeof history.currentId === 'string' ? history.currentId : null);
        return {
          id: chat.id,
          title: chat.title,
          messages: branch.map((m) => ({ role: m.role ?? '', content: contentText(m) })),
          updated_at: chat.updated_at,
          created_at: chat.created_at,
        };
      },
    ),
  ];
}

// ---- notes -------------------------------------------------------------------------

function noteFunctions(notes: NotesService): ChatFunction[] {
  return [
    builtin(
      'search_notes',
      "Search the user's saved notes by title and content.",
      {
        query: { type: 'string', description: 'The search query to find matching notes' },
        count: { type: 'integer', description: 'Maximum number of results to return (default: 5)', default: 5 },
      },
      ['query'],
      async (args, user) => {
        const query = str(args.query);
        const found = await notes.search(user, { query, permission: 'read' });
        const results: Json[] = [];
        for (const item of found.items.slice(0, count(args.count, 5))) {
          const note = await notes.readable(user, item.id);
          if (note) results.push({ id: note.id, title: note.title, snippet: snippet(note.markdown, query), updated_at: item.updated_at });
        }
        return results;
      },
    ),
    builtin('view_note', 'Get the full content of a note by its ID.', { note_id: { type: 'string', description: 'The ID of the note to retrieve' } }, ['note_id'], async (args, user) => {
      const note = await notes.readable(user, str(args.note_id));
      return note ? { id: note.id, title: note.title, content: note.markdown } : { error: 'Note not found' };
    }),
    builtin(
      'write_note',
      'Create a new note with the given title and content.',
      { title: { type: 'string', description: 'The title of the new note' }, content: { type: 'string', description: 'The markdown content for the note' } },
      ['title', 'content'],
      async (args, user) => {
        const note = await notes.create(user, { title: str(args.title), data: { content: { md: str(args.content) } }, access_grants: [] });
        return { status: 'success', id: note.id, title: note.title, created_at: note.created_at };
      },
    ),
    builtin(
      'replace_note_content',
      'Update the markdown content, and optionally the title, of an existing note.',
      {
        note_id: { type: 'string', description: 'The ID of the note to update' },
        content: { type: 'string', description: 'The new markdown content for the note' },
        title: { type: 'string', description: 'Optional new title for the note' },
      },
      ['note_id', 'content'],
      async (args, user) => {
        const current = await notes.readable(user, str(args.note_id));
        if (!current) return { error: 'Note not found' };
        // The notes service refuses (403/404) a caller without write access.
        const note = await notes.update(user, current.id, { title: optionalStr(args.title) ?? current.title, data: { content: { md: str(args.content) } } });
        return { status: 'success', id: note.id, title: note.title, updated_at: note.updated_at };
      },
    ),
  ];
}

/** Up to 150 characters around the first word of the query found in the text (search_notes). */
function snippet(markdown: string, query: string): string {
  const lower = markdown.toLowerCase();
  for (const word of query.toLowerCase().split(/\s+/).filter(Boolean)) {
    const at = lower.indexOf(word);
    if (at < 0) continue;
    const start = Math.max(0, at - 50);
    const end = Math.min(markdown.length, at + word.length + 100);
    return `${start > 0 ? '...' : ''}${markdown.slice(start, end)}${end < markdown.length ? '...' : ''}`;
  }
  return markdown.slice(0, 150) + (markdown.length > 150 ? '...' : '');
}

// ---- time ------------------------------------------------------------------------

/** Python's `isoformat()` of an aware datetime: `2026-01-02T03:04:05.123456+00:00`, in the zone's local time. */
function isoInZone(date: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const local = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  const offsetMinutes = Math.round((local - Math.floor(date.getTime() / 1000) * 1000) / 60000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const micros = String(date.getUTCMilliseconds() * 1000).padStart(6, '0');
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.${micros}${offset}`;
}

/** The user's zone, when it is one the runtime knows. */
function userZone(user: UserRecord): string | null {
  if (!user.timezone) return null;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: user.timezone });
    return user.timezone;
  } catch {
    return null;
  }
}

/** `relativedelta(months=…)`: the same day of an earlier month, clamped to that month's last day. */
function monthsBefore(date: Date, months: number): Date {
  const result = new Date(date);
  const day = result.getUTCDate();
  result.setUTCDate(1);
  result.setUTCMonth(result.getUTCMonth() - months);
  const last = new Date(Date.UTC(result.getUTCFullYear(), result.getUTCMonth() + 1, 0)).getUTCDate();
  result.setUTCDate(Math.min(day, last));
  return result;
}

const wholeNumber = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? Math.trunc(value) : Number.parseInt(String(value ?? 0), 10) || 0);

const currentTimestamp: ChatFunction = {
  source: 'builtin',
  spec: {
    name: 'get_current_timestamp',
    description: 'Get the current Unix timestamp in seconds.',
    parameters: { type: 'object', properties: {} },
  },
  async run(_args, user) {
    const now = new Date();
    const result: Json = { current_timestamp: Math.floor(now.getTime() / 1000), current_iso: isoInZone(now, 'UTC') };
    const zone = userZone(user);
    if (zone) Object.assign(result, { user_local_iso: isoInZone(now, zone), user_timezone: zone });
    return textOutcome(JSON.stringify(result));
  },
};

const calculateTimestamp: ChatFunction = {
  source: 'builtin',
  spec: {
    name: 'calculate_timestamp',
    description:
      'Get the current Unix timestamp, optionally adjusted by days, weeks, months, or years.\nUse this to calculate timestamps for date filtering in search functions.\nExamples: "last week" = weeks_ago=1, "3 days ago" = days_ago=3, "a year ago" = years_ago=1',
    parameters: {
      type: 'object',
      properties: {
        days_ago: { type: 'integer', description: 'Number of days to subtract from current time (default: 0)', default: 0 },
        weeks_ago: { type: 'integer', description: 'Number of weeks to subtract from current time (default: 0)', default: 0 },
        months_ago: { type: 'integer', description: 'Number of months to subtract from current time (default: 0)', default: 0 },
        years_ago: { type: 'integer', description: 'Number of years to subtract from current time (default: 0)', default: 0 },
      },
    },
  },
  async run(args, user) {
    const now = new Date();
    const days = wholeNumber(args.days_ago) + 7 * wholeNumber(args.weeks_ago);
    let adjusted = new Date(now.getTime() - days * 86_400_000);
    const months = wholeNumber(args.months_ago) + 12 * wholeNumber(args.years_ago);
    if (wholeNumber(args.months_ago) > 0 || wholeNumber(args.years_ago) > 0) adjusted = monthsBefore(adjusted, months);
    const result: Json = {
      current_timestamp: Math.floor(now.getTime() / 1000),
      current_iso: isoInZone(now, 'UTC'),
      calculated_timestamp: Math.floor(adjusted.getTime() / 1000),
      calculated_iso: isoInZone(adjusted, 'UTC'),
    };
    const zone = userZone(user);
    if (zone) Object.assign(result, { user_local_iso: isoInZone(now, zone), calculated_local_iso: isoInZone(adjusted, zone), user_timezone: zone });
    return textOutcome(JSON.stringify(result));
  },
};
