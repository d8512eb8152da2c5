import { randomBytes } from 'node:crypto';
import { type Json, type Message, isObject } from '../chats/history.js';

/**
 * An assistant answer as the frontend stores and renders it: a list of
 * Responses-style output items (`message`, `function_call`,
 * `function_call_output`, `reasoning`, `open_webui:code_interpreter`), and the conversions between those
 * items and Chat Completions messages (utils/misc.convert_output_to_messages).
 */
export type OutputItem = Json;

/** `<prefix>_<24 hex>`, the reference's item ids. */
export const outputId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

export function messageItem(text = ''): OutputItem {
  return { type: 'message', id: outputId('msg'), status: 'in_progress', role: 'assistant', content: [{ type: 'output_text', text }] };
}

/** The text of the last item when it is a message being written (else null). */
export function openText(output: OutputItem[]): { part: Json } | null {
  const last = output.at(-1);
  if (!last || last.type !== 'message' || !Array.isArray(last.content)) return null;
  const part = last.content.at(-1);
  return isObject(part) && part.type === 'output_text' ? { part } : null;
}

/** Appends streamed text to the message being written, opening one when needed. */
export function appendText(output: OutputItem[], text: string): void {
  let open = openText(output);
  if (!open) {
    output.push(messageItem());
    open = openText(output)!;
  }
  open.part.text = `${String(open.part.text ?? '')}${text}`;
}

/** The end of a round: the last message's text trimmed, an empty trailing message dropped (unless it is all there is). */
export function closeRound(output: OutputItem[]): void {
  const open = openText(output);
  if (!open) return;
  open.part.text = String(open.part.text ?? '').trim();
  if (!open.part.text && output.length > 1) output.pop();
}

export function completeItems(output: OutputItem[]): void {
  for (const item of output) if (item.status === 'in_progress') item.status = 'completed';
}

/** All message text of an answer (get_output_text). */
export function outputText(output: OutputItem[]): string {
  const texts: string[] = [];
  for (const item of output) {
    if (item.type !== 'message' || !Array.isArray(item.content)) continue;
    const text = item.content.map((p) => (isObject(p) && p.text !== undefined && p.text !== null ? String(p.text) : '')).join('');
    if (text.trim()) texts.push(text);
  }
  return texts.join('\n');
}

/** What the frontend is sent: tool images (meant for the model) left out of tool outputs. */
export function displayOutput(output: OutputItem[]): OutputItem[] {
  return output.map((item) => {
    if (item.type !== 'function_call_output' || !Array.isArray(item.output)) return item;
    const parts = item.output.filter((p) => !(isObject(p) && p.type === 'input_image'));
    return parts.length === item.output.length ? item : { ...item, output: parts };
  });
}

/**
 * Output items as Chat Completions messages: text and tool calls gathered into
 * assistant messages, each tool output a `tool` message; images a tool returned
 * follow in a user message, since tool messages cannot carry images.
 */
export function outputToMessages(output: unknown): Message[] {
  if (!Array.isArray(output)) return [];
  const messages: Message[] = [];
  let content: string[] = [];
  let toolCalls: Json[] = [];
  let images: string[] = [];
  const flush = () => {
    if (content.length === 0 && toolCalls.length === 0) return;
    messages.push({ role: 'assistant', content: content.join('\n'), ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) });
    content = [];
    toolCalls = [];
  };
  const flushImages = () => {
    if (images.length === 0) return;
    messages.push({
      role: 'user',
      content: [{ type: 'text', text: 'Here are the images from the tool results above. Please analyze them.' }, ...images.map((url) => ({ type: 'image_url', image_url: { url } }))],
    });
    images = [];
  };
  for (const item of output) {
    if (!isObject(item)) continue;
    if (item.type !== 'function_call_output') flushImages();
    if (item.type === 'message') {
      const text = Array.isArray(item.content) ? item.content.map((p) => (isObject(p) && p.type === 'output_text' ? String(p.text ?? '') : '')).join('') : '';
      if (text) content.push(text);
    } else if (item.type === 'open_webui:code_interpreter') {
      // The code and what it printed, so the model knows the code already ran.
      if (item.code) content.push(`<code_interpreter>\n${String(item.code)}\n</code_interpreter>`);
      const shown = isObject(item.output) ? item.output.stdout || item.output.result : item.output;
      if (shown) content.push(`<code_interpreter_output>\n${String(shown)}\n</code_interpreter_output>`);
    } else if (item.type === 'function_call') {
      const args = typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {});
      toolCalls.push({ id: String(item.call_id ?? ''), type: 'function', function: { name: String(item.name ?? ''), arguments: args } });
    } else if (item.type === 'function_call_output') {
      flush();
      let text = '';
      for (const part of Array.isArray(item.output) ? item.output : []) {
        if (!isObject(part)) continue;
        if (part.type === 'input_text') text += String(part.text ?? '');
        else if (part.type === 'input_image' && typeof part.image_url === 'string' && part.image_url) images.push(part.image_url);
      }
      messages.push({ role: 'tool', tool_call_id: String(item.call_id ?? ''), content: text });
    }
  }
  flush();
  flushImages();
  return messages;
}

/**
 * Tool calls and tool results only in matching pairs: a provider rejects a
 * tool result whose call is missing and a call whose result is missing, which
 * a stopped or failed earlier answer can leave behind (sanitize_tool_pairs).
 */
export function sanitizeToolPairs(messages: Message[]): Message[] {
  const resultIds = new Set(messages.filter((m) => m.role === 'tool' && m.tool_call_id).map((m) => m.tool_call_id));
  const callIds = new Set(
    messages.flatMap((m) => (m.role === 'assistant' && Array.isArray(m.tool_calls) ? m.tool_calls.map((c) => (isObject(c) ? c.id : undefined)) : [])).filter(Boolean),
  );
  const out: Message[] = [];
  for (const message of messages) {
    if (message.role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      const kept = message.tool_calls.filter((c) => isObject(c) && resultIds.has(c.id));
      if (kept.length > 0) out.push({ ...message, tool_calls: kept });
      else {
        const { tool_calls: _calls, ...rest } = message;
        if (rest.content) out.push(rest);
      }
    } else if (message.role !== 'tool' || callIds.has(message.tool_call_id)) out.push(message);
  }
  return out;
}

/** Token counts under the standard names too (normalize_usage), summed over the rounds of one answer. */
export function addUsage(current: Json | null, incoming: unknown): Json | null {
  if (!isObject(incoming) || Object.keys(incoming).length === 0) return current;
  const number = (...values: unknown[]) => Number(values.find((v) => typeof v === 'number' && v) ?? 0);
  const input = number(incoming.input_tokens, incoming.prompt_tokens, incoming.prompt_eval_count, incoming.prompt_n);
  const output = number(incoming.output_tokens, incoming.completion_tokens, incoming.eval_count, incoming.predicted_n);
  const normalized: Json = { ...incoming, input_tokens: input, output_tokens: output, total_tokens: number(incoming.total_tokens) || input + output };
  if (!current) return normalized;
  const merged: Json = { ...current, ...normalized };
  for (const key of ['input_tokens', 'output_tokens', 'total_tokens', 'prompt_tokens', 'completion_tokens']) {
    if (typeof current[key] === 'number' || typeof normalized[key] === 'number') merged[key] = Number(current[key] ?? 0) + Number(normalized[key] ?? 0);
  }
  return merged;
}
