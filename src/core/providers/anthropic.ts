import { randomBytes } from 'node:crypto';

/**
 * Anthropic Messages ⇄ OpenAI Chat Completions (utils/anthropic.py), so that
 * `POST /api/v1/messages` serves every model, whatever its provider speaks.
 */
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const hex = (n: number) => randomBytes(Math.ceil(n / 2)).toString('hex').slice(0, n);

const CONVERTED = new Set(['model', 'messages', 'system', 'max_tokens', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'stream', 'metadata', 'service_tier', 'tools', 'tool_choice', 'reasoning_effort']);

function withCacheControl(source: unknown, target: Json): Json {
  if (isObject(source) && 'cache_control' in source) target.cache_control = source.cache_control;
  return target;
}

/** One text block without cache hints becomes a plain string, as OpenAI clients expect. */
function finalContent(blocks: Json[]): string | Json[] {
  if (blocks.length === 0) return '';
  if (blocks.length === 1 && blocks[0].type === 'text' && !('cache_control' in blocks[0])) return String(blocks[0].text ?? '');
  return blocks;
}

function imageBlock(block: Json): Json | null {
  const source = isObject(block.source) ? block.source : {};
  if (source.type === 'base64') return withCacheControl(block, { type: 'image_url', image_url: { url: `data:${String(source.media_type ?? 'image/png')};base64,${String(source.data ?? '')}` } });
  if (source.type === 'url') return withCacheControl(block, { type: 'image_url', image_url: { url: String(source.url ?? '') } });
  return null;
}

function toolResultContent(block: Json): string | Json[] {
  const content = block.content;
  let result: string | Json[] = '';
  if (typeof content === 'string') result = content;
  else if (Array.isArray(content)) {
    const parts: Json[] = [];
    for (const part of content.filter(isObject)) {
      const type = part.type ?? 'text';
      if (type === 'text') parts.push(withCacheControl(part, { type: 'text', text: part.text ?? '' }));
      else if (type === 'image') {
        const image = imageBlock(part);
        if (image) parts.push(image);
      } else if (type === 'document') {
        const source = isObject(part.source) ? part.source : {};
        let text = `[Document: ${String(part.title ?? 'Document')}]`;
        if (part.context) text += `\n${String(part.context)}`;
        if (source.type === 'text' && source.data) text += `\n${String(source.data)}`;
        parts.push({ type: 'text', text });
      } else if (type === 'search_result') {
        const body = (Array.isArray(part.content) ? part.content.filter(isObject) : []).filter((b) => b.type === 'text').map((b) => String(b.text ?? '')).join('\n');
        let text = `[Search Result: ${String(part.title ?? '')}]`;
        if (part.source) text += `\nSource: ${String(part.source)}`;
        if (body) text += `\n${body}`;
        parts.push({ type: 'text', text });
      }
    }
    result = parts.every((p) => p.type === 'text' && !('cache_control' in p)) ? parts.map((p) => String(p.text ?? '')).join('\n') : parts;
  }
  if (block.is_error) {
    if (typeof result === 'string') result = `Error: ${result}`;
    else result.unshift({ type: 'text', text: 'Error: ' });
  }
  return result;
}

/** An Anthropic Messages request as a Chat Completions request (convert_anthropic_to_openai_payload). */
export function anthropicToOpenAI(payload: Json): Json {
  const messages: Json[] = [];
  const system = payload.system;
  if (typeof system === 'string' && system) messages.push({ role: 'system', content: system });
  else if (Array.isArray(system) && system.length > 0) {
    const blocks = system.flatMap((b): Json[] => (typeof b === 'string' ? [{ type: 'text', text: b }] : isObject(b) && b.type === 'text' ? [withCacheControl(b, { type: 'text', text: b.text ?? '' })] : []));
    messages.push({ role: 'system', content: finalContent(blocks) });
  }
  for (const message of Array.isArray(payload.messages) ? payload.messages.filter(isObject) : []) {
    const role = String(message.role ?? 'user');
    const content = message.content;
    if (typeof content === 'string') {
      messages.push({ role, content });
      continue;
    }
    if (!Array.isArray(content)) {
      messages.push({ role, content: content ? String(content) : '' });
      continue;
    }
    const blocks: Json[] = [];
    const toolCalls: Json[] = [];
    for (const block of content.filter(isObject)) {
      const type = block.type ?? 'text';
      if (type === 'text') blocks.push(withCacheControl(block, { type: 'text', text: block.text ?? '' }));
      else if (type === 'thinking' || type === 'redacted_thinking') blocks.push({ ...block });
      else if (type === 'image') {
        const image = imageBlock(block);
        if (image) blocks.push(image);
      } else if (type === 'tool_use') {
        toolCalls.push({
          id: block.id ?? '',
          type: 'function',
          function: { name: block.name ?? '', arguments: isObject(block.input) ? JSON.stringify(block.input) : String(block.input ?? '{}') },
        });
      } else if (type === 'tool_result') {
        messages.push({ role: 'tool', tool_call_id: block.tool_use_id ?? '', content: toolResultContent(block) });
      }
    }
    if (toolCalls.length > 0) messages.push({ role, content: blocks.length > 0 ? finalContent(blocks) : '', tool_calls: toolCalls });
    else if (blocks.length > 0) messages.push({ role, content: finalContent(blocks) });
  }

  const out: Json = { model: payload.model ?? '', messages };
  if ('max_tokens' in payload) out.max_tokens = payload.max_tokens;
  const outputConfig = payload.output_config;
  if (isObject(outputConfig)) {
    if ('effort' in outputConfig && !('reasoning_effort' in payload)) out.reasoning_effort = outputConfig.effort;
    const format = outputConfig.format;
    if (isObject(format) && format.type === 'json_schema') {
      const schema: Json = { name: format.name ?? 'response_schema', schema: format.schema ?? {} };
      if ('description' in format) schema.description = format.description;
      if ('strict' in format) schema.strict = format.strict;
      out.response_format = { type: 'json_schema', json_schema: schema };
    } else if (isObject(format) && format.type === 'json_object') out.response_format = { type: 'json_object' };
  }
  if ('reasoning_effort' in payload) out.reasoning_effort = payload.reasoning_effort;
  for (const key of ['temperature', 'top_p', 'top_k', 'stream', 'metadata', 'service_tier']) if (key in payload) out[key] = payload[key];
  if ('stop_sequences' in payload) out.stop = payload.stop_sequences;
  if (Array.isArray(payload.tools)) {
    out.tools = payload.tools.filter(isObject).map((tool) =>
      withCacheControl(tool, { type: 'function', function: { name: tool.name ?? '', description: tool.description ?? '', parameters: tool.input_schema ?? {} } }),
    );
  }
  const choice = payload.tool_choice;
  if (isObject(choice)) {
    if (choice.type === 'auto' || choice.type === undefined) out.tool_choice = 'auto';
    else if (choice.type === 'any') out.tool_choice = 'required';
    else if (choice.type === 'tool') out.tool_choice = { type: 'function', function: { name: choice.name ?? '' } };
  }
  return out;
}

/** Fields of `payload` the conversion does not map (passed on only when a connection allows them). */
export function unconvertedParams(payload: Json): Json {
  return Object.fromEntries(Object.entries(payload).filter(([key]) => !CONVERTED.has(key)));
}

const STOP_REASONS: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'end_turn' };

function usageOf(usage: Json, fallbackInput: number | null): Json {
  const cacheCreation = usage.cache_creation_input_tokens;
  let cacheRead = usage.cache_read_input_tokens;
  if (cacheRead === undefined && isObject(usage.prompt_tokens_details)) cacheRead = usage.prompt_tokens_details.cached_tokens;
  let input = usage.input_tokens;
  if (input === undefined && typeof usage.prompt_tokens === 'number') input = Math.max(usage.prompt_tokens - Number(cacheCreation ?? 0) - Number(cacheRead ?? 0), 0);
  const output = usage.output_tokens ?? usage.completion_tokens;
  const out: Json = { input_tokens: input ?? fallbackInput ?? 0, output_tokens: output ?? 0 };
  if (cacheCreation !== undefined) out.cache_creation_input_tokens = cacheCreation;
  if (cacheRead !== undefined) out.cache_read_input_tokens = cacheRead;
  return out;
}

/** A Chat Completion as an Anthropic Message (convert_openai_to_anthropic_response). */
export function openAIToAnthropic(response: Json, model: string): Json {
  const choice = Array.isArray(response.choices) && isObject(response.choices[0]) ? response.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const content: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning ?? (typeof message.thinking === 'string' ? message.thinking : null);
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning });
  if (message.content) content.push({ type: 'text', text: message.content });
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : []) {
    const fn = isObject(call.function) ? call.function : {};
    let input: unknown = {};
    try {
      input = JSON.parse(String(fn.arguments ?? '{}'));
    } catch {
      input = {};
    }
    content.push({ type: 'tool_use', id: call.id ?? `toolu_${hex(24)}`, name: fn.name ?? '', input });
  }
  return {
    id: response.id ?? `msg_${hex(24)}`,
    type: 'message',
    role: 'assistant',
    content,
    model: model || response.model || '',
    stop_reason: STOP_REASONS[String(choice.finish_reason ?? 'stop')] ?? 'end_turn',
    stop_sequence: null,
    usage: usageOf(isObject(response.usage) ? response.usage : {}, null),
  };
}

const sse = (event: string, data: Json) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

interface ToolState {
  id: string;
  name: string;
  args: string;
  index: number;
  started: boolean;
  stopped: boolean;
}

/**
 * A Chat Completions event stream as an Anthropic Messages event stream
 * (openai_stream_to_anthropic_stream): message_start, one content block per
 * text, thinking or tool call, message_delta with the stop reason, message_stop.
 */
export async function* openAIStreamToAnthropic(source: AsyncIterable<Buffer | string>, model: string): AsyncGenerator<string> {
  const id = `msg_${hex(24)}`;
  yield sse('message_start', {
    type: 'message_start',
    message: { id, type: 'message', role: 'assistant', content: [], model, stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } },
  });
  let index = 0;
  let thinkingOpen = false;
  let textOpen = false;
  let toolsSeen = false;
  let stopReason = 'end_turn';
  let usage: Json = { output_tokens: 0 };
  const tools = new Map<string, ToolState>();
  const toolByIndex = new Map<number, string>();
  const stop = (i: number) => sse('content_block_stop', { type: 'content_block_stop', index: i });

  let buffer = '';
  const decoder = new TextDecoder();
  for await (const chunk of source) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf('\n');
      if (!line.startsWith('data:')) continue;
      const text = line.slice(5).trim();
      if (!text || text === '[DONE]' || text === '{}') continue;
      let data: Json;
      try {
        data = JSON.parse(text) as Json;
      } catch {
        continue;
      }
      if (isObject(data.usage)) usage = usageOf(data.usage, null);
      const choice = Array.isArray(data.choices) && isObject(data.choices[0]) ? data.choices[0] : null;
      if (!choice) continue;
      const delta = isObject(choice.delta) ? choice.delta : {};
      const reasoning = delta.reasoning_content ?? delta.reasoning ?? delta.thinking;
      if (typeof reasoning === 'string' && reasoning && !textOpen && !toolsSeen) {
        if (!thinkingOpen) {
          yield sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '' } });
          thinkingOpen = true;
        }
        yield sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: reasoning } });
      }
      if (typeof delta.content === 'string' && delta.content && !toolsSeen) {
        if (thinkingOpen) {
          yield stop(index++);
          thinkingOpen = false;
        }
        if (!textOpen) {
          yield sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
          textOpen = true;
        }
        yield sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: delta.content } });
      }
      const calls = Array.isArray(delta.tool_calls) ? delta.tool_calls.filter(isObject) : [];
      if (calls.length > 0) {
        if (thinkingOpen) {
          yield stop(index++);
          thinkingOpen = false;
        }
        if (textOpen) {
          yield stop(index++);
          textOpen = false;
        }
        for (const call of calls) {
          const position = Number(call.index ?? 0);
          const fn = isObject(call.function) ? call.function : {};
          let key = typeof call.id === 'string' && call.id ? call.id : toolByIndex.get(position);
          if (!key) key = `toolu_${hex(24)}`;
          let tool = tools.get(key);
          if (!tool) {
            tool = { id: key, name: '', args: '', index: -1, started: false, stopped: false };
            tools.set(key, tool);
          }
          toolByIndex.set(position, key);
          if (typeof fn.name === 'string' && fn.name && !tool.name) tool.name = fn.name;
          if (!tool.started && tool.name) {
            tool.index = index++;
            tool.started = true;
            toolsSeen = true;
            yield sse('content_block_start', { type: 'content_block_start', index: tool.index, content_block: { type: 'tool_use', id: tool.id, name: tool.name, input: {} } });
          }
          const args = typeof fn.arguments === 'string' ? fn.arguments : '';
          if (args) {
            tool.args += args;
            if (tool.started && !tool.stopped) {
              yield sse('content_block_delta', { type: 'content_block_delta', index: tool.index, delta: { type: 'input_json_delta', partial_json: args } });
              try {
                JSON.parse(tool.args);
                tool.stopped = true;
                yield stop(tool.index);
              } catch {
                // arguments still arriving
              }
            }
          }
        }
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) stopReason = STOP_REASONS[String(choice.finish_reason)] ?? 'end_turn';
    }
  }
  if (thinkingOpen) yield stop(index++);
  for (const tool of tools.values()) {
    if (tool.started || !tool.name) continue;
    tool.index = index++;
    tool.started = true;
    yield sse('content_block_start', { type: 'content_block_start', index: tool.index, content_block: { type: 'tool_use', id: tool.id, name: tool.name, input: {} } });
    if (tool.args) yield sse('content_block_delta', { type: 'content_block_delta', index: tool.index, delta: { type: 'input_json_delta', partial_json: tool.args } });
  }
  if (textOpen) yield stop(index);
  for (const tool of tools.values()) if (tool.started && !tool.stopped) yield stop(tool.index);
  yield sse('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage });
  yield sse('message_stop', { type: 'message_stop' });
}
