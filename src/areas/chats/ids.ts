/** Chats that are not stored: the browser's temporary chats (`temporary:`/`local:<socket id>`) and channel threads. */
const TEMPORARY_PREFIXES = ['temporary:', 'local:'];
const UNSAVED_PREFIXES = [...TEMPORARY_PREFIXES, 'channel:'];

export const isSavedChatId = (chatId: string | null | undefined): chatId is string => Boolean(chatId) && !UNSAVED_PREFIXES.some((p) => chatId!.startsWith(p));

/** The socket id a temporary chat belongs to; null for other chats. */
export function temporarySessionId(chatId: string): string | null {
  const prefix = TEMPORARY_PREFIXES.find((p) => chatId.startsWith(p));
  return prefix ? chatId.slice(prefix.length) : null;
}
