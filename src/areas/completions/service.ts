import { randomUUID } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, badRequest, notFound } from '../../core/http/errors.js';
import type { AccessService } from '../../core/access/service.js';
import type { PythonHost } from '../../core/python/host.js';
import type { Realtime } from '../../core/realtime/server.js';
import type { CallContext } from '../../core/upstream/headers.js';
import type { Answer } from '../../core/upstream/service.js';
import { fromLatestSummary } from '../chats/compaction.js';
import { type Json, type Message, contentText, isObject, messageList } from '../chats/history.js';
import type { LimitsService } from '../limits/service.js';
import type { ChatsService } from '../chats/service.js';
import type { CompletionsService } from '../models/completions.js';
import { applyParamsOpenAI } from '../models/params.js';
import type { FilesService } from '../files/service.js';
import type { ModelsService } from '../models/service.js';
import type { TaskHandle } from '../tasks/registry.js';
import type { TasksService } from '../tasks/service.js';
import type { ToolsService } from '../tools/service.js';
import { isSavedChatId, temporarySessionId } from '../chats/ids.js';
import { type ChatAttachments, checkAttachmentList } from './attachments.js';
import { MessageEvents } from '../chats/message-events.js';
import { codeInterpreterFor, withCodeInterpreterPrompt } from './code-interpreter.js';
import { type TagPair, reasoningTags } from './reasoning.js';
import type { PipelineFunctions } from './functions.js';
import type { FunctionRecord } from '../functions/store.js';
import { memoryContext, withoutMemoryContext } from './memory.js';
import type { MemoriesService } from '../memories/service.js';
import type { NotesService } from '../notes/service.js';
import type { KnowledgeService } from '../knowledge/service.js';
import type { RetrievalService } from '../../core/retrieval/service.js';
import { type Completer, DirectConnection, directModel } from './direct.js';
import { type GenerationRequest, type GenerationResult, type GenerationSink, errorText, generate } from './generation.js';
import { type PipelineOptions } from './options.js';
import { type OutputItem, outputText, outputToMessages, sanitizeToolPairs } from './output.js';
import { type Source, sourcesEvent, withSources } from './sources.js';
import { usesBuiltinTools } from './builtin-tools.js';
import type { McpServers } from './mcp.js';
import { chatSkills } from './skills.js';
import type { ToolServers } from './tool-servers.js';
import { chatToolSet } from './tool-set.js';
import type { ChatTools } from './tools.js';
import { addWebSearch } from './web-search.js';
import { generateChatImage } from './image-generation.js';
import type { ImagesService } from '../images/service.js';
import type { WebService } from '../web/service.js';
import type { SkillsService } from '../skills/service.js';
import type { PipelinesService } from '../pipelines/service.js';
import type { UsersService } from '../users/service.js';
import type { TerminalsService } from '../terminals/service.js';

/**
 * `POST /api/chat/completions` (main.chat_completion and utils/middleware.py).
 *
 * Web client mode (the request names a socket `session_id`): the chat is
 * created or extended with the user's message and an empty answer per model,
 * one task per model is registered, and the reply `{status, task_ids, chat_id}`
 * goes out at once. The tasks start once that reply has been written: they
 * rebuild the conversation from the stored history, stream the answer to the
 * user's sockets as `chat:completion` events, save it, then title, tag and
 * suggest follow-ups.
 *
 * API client mode (no `session_id`): an OpenAI Chat Completions answer, JSON or
 * SSE. Without server-side tools it is the provider's own answer, relayed.
 */
export interface RequestInfo {
  token: string | null;
  cookie: string | null;
  userAgent: string | null;
  /** Aborted when the HTTP client goes away (API mode only: web answers outlive their request). */
  signal: AbortSignal;
}

export type PipelineReply =
  | { kind: 'tasks'; body: { status: true; task_ids: string[]; chat_id: string }; start(): void }
  | { kind: 'answer'; answer: Answer }
  | { kind: 'stream'; body: Readable };

/** One answer slot: the model writing it and the assistant message it fills. */
interface Target {
  modelId: string;
  model: Json;
  messageId: string | null;
  modelIdx?: number;
}

/** Everything a generation needs, decided before the reply. */
interface Job {
  user: UserRecord;
  form: Json;
  chatId: string;
  sessionId: string | null;
  folderId: string | null;
  userMessageId: string | null;
  isNewChat: boolean;
  background: Json | null;
  messages: Message[];
  params: Json;
  stream: boolean;
  includeUsage: boolean;
  deltaChunkSize: number;
  /** `params.reasoning_tags` (reasoning.ts): the tags whose text is reasoning, none when off. */
  reasoningTags: TagPair[];
  tools: ChatTools | null;
  /** `function_calling: 'legacy'`: the tools the task model picks from before the answer, its results as sources (the model is offered none). */
  legacyTools: ChatTools | null;
  clientTools: unknown[] | null;
  request: RequestInfo;
  /** The request's web search (`features.web_search`), run once for all its answers. */
  webSearch?: Promise<void>;
  /** The filter functions of the request's model, in order (inlet, stream and outlet run them). */
  filters: FunctionRecord[];
  /** The model of the user's direct connection the chat asked for (direct.ts), answered through their browser. */
  direct: Json | null;
  /** Status descriptions for tool servers that were skipped, shown when the answer starts. */
  toolNotices: string[];
  /** The model has the built-in web search tools, so `features.web_search` runs no search step. */
  searchTools: boolean;
  /** The model has the built-in image tools, so `features.image_generation` runs no image step. */
  imageTools: boolean;
}

/** Fields of the frontend's request that are the pipeline's, never the provider's. */
const PIPELINE_FIELDS = [
  'model_item', 'background_tasks', 'session_id', 'chat_id', 'id', 'parent_id', 'user_message', 'parent_message', 'message_ids',
  'tool_ids', 'tool_servers', 'files', 'features', 'variables', 'params', 'filter_ids', 'skill_ids', 'terminal_id', 'folder_id',
  'chat_variables', 'regeneration_prompt', 'assistant_message_id', 'new_chat', 'metadata',
];

/** Fields a stored message keeps when it is sent to the model again (load_messages_from_db). */
const STORED_FIELDS = ['role', 'content', 'output', 'files'];

const MODEL_NOT_FOUND = 'Model not found';
const text = (value: unknown): string | null => (typeof value === 'string' && value ? value : null);

export class ChatPipeline {
  constructor(
    private readonly core: Core,
    private readonly options: PipelineOptions,
    private readonly deps: {
      models: ModelsService;
      completions: CompletionsService;
      chats: ChatsService;
      tools: ToolsService;
      functions: PipelineFunctions;
      skills: SkillsService;
      access: AccessService;
      toolServers: ToolServers;
      mcpServers: McpServers;
      tasks: TasksService;
      realtime: Realtime;
      python: PythonHost;
      files: FilesService;
      limits: LimitsService;
      memories: MemoriesService;
      notes: NotesService;
      knowledge: KnowledgeService;
      retrieval: RetrievalService;
      attachments: ChatAttachments;
      web: WebService;
      images: ImagesService;

      pipelines: PipelinesService;
      terminals: TerminalsService;
      users: UsersService;
    },
  ) {}

  private get registry() {
    return this.deps.tasks.registry;
  }

  private context(user: UserRecord, request: RequestInfo, signal: AbortSignal, metadata: Json | null = null): CallContext & { signal: AbortSignal } {
    return { user, token: request.token, cookie: request.cookie, userAgent: request.userAgent, signal, metadata };
  }

  async complete(user: UserRecord, body: Json, request: RequestInfo): Promise<PipelineReply> {
    const form = { ...body };
    checkAttachmentList(form.files);
    const modelId = text(form.model) ?? '';
    const lookup = this.context(user, request, request.signal);
    // A model of the user's own direct connection is not the server's to look up or check (main.chat_completion).
    const direct = this.core.settings.get<boolean>('direct.enable') ? directModel(form, modelId) : null;
    const primary = direct ?? (await this.resolveModel(user, modelId, lookup));
    const { params, stream, deltaChunkSize, reasoningTags, functionCalling } = await this.parameters(modelId, form);
    const targets = await this.targets(user, form, primary, lookup);
    // Usage budgets: one request per answer, refused (429) before anything is stored or asked.
    await this.deps.limits.admit(user, targets.length);

    const userMessage = isObject(form.user_message) ? form.user_message : isObject(form.parent_message) ? form.parent_message : null;
    const isNewChat = 'parent_id' in form && form.parent_id === null && !form.chat_id;
    let chatId = text(form.chat_id) ?? '';
    const folderId = text(form.folder_id);
    if (isNewChat) chatId = await this.createChat(user, form, targets, userMessage, folderId);
    else if (isSavedChatId(chatId)) await this.recordTurn(user, chatId, form, targets, userMessage);

    const clientTools = Array.isArray(form.tools) ? form.tools : null;
    const builtins = usesBuiltinTools(text(form.session_id), { function_calling: functionCalling }, primary);
    const conversation = await this.withMemories(user, form, primary, await this.conversation(form, chatId, text(userMessage?.id)));
    const skills = await chatSkills(this.deps.skills, user, form, primary, conversation, builtins, withSystemText);
    const toolSet = clientTools
      ? null
      : await chatToolSet(this.deps, this.core.settings, this.core.log, { user, form, model: primary, token: request.token, cookie: request.cookie, builtins: builtins ? skills.viewable : null });
    const job: Job = {
      user,
      form,
      chatId,
      sessionId: text(form.session_id),
      folderId,
      userMessageId: text(userMessage?.id),
      isNewChat,
      background: isObject(form.background_tasks) ? form.background_tasks : null,
      messages: (toolSet?.systemPrompts ?? []).reduce(withSystemText, skills.messages),
      params,
      stream,
      includeUsage: isObject(form.stream_options) && form.stream_options.include_usage === true,
      deltaChunkSize,
      reasoningTags,
      ...(functionCalling === 'legacy' ? { tools: null, legacyTools: toolSet?.tools ?? null } : { tools: toolSet?.tools ?? null, legacyTools: null }),
      toolNotices: toolSet?.notices ?? [],
      searchTools: toolSet?.searchTools ?? false,
      imageTools: toolSet?.imageTools ?? false,
      clientTools,
      request,
      filters: await this.deps.functions.filters(primary, form.filter_ids),
      direct,
    };
    await this.inlet(job, primary, targets[0]);
    if (job.sessionId && chatId) return this.startTasks(job, targets);
    return this.answer(job, targets[0]);
  }

  /**
   * Inlet filters, the Pipelines servers' first (pipelines/service.ts), then the filter functions
   * (functions.ts): the conversation (and files) they return is what the model receives.
   * One that raises refuses the request; its message is also the answer's error (main.chat_completion).
   */
  private async inlet(job: Job, model: Json, target: Target): Promise<void> {
    const metadata = this.functionMetadata(job, target.messageId, model);
    const live = this.deps.functions.live(job.user.id, job.chatId, target.messageId, job.sessionId);
    try {
      const piped = await this.deps.pipelines.inlet(job.user, { ...job.form, model: model.id, messages: job.messages }, this.context(job.user, job.request, job.request.signal));
      if (piped) {
        const { messages, ...form } = piped;
        if (Array.isArray(messages)) job.messages = messages.filter(isObject) as Message[];
        job.form = { ...form, model: job.form.model };
      }
      if (job.filters.length === 0) return;
      const filtered = await this.deps.functions.inlet(job.filters, job.user, model, { ...job.form, messages: job.messages }, metadata, live);
      job.messages = filtered.messages;
      if (Array.isArray(filtered.files)) job.form.files = filtered.files;
    } catch (error) {
      if (job.chatId && target.messageId) {
        const events = new MessageEvents(this.deps.realtime, this.deps.chats, job.user.id, job.chatId, target.messageId);
        await this.fail(job, target.messageId, events, { output: [], error: errorText(error) });
      }
      throw error;
    }
  }

  /** Outlet filters over a stored answer (functions.ts): their changes are stored and sent as `chat:outlet`. */
  private async outlet(job: Job, model: Json, messageId: string, messages: Message[], result: GenerationResult): Promise<void> {
    const answered = [...messages, { id: messageId, role: 'assistant', content: outputText(result.output) }];
    const live = this.deps.functions.live(job.user.id, job.chatId, messageId, job.sessionId);
    const context = this.context(job.user, job.request, new AbortController().signal);
    const piped = await this.deps.pipelines.appliesTo(String(model.id), context);
    const pipelines = piped ? (data: Json) => this.deps.pipelines.outlet(job.user, data, context) : null;
    await this.deps.functions.outletAnswer(job.filters, job.user, model, this.functionMetadata(job, messageId, model), live, answered, pipelines);
  }

  /** `__metadata__` of the functions run for a message (middleware.py's metadata). */
  private functionMetadata(job: Job, messageId: string | null, model: Json): Json {
    const { form } = job;
    return {
      chat_id: job.chatId, message_id: messageId, session_id: job.sessionId, user_id: job.user.id, filter_ids: form.filter_ids ?? [],
      tool_ids: form.tool_ids ?? null, files: form.files ?? null, features: form.features ?? {}, variables: form.variables ?? {}, model: model.id,
    };
  }

  /** The user's relevant memories in the system message (memory.ts), when the turn asks for them. */
  private async withMemories(user: UserRecord, form: Json, model: Json, messages: Message[]): Promise<Message[]> {
    const context = await memoryContext(this.deps.memories, this.core.settings, user, form, model, messages);
    return context ? withSystemText(withoutMemoryContext(messages), context) : messages;
  }

  // ---- the model -----------------------------------------------------------------

  /**
   * A model the user may use, refused (400 `Model not found`, as the reference)
   * before anything is sent to a provider: it must be in the user's model list,
   * every base model it builds on must be readable, and a provider must serve it.
   */
  private async resolveModel(user: UserRecord, modelId: string, context: CallContext): Promise<Json> {
    const listed = await this.deps.models.visible(user, context);
    const entry = listed.find((e) => e.id === modelId);
    if (!entry) throw badRequest(MODEL_NOT_FOUND);
    if (entry.model.owned_by === 'arena') return entry.model;
    try {
      await this.deps.models.requireUse(user, await this.deps.models.byId(modelId));
      await this.deps.completions.requireServed(modelId, context);
    } catch (error) {
      if (error instanceof HttpError && (error.statusCode === 403 || error.statusCode === 404)) throw badRequest(MODEL_NOT_FOUND);
      throw error;
    }
    return entry.model;
  }

  /** An arena model answers with one of its models (or any other model), picked at random. */
  private async arenaPick(user: UserRecord, arena: Json, context: CallContext): Promise<Json> {
    const meta = isObject(arena.info) && isObject(arena.info.meta) ? arena.info.meta : {};
    const others = (await this.deps.models.visible(user, context)).filter((e) => e.model.owned_by !== 'arena');
    const named = Array.isArray(meta.model_ids) ? meta.model_ids.map(String) : [];
    let pool = others;
    if (named.length > 0) pool = meta.filter_mode === 'exclude' ? others.filter((e) => !named.includes(e.id)) : others.filter((e) => named.includes(e.id));
    if (pool.length === 0) throw badRequest(MODEL_NOT_FOUND);
    return pool[Math.floor(Math.random() * pool.length)].model;
  }

  /**
   * The request's parameters over the model's over the global defaults
   * (`models.default_params`); `stream_response` of the model decides streaming.
   */
  private async parameters(modelId: string, form: Json): Promise<{ params: Json; stream: boolean; deltaChunkSize: number; reasoningTags: TagPair[]; functionCalling: unknown }> {
    const info = await this.deps.models.byId(modelId);
    const defaults = this.core.settings.get<Json | null>('models.default_params') ?? {};
    const modelParams: Json = { ...defaults, ...(info?.params ?? {}) };
    const requestParams = Object.fromEntries(Object.entries(isObject(form.params) ? form.params : {}).filter(([, v]) => v !== null && v !== undefined));
    const merged = { ...modelParams, ...requestParams };
    const stream = typeof modelParams.stream_response === 'boolean' ? modelParams.stream_response : form.stream === true;
    const chunk = Number(modelParams.stream_delta_chunk_size || requestParams.stream_delta_chunk_size || 1);
    return {
      params: applyParamsOpenAI(merged, {}),
      stream,
      deltaChunkSize: Math.max(this.options.streamDeltaChunkSize, Number.isFinite(chunk) ? Math.trunc(chunk) : 1),
      reasoningTags: reasoningTags(merged),
      functionCalling: merged.function_calling,
    };
  }

  /** The answer slots: `message_ids` for several models at once, else the request's model and `id`. */
  private async targets(user: UserRecord, form: Json, primary: Json, context: CallContext): Promise<Target[]> {
    const modelId = String(primary.id);
    let entries: { model_id: string; message_id: string | null; modelIdx?: number }[];
    if (Array.isArray(form.message_ids)) {
      entries = form.message_ids.filter(isObject).map((e) => ({ model_id: String(e.model_id ?? modelId), message_id: text(e.message_id), ...(typeof e.modelIdx === 'number' ? { modelIdx: e.modelIdx } : {}) }));
    } else if (isObject(form.message_ids)) {
      entries = Object.entries(form.message_ids).map(([model, message]) => ({ model_id: model, message_id: text(message) }));
    } else entries = [{ model_id: modelId, message_id: text(form.id) }];
    const targets: Target[] = [];
    for (const entry of entries) {
      const model = entry.model_id === modelId ? primary : await this.resolveModel(user, entry.model_id, context);
      targets.push({ modelId: entry.model_id, model, messageId: entry.message_id, ...(entry.modelIdx !== undefined ? { modelIdx: entry.modelIdx } : {}) });
    }
    return targets.length > 0 ? targets : [{ modelId, model: primary, messageId: null }];
  }

  // ---- the chat record ---------------------------------------------------------------

  private placeholder(target: Target, parentId: string | null): Message {
    return {
      id: target.messageId,
      parentId,
      childrenIds: [],
      role: 'assistant',
      content: '',
      done: false,
      model: target.modelId,
      timestamp: this.core.clock.now(),
      ...(target.modelIdx !== undefined ? { modelIdx: target.modelIdx } : {}),
    };
  }

  private async messageCreated(user: UserRecord, chatId: string, messageId: string, data: Json): Promise<void> {
    await this.core.events.publish({ event: 'message.created', actor: user, subjectId: messageId, subjectType: 'message', data: { chat_id: chatId, ...data } });
  }

  private async userMessageCreated(user: UserRecord, chatId: string, message: Message): Promise<void> {
    await this.messageCreated(user, chatId, String(message.id), { role: message.role ?? 'user', content_preview: contentText(message).slice(0, 300) });
  }

  /** A new chat holding the user's message and an empty answer per model (`New Chat` until titled). */
  private async createChat(user: UserRecord, form: Json, targets: Target[], userMessage: Message | null, folderId: string | null): Promise<string> {
    const userId = text(userMessage?.id);
    const answerIds = targets.flatMap((t) => (t.messageId ? [t.messageId] : []));
    const messages: Record<string, Message> = {};
    if (userId) messages[userId] = { ...userMessage, childrenIds: answerIds };
    for (const target of targets) if (target.messageId) messages[target.messageId] = this.placeholder(target, userId);
    const chat: Json = {
      title: 'New Chat',
      models: targets.map((t) => t.modelId),
      history: { currentId: answerIds[0] ?? userId, messages },
      messages: userId ? [{ role: 'user', content: userMessage!.content ?? '' }] : [],
      files: Array.isArray(form.files) ? form.files : [],
      tags: [],
      timestamp: Date.now(),
    };
    const created = await this.deps.chats.create(user, { chat, folder_id: folderId, variables: isObject(form.chat_variables) ? form.chat_variables : {} });
    if (userId) await this.userMessageCreated(user, created.id, messages[userId]);
    for (const target of targets) if (target.messageId) await this.messageCreated(user, created.id, target.messageId, { role: 'assistant', model: target.modelId });
    return created.id;
  }

  /** The chat owner (or an admin) adds a turn: the user's message under its parent, and an empty answer per model under it. */
  private async recordTurn(user: UserRecord, chatId: string, form: Json, targets: Target[], userMessage: Message | null): Promise<void> {
    const { chats } = this.deps;
    if (!(await chats.managedBy(user, chatId))) throw notFound(ERROR.DEFAULT());
    const models = Array.isArray(userMessage?.models) && userMessage.models.length > 0 ? userMessage.models : targets.map((t) => t.modelId);
    const stored = await chats.own(user, chatId).catch(() => null);
    if (stored && (JSON.stringify(stored.chat.models) !== JSON.stringify(models) || (form.files !== undefined && JSON.stringify(stored.chat.files) !== JSON.stringify(form.files)))) {
      await chats.update(user, chatId, { chat: { models, ...(form.files !== undefined ? { files: form.files } : {}) } });
    }
    const userId = text(userMessage?.id);
    const answerIds = targets.flatMap((t) => (t.messageId ? [t.messageId] : []));
    if (userId && userMessage) {
      const parentId = text(userMessage.parentId);
      if (parentId) {
        const parent = await chats.messageOf(chatId, parentId);
        const children = Array.isArray(parent?.childrenIds) ? (parent.childrenIds as string[]) : [];
        if (parent && Object.keys(parent).length > 0 && !children.includes(userId)) await chats.upsertMessage(chatId, parentId, { childrenIds: [...children, userId] }, { touch: false });
      }
      const existing = await chats.messageOf(chatId, userId);
      const children = Array.isArray(existing?.childrenIds) ? (existing.childrenIds as string[]) : [];
      await chats.upsertMessage(chatId, userId, { ...userMessage, childrenIds: [...new Set([...children, ...answerIds])] });
      await this.userMessageCreated(user, chatId, userMessage);
    }
    for (const target of targets) {
      if (!target.messageId) continue;
      // Without a user message (an API client answering a stored message again) the answer keeps its
      // place in the tree and its timestamp; the result is merged into it when done.
      if (!userId && Object.keys((await chats.messageOf(chatId, target.messageId)) ?? {}).length > 0) continue;
      await chats.upsertMessage(chatId, target.messageId, this.placeholder(target, userId));
      await this.messageCreated(user, chatId, target.messageId, { role: 'assistant', model: target.modelId });
    }
  }

  // ---- the conversation ---------------------------------------------------------------

  /**
   * What the model is sent before its answer. A stored chat's conversation is
   * rebuilt from its history (root to the user's message; the frontend sends
   * only the system prompt), from the last compaction summary on. Earlier
   * answers with tool calls become assistant/tool message pairs again.
   */
  private async conversation(form: Json, chatId: string, userMessageId: string | null): Promise<Message[]> {
    const sent = (Array.isArray(form.messages) ? form.messages.filter(isObject) : []) as Message[];
    let messages = sent;
    let summary: string | null = null;
    if (isSavedChatId(chatId) && userMessageId) {
      const map = (await this.deps.chats.messages(chatId)) ?? {};
      let branch = messageList(map, userMessageId);
      const continued = text(form.assistant_message_id);
      const partial = continued ? map[continued] : undefined;
      if (partial && (partial.content || partial.output)) branch = [...branch, partial];
      if (branch.length > 0) {
        const latest = fromLatestSummary(branch);
        summary = latest.summary;
        const system = sent.find((m) => m.role === 'system');
        messages = [...(system ? [system] : []), ...latest.messages.map(storedMessage)];
      }
    }
    const regeneration = text(form.regeneration_prompt);
    if (regeneration) messages = [...messages, { role: 'user', content: regeneration }];
    let prepared = messages.flatMap((m) => {
      if (m.role === 'assistant' && Array.isArray(m.output) && m.output.length > 0) {
        const converted = outputToMessages(m.output);
        if (converted.length > 0) return converted;
      }
      const { output: _output, contextSummary: _summary, context_summary: _s, usage: _usage, id: _id, ...clean } = m;
      return [clean];
    });
    if (summary) prepared = withSystemText(prepared, `[CONVERSATION SUMMARY]\n${summary}`);
    return sanitizeToolPairs(prepared);
  }

  // ---- web client mode ---------------------------------------------------------------

  /**
   * Registers one task per answer slot and returns the reply; `start` (called
   * once the reply is written) lets the tasks run, so no event can reach the
   * browser before it knows the chat id.
   */
  private async startTasks(job: Job, targets: Target[]): Promise<PipelineReply> {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const taskIds: string[] = [];
    for (const [index, target] of targets.entries()) {
      if (!target.messageId) continue;
      taskIds.push(await this.registry.create(job.chatId, (task) => this.runAnswer(task, job, target, index, gate)));
    }
    let started = false;
    return {
      kind: 'tasks',
      body: { status: true, task_ids: taskIds, chat_id: job.chatId },
      start: () => {
        if (started) return;
        started = true;
        const first = targets.find((t) => t.messageId);
        if (first && taskIds.length > 0) {
          const events = new MessageEvents(this.deps.realtime, this.deps.chats, job.user.id, job.chatId, first.messageId!);
          if (isSavedChatId(job.chatId)) events.send('chat:list', { chat_id: job.chatId, folder_id: job.folderId });
          events.send('chat:active', { active: true, folder_id: job.folderId });
        }
        open();
      },
    };
  }

  private async runAnswer(task: TaskHandle, job: Job, target: Target, index: number, gate: Promise<void>): Promise<void> {
    await gate;
    const { chats, realtime } = this.deps;
    const messageId = target.messageId!;
    const events = new MessageEvents(realtime, chats, job.user.id, job.chatId, messageId);
    const saved = isSavedChatId(job.chatId);
    // `files`: what a pipe answering the message reads as `__files__`.
    const metadata: Json = { chat_id: job.chatId, message_id: messageId, session_id: job.sessionId, user_id: job.user.id, task_id: task.id, files: job.form.files ?? [] };
    const context = this.context(job.user, job.request, task.signal, metadata);
    // Titles, tags and follow-ups are not cut short by a stop.
    const taskContext = { ...context, signal: new AbortController().signal };
    const wantsTitle = index === 0 && job.background !== null && 'title_generation' in job.background;
    const title = wantsTitle && job.isNewChat ? this.titleChat(job, messageId, taskContext) : null;
    // Generated while the answer streams, announced once it has ended (when the reference sends it): an
    // event this early can reach the browser before the reply that tells it the new chat's id, and is dropped.
    let announced: Promise<void> | null = null;
    const announceTitle = () =>
      (announced ??= (async () => {
        const text = await title;
        if (text) events.send('chat:title', text);
      })());
    try {
      const model = target.model.owned_by === 'arena' ? await this.arenaPick(job.user, target.model, context) : target.model;
      if (model !== target.model) {
        events.send('chat:completion', { selected_model_id: model.id });
        if (saved) await chats.upsertMessage(job.chatId, messageId, { selectedModelId: model.id }, { touch: false });
      }
      for (const description of job.toolNotices) await events.status({ description, done: true });
      await this.webSearch(job, model, context, events);
      const { messages } = await this.attach(await this.withImage(job, model, messageId, context, events), model, messageId, context, events);
      const sink = webSink(events, job.deltaChunkSize);
      const result = await generate(this.completer(job, model), await this.generationRequest(job, target, model, messages, events, context), sink);
      sink.flush();
      if (result.cancelled) {
        events.send('chat:tasks:cancel');
        if (saved) await chats.upsertMessage(job.chatId, messageId, { done: true, output: result.output });
        void announceTitle();
        return;
      }
      if (result.error !== null) {
        await this.fail(job, messageId, events, result);
        await announceTitle();
        return;
      }
      const done: Json = { done: true, output: result.output, ...(result.usage ? { usage: result.usage } : {}) };
      const stored = saved ? await chats.upsertMessage(job.chatId, messageId, done) : null;
      events.send('chat:completion', { ...done, title: stored?.title ?? '' });
      if (saved) void this.noticeAway(job.user, job.chatId, result.output, stored?.title ?? '');
      await this.outlet(job, model, messageId, messages, result);
      if (saved) events.send('chat:list', { chat_id: job.chatId, folder_id: stored?.folder_id ?? job.folderId });
      await announceTitle();
      await this.afterAnswer(job, target, index, messageId, events, taskContext, wantsTitle && !job.isNewChat);
    } catch (error) {
      if (task.signal.aborted) events.send('chat:tasks:cancel');
      else await this.fail(job, messageId, events, { output: [], error: errorText(error) });
      void announceTitle();
    } finally {
      await task.release();
      if (!(await this.registry.hasActive(job.chatId))) events.send('chat:active', { active: false, folder_id: job.folderId });
    }
  }

  /**
   * The reference's notice of a finished answer to the user's own webhook, when they were away
   * meanwhile (not active for 3 minutes: an automation's run, a long answer): the answer, then the
   * chat's title and link (user-webhooks.ts).
   */
  private async noticeAway(user: UserRecord, chatId: string, output: OutputItem[], title: string): Promise<void> {
    const { userWebhooks } = this.core;
    if (!userWebhooks.urlOf(user)) return;
    try {
      const now = await this.deps.users.byId(user.id);
      if (!now || this.deps.users.isActive(now)) return;
      const content = outputText(output);
      const url = `${this.core.settings.get<string>('webui.url')}/c/${chatId}`;
      await userWebhooks.notify(now, { message: `${content}\n\n${title} - ${url}`, data: { action: 'chat', message: content, title, url } });
    } catch (err) {
      this.core.log.warn({ err, chat: chatId }, 'the notice of an answer could not be sent');
    }
  }

  /** Who answers for a model: the user's browser for their direct connection's model, else the server's providers. */
  private completer(job: Job, model: Json): Completer {
    return job.direct && model.id === job.direct.id ? new DirectConnection(this.deps.realtime, job.direct, job.sessionId) : this.deps.completions;
  }

  /** `features.web_search` (web-search.ts): the search's pages join the request's files before the answer is asked for. */
  private webSearch(job: Job, model: Json, context: CallContext, events: MessageEvents | null): Promise<void> {
    if (!isObject(job.form.features) || !job.form.features.web_search || job.searchTools) return Promise.resolve();
    return (job.webSearch ??= (async () => {
      const files = Array.isArray(job.form.files) ? job.form.files.filter(isObject) : [];
      const status = events ? (data: Json) => events.fromTool({ type: 'status', data }) : null;
      await addWebSearch(this.deps, { user: job.user, modelId: String(model.id), messages: job.messages, chatId: job.chatId, context, files, status });
      job.form.files = files;
    })());
  }

  /** `features.image_generation` (image-generation.ts): the answer's image, and what the model is told of it in the system message. */
  private async withImage(job: Job, model: Json, messageId: string | null, context: CallContext, events: MessageEvents | null): Promise<Job> {
    if (!isObject(job.form.features) || !job.form.features.image_generation || job.imageTools || !events || !messageId) return job;
    const step = { user: job.user, modelId: String(model.id), messages: job.messages, chatId: job.chatId, messageId, context, emit: (event: Json) => events.fromTool(event) };
    return { ...job, messages: withSystemText(job.messages, await generateChatImage(this.deps, step)) };
  }

  /** A failed answer keeps what was written so far, with the error beside it. */
  private async fail(job: Job, messageId: string, events: MessageEvents, result: Pick<GenerationResult, 'output' | 'error'>): Promise<void> {
    const error = { content: result.error };
    if (isSavedChatId(job.chatId)) {
      const partial = outputText(result.output) ? { output: result.output } : {};
      const placed = job.userMessageId ? { parentId: job.userMessageId } : {};
      await this.deps.chats.upsertMessage(job.chatId, messageId, { ...placed, error, done: true, ...partial });
    }
    events.send('chat:message:error', { error });
    events.send('chat:tasks:cancel');
  }

  /**
   * The conversation with the request's attachments applied (attachments.ts); their
   * sources go to the answer's viewers and into the stored answer before it is written.
   */
  private async attach(job: Job, model: Json, messageId: string | null, context: CallContext & { signal: AbortSignal }, events: MessageEvents | null): Promise<{ messages: Message[]; sources: Source[] }> {
    const prepared = await this.deps.attachments.prepare({
      user: job.user,
      model,
      items: job.form.files,
      messages: job.messages,
      chatId: job.chatId,
      context,
      status: events ? (data) => events.status(data) : null,
      toolSources: job.legacyTools ? await this.legacyToolSources(job, job.legacyTools, model, messageId, context, events) : [],
    });
    if (events && prepared.sources.length > 0) {
      events.send('chat:completion', { sources: prepared.sources });
      if (isSavedChatId(job.chatId)) await this.deps.chats.upsertMessage(job.chatId, events.messageId, { sources: prepared.sources }, { touch: false });
    }
    return prepared;
  }

  /**
   * `function_calling: 'legacy'` (middleware.py chat_completion_tools_handler): the task model
   * picks tools from their specs (tasks `toolChoice`), each picked one runs with only the
   * parameters its spec names, and each result becomes a source (`<tool id>/<function>`,
   * `tool_result: true`) that the RAG template puts before the model with the files' and shows as
   * a citation. Files and embeds a tool returns are shown as in native calling.
   */
  private async legacyToolSources(job: Job, tools: ChatTools, model: Json, messageId: string | null, context: CallContext & { signal: AbortSignal }, events: MessageEvents | null): Promise<Source[]> {
    const calls = await this.deps.tasks.toolChoice(job.user, String(model.id), job.messages, tools.functionSpecs(), context);
    const extras = this.toolExtras(job, model, messageId, events, context)(job.messages);
    const sources: Source[] = [];
    for (const call of calls) {
      const source = tools.sourceOf(call.name);
      if (source === null) continue;
      const parameters = tools.allowedArguments(call.name, call.parameters);
      const outcome = await tools.call(job.user, call.name, JSON.stringify(parameters), extras);
      if (events && outcome.files.length > 0) events.fromTool({ type: 'files', data: { files: outcome.files } });
      if (events && outcome.embeds.length > 0) events.fromTool({ type: 'embeds', data: { embeds: outcome.embeds } });
      if (!outcome.text) continue;
      const name = source && !source.startsWith('server:') && source !== 'builtin' ? `${source}/${call.name}` : call.name;
      sources.push({ source: { name }, document: [outcome.text], metadata: [{ source: name, parameters }], tool_result: true });
    }
    return sources;
  }

  /** `__event_call__` of an answer with a browser: an event to the chat's socket, answered by it. */
  private eventCaller(job: Job, messageId: string | null, events: MessageEvents | null): ((event: unknown) => Promise<unknown>) | undefined {
    const { user, sessionId, chatId } = job;
    if (!events || !sessionId) return undefined;
    return (event) => this.deps.realtime.callSession(sessionId, user.id, 'events', { chat_id: chatId, message_id: messageId, data: event });
  }

  /** What a tool call receives besides its arguments: the chat's ids, the event emitter and caller, the reference's `__…__` extras. */
  private toolExtras(job: Job, model: Json, messageId: string | null, events: MessageEvents | null, context: CallContext & { signal: AbortSignal }): GenerationRequest['toolExtras'] {
    const { user, sessionId, chatId, form } = job;
    const eventCall = this.eventCaller(job, messageId, events);
    return (messages) => ({
      metadata: {
        chat_id: chatId,
        message_id: messageId,
        session_id: sessionId,
        user_id: user.id,
        tool_ids: form.tool_ids ?? null,
        files: form.files ?? null,
        features: form.features ?? {},
        variables: form.variables ?? {},
        model: model.id,
      },
      eventEmitter: events ? (event) => events.fromTool(event) : undefined,
      eventCall,
      signal: context.signal,
      extras: { __messages__: messages, __files__: form.files ?? [], __chat_id__: chatId || null, __message_id__: messageId, __model__: model },
    });
  }

  private async generationRequest(
    job: Job,
    target: Target,
    model: Json,
    messages: Message[],
    events: MessageEvents | null,
    context: CallContext & { signal: AbortSignal },
  ): Promise<GenerationRequest> {
    const { user, sessionId, chatId, form } = job;
    const messageId = target.messageId;
    const eventCall = this.eventCaller(job, messageId, events);
    // `features.code_interpreter` (code-interpreter.ts): its prompt joins the last user message, its blocks are run.
    const { settings } = this.core;
    const { access, python, files } = this.deps;
    const code = await codeInterpreterFor(
      { settings, access, python, files, blockedModules: this.options.codeInterpreterBlockedModules },
      { user, form, model, chatId, messageId, eventCall: eventCall ?? null, sessionId, signal: context.signal },
    );
    const live = this.deps.functions.live(user.id, chatId, messageId, sessionId);
    return {
      filterChunk: this.deps.functions.streamFilter(job.filters, user, model, this.functionMetadata(job, messageId, model), live),
      user,
      model: String(model.id),
      messages: code ? withCodeInterpreterPrompt(messages, code.prompt) : messages,
      tags: { reasoningTags: job.reasoningTags, codeInterpreter: code?.interpreter ?? null },
      params: job.params,
      stream: job.stream,
      includeUsage: job.includeUsage || modelReportsUsage(model),
      tools: job.tools,
      clientTools: job.clientTools,
      maxToolRounds: this.options.maxToolCallRounds,
      context,
      toolExtras: this.toolExtras(job, model, messageId, events, context),
    };
  }

  /** The messages the task prompts read: the stored branch up to the answer, without folded details and images. */
  private async taskMessages(job: Job, messageId: string): Promise<Message[]> {
    const map = isSavedChatId(job.chatId) ? await this.deps.chats.messages(job.chatId) : null;
    const list = map ? messageList(map, messageId) : job.messages;
    return list.map((m) => ({
      role: m.role ?? 'assistant',
      content: contentText(m)
        .replace(/<details\b[^>]*>[\s\S]*?<\/details>|!\[.*?\]\(.*?\)/gi, '')
        .trim(),
    }));
  }

  /** Titles a stored chat: the task model's title, else the first message. Answers the title stored, if any. */
  private async titleChat(job: Job, messageId: string, context: CallContext): Promise<string | null> {
    if (!isSavedChatId(job.chatId)) return null;
    const messages = await this.taskMessages(job, messageId);
    const modelId = String(job.form.model);
    let title = job.background?.title_generation ? await this.deps.tasks.chatTitle(job.user, modelId, messages, job.chatId, context) : null;
    if (!title && (job.background?.title_generation || messages.length <= 2)) title = text(messages[0]?.content);
    if (!title) return null;
    await this.deps.chats.setTitle(job.chatId, title);
    return title;
  }

  /** Follow-ups for every answer; title (if not done yet) and tags for the first model's. */
  private async afterAnswer(job: Job, target: Target, index: number, messageId: string, events: MessageEvents, context: CallContext, title: boolean): Promise<void> {
    const tasks = job.background;
    if (!tasks) return;
    const messages = await this.taskMessages(job, messageId);
    const saved = isSavedChatId(job.chatId);
    if (tasks.follow_up_generation) {
      const followUps = await this.deps.tasks.followUps(job.user, target.modelId, messages, job.chatId, context);
      if (followUps) {
        events.send('chat:message:follow_ups', { follow_ups: followUps });
        if (saved) await this.deps.chats.upsertMessage(job.chatId, messageId, { followUps }, { touch: false });
      }
    }
    if (!saved || index !== 0) return;
    const titled = title ? await this.titleChat(job, messageId, context) : null;
    if (titled) events.send('chat:title', titled);
    if (tasks.tags_generation) {
      const tags = await this.deps.tasks.chatTags(job.user, target.modelId, messages, job.chatId, context);
      if (tags) {
        await this.deps.chats.setTags(job.user, job.chatId, tags);
        events.send('chat:tags', tags);
      }
    }
  }

  // ---- the other chat routes ---------------------------------------------------------

  /** Temporary chats have no owner to check; channel threads are not served here; other chats are their owner's (or an admin's). */
  private async requireChatAccess(user: UserRecord, chatId: unknown): Promise<void> {
    if (typeof chatId !== 'string' || !chatId || temporarySessionId(chatId) !== null) return;
    if (chatId.startsWith('channel:')) throw badRequest('Channel chats are not supported on this endpoint');
    if (!isAdmin(user) && !(await this.deps.chats.managedBy(user, chatId))) throw notFound(ERROR.DEFAULT());
  }

  /**
   * `POST /api/chat/completed` (deprecated: outlet filters run inside the
   * completion now, but API clients still call it): the request, without its
   * `model_item`, through the model's outlet filters.
   */
  async completed(user: UserRecord, body: Json, request: RequestInfo): Promise<Json> {
    await this.requireChatAccess(user, body.chat_id);
    const { model_item: _modelItem, ...data } = body;
    if (!text(data.id)) throw badRequest('Missing message id');
    const model = await this.modelOfMessage(user, body, request);
    const filters = await this.deps.functions.filters(model, data.filter_ids);
    // The Pipelines servers' outlet filters first, as chat_completed does; their refusal is the answer.
    const piped = await this.deps.pipelines.outlet(user, data, this.context(user, request, request.signal));
    return this.deps.functions.completed(filters, user, model, piped ?? data);
  }

  /** `POST /api/chat/actions/{id}` (`id` or `id.sub_action`): runs the action function on the message. */
  async action(user: UserRecord, actionId: string, body: Json, request: RequestInfo): Promise<unknown> {
    await this.requireChatAccess(user, body.chat_id);
    const { model_item: _modelItem, ...data } = body;
    return this.deps.functions.action(user, actionId, data, await this.modelOfMessage(user, body, request));
  }

  /** The model a finished message names: the user's direct connection's (its `model_item`), or one they may see. */
  private async modelOfMessage(user: UserRecord, body: Json, request: RequestInfo): Promise<Json> {
    const modelId = String(body.model ?? '');
    const direct = this.core.settings.get<boolean>('direct.enable') ? directModel(body, modelId) : null;
    if (direct) return direct;
    const listed = await this.deps.models.visible(user, this.context(user, request, request.signal));
    const model = listed.find((e) => e.id === modelId)?.model;
    if (!model) throw badRequest(MODEL_NOT_FOUND);
    return model;
  }

  // ---- API client mode ---------------------------------------------------------------

  /**
   * An OpenAI answer. Plain requests are relayed as the provider answered;
   * with server-side tools, or for a stored chat's message, the pipeline runs
   * the rounds itself and answers with what the model finally said.
   */
  private async answer(job: Job, target: Target): Promise<PipelineReply> {
    const context = this.context(job.user, job.request, job.request.signal, { chat_id: job.chatId, message_id: target.messageId });
    const model = target.model.owned_by === 'arena' ? await this.arenaPick(job.user, target.model, context) : target.model;
    const storedAnswer = isSavedChatId(job.chatId) && target.messageId !== null;
    const events = storedAnswer ? new MessageEvents(this.deps.realtime, this.deps.chats, job.user.id, job.chatId, target.messageId!) : null;
    for (const description of events ? job.toolNotices : []) await events!.status({ description, done: true });
    await this.webSearch(job, model, context, events);
    const { messages, sources } = await this.attach(await this.withImage(job, model, target.messageId, context, events), model, target.messageId, context, events);
    // Relayed as the provider answered unless something must read the answer: tools, a stored message, stream filters.
    if (!job.tools && !storedAnswer && !this.deps.functions.filtersStream(job.filters)) {
      const passthrough = Object.fromEntries(Object.entries(job.form).filter(([key]) => !PIPELINE_FIELDS.includes(key)));
      const payload = { ...passthrough, ...job.params, model: model.id, messages, stream: job.stream };
      try {
        return { kind: 'answer', answer: withSources(await this.completer(job, model).complete(job.user, payload, context, { bypassAccess: true }), sources) };
      } catch (error) {
        if (error instanceof HttpError && error.statusCode >= 500) throw error;
        throw badRequest(errorText(error));
      }
    }
    const request = await this.generationRequest(job, target, model, messages, events, context);
    const save = async (result: GenerationResult) => {
      if (!storedAnswer) return;
      if (result.error !== null) await this.fail(job, target.messageId!, events!, result);
      else {
        const stored = await this.deps.chats.upsertMessage(job.chatId, target.messageId!, { done: true, role: 'assistant', output: result.output, ...(result.usage ? { usage: result.usage } : {}) });
        void this.noticeAway(job.user, job.chatId, result.output, stored?.title ?? '');
        await this.outlet(job, model, target.messageId!, messages, result);
      }
    };
    if (!job.stream) {
      const result = await generate(this.completer(job, model), request, { progress() {} });
      await save(result);
      if (result.error !== null) throw badRequest(result.error);
      return { kind: 'answer', answer: withSources({ kind: 'json', status: 200, body: completionBody(String(model.id), result) }, sources) };
    }
    if (events) {
      // As the reference (middleware.py): a streamed answer to a stored message without a socket session
      // returns `null` once the answer is stored; the owner's sockets follow it as `chat:completion` events.
      const sink = webSink(events, job.deltaChunkSize);
      const result = await generate(this.completer(job, model), request, sink);
      sink.flush();
      await save(result);
      if (result.error === null) events.send('chat:completion', { done: true, output: result.output, ...(result.usage ? { usage: result.usage } : {}) });
      return { kind: 'answer', answer: { kind: 'json', status: 200, body: null } };
    }
    const out = new PassThrough();
    if (sources.length > 0) out.write(sourcesEvent(sources));
    const chunks = new ChunkWriter(out, String(model.id));
    void generate(this.completer(job, model), request, { progress() {}, text: (delta) => chunks.text(delta), reasoning: (delta) => chunks.reasoning(delta) })
      .then((result) => chunks.end(result, request.includeUsage))
      .catch((error: unknown) => chunks.end({ output: [], usage: null, error: errorText(error), cancelled: false, finishReason: null }, false));
    return { kind: 'stream', body: out };
  }
}

/** The fields of a stored message the model sees again, its files' images as image parts. */
function storedMessage(message: Message): Message {
  const kept: Message = Object.fromEntries(Object.entries(message).filter(([key]) => STORED_FIELDS.includes(key)));
  const files = Array.isArray(kept.files) ? kept.files.filter(isObject) : [];
  delete kept.files;
  const images = files.filter((f) => (f.type === 'image' || String(f.content_type ?? '').startsWith('image/')) && typeof f.url === 'string');
  if (kept.role === 'user' && images.length > 0 && typeof kept.content === 'string') {
    kept.content = [{ type: 'text', text: kept.content }, ...images.map((f) => ({ type: 'image_url', image_url: { url: f.url } }))];
  }
  return kept;
}

/** Adds text to the system message (after its content), or starts the conversation with one. */
function withSystemText(messages: Message[], extra: string): Message[] {
  const index = messages.findIndex((m) => m.role === 'system');
  if (index < 0) return [{ role: 'system', content: extra }, ...messages];
  const system = messages[index];
  const copy = [...messages];
  copy[index] = { ...system, content: `${contentText(system)}\n${extra}` };
  return copy;
}

function modelReportsUsage(model: Json): boolean {
  const info = isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {};
  return isObject(info.capabilities) && info.capabilities.usage === true;
}

/**
 * `chat:completion` events for the answer so far: every `deltaChunkSize`-th
 * change (default every change, as the reference), each with the whole output,
 * so a lost event heals with the next one.
 */
function webSink(events: MessageEvents, deltaChunkSize: number): GenerationSink & { flush(): void } {
  let pending: OutputItem[] | null = null;
  let count = 0;
  const flush = () => {
    if (pending) events.send('chat:completion', { output: pending });
    pending = null;
    count = 0;
  };
  return {
    progress(output) {
      pending = output;
      if (++count >= deltaChunkSize) flush();
    },
    usage(usage) {
      flush();
      events.send('chat:completion', { usage });
    },
    flush,
  };
}

/** A whole answer as a Chat Completions response. */
function completionBody(model: string, result: GenerationResult): Json {
  return {
    id: `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: outputText(result.output), ...reasoningOf(result.output) }, finish_reason: result.finishReason ?? 'stop' }],
    ...(result.usage ? { usage: result.usage } : {}),
  };
}

/** The answer's reasoning as the `reasoning_content` of a whole answer (none: nothing). */
function reasoningOf(output: OutputItem[]): Json {
  const text = output
    .filter((item) => item.type === 'reasoning' && Array.isArray(item.content))
    .map((item) => (item.content as Json[]).map((part) => String(part.text ?? '')).join(''))
    .join('\n');
  return text ? { reasoning_content: text } : {};
}

/** An answer written as Chat Completions chunks, text as it arrives, as SDK clients read them. */
class ChunkWriter {
  private readonly id = `chatcmpl-${randomUUID()}`;
  private readonly created = Math.floor(Date.now() / 1000);
  private started = false;

  constructor(
    private readonly out: PassThrough,
    private readonly model: string,
  ) {}

  private write(value: unknown): void {
    if (!this.out.destroyed) this.out.write(`data: ${JSON.stringify(value)}\n\n`);
  }

  private chunk(delta: Json, finishReason: string | null = null, extra: Json = {}): Json {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra };
  }

  text(delta: string): void {
    this.write(this.chunk(this.started ? { content: delta } : { role: 'assistant', content: delta }));
    this.started = true;
  }

  /** Reasoning (upstream or from tags) as `reasoning_content` deltas, never as content. */
  reasoning(delta: string): void {
    this.write(this.chunk(this.started ? { reasoning_content: delta } : { role: 'assistant', reasoning_content: delta }));
    this.started = true;
  }

  end(result: GenerationResult, includeUsage: boolean): void {
    if (this.out.destroyed) return;
    if (result.error !== null) this.write({ error: { message: result.error, type: 'upstream_error' } });
    else {
      this.write(this.chunk({}, result.finishReason && result.finishReason !== 'tool_calls' ? result.finishReason : 'stop'));
      if (includeUsage && result.usage) this.write({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: result.usage });
    }
    this.out.end('data: [DONE]\n\n');
  }
}
