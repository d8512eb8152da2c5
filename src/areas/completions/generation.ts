import type { UserRecord } from '../../core/auth/user.js';
import { HttpError } from '../../core/http/errors.js';
import type { CallContext } from '../../core/upstream/headers.js';
import { type Json, type Message, isObject } from '../chats/history.js';
import type { Completer } from './direct.js';
import { type OutputItem, addUsage, closeRound, completeItems, displayOutput, messageItem, outputId, outputToMessages } from './output.js';
import { streamEvents } from './sse.js';
import type { CodeInterpreter } from './code-interpreter.js';
import { type TagPair, type TaggedDelta, TaggedOutput } from './reasoning.js';
import type { ChatTools, ToolCallExtras } from './tools.js';

/**
 * One assistant answer: the model is asked, its stream read into output items,
 * the tools it calls run and their results sent back, round after round until
 * it answers without calling a tool (native function calling, bounded rounds).
 * Where the answer goes (socket events, an SSE reply) is the sink's business.
 */
export interface GenerationSink {
  /** The answer so far (display form), after every change. */
  progress(output: OutputItem[]): void;
  /** New answer text, as it arrives. */
  text?(delta: string): void;
  /** New reasoning text, as it arrives (never part of the answer text). */
  reasoning?(delta: string): void;
  usage?(usage: Json): void;
}

export interface GenerationRequest {
  user: UserRecord;
  model: string;
  /** The conversation before this answer, provider-ready. */
  messages: Message[];
  /** Provider parameters (temperature, ...) and, for API clients, their own fields. */
  params: Json;
  stream: boolean;
  includeUsage: boolean;
  tools: ChatTools | null;
  /** Tool specs the caller sent itself (they pass through; calls to them are not run here). */
  clientTools: unknown[] | null;
  maxToolRounds: number;
  /** Reasoning tags to take out of the text (none: off); `<code_interpreter>` blocks with the code interpreter on. */
  tags: { reasoningTags: TagPair[]; codeInterpreter: CodeInterpreter | null };
  context: CallContext & { signal: AbortSignal };
  /** What every tool call gets besides its arguments (`__event_emitter__`, `__metadata__`, ...). */
  toolExtras(messages: Message[]): ToolCallExtras;
  /** Stream filter functions: each streamed chunk passes through them before it is read. */
  filterChunk?: ((chunk: Json) => Promise<Json>) | null;
}

export interface GenerationResult {
  output: OutputItem[];
  usage: Json | null;
  /** Why the answer stopped short (provider error, failure mid-stream, tool-call limit); null when it completed. */
  error: string | null;
  cancelled: boolean;
  finishReason: string | null;
}

interface PendingCall {
  id: string;
  name: string;
  arguments: string;
}

/** The message of a failure, as the frontend shows it. */
export function errorText(error: unknown): string {
  if (error instanceof HttpError) return typeof error.detail === 'string' ? error.detail : JSON.stringify(error.detail);
  if (error instanceof Error) return error.message;
  return String(error);
}

/** A provider's error body (`{error:{message}}`, `{detail}`, a string) as text. */
function providerError(body: unknown): string {
  if (typeof body === 'string') return body;
  if (isObject(body)) {
    if (typeof body.detail === 'string') return body.detail;
    const error = body.error;
    if (typeof error === 'string') return error;
    if (isObject(error) && typeof error.message === 'string') return error.message;
    // A pipe function's failure (functions.generate_function_chat_completion).
    if (isObject(error) && typeof error.detail === 'string') return error.detail;
  }
  return JSON.stringify(body);
}

class ProviderFailure extends Error {}

/** Code blocks run per answer, as the reference's MAX_RETRIES. */
const MAX_CODE_RUNS = 5;

export async function generate(completions: Completer, request: GenerationRequest, sink: GenerationSink): Promise<GenerationResult> {
  const output: OutputItem[] = [];
  const result: GenerationResult = { output, usage: null, error: null, cancelled: false, finishReason: null };
  const { signal } = request.context;
  let rounds = 0;
  let codeRuns = 0;
  try {
    for (;;) {
      const { calls, code } = await round(completions, request, output, result, sink);
      closeRound(output);
      if (signal.aborted) break;
      if (code && request.tags.codeInterpreter && codeRuns < MAX_CODE_RUNS) {
        codeRuns++;
        await runCode(request.tags.codeInterpreter, code, output, sink, signal);
        continue;
      }
      if (calls.length === 0) break;
      if (rounds >= request.maxToolRounds) {
        result.error = `Tool-call limit reached (${request.maxToolRounds} iterations).`;
        break;
      }
      rounds++;
      await runTools(request, calls, output, sink);
    }
  } catch (error) {
    if (signal.aborted) result.cancelled = true;
    else result.error = error instanceof ProviderFailure ? error.message : errorText(error);
    closeRound(output);
  }
  if (signal.aborted) result.cancelled = true;
  completeItems(output);
  if (output.length === 0) output.push({ ...messageItem(), status: 'completed' });
  return result;
}

/** One request to the model; returns the tool calls it made and the code block it wrote, if any. */
async function round(
  completions: Completer,
  request: GenerationRequest,
  output: OutputItem[],
  result: GenerationResult,
  sink: GenerationSink,
): Promise<{ calls: PendingCall[]; code: OutputItem | null }> {
  const tools = [...(request.tools?.specs() ?? []), ...(request.clientTools ?? [])];
  const payload: Json = {
    ...request.params,
    model: request.model,
    messages: [...request.messages, ...outputToMessages(output)],
    stream: request.stream,
    ...(request.stream && request.includeUsage ? { stream_options: { include_usage: true } } : {}),
    ...(tools.length > 0 ? { tools } : {}),
  };
  const answer = await completions.complete(request.user, payload, request.context, { bypassAccess: true });
  const calls = new Map<number, PendingCall>();
  const tagged = new TaggedOutput(output, { reasoningTags: request.tags.reasoningTags, codeInterpreter: request.tags.codeInterpreter !== null });
  if (answer.kind === 'json') {
    if (answer.status >= 400) throw new ProviderFailure(providerError(answer.body));
    readMessage(answer.body, tagged, calls, result, sink);
  } else {
    for await (const event of streamEvents(answer.body)) {
      if (!isObject(event)) continue;
      readChunk(request.filterChunk ? await request.filterChunk(event) : event, output, tagged, calls, result, sink);
      // The model's turn ends with its code block (the rest of the stream is not read): the code runs first.
      if (tagged.codeReady) break;
    }
  }
  if (report(tagged.finish(), sink)) sink.progress(displayOutput(output));
  if (tagged.codeReady) return { calls: [], code: tagged.codeReady };
  return { calls: [...calls.values()].filter((c) => c.name), code: null };
}

/** Text and reasoning the tags let through, to the sink's live readers. */
function report(added: TaggedDelta, sink: GenerationSink): boolean {
  if (added.reasoning) sink.reasoning?.(added.reasoning);
  if (added.text) sink.text?.(added.text);
  return Boolean(added.reasoning || added.text);
}

function reportUsage(raw: unknown, result: GenerationResult, sink: GenerationSink): void {
  if (!isObject(raw) || Object.keys(raw).length === 0) return;
  result.usage = addUsage(result.usage, raw);
  sink.usage?.(result.usage!);
}

/** A whole (non-streamed) Chat Completions answer. */
function readMessage(body: unknown, tagged: TaggedOutput, calls: Map<number, PendingCall>, result: GenerationResult, sink: GenerationSink): void {
  if (!isObject(body)) throw new ProviderFailure(providerError(body));
  if (body.error) throw new ProviderFailure(providerError(body));
  reportUsage(body.usage, result, sink);
  const choice = Array.isArray(body.choices) && isObject(body.choices[0]) ? body.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  result.finishReason = typeof choice.finish_reason === 'string' ? choice.finish_reason : null;
  const reasoning = upstreamReasoning(message);
  if (reasoning) {
    tagged.reasoning(reasoning);
    sink.reasoning?.(reasoning);
  }
  if (typeof message.content === 'string' && message.content) report(tagged.content(message.content), sink);
  if (Array.isArray(message.tool_calls)) {
    message.tool_calls.forEach((call, index) => {
      if (!isObject(call)) return;
      const fn = isObject(call.function) ? call.function : {};
      calls.set(index, {
        id: typeof call.id === 'string' && call.id ? call.id : outputId('call'),
        name: String(fn.name ?? ''),
        arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}),
      });
    });
  }
  sink.progress(displayOutput(tagged.output));
}

/** `reasoning_content` (OpenAI-style servers), `reasoning` (OpenRouter, Ollama's OpenAI API) or `thinking` (Ollama). */
function upstreamReasoning(delta: Json): string {
  const reasoning = delta.reasoning_content ?? delta.reasoning ?? delta.thinking;
  return typeof reasoning === 'string' ? reasoning : '';
}

/** One streamed chunk: usage, an error, text, reasoning or pieces of tool calls. */
function readChunk(chunk: Json, output: OutputItem[], tagged: TaggedOutput, calls: Map<number, PendingCall>, result: GenerationResult, sink: GenerationSink): void {
  reportUsage(chunk.usage, result, sink);
  const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
  if (choices.length === 0) {
    if (chunk.error) throw new ProviderFailure(providerError(chunk));
    return;
  }
  const choice = isObject(choices[0]) ? choices[0] : {};
  if (typeof choice.finish_reason === 'string') result.finishReason = choice.finish_reason;
  const delta = isObject(choice.delta) ? choice.delta : {};
  let changed = false;
  const reasoning = upstreamReasoning(delta);
  if (reasoning) {
    tagged.reasoning(reasoning);
    sink.reasoning?.(reasoning);
    changed = true;
  }
  if (typeof delta.content === 'string' && delta.content) {
    // Code streaming into a block changes the output without adding text.
    report(tagged.content(delta.content), sink);
    changed = true;
  }
  if (Array.isArray(delta.tool_calls)) {
    for (const piece of delta.tool_calls) {
      if (!isObject(piece)) continue;
      const index = typeof piece.index === 'number' ? piece.index : calls.size;
      const fn = isObject(piece.function) ? piece.function : {};
      const call = calls.get(index) ?? { id: '', name: '', arguments: '' };
      if (typeof piece.id === 'string' && piece.id) call.id = piece.id;
      if (typeof fn.name === 'string' && fn.name) call.name = fn.name;
      if (fn.arguments !== undefined && fn.arguments !== null) call.arguments += typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments);
      calls.set(index, call);
    }
    changed = true;
  }
  if (!changed) return;
  const pending = [...calls.values()].map((c) => callItem(c, 'in_progress'));
  sink.progress(pending.length > 0 ? [...displayOutput(output), ...pending] : displayOutput(output));
}

function callItem(call: PendingCall, status: string): OutputItem {
  return { type: 'function_call', id: call.id || outputId('fc'), call_id: call.id, name: call.name, arguments: call.arguments || '{}', status };
}

/** Runs the round's tool calls one after the other and appends their results; then a new message is opened for the next round. */
async function runTools(request: GenerationRequest, calls: PendingCall[], output: OutputItem[], sink: GenerationSink): Promise<void> {
  for (const call of calls) if (!call.id) call.id = outputId('call');
  const items = calls.map((call) => callItem(call, 'in_progress'));
  output.push(...items);
  sink.progress(displayOutput(output));
  const messages = [...request.messages, ...outputToMessages(output)];
  for (const [i, call] of calls.entries()) {
    request.context.signal.throwIfAborted();
    const outcome = request.tools
      ? await request.tools.call(request.user, call.name, call.arguments, request.toolExtras(messages))
      : { text: `Error: Tool "${call.name}" not found.`, images: [], files: [], embeds: [] };
    items[i].status = 'completed';
    output.push({
      type: 'function_call_output',
      id: outputId('fco'),
      call_id: call.id,
      output: [{ type: 'input_text', text: outcome.text }, ...outcome.images.map((url) => ({ type: 'input_image', image_url: url }))],
      status: 'completed',
      ...(outcome.files.length > 0 ? { files: outcome.files } : {}),
      ...(outcome.embeds.length > 0 ? { embeds: outcome.embeds } : {}),
    });
  }
  output.push(messageItem());
  sink.progress(displayOutput(output));
}

/** Runs the code block the model closed and shows its output; a new message is opened for the model's next turn. */
async function runCode(interpreter: CodeInterpreter, item: OutputItem, output: OutputItem[], sink: GenerationSink, signal: AbortSignal): Promise<void> {
  sink.progress(displayOutput(output));
  let result: unknown;
  // A stop does not wait for the engine (a browser tab may never answer).
  const stopped = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  stopped.catch(() => undefined);
  try {
    // As the reference: only blocks marked `type="code"` run; others come back with no output.
    result = isObject(item.attributes) && item.attributes.type === 'code' ? await Promise.race([interpreter.run(String(item.code ?? '')), stopped]) : '';
  } catch (error) {
    signal.throwIfAborted();
    result = { stderr: errorText(error) };
  }
  item.output = result as Json;
  item.status = 'completed';
  output.push(messageItem());
  sink.progress(displayOutput(output));
}
