/**
 * The conversation inside a chat record, as the web frontend stores it:
 * `chat.history = { currentId, messages: { [id]: { id, parentId, childrenIds,
 * role, content, ... } } }`, a tree whose branches are regenerations and edits;
 * `currentId` is the leaf on screen. Older chats also carry a `messages` list.
 * Pure functions, no storage (models/chats.py ChatTable helpers, utils/misc.py).
 */
export type Json = Record<string, unknown>;
export type Message = Json;
export type MessageMap = Record<string, Message>;

export const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** PostgreSQL text cannot hold NUL; lone surrogates cannot be encoded (sanitize_text_for_db). */
export function cleanText(text: string): string {
  return text.replace(/\u0000/g, '').replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '');
}

export function historyOf(chat: Json): Json {
  return isObject(chat.history) ? chat.history : {};
}

/** The message map of a chat: `history.messages`, or the legacy `messages` list keyed by id. */
export function messagesOf(chat: Json): MessageMap {
  const history = historyOf(chat);
  if (isObject(history.messages) && Object.keys(history.messages).length > 0) return history.messages as MessageMap;
  const map: MessageMap = {};
  if (Array.isArray(chat.messages)) {
    for (const message of chat.messages) if (isObject(message) && typeof message.id === 'string' && message.id) map[message.id] = message;
  }
  return map;
}

/** The ids of the files a message carries (`files[].id`, or `files[].file.id` as the frontend nests uploads). */
export function fileIdsOf(message: Message): string[] {
  if (!Array.isArray(message.files)) return [];
  return message.files.flatMap((entry) => {
    if (!isObject(entry)) return [];
    const id = typeof entry.id === 'string' ? entry.id : isObject(entry.file) && typeof entry.file.id === 'string' ? entry.file.id : null;
    return id ? [id] : [];
  });
}

/** The message on screen: `history.currentId`, then the legacy markers, then the last listed message. */
export function currentMessageIdOf(chat: Json): string | null {
  const history = historyOf(chat);
  const current = history.currentId || chat.currentId || chat.branchPointMessageId;
  if (typeof current === 'string' && current) return current;
  if (Array.isArray(chat.messages)) {
    for (let i = chat.messages.length - 1; i >= 0; i--) {
      const message = chat.messages[i];
      if (isObject(message) && typeof message.id === 'string' && message.id) return message.id;
    }
  }
  return null;
}

/** Text of an assistant's `output` items (get_output_text). */
export function outputText(output: unknown): string {
  if (!Array.isArray(output)) return '';
  const texts: string[] = [];
  for (const item of output) {
    if (!isObject(item) || item.type !== 'message' || !Array.isArray(item.content)) continue;
    const text = item.content.map((part) => (isObject(part) && part.text !== undefined && part.text !== null ? String(part.text) : '')).join('');
    if (text.trim()) texts.push(text);
  }
  return texts.join('\n');
}

/** The readable text of a message: its content (first text part of a list), else its output (get_content_from_message). */
export function contentText(message: Message): string {
  const content = message.content;
  if (Array.isArray(content)) {
    const part = content.find((item) => isObject(item) && item.type === 'text') as Json | undefined;
    if (part && typeof part.text === 'string') return part.text;
  } else if (typeof content === 'string' && content) return content;
  return outputText(message.output);
}

/** Root-to-`messageId` path through `parentId` links (get_message_list); cycles end the walk. */
export function messageList(messages: MessageMap, messageId: string | null | undefined): Message[] {
  if (!messageId) return [];
  const list: Message[] = [];
  const seen = new Set<string>();
  let current: Message | undefined = messages[messageId];
  while (current) {
    const id = typeof current.id === 'string' ? current.id : null;
    if (id !== null) {
      if (seen.has(id)) break;
      seen.add(id);
    }
    list.push(current);
    const parentId: unknown = current.parentId;
    current = typeof parentId === 'string' && parentId ? messages[parentId] : undefined;
  }
  return list.reverse();
}

const childrenOf = (message: Message | undefined): string[] => (Array.isArray(message?.childrenIds) ? (message.childrenIds as string[]) : []);

/**
 * Points `currentId` at a real message again when it names none (or an
 * orphaned assistant leaf): the newest leaf wins. True when it changed.
 */
export function repairCurrentId(chat: Json): boolean {
  const history = chat.history;
  if (!isObject(history) || !isObject(history.messages)) return false;
  const messages = history.messages as MessageMap;
  const currentId = history.currentId as string | undefined;
  const current = currentId ? messages[currentId] : undefined;
  if (isObject(current)) {
    const output = Array.isArray(current.output) ? current.output : [];
    const outputRole = (output.find((item) => isObject(item) && item.role) as Json | undefined)?.role;
    const badLeaf = outputRole === 'assistant' && (current.parentId === null || current.parentId === undefined) && !current.timestamp && Object.keys(messages).length > 1;
    if (current.id && current.role && !badLeaf) return false;
  }
  let latestLeaf: string | null = null;
  let latestTimestamp = -1;
  for (const [id, message] of Object.entries(messages)) {
    if (!isObject(message) || !message.role) continue;
    const timestamp = Number(message.timestamp) || 0;
    if (childrenOf(message).length === 0 && timestamp > latestTimestamp) {
      latestLeaf = id;
      latestTimestamp = timestamp;
    }
  }
  if (!latestLeaf || latestLeaf === currentId) return false;
  history.currentId = latestLeaf;
  return true;
}

/**
 * `POST /chats/{id}` with a history: the stored and sent message maps merged
 * (sent messages win), `childrenIds` rebuilt from `parentId`, and `currentId`
 * the sent one, else the stored one, when it names a message (merge_history).
 */
export function mergeHistory(existing: Json | undefined, incoming: Json | undefined): Json {
  const stored = isObject(existing?.messages) ? (existing.messages as MessageMap) : {};
  const sent = isObject(incoming?.messages) ? (incoming.messages as MessageMap) : {};
  const merged: MessageMap = {};
  for (const [id, message] of Object.entries({ ...stored, ...sent })) if (isObject(message)) merged[id] = { ...message, childrenIds: [] };
  for (const [id, message] of Object.entries(merged)) {
    const parentId = message.parentId;
    if (typeof parentId === 'string' && merged[parentId]) (merged[parentId].childrenIds as string[]).push(id);
  }
  let currentId = incoming?.currentId as string | undefined;
  if (!currentId || !merged[currentId]) {
    currentId = existing?.currentId as string | undefined;
    if (!currentId || !merged[currentId]) currentId = undefined;
  }
  return { ...(existing ?? {}), ...(incoming ?? {}), messages: merged, currentId: currentId ?? null };
}

/**
 * Removes a message and its direct replies; the replies' own replies move up to
 * the removed message's parent, and `currentId` follows the newest branch from
 * there (delete_message_from_history). Returns the removed ids (none when unknown).
 */
export function deleteMessageFromHistory(history: Json, messageId: string): Set<string> {
  const messages = (isObject(history.messages) ? history.messages : {}) as MessageMap;
  const message = messages[messageId];
  if (!isObject(message)) return new Set();
  const parentId = (message.parentId as string | null | undefined) ?? null;
  const childIds = childrenOf(message).filter((id) => messages[id]);
  const grandchildIds = childIds.flatMap((id) => childrenOf(messages[id]).filter((gid) => messages[gid]));
  if (parentId && messages[parentId]) {
    messages[parentId].childrenIds = [...childrenOf(messages[parentId]).filter((id) => id !== messageId), ...grandchildIds];
  }
  for (const id of grandchildIds) messages[id].parentId = parentId;
  const deleted = new Set([messageId, ...childIds]);
  for (const id of deleted) delete messages[id];

  let currentId: string | null = parentId;
  let next = currentId === null ? Object.entries(messages).filter(([, m]) => m.parentId === null || m.parentId === undefined).map(([id]) => id) : childrenOf(messages[currentId]);
  while (next.length > 0) {
    currentId = next[next.length - 1];
    next = childrenOf(messages[currentId]);
  }
  history.currentId = currentId && messages[currentId] ? currentId : null;
  return deleted;
}

/**
 * Inserts or merges one message and makes it the current one
 * (upsert_message_to_history). A new message without a parent is attached to
 * the message listing it as a child; without a role it takes the one its
 * output names, else the opposite of its parent's. Returns the stored message.
 */
export function upsertMessageToHistory(history: Json, messageId: string, message: Message, now: number): Message {
  if (!isObject(history.messages)) history.messages = {};
  const messages = history.messages as MessageMap;
  if (isObject(messages[messageId])) {
    messages[messageId] = { ...messages[messageId], ...message };
  } else {
    const givenParent = message.parentId as string | null | undefined;
    let parentId = givenParent ?? null;
    if (parentId === null) parentId = Object.entries(messages).find(([, existing]) => childrenOf(existing).includes(messageId))?.[0] ?? null;
    const parent = parentId ? messages[parentId] : undefined;
    const output = Array.isArray(message.output) ? message.output : [];
    let role = message.role || (output.find((item) => isObject(item) && item.role) as Json | undefined)?.role;
    if (!role) role = parent?.role === 'user' ? 'assistant' : parent?.role === 'assistant' ? 'user' : 'assistant';
    messages[messageId] = {
      ...message,
      id: message.id || messageId,
      parentId: givenParent ?? parentId,
      childrenIds: Array.isArray(message.childrenIds) ? message.childrenIds : [],
      role,
      timestamp: message.timestamp || now,
    };
  }
  history.currentId = messageId;
  return messages[messageId];
}

/**
 * The branch ending at `sourceId`, copied as a straight line: every message
 * keeps its id, with one child each (build_fork_history). Throws with the
 * reference's messages for an empty chat, an unknown message or a cycle.
 */
export function forkHistory(messages: MessageMap, sourceId: string): { history: Json; list: Message[] } {
  if (Object.keys(messages).length === 0) throw new Error('chat has no messages to fork');
  const branch: [string, Message][] = [];
  const seen = new Set<string>();
  let id: string | null = sourceId;
  while (id) {
    if (seen.has(id)) throw new Error('message branch contains a cycle');
    seen.add(id);
    const message: Message | undefined = messages[id];
    if (!isObject(message)) throw new Error('message not found');
    branch.push([id, message]);
    id = (message.parentId as string | null | undefined) ?? null;
  }
  const forked: MessageMap = {};
  const list: Message[] = [];
  let parentId: string | null = null;
  for (const [messageId, message] of branch.reverse()) {
    const copy: Message = { ...structuredClone(message), id: messageId, parentId, childrenIds: [] };
    if (parentId) forked[parentId].childrenIds = [messageId];
    forked[messageId] = copy;
    list.push(copy);
    parentId = messageId;
  }
  return { history: { messages: forked, currentId: sourceId }, list };
}

/** Seconds; millisecond values are converted, values before 2020 or a day ahead mean `now` (_normalize_timestamp). */
export function messageTimestamp(value: unknown, now: number): number {
  let seconds = Number(value);
  if (!Number.isFinite(seconds)) return now;
  if (seconds > 10_000_000_000) seconds /= 1000;
  return seconds < 1577836800 || seconds > now + 86400 ? now : Math.floor(seconds);
}
