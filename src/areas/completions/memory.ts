import type { SettingsStore } from '../../config/settings.js';
import type { UserRecord } from '../../core/auth/user.js';
import { type Json, type Message, contentText, isObject } from '../chats/history.js';

/**
 * The chat's memory step (middleware.py: `features.memory` and
 * `memories.system_context.enable`, then utils/memory.py add_memory_context):
 * the user's memories relevant to the latest user messages go into the system
 * message as one `<memory_context>` block, replacing an earlier one. With
 * ENABLE_MEMORY_SYSTEM_CONTEXT false nothing is added (interface.md §2.6: the
 * memory tools still work).
 */
export interface MemoryRecall {
  /** The `<memory_context>` block for this text, or null when the user has nothing relevant. */
  systemContext(user: UserRecord, query: string): Promise<string | null>;
}

/** User messages the query is made of, and how much of their text (add_memory_context). */
const QUERY_MESSAGES = 7;
const QUERY_CHARS = 4000;
const BLOCK = /<memory_context>[\s\S]*?<\/memory_context>/;

/** The block to add for this turn, or null (feature off, setting off, model without the capability, nothing found). */
export async function memoryContext(recall: MemoryRecall, settings: SettingsStore, user: UserRecord, form: Json, model: Json, messages: Message[]): Promise<string | null> {
  if (!isObject(form.features) || !form.features.memory || !settings.get<boolean>('memories.system_context.enable')) return null;
  const meta = isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {};
  if (isObject(meta.capabilities) && meta.capabilities.memory === false) return null;
  const texts = messages
    .filter((m) => m.role === 'user')
    .map((m) => contentText(m).trim())
    .filter(Boolean)
    .slice(-QUERY_MESSAGES);
  const query = texts.join('\n\n').slice(-QUERY_CHARS);
  return query ? recall.systemContext(user, query) : null;
}

/** The messages without the block an earlier turn left in the leading system message. */
export function withoutMemoryContext(messages: Message[]): Message[] {
  const first = messages[0];
  if (first?.role !== 'system' || typeof first.content !== 'string' || !BLOCK.test(first.content)) return messages;
  return [{ ...first, content: first.content.replace(BLOCK, '').trim() }, ...messages.slice(1)];
}
