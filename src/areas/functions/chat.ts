import type { UserRecord } from '../../core/auth/user.js';
import { badRequest } from '../../core/http/errors.js';
import { PluginError } from '../../core/python/errors.js';
import { ChatFilters } from './filters.js';
import type { FunctionsService } from './service.js';
import type { FunctionRecord } from './store.js';

type Json = Record<string, unknown>;

/** A chat message's live channel: `__event_emitter__` and `__event_call__` of the functions run for it. */
export interface LiveEvents {
  eventEmitter?: (event: unknown) => Promise<void>;
  eventCall?: (event: unknown) => Promise<unknown>;
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The text a failed function shows: its exception's `str(e)`. */
export function functionFailure(error: unknown): string {
  if (error instanceof PluginError) return error.details?.pythonMessage ?? error.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * What the chat pipeline asks of functions (utils/middleware.py, utils/chat.py,
 * utils/actions.py): inlet filters before the model, stream filters on every
 * chunk, outlet filters after the answer, and actions.
 */
export class ChatFunctions {
  readonly filters: ChatFilters;

  constructor(private readonly functions: FunctionsService) {
    this.filters = new ChatFilters(functions);
  }

  /** The filters of a model and request (global, the model's `filterIds`, the request's toggles), in order. */
  filtersFor(model: Json, filterIds: unknown): Promise<FunctionRecord[]> {
    return this.filters.forModel(model, filterIds);
  }

  /** Runs `stage` of `filters` over `body` with the reserved extras of the reference. */
  run(filters: FunctionRecord[], stage: 'inlet' | 'outlet', body: Json, user: UserRecord, model: Json, metadata: Json, live: LiveEvents = {}): Promise<Json> {
    if (filters.length === 0) return Promise.resolve(body);
    return this.filters.apply(filters, stage, body, user, {
      metadata,
      eventEmitter: live.eventEmitter,
      eventCall: live.eventCall,
      functionExtras: { __model__: model, __chat_id__: metadata.chat_id ?? null, __message_id__: metadata.message_id ?? null, __session_id__: metadata.session_id ?? null },
    });
  }

  /** A chunk transformer for the stream filters, or null when none may define `stream`. */
  streamFilter(filters: FunctionRecord[], user: UserRecord, model: Json, metadata: Json, live: LiveEvents = {}): ((chunk: Json) => Promise<Json>) | null {
    if (filters.length === 0 || !this.filters.mayRun(filters, 'stream')) return null;
    return (chunk) =>
      this.filters.apply(filters, 'stream', chunk, user, {
        metadata,
        eventEmitter: live.eventEmitter,
        eventCall: live.eventCall,
        functionExtras: { __model__: model },
      });
  }

  /**
   * `POST /api/chat/actions/{id}` (utils/actions.chat_action): `id` or
   * `id.sub_action` (then `__id__` is the sub-action's id). Returns what the
   * action returned; its events go to the chat through `live`.
   */
  async action(user: UserRecord, actionId: string, body: Json, model: Json, live: LiveEvents): Promise<unknown> {
    const [functionId, subAction] = actionId.split('.', 2);
    const fn = await this.functions.byId(functionId);
    if (!fn || fn.type !== 'action') throw badRequest(`Action not found: ${functionId}`);
    let result: { value: unknown; embeds?: string[] };
    try {
      result = await this.functions.run<{ value: unknown; embeds?: string[] }>(fn, 'action', {
        user,
        body,
        metadata: { chat_id: body.chat_id ?? null, message_id: body.id ?? null, session_id: body.session_id ?? null, user_id: user.id },
        eventEmitter: live.eventEmitter,
        eventCall: live.eventCall,
        functionExtras: { __model__: model, __id__: subAction ?? functionId },
      });
    } catch (error) {
      throw badRequest(`Error: ${functionFailure(error)}`);
    }
    if (!result.embeds?.length) return result.value;
    // A rich UI result: the embed goes to the message, the caller gets the status text in its place.
    await live.eventEmitter?.({ type: 'embeds', data: { embeds: result.embeds } });
    return parsedOr(result.value);
  }
}

/** JSON text as its value; other text as it is. */
function parsedOr(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** The messages an outlet sees (outlet_filter_handler): the branch up to the answer, with the fields the reference passes. */
export function outletMessages(list: Json[]): Json[] {
  return list.map((m) => ({
    id: m.id ?? null,
    role: m.role ?? null,
    content: m.content ?? '',
    info: m.info ?? null,
    timestamp: m.timestamp ?? null,
    ...(m.output ? { output: m.output } : {}),
    ...(isObject(m.usage) ? { usage: m.usage } : {}),
    ...(m.sources ? { sources: m.sources } : {}),
  }));
}
