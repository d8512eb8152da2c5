import type { Realtime } from '../../core/realtime/server.js';
import { isObject } from '../chats/history.js';
import type { ChatsService } from '../chats/service.js';
import type { FoldersService } from '../folders/service.js';
import type { TaskRegistry } from '../tasks/registry.js';
import type { UsersService } from '../users/service.js';

/**
 * What the chats need from the socket server and the task registry:
 * `events:chat` `{chat_id, data: {type: 'last_read_at'}}` marks a chat read
 * (answered with `chat:list`, with the folders' unread counts when they
 * changed), chat edits reach the owner's sockets, and a chat with a running
 * task is listed as active.
 */
export function connectRealtime(deps: { realtime: Realtime; users: UsersService; chats: ChatsService; folders: FoldersService; registry: TaskRegistry }): void {
  const { realtime, users, chats, folders, registry } = deps;

  realtime.on('events:chat', async (client, data) => {
    const chatId = data.chat_id;
    if (!client.user || typeof chatId !== 'string' || !isObject(data.data) || data.data.type !== 'last_read_at') return null;
    const user = await users.byId(client.user.id);
    const read = user ? await chats.markRead(user, chatId) : null;
    if (!user || !read) return null;
    const listed: Record<string, unknown> = { chat_id: chatId, last_read_at: read.last_read_at };
    if (read.was_unread) listed.folder_unread_counts = await folders.unreadCounts(user.id);
    realtime.emitToUser(user.id, 'events', { chat_id: chatId, data: { type: 'chat:list', data: listed } });
    return null;
  });

  chats.onRealtime((userId, payload) => realtime.emitToUser(userId, 'events', payload));
  chats.trackActivity((chatIds) => registry.activeItems(chatIds));
}
