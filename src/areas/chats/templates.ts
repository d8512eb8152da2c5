import { type Message, contentText, isObject } from './history.js';

/**
 * The reference's task-prompt placeholders (utils/task.py): `{{prompt}}` and
 * `{{MESSAGES}}` with their `:START:n`, `:END:n`, `:MIDDLETRUNCATE:n` and
 * `|mode:chars` variants. Used by context compaction; the chat pipeline's other
 * tasks (titles, tags, follow-ups) fill their templates the same way.
 */

function truncate(content: string, maxChars: number, mode: string): string {
  if (maxChars <= 0) return '';
  if (!content || content.length <= maxChars) return content;
  if (mode === 'start') return content.slice(0, maxChars);
  if (mode === 'end') return content.slice(-maxChars);
  const half = Math.floor(maxChars / 2);
  return `${content.slice(0, half)}...${content.slice(-(maxChars - half))}`;
}

function applyContentFilter(messages: Message[], filter: string): Message[] {
  const [rawMode, rawChars, ...rest] = filter.split(':');
  const mode = rawMode?.toLowerCase();
  const maxChars = Number.parseInt(rawChars ?? '', 10);
  if (rest.length > 0 || !Number.isFinite(maxChars) || !['middletruncate', 'start', 'end'].includes(mode)) return messages;
  return messages.map((message) => {
    if (typeof message.content === 'string') return { ...message, content: truncate(message.content, maxChars, mode) };
    if (Array.isArray(message.content)) {
      return {
        ...message,
        content: message.content.map((item) => (isObject(item) && item.type === 'text' ? { ...item, text: truncate(String(item.text ?? ''), maxChars, mode) } : item)),
      };
    }
    return message;
  });
}

/** `ROLE: text` per message, one per line (get_messages_content). */
export function messagesText(messages: Message[]): string {
  return messages.map((m) => `${String(m.role ?? '').toUpperCase()}: ${contentText(m) || 'None'}`).join('\n');
}

/** `{{prompt}}`, `{{prompt:start:n}}`, `{{prompt:end:n}}`, `{{prompt:middletruncate:n}}` (any case). */
export function replacePromptVariable(template: string, prompt: string): string {
  return template.replace(/{{prompt}}|{{prompt:start:(\d+)}}|{{prompt:end:(\d+)}}|{{prompt:middletruncate:(\d+)}}/gi, (match, start, end, middle) => {
    if (match.toLowerCase() === '{{prompt}}') return prompt;
    if (start !== undefined) return prompt.slice(0, Number(start));
    if (end !== undefined) return Number(end) === 0 ? prompt : prompt.slice(-Number(end));
    if (middle !== undefined) {
      const length = Number(middle);
      if (prompt.length <= length) return prompt;
      return `${prompt.slice(0, Math.ceil(length / 2))}...${prompt.slice(prompt.length - Math.floor(length / 2))}`;
    }
    return '';
  });
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `{{MESSAGES}}` and its variants, for any variable name (replace_messages_variable). */
export function replaceMessagesVariable(template: string, messages: Message[] | null, name = 'MESSAGES'): string {
  const v = escapeRegExp(name);
  const filter = '(?:\\|(\\w+:\\d+))?';
  const pattern = new RegExp(`{{${v}${filter}}}|{{${v}:START:(\\d+)${filter}}}|{{${v}:END:(\\d+)${filter}}}|{{${v}:MIDDLETRUNCATE:(\\d+)${filter}}}`, 'g');
  return template.replace(pattern, (_match, bareFilter, start, startFilter, end, endFilter, middle, middleFilter) => {
    if (messages === null) return '';
    let selected: Message[];
    let contentFilter: string | undefined;
    if (start !== undefined) {
      selected = messages.slice(0, Number(start));
      contentFilter = startFilter;
    } else if (end !== undefined) {
      selected = Number(end) === 0 ? messages : messages.slice(-Number(end));
      contentFilter = endFilter;
    } else if (middle !== undefined) {
      const mid = Number(middle);
      if (messages.length <= mid) selected = messages;
      else {
        const half = Math.floor(mid / 2);
        const tail = mid % 2 === 0 ? half : half + 1;
        selected = [...messages.slice(0, half), ...(tail > 0 ? messages.slice(-tail) : [])];
      }
      contentFilter = middleFilter;
    } else {
      selected = messages;
      contentFilter = bareFilter;
    }
    return messagesText(contentFilter ? applyContentFilter(selected, contentFilter) : selected);
  });
}
