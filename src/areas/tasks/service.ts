import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, badRequest, notFound } from '../../core/http/errors.js';
import type { Realtime } from '../../core/realtime/server.js';
import type { CallContext } from '../../core/upstream/headers.js';
import { type Answer, UPSTREAM_ERROR } from '../../core/upstream/service.js';
import { type Json, type Message, isObject } from '../chats/history.js';
import type { ChatsService } from '../chats/service.js';
import { temporarySessionId } from '../chats/ids.js';
import type { PipelinesService } from '../pipelines/service.js';
import type { CompletionsService } from '../models/completions.js';
import type { ModelsService } from '../models/service.js';
import type { StopResult, TaskRegistry } from './registry.js';
import { TASK_SETTINGS, type TaskConfig } from './settings.js';
import { DEFAULT_TEMPLATES, autocompletePrompt, conversationPrompt, emojiPrompt, moaPrompt, toolChoiceMessages } from './templates.js';

/**
 * Background tasks (`/api/v1/tasks`, routers/tasks.py): short completions that
 * title a chat, tag it, suggest follow-ups, write search queries, autocomplete
 * the prompt, pick an emoji, describe an image or merge several answers. They
 * run on the task model (TASK_MODEL for local models, TASK_MODEL_EXTERNAL for
 * the others, when set and available) and answer in OpenAI's format. The chat
 * pipeline uses the same calls for its titles, tags and follow-ups.
 */
export type TaskKind = 'title' | 'follow_up' | 'tags' | 'image_prompt' | 'queries' | 'auto' | 'emoji' | 'moa';

/** The reference's task names (constants.TASKS): what a pipe reads as `__task__`. */
const TASK_NAMES: Record<TaskKind, string> = {
  title: 'title_generation',
  follow_up: 'follow_up_generation',
  tags: 'tags_generation',
  image_prompt: 'image_prompt_generation',
  queries: 'query_generation',
  auto: 'autocomplete_generation',
  emoji: 'emoji_generation',
  moa: 'moa_response_generation',
};

const CONFIG_FIELDS = Object.keys(TASK_SETTINGS) as (keyof typeof TASK_SETTINGS)[];

/** How a failed provider call is answered, per route (the reference's catch-alls). */
const FAILURE: Record<TaskKind, { status: number; detail: 'internal' | 'message' }> = {
  title: { status: 400, detail: 'internal' },
  follow_up: { status: 400, detail: 'internal' },
  tags: { status: 500, detail: 'internal' },
  image_prompt: { status: 400, detail: 'internal' },
  queries: { status: 400, detail: 'message' },
  auto: { status: 500, detail: 'internal' },
  emoji: { status: 400, detail: 'message' },
  moa: { status: 400, detail: 'message' },
};

/** The `{...}` of a task model's answer (which may wrap it in prose or fences), parsed; null when there is none. */
/** The text of a one-choice Chat Completions answer (its reasoning when it has no content); null for anything else. */
function answerText(body: unknown): string | null {
  if (!isObject(body) || !Array.isArray(body.choices) || body.choices.length !== 1) return null;
  const message = isObject(body.choices[0]) && isObject(body.choices[0].message) ? body.choices[0].message : {};
  return String(message.content || message.reasoning_content || '');
}

export function answerJson(body: unknown): Json | null {
  const text = answerText(body);
  if (text === null) return null;
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end < start) return null;
  try {
    const parsed = JSON.parse(text.slice(start, end + 1)) as unknown;
    return isObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

const strings = (value: unknown): string[] | null => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : null);

export class TasksService {
  constructor(
    private readonly core: Core,
    private readonly models: ModelsService,
    private readonly completions: CompletionsService,
    private readonly chats: ChatsService,
    private readonly realtime: Realtime,
    readonly registry: TaskRegistry,
    private readonly pipelines: PipelinesService,
  ) {}

  // ---- running generations (/api/tasks) ------------------------------------------

  /** A temporary chat is its socket's user's; a stored chat its owner's; admins see all. */
  private async mayWatch(user: UserRecord, chatId: string): Promise<boolean> {
    const sessionId = temporarySessionId(chatId);
    if (sessionId !== null) return isAdmin(user) || (await this.realtime.sessionOwner(sessionId)) === user.id;
    return this.chats.managedBy(user, chatId);
  }

  /** `GET /api/tasks/chat/{id}`: the chat's running tasks (none for a chat the user may not see). */
  async ofChat(user: UserRecord, chatId: string): Promise<{ task_ids: string[] }> {
    if (!(await this.mayWatch(user, chatId))) return { task_ids: [] };
    return { task_ids: await this.registry.listByItem(chatId) };
  }

  /** `POST /api/tasks/chat/{id}/stop`. */
  async stopChat(user: UserRecord, chatId: string): Promise<StopResult> {
    if (!(await this.mayWatch(user, chatId))) throw notFound(ERROR.NOT_FOUND);
    return this.registry.stopItem(chatId);
  }

  private setting<K extends keyof typeof TASK_SETTINGS>(field: K): TaskConfig[K] {
    return this.core.settings.get<TaskConfig[K]>(TASK_SETTINGS[field].key);
  }

  /** `GET /config`. */
  config(): TaskConfig {
    return Object.fromEntries(CONFIG_FIELDS.map((field) => [field, this.setting(field)])) as TaskConfig;
  }

  /** `POST /config/update` (admin): every field of the form is stored. */
  async updateConfig(form: TaskConfig): Promise<TaskConfig> {
    await this.core.settings.set(Object.fromEntries(CONFIG_FIELDS.map((field) => [TASK_SETTINGS[field].key, form[field]])), this.core.clock.now());
    return this.config();
  }

  /** The models the user may use, by id. */
  private async available(user: UserRecord, context: CallContext): Promise<Map<string, Json>> {
    return new Map((await this.models.visible(user, context)).map((entry) => [entry.id, entry.model]));
  }

  /** TASK_MODEL for a local (Ollama) model, TASK_MODEL_EXTERNAL for others, when set and available; else the chat's model. */
  private taskModel(modelId: string, models: Map<string, Json>): Json {
    const local = models.get(modelId)?.connection_type === 'local';
    const configured = local ? this.setting('TASK_MODEL') : this.setting('TASK_MODEL_EXTERNAL');
    return (configured && models.get(configured)) || models.get(modelId)!;
  }

  private template(field: 'TITLE_GENERATION_PROMPT_TEMPLATE' | 'TAGS_GENERATION_PROMPT_TEMPLATE' | 'FOLLOW_UP_GENERATION_PROMPT_TEMPLATE' | 'IMAGE_PROMPT_GENERATION_PROMPT_TEMPLATE' | 'QUERY_GENERATION_PROMPT_TEMPLATE' | 'AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE', fallback: string): string {
    const stored = this.setting(field);
    return stored.trim() ? stored : fallback;
  }

  /**
   * One task route: the checks of its switch and input, the model looked up
   * among those the user may use (404 when it is not one), the prompt built,
   * the task model asked. Provider failures are answered as the reference does.
   */
  async run(kind: TaskKind, user: UserRecord, form: Json, context: CallContext): Promise<Answer> {
    const disabled = this.disabledAnswer(kind, form);
    if (disabled) return disabled;
    const modelId = form.model;
    if (kind === 'title' && !modelId) throw badRequest('No model specified for title generation. Please ensure a model is selected for this chat.');
    const models = await this.available(user, context);
    if (typeof modelId !== 'string' || !models.has(modelId)) throw notFound(UPSTREAM_ERROR.MODEL_NOT_FOUND());
    const model = kind === 'moa' ? models.get(modelId)! : this.taskModel(modelId, models);
    let payload: Json = {
      model: model.id,
      messages: [{ role: 'user', content: this.prompt(kind, form, user) }],
      stream: kind === 'moa' ? form.stream === true : false,
      ...this.tokenLimit(kind, model),
    };
    // The Pipelines servers' inlet filters see task prompts too; their refusal is the answer (routers/tasks.py).
    payload = (await this.pipelines.inlet(user, payload, context)) ?? payload;
    try {
      // A pipe answering the task learns which one it is (`__task__`, `__task_body__`), as in the reference.
      return await this.completions.complete(user, payload, { ...context, metadata: { ...context.metadata, task: TASK_NAMES[kind], task_body: form } });
    } catch (error) {
      const failure = FAILURE[kind];
      const detail = failure.detail === 'internal' ? 'An internal error has occurred.' : error instanceof HttpError ? error.detail : String(error);
      return { kind: 'json', status: failure.status, body: { detail } };
    }
  }

  /** Switched-off tasks: titles, tags and follow-ups say so with a 200; queries and autocompletion refuse. */
  private disabledAnswer(kind: TaskKind, form: Json): Answer | null {
    const said = (detail: string): Answer => ({ kind: 'json', status: 200, body: { detail } });
    if (kind === 'title' && !this.setting('ENABLE_TITLE_GENERATION')) return said('Title generation is disabled');
    if (kind === 'follow_up' && !this.setting('ENABLE_FOLLOW_UP_GENERATION')) return said('Follow-up generation is disabled');
    if (kind === 'tags' && !this.setting('ENABLE_TAGS_GENERATION')) return said('Tags generation is disabled');
    if (kind === 'queries') {
      if (form.type === 'web_search' && !this.setting('ENABLE_SEARCH_QUERY_GENERATION')) throw badRequest(ERROR.FEATURE_DISABLED('Search query generation'));
      if (form.type === 'retrieval' && !this.setting('ENABLE_RETRIEVAL_QUERY_GENERATION')) throw badRequest(ERROR.FEATURE_DISABLED('Query generation'));
    }
    if (kind === 'auto') {
      if (!this.setting('ENABLE_AUTOCOMPLETE_GENERATION')) throw badRequest(ERROR.FEATURE_DISABLED('Autocompletion generation'));
      const max = this.setting('AUTOCOMPLETE_GENERATION_INPUT_MAX_LENGTH');
      if (max > 0 && String(form.prompt ?? '').length > max) throw badRequest(`Input prompt exceeds maximum length of ${max}`);
    }
    return null;
  }

  private prompt(kind: TaskKind, form: Json, user: UserRecord): string {
    const messages = (Array.isArray(form.messages) ? form.messages.filter(isObject) : []) as Message[];
    switch (kind) {
      case 'title':
        return conversationPrompt(this.template('TITLE_GENERATION_PROMPT_TEMPLATE', DEFAULT_TEMPLATES.TITLE), messages, user);
      case 'follow_up':
        return conversationPrompt(this.template('FOLLOW_UP_GENERATION_PROMPT_TEMPLATE', DEFAULT_TEMPLATES.FOLLOW_UP), messages, user);
      case 'tags':
        return conversationPrompt(this.template('TAGS_GENERATION_PROMPT_TEMPLATE', DEFAULT_TEMPLATES.TAGS), messages, user);
      case 'image_prompt':
        return conversationPrompt(this.template('IMAGE_PROMPT_GENERATION_PROMPT_TEMPLATE', DEFAULT_TEMPLATES.IMAGE_PROMPT), messages, user);
      case 'queries':
        return conversationPrompt(this.template('QUERY_GENERATION_PROMPT_TEMPLATE', DEFAULT_TEMPLATES.QUERY), messages, user);
      case 'auto':
        return autocompletePrompt(
          this.template('AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE', DEFAULT_TEMPLATES.AUTOCOMPLETE),
          String(form.prompt ?? ''),
          Array.isArray(form.messages) ? messages : null,
          typeof form.type === 'string' ? form.type : null,
          user,
        );
      case 'emoji':
        return emojiPrompt(String(form.prompt ?? ''), user);
      case 'moa':
        return moaPrompt(String(form.prompt ?? ''), strings(form.responses) ?? []);
    }
  }

  /** Titles: the model's own max_tokens (default 1000); emoji: 4 tokens; others unbounded. */
  private tokenLimit(kind: TaskKind, model: Json): Json {
    if (kind !== 'title' && kind !== 'emoji') return {};
    const info = isObject(model.info) ? model.info : {};
    const params = isObject(info.params) ? info.params : {};
    const limit = kind === 'emoji' ? 4 : (params.max_tokens ?? 1000);
    return { [model.owned_by === 'ollama' ? 'max_tokens' : 'max_completion_tokens']: limit };
  }

  // ---- for the chat pipeline --------------------------------------------------

  /** A task's parsed JSON answer; null when the task is off, fails, or answers something else. */
  private async ask(kind: 'title' | 'tags' | 'follow_up', user: UserRecord, modelId: string, messages: Message[], chatId: string, context: CallContext): Promise<Json | null> {
    try {
      const answer = await this.run(kind, user, { model: modelId, messages, chat_id: chatId }, context);
      return answer.kind === 'json' && answer.status < 400 ? answerJson(answer.body) : null;
    } catch (error) {
      this.core.log.debug({ kind, err: error instanceof Error ? error.message : String(error) }, 'Chat task failed');
      return null;
    }
  }

  async chatTitle(user: UserRecord, modelId: string, messages: Message[], chatId: string, context: CallContext): Promise<string | null> {
    const title = (await this.ask('title', user, modelId, messages, chatId, context))?.title;
    return typeof title === 'string' && title.trim() ? title.trim() : null;
  }

  async chatTags(user: UserRecord, modelId: string, messages: Message[], chatId: string, context: CallContext): Promise<string[] | null> {
    return strings((await this.ask('tags', user, modelId, messages, chatId, context))?.tags);
  }

  /**
   * Search queries for the chat's attachments (`type: 'retrieval'`): the `queries` of the task
   * model's JSON, or its whole answer as one query when it wrote no JSON (as the reference's
   * chat_completion_files_handler); none when the task is off or fails.
   */
  async retrievalQueries(user: UserRecord, modelId: string, messages: Message[], chatId: string, context: CallContext): Promise<string[]> {
    try {
      const answer = await this.run('queries', user, { model: modelId, messages, type: 'retrieval', chat_id: chatId }, context);
      if (answer.kind !== 'json' || answer.status >= 400) return [];
      const parsed = answerJson(answer.body);
      if (parsed) return strings(parsed.queries) ?? [];
      const text = answerText(answer.body)?.trim();
      return text ? [text] : [];
    } catch (error) {
      this.core.log.debug({ err: error instanceof Error ? error.message : String(error) }, 'Retrieval query generation failed');
      return [];
    }
  }

  /**
   * The tools the task model picks for the conversation under `function_calling: 'legacy'`
   * (middleware.py chat_completion_tools_handler): TOOLS_FUNCTION_CALLING_PROMPT_TEMPLATE (or the
   * built-in one) with the tools' specs, the recent messages and the query; the calls of the JSON
   * object it writes (`tool_calls`, or one call), none when it picks none or fails.
   */
  async toolChoice(user: UserRecord, modelId: string, messages: Message[], specs: Json[], context: CallContext): Promise<{ name: string; parameters: Json }[]> {
    try {
      const models = await this.available(user, context);
      if (!models.has(modelId)) return [];
      const template = this.setting('TOOLS_FUNCTION_CALLING_PROMPT_TEMPLATE').trim() ? this.setting('TOOLS_FUNCTION_CALLING_PROMPT_TEMPLATE') : DEFAULT_TEMPLATES.TOOLS;
      const payload = { model: this.taskModel(modelId, models).id, messages: toolChoiceMessages(template, specs, messages), stream: false };
      const answer = await this.completions.complete(user, payload, { ...context, metadata: { ...context.metadata, task: 'function_calling' } });
      const chosen = answer.kind === 'json' && answer.status < 400 ? answerJson(answer.body) : null;
      if (!chosen) return [];
      const calls = Array.isArray(chosen.tool_calls) && chosen.tool_calls.length > 0 ? chosen.tool_calls : [chosen];
      return calls.filter(isObject).flatMap((call) => (typeof call.name === 'string' && call.name ? [{ name: call.name, parameters: isObject(call.parameters) ? call.parameters : {} }] : []));
    } catch (error) {
      this.core.log.debug({ err: error instanceof Error ? error.message : String(error) }, 'Tool choice failed');
      return [];
    }
  }

  async followUps(user: UserRecord, modelId: string, messages: Message[], chatId: string, context: CallContext): Promise<string[] | null> {
    return strings((await this.ask('follow_up', user, modelId, messages, chatId, context))?.follow_ups);
  }
}
