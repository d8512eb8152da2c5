import type { UserRecord } from '../../core/auth/user.js';
import { badRequest } from '../../core/http/errors.js';
import type { Realtime } from '../../core/realtime/server.js';
import { type Json, type Message, isObject, messageList } from '../chats/history.js';
import { isSavedChatId } from '../chats/ids.js';
import type { ChatsService } from '../chats/service.js';
import { type ChatFunctions, type LiveEvents, functionFailure, outletMessages } from '../functions/chat.js';
import type { FunctionRecord } from '../functions/store.js';
import { MessageEvents } from '../chats/message-events.js';

/**
 * The chat pipeline's side of functions (utils/middleware.py): the request's
 * filters chosen once, inlet over the conversation before the model, stream
 * filters on every chunk, outlet over the stored answer, actions.
 */
export class PipelineFunctions {
  constructor(
    private readonly functions: ChatFunctions,
    private readonly chats: ChatsService,
    private readonly realtime: Realtime,
  ) {}

  /** The live channel of one message: its events reach the owner's sockets (and the stored message). */
  live(userId: string, chatId: string, messageId: string | null, sessionId: string | null): LiveEvents {
    if (!chatId || !messageId) return {};
    const events = new MessageEvents(this.realtime, this.chats, userId, chatId, messageId);
    return {
      eventEmitter: (event) => events.fromTool(event),
      eventCall: sessionId ? (event) => this.realtime.callSession(sessionId, userId, 'events', { chat_id: chatId, message_id: messageId, data: event }) : undefined,
    };
  }

  filters(model: Json, filterIds: unknown): Promise<FunctionRecord[]> {
    return this.functions.filtersFor(model, filterIds);
  }

  /**
   * Inlet filters over the request (`body` is the request with the conversation
   * as `messages`): what they return is what the model receives. A filter that
   * raises refuses the request with its message, as the reference does.
   */
  async inlet(filters: FunctionRecord[], user: UserRecord, model: Json, body: Json, metadata: Json, live: LiveEvents): Promise<{ messages: Message[]; files: unknown }> {
    const messages = body.messages as Message[];
    if (filters.length === 0) return { messages, files: body.files };
    try {
      const result = await this.functions.run(filters, 'inlet', { ...body, metadata }, user, model, metadata, live);
      // A `file_handler` filter took care of the files: Parley does not process them again (process_filter_functions).
      const files = filters.some((fn) => fn.traits?.file_handler) ? [] : result.files;
      return { messages: Array.isArray(result.messages) ? (result.messages.filter(isObject) as Message[]) : messages, files };
    } catch (error) {
      throw badRequest(functionFailure(error));
    }
  }

  /** Whether any of `filters` may change the streamed chunks (then the answer cannot be relayed as is). */
  filtersStream(filters: FunctionRecord[]): boolean {
    return this.functions.filters.mayRun(filters, 'stream');
  }

  streamFilter(filters: FunctionRecord[], user: UserRecord, model: Json, metadata: Json, live: LiveEvents): ((chunk: Json) => Promise<Json>) | null {
    return this.functions.streamFilter(filters, user, model, metadata, live);
  }

  /**
   * Outlet filters after an answer is stored (outlet_filter_handler): they see
   * the branch up to the answer, after the Pipelines servers' outlet filters
   * (`pipelines`: null when none applies); messages whose content they changed are
   * stored with the change (the first text kept as `originalContent`) and the
   * sockets get `chat:outlet`. A failing filter leaves the answer as it was.
   */
  async outletAnswer(
    filters: FunctionRecord[],
    user: UserRecord,
    model: Json,
    metadata: Json,
    live: LiveEvents,
    fallback: Message[],
    pipelines: ((data: Json) => Promise<Json | null>) | null,
  ): Promise<void> {
    if (filters.length === 0 && !pipelines) return;
    const chatId = String(metadata.chat_id ?? '');
    const messageId = String(metadata.message_id ?? '');
    const map = isSavedChatId(chatId) ? await this.chats.messages(chatId) : null;
    const list = map ? messageList(map, messageId) : fallback;
    const data: Json = {
      model: model.id,
      messages: outletMessages(list as Json[]),
      filter_ids: metadata.filter_ids ?? [],
      chat_id: chatId,
      session_id: metadata.session_id ?? null,
      id: messageId,
    };
    // A failing pipeline outlet is passed over (middleware.py logs it); the functions still run.
    const piped = pipelines ? await pipelines(data).catch(() => null) : null;
    if (!piped && filters.length === 0) return;
    let result: Json = piped ?? data;
    try {
      if (filters.length > 0) result = await this.functions.run(filters, 'outlet', result, user, model, metadata, live);
    } catch {
      return;
    }
    if (!Array.isArray(result.messages)) return;
    if (map) {
      for (const message of result.messages.filter(isObject)) {
        const original = typeof message.id === 'string' ? map[message.id] : undefined;
        if (!original || typeof message.content !== 'string' || message.content === original.content) continue;
        await this.chats.upsertMessage(chatId, message.id as string, { content: message.content, originalContent: original.content }, { touch: false });
      }
    }
    await live.eventEmitter?.({ type: 'chat:outlet', data: { messages: result.messages } });
  }

  /** `POST /api/chat/completed`: the outlet filters over the request's body, answered with what they return. */
  async completed(filters: FunctionRecord[], user: UserRecord, model: Json, data: Json): Promise<Json> {
    const metadata: Json = { chat_id: data.chat_id ?? null, message_id: data.id, filter_ids: data.filter_ids ?? [], session_id: data.session_id ?? null, user_id: user.id };
    const live = this.live(user.id, String(data.chat_id ?? ''), String(data.id), typeof data.session_id === 'string' ? data.session_id : null);
    try {
      return await this.functions.run(filters, 'outlet', data, user, model, metadata, live);
    } catch (error) {
      throw badRequest(`Error: ${functionFailure(error)}`);
    }
  }

  /** `POST /api/chat/actions/{id}`: the action's events go to the message it was pressed on. */
  action(user: UserRecord, actionId: string, body: Json, model: Json): Promise<unknown> {
    const live = this.live(user.id, String(body.chat_id ?? ''), typeof body.id === 'string' ? body.id : null, typeof body.session_id === 'string' ? body.session_id : null);
    return this.functions.action(user, actionId, body, model, live);
  }
}
