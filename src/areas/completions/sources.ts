import { Readable } from 'node:stream';
import { fillRagTemplate } from '../../core/retrieval/template.js';
import type { Answer } from '../../core/upstream/service.js';
import { type Json, type Message, contentText, isObject } from '../chats/history.js';

/**
 * What was retrieved for one attachment, in the reference's shape
 * (retrieval/utils.py get_sources_from_items): the attachment as the request
 * named it, its passages, one metadata object per passage (`file_id`, `name`,
 * `source`, `page`, ...) and, for searched passages, their scores. The frontend
 * renders these as citations; the stored answer keeps them.
 */
export interface Source {
  source: Json;
  document: string[];
  metadata: Json[];
  distances?: number[];
  /** A tool's result under `function_calling: 'legacy'`, not a document's passage. */
  tool_result?: true;
}

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** The passage's citation key: its metadata's `source`, else the attachment's id (get_source_context). */
function citationKey(source: Source, index: number): string {
  const meta = source.metadata[index] ?? {};
  const key = meta.source ?? source.source.id;
  return typeof key === 'string' && key ? key : 'N/A';
}

/**
 * The `<source id="n" name=… resource-type=… resource-id=…>passage</source>` lines
 * the RAG template receives (middleware.py get_source_context): passages of the
 * same document share a number, which the model cites as [n]. Attribute values are
 * escaped (a file name could otherwise close the tag); passages are as written.
 */
export function sourceContext(sources: Source[]): string {
  const numbers = new Map<string, number>();
  let context = '';
  for (const source of sources) {
    const { name, type, id } = source.source;
    const attributes = [
      ...(typeof name === 'string' && name ? [` name="${escapeAttribute(name)}"`] : []),
      ...(typeof type === 'string' && type ? [` resource-type="${escapeAttribute(type)}"`] : []),
      ...(typeof id === 'string' && id ? [` resource-id="${escapeAttribute(id)}"`] : []),
    ].join('');
    source.document.forEach((passage, index) => {
      const key = citationKey(source, index);
      if (!numbers.has(key)) numbers.set(key, numbers.size + 1);
      context += `<source id="${numbers.get(key)}"${attributes}>${passage}</source>\n`;
    });
  }
  return context.trim();
}

/** How many documents the passages come from (the `sources_retrieved` status's count). */
export function documentCount(sources: Source[]): number {
  return new Set(sources.flatMap((source) => source.document.map((_, index) => citationKey(source, index)))).size;
}

/** The sources the frontend can name (those whose attachment has a name or an id); others only inform the model. */
export function citable(sources: Source[]): Source[] {
  return sources.filter((source) => source.source.name || source.source.id);
}

/**
 * The messages with the filled RAG template (apply_source_context_to_messages):
 * appended to the leading system message (RAG_SYSTEM_CONTEXT), or, by default,
 * put before the text of the last message when it is the user's.
 */
export function withSourceContext(messages: Message[], sources: Source[], template: string, query: string, inSystemMessage: boolean): Message[] {
  const context = sourceContext(sources);
  if (!context || !query) return messages;
  const text = fillRagTemplate(template, context, query);
  const copy = [...messages];
  if (inSystemMessage) {
    if (copy[0]?.role === 'system') copy[0] = withText(copy[0], text, 'after');
    else copy.unshift({ role: 'system', content: text });
  } else if (copy.at(-1)?.role === 'user') copy[copy.length - 1] = withText(copy.at(-1)!, text, 'before');
  else copy.push({ role: 'user', content: text });
  return copy;
}

/** The message with text added before or after its own (every text part of a list, as update_message_content). */
function withText(message: Message, text: string, where: 'before' | 'after'): Message {
  const join = (own: string) => (where === 'after' ? `${own}\n${text}` : `${text}\n${own}`);
  if (Array.isArray(message.content)) {
    return { ...message, content: message.content.map((part) => (isObject(part) && part.type === 'text' ? { ...part, text: join(String(part.text ?? '')) } : part)) };
  }
  return { ...message, content: join(contentText(message)) };
}

/** The server-sent event that carries an API client's sources before the answer's chunks. */
export const sourcesEvent = (sources: Source[]) => `data: ${JSON.stringify({ sources })}\n\n`;

/**
 * An API client's answer with its sources, as the reference sends them: first in a
 * JSON answer (merge_events_into_response), or as the first event of a stream
 * (`data: {"sources": [...]}`). Error answers are left as they are.
 */
export function withSources(answer: Answer, sources: Source[]): Answer {
  if (sources.length === 0 || answer.status >= 400) return answer;
  if (answer.kind === 'json') return isObject(answer.body) ? { ...answer, body: { sources, ...answer.body } } : answer;
  const upstream = answer.body;
  async function* prefixed() {
    yield sourcesEvent(sources);
    yield* upstream;
  }
  return { ...answer, body: Readable.from(prefixed(), { objectMode: false }) };
}
