import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { UserRecord } from '../../core/auth/user.js';
import { PluginError } from '../../core/python/errors.js';
import type { PipeChunk } from '../../core/python/host.js';
import type { CallContext } from '../../core/upstream/headers.js';
import type { Answer } from '../../core/upstream/service.js';
import type { FunctionsService } from './service.js';
import type { FunctionRecord } from './store.js';

type Json = Record<string, unknown>;

/** What a pipe's call answered: text, a JSON value, or a stream already passed on item by item. */
type PipeResult = { kind: 'text'; text: string } | { kind: 'json'; value: unknown } | { kind: 'stream' };

/** A pipe function's models: one (not a manifold) or its sub-pipes. */
interface PipeList {
  manifold: boolean;
  pipes: { id: string; name: string }[];
  prefix: string | null;
  has_user_valves: boolean;
}

/** A chat's live events for a pipe's `__event_emitter__` / `__event_call__` (given by the chat layer). */
export interface PipeEvents {
  emitter?: (event: unknown) => Promise<void>;
  call?: (event: unknown) => Promise<unknown>;
}

export type PipeEventsFactory = (user: UserRecord, metadata: Json) => PipeEvents;

const now = () => Math.floor(Date.now() / 1000);

/** How long a manifold's `pipes` may take when the model list is built. */
const PIPES_LIST_TIMEOUT_MS = 10_000;

/** openai_chat_chunk_message_template */
function chunkOf(model: string, content: string | null, finishReason: string | null = null): Json {
  return {
    id: `${model}-${randomUUID()}`,
    created: now(),
    model,
    choices: [{ index: 0, logprobs: null, finish_reason: finishReason, delta: content ? { content } : {} }],
    object: 'chat.completion.chunk',
  };
}

/** openai_chat_completion_message_template */
function completionOf(model: string, content: string): Json {
  return {
    id: `${model}-${randomUUID()}`,
    created: now(),
    model,
    choices: [{ index: 0, logprobs: null, finish_reason: 'stop', message: { role: 'assistant', content } }],
    object: 'chat.completion',
  };
}

/** What a failed pipe tells the chat: the exception's text, as the reference's `str(e)`. */
function failureText(error: unknown): string {
  if (error instanceof PluginError) return error.details?.pythonMessage ?? error.message;
  return error instanceof Error ? error.message : String(error);
}

/** One streamed item as the reference's `process_line`: `data:` lines and raw bytes as they are, the rest as content chunks. */
function sseOf(model: string, chunk: PipeChunk): string {
  if ('raw' in chunk) return chunk.raw;
  if ('json' in chunk) return `data: ${JSON.stringify(chunk.json)}\n\n`;
  if (chunk.text === '') return ''; // the blank lines between an upstream's events
  if (chunk.text.startsWith('data:')) return `${chunk.text}\n\n`;
  return `data: ${JSON.stringify(chunkOf(model, chunk.text))}\n\n`;
}

/** A streamed item's text, for a pipe answering a request that is not streamed. */
function textOf(chunk: PipeChunk): string {
  if ('text' in chunk) return chunk.text;
  if ('raw' in chunk) return chunk.raw;
  const json = chunk.json as Json;
  const choice = Array.isArray(json?.choices) ? (json.choices[0] as Json) : null;
  const delta = choice && typeof choice.delta === 'object' && choice.delta ? (choice.delta as Json) : null;
  return typeof delta?.content === 'string' ? delta.content : JSON.stringify(chunk.json);
}

/**
 * Pipe functions as models (functions.get_function_models) and their answers
 * (generate_function_chat_completion): a pipe is a provider whose model list
 * comes from the active pipe functions and whose answers come from `pipe()`,
 * in OpenAI's format, streamed or not.
 */
export class PipeModels {
  private listed: { version: number; models: Json[] } | null = null;
  private listing: { version: number; promise: Promise<Json[]> } | null = null;

  constructor(
    private readonly functions: FunctionsService,
    private readonly events: PipeEventsFactory,
    private readonly log: { warn(details: unknown, message: string): void },
  ) {}

  /** Changes whenever a function changes: the model list is built again. */
  version(): number {
    return this.functions.changes;
  }

  /** The models of the active pipes; a manifold gives `{function id}.{pipe id}` models named with its `name` prefix. */
  async models(): Promise<Json[]> {
    const version = this.version();
    if (this.listed?.version === version) return this.listed.models;
    // A listing started before the last change would answer the old list: only one of this version is shared.
    if (this.listing?.version !== version) {
      const promise = this.list(version).finally(() => {
        if (this.listing?.promise === promise) this.listing = null;
      });
      this.listing = { version, promise };
    }
    return this.listing.promise;
  }

  private async list(version: number): Promise<Json[]> {
    const models: Json[] = [];
    for (const fn of await this.functions.active('pipe')) {
      try {
        // The model list waits for this: a manifold that hangs must not hold it for the whole call timeout.
        const listed = await this.functions.run<PipeList>(fn, 'pipes', { timeoutMs: PIPES_LIST_TIMEOUT_MS });
        const base = { object: 'model', created: fn.created_at, owned_by: 'openai', pipe: { type: 'pipe' }, has_user_valves: listed.has_user_valves };
        if (!listed.manifold) models.push({ id: fn.id, name: fn.name, ...base });
        for (const pipe of listed.pipes) models.push({ id: `${fn.id}.${pipe.id}`, name: `${listed.prefix ?? ''}${pipe.name}`, ...base });
      } catch (error) {
        // As the reference: a manifold whose list fails contributes no models.
        this.log.warn({ function: fn.id, error: failureText(error) }, 'A pipe function could not list its models');
      }
    }
    if (!this.listed || this.listed.version < version) this.listed = { version, models };
    return models;
  }

  /**
   * The `actions` and `filters` of a listed model (utils/models.get_all_models):
   * active actions and toggleable filters that are global or named by the
   * model's `meta.actionIds` / `meta.filterIds`; an action with `actions`
   * gives one button per entry (`{function id}.{action id}`).
   */
  async items(): Promise<(model: Json) => { actions: Json[]; filters: Json[] }> {
    const [actions, filters] = await Promise.all([this.functions.active('action'), this.functions.active('filter')]);
    const icon = (fn: FunctionRecord) => (fn.meta.manifest as Json | null)?.icon_url ?? fn.traits?.icon ?? null;
    const description = (fn: FunctionRecord) => fn.meta.description ?? null;
    const buttons = (fn: FunctionRecord): Json[] =>
      fn.traits?.actions
        ? fn.traits.actions.map((a) => ({ id: `${fn.id}.${a.id}`, name: a.name ?? `${fn.name} (${a.id})`, description: description(fn), icon: a.icon_url ?? icon(fn) }))
        : [{ id: fn.id, name: fn.name, description: description(fn), icon: icon(fn) }];
    const toggle = (fn: FunctionRecord): Json => ({ id: fn.id, name: fn.name, description: description(fn), icon: icon(fn), has_user_valves: fn.traits?.has_user_valves ?? false });
    const chosen = (list: FunctionRecord[], named: unknown) => {
      const ids = new Set(Array.isArray(named) ? named.map(String) : []);
      return list.filter((fn) => fn.is_global || ids.has(fn.id)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    };
    return (model) => {
      const info = model.info as Json | undefined;
      const meta = (info?.meta ?? {}) as Json;
      return {
        actions: chosen(actions, meta.actionIds).flatMap(buttons),
        filters: chosen(filters, meta.filterIds).filter((fn) => fn.meta.toggle === true).map(toggle),
      };
    };
  }

  /** The active pipe function serving a model id (`{function id}` or `{function id}.{pipe id}`), if any. */
  async serving(modelId: string): Promise<FunctionRecord | null> {
    const id = modelId.split('.')[0];
    const fn = id ? await this.functions.byId(id) : null;
    return fn && fn.type === 'pipe' && fn.is_active ? fn : null;
  }

  /** An OpenAI-style request answered by the pipe: an event stream when `payload.stream`, else a completion. */
  async chat(user: UserRecord, fn: FunctionRecord, payload: Json, context: CallContext): Promise<Answer> {
    const metadata: Json = { ...(context.metadata ?? {}) };
    const model = String(payload.model ?? fn.id);
    const live = metadata.chat_id && metadata.message_id && metadata.session_id ? this.events(user, metadata) : {};
    const run = (onChunk: (chunk: PipeChunk) => void) =>
      this.functions.run<PipeResult>(fn, 'pipe', {
        user,
        body: payload,
        metadata,
        eventEmitter: live.emitter,
        eventCall: live.call,
        functionExtras: {
          __chat_id__: metadata.chat_id ?? null,
          __session_id__: metadata.session_id ?? null,
          __message_id__: metadata.message_id ?? null,
          __task__: metadata.task ?? null,
          __task_body__: metadata.task_body ?? null,
          __files__: metadata.files ?? [],
          __tools__: {},
          __messages__: payload.messages ?? [],
          __model__: { id: model },
        },
        onChunk,
        signal: context.signal,
      });

    if (payload.stream !== true) {
      const parts: string[] = [];
      try {
        const result = await run((chunk) => void parts.push(textOf(chunk)));
        if (result.kind === 'json') return { kind: 'json', status: 200, body: result.value };
        return { kind: 'json', status: 200, body: completionOf(model, result.kind === 'text' ? result.text : parts.join('')) };
      } catch (error) {
        if (context.signal?.aborted) throw error;
        return { kind: 'json', status: 200, body: { error: { detail: failureText(error) } } };
      }
    }

    const out = new PassThrough();
    const write = (text: string) => {
      if (!out.writableEnded) out.write(text);
    };
    void run((chunk) => write(sseOf(model, chunk)))
      .then((result) => {
        if (result.kind === 'json') return write(`data: ${JSON.stringify(result.value)}\n\n`);
        if (result.kind === 'text') write(`data: ${JSON.stringify(chunkOf(model, result.text))}\n\n`);
        write(`data: ${JSON.stringify(chunkOf(model, null, 'stop'))}\n\n`);
        write('data: [DONE]\n\n');
      })
      .catch((error: unknown) => write(`data: ${JSON.stringify({ error: { detail: failureText(error) } })}\n\n`))
      .finally(() => out.end());
    return { kind: 'stream', status: 200, headers: {}, contentType: 'text/event-stream', body: out };
  }
}
