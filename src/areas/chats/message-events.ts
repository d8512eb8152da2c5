import type { Realtime } from '../../core/realtime/server.js';
import { type Json, isObject } from './history.js';
import { isSavedChatId } from './ids.js';
import type { ChatsService } from './service.js';

/**
 * The live events of one assistant message, sent to every socket of the chat's
 * owner as `events` `{chat_id, message_id, data: {type, data}}` (the
 * reference's `__event_emitter__`). Events from tools are also kept in the
 * stored message (status history, appended content, sources, files, embeds).
 */
export class MessageEvents {
  constructor(
    private readonly realtime: Realtime,
    private readonly chats: ChatsService,
    readonly userId: string,
    readonly chatId: string,
    readonly messageId: string,
  ) {}

  send(type: string, data?: unknown): void {
    this.emit({ type, ...(data === undefined ? {} : { data }) });
  }

  private emit(event: Json): void {
    this.realtime.emitToUser(this.userId, 'events', { chat_id: this.chatId, message_id: this.messageId, data: event });
  }

  /** A status line under the answer (`status`, kept in its `statusHistory`). */
  async status(data: Json): Promise<void> {
    await this.fromTool({ type: 'status', data });
  }

  /** A tool's `__event_emitter__(event)`. */
  async fromTool(event: unknown): Promise<void> {
    if (!isObject(event) || typeof event.type !== 'string') return;
    this.emit(event);
    if (isSavedChatId(this.chatId)) await this.chats.applyMessageEvent(this.chatId, this.messageId, { type: event.type, data: isObject(event.data) ? event.data : {} });
  }
}
