import { type Message, type MessageMap, historyOf, isObject, messageList } from './history.js';
import type { ChatStatsExport, ChatUsageStats } from './schemas.js';
import type { ChatRecord } from './store.js';

/**
 * Message statistics of chats, without their text: `GET /chats/stats/usage`
 * and `GET /chats/stats/export` (routers/chats.py).
 */

const countBy = (into: Record<string, number>, key: unknown) => {
  if (typeof key === 'string' && key) into[key] = (into[key] ?? 0) + 1;
};

const average = (values: number[]) => (values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : 0);

/** Characters of text: a string, or the text parts of a list. */
function contentLength(message: Message): number {
  const content = message.content;
  if (typeof content === 'string') return content.length;
  if (Array.isArray(content)) return content.reduce((n, item) => n + (isObject(item) && item.type === 'text' ? String(item.text ?? '').length : 0), 0);
  return 0;
}

const historyMessages = (chat: ChatRecord): MessageMap => {
  const messages = historyOf(chat.chat).messages;
  return isObject(messages) ? (messages as MessageMap) : {};
};

const tagsOf = (chat: ChatRecord): string[] => (Array.isArray(chat.meta.tags) ? chat.meta.tags.filter((t): t is string => typeof t === 'string') : []);

interface Aggregate {
  average_response_time: number;
  average_user_message_content_length: number;
  average_assistant_message_content_length: number;
  models: Record<string, number>;
  message_count: number;
  history_models: Record<string, number>;
  history_message_count: number;
  history_user_message_count: number;
  history_assistant_message_count: number;
  branch: Message[];
}

function aggregate(messages: MessageMap, currentId: string | null): Aggregate {
  const all = Object.values(messages).filter(isObject);
  const users = all.filter((m) => m.role === 'user');
  const assistants = all.filter((m) => m.role === 'assistant');
  const historyModels: Record<string, number> = {};
  for (const m of assistants) countBy(historyModels, m.model);
  const responseTimes: number[] = [];
  for (const m of assistants) {
    const parent = typeof m.parentId === 'string' ? messages[m.parentId] : undefined;
    const answered = Number(m.timestamp);
    const asked = Number(parent?.timestamp);
    if (parent && answered && asked) responseTimes.push(answered - asked);
  }
  const branch = messageList(messages, currentId);
  const models: Record<string, number> = {};
  for (const m of branch) if (m.role === 'assistant') countBy(models, m.model);
  return {
    average_response_time: average(responseTimes),
    average_user_message_content_length: average(users.map(contentLength)),
    average_assistant_message_content_length: average(assistants.map(contentLength)),
    models,
    message_count: branch.length,
    history_models: historyModels,
    history_message_count: Object.keys(messages).length,
    history_user_message_count: users.length,
    history_assistant_message_count: assistants.length,
    branch,
  };
}

/** ChatUsageStatsResponse; null for chats without messages or a current message. */
export function usageStats(chat: ChatRecord): ChatUsageStats | null {
  const messages = historyMessages(chat);
  const currentId = historyOf(chat.chat).currentId;
  if (Object.keys(messages).length === 0 || typeof currentId !== 'string' || !currentId) return null;
  const { branch, ...stats } = aggregate(messages, currentId);
  const lastAt = Number(branch[branch.length - 1]?.timestamp);
  if (!Number.isInteger(lastAt)) return null;
  return { id: chat.id, ...stats, tags: tagsOf(chat), last_message_at: lastAt, updated_at: chat.updated_at, created_at: chat.created_at };
}

const intOrNull = (value: unknown) => (typeof value === 'number' && Number.isInteger(value) ? value : null);

/** ChatStatsExport: per-message figures and the chat's aggregates. */
export function exportStats(chat: ChatRecord): ChatStatsExport {
  const messages = historyMessages(chat);
  const current = historyOf(chat.chat).currentId;
  const currentId = typeof current === 'string' && current ? current : null;
  const exported: ChatStatsExport['chat']['history']['messages'] = {};
  for (const [key, message] of Object.entries(messages)) {
    if (!isObject(message) || typeof message.id !== 'string' || typeof message.role !== 'string') continue;
    const annotation = isObject(message.annotation) ? message.annotation : {};
    exported[key] = {
      id: message.id,
      role: message.role,
      model: typeof message.model === 'string' ? message.model : null,
      timestamp: intOrNull(message.timestamp),
      content_length: contentLength(message),
      token_count: null,
      rating: intOrNull(annotation.rating),
      tags: Array.isArray(annotation.tags) ? annotation.tags.map((t) => (typeof t === 'string' ? t : null)) : null,
    };
  }
  const { branch: _branch, ...stats } = aggregate(messages, currentId);
  return {
    id: chat.id,
    user_id: chat.user_id,
    created_at: chat.created_at,
    updated_at: chat.updated_at,
    tags: tagsOf(chat),
    stats,
    chat: { history: { messages: exported, currentId } },
  };
}
