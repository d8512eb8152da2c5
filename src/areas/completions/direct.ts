import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { UserRecord } from '../../core/auth/user.js';
import { badRequest } from '../../core/http/errors.js';
import type { Realtime } from '../../core/realtime/server.js';
import type { CallContext } from '../../core/upstream/headers.js';
import type { Answer } from '../../core/upstream/service.js';
import type { CompletionsService } from '../models/completions.js';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** What a generation asks its model through (generation.ts): the server's providers, or a browser's direct connection. */
export type Completer = Pick<CompletionsService, 'complete'>;

/** The frontend's `model_item` when the model is one of the user's direct connections (`direct: true`). */
export function directModel(form: Json, modelId: string): Json | null {
  const item = form.model_item;
  return isObject(item) && item.direct === true && item.id === modelId ? item : null;
}

/**
 * A model of the user's own direct connection (Settings › Connections, kept in the browser), as
 * the reference's generate_direct_chat_completion: the server never sees the connection's URL or
 * key. The request goes to the browser's socket (`events`, `request:chat:completion` with the
 * form, the model and a channel name), which calls the connection and acknowledges: for a
 * stream `{status: true}` then each SSE line on the channel and `{done: true}`; otherwise the
 * JSON answer. The socket must be on this instance (the reference's `sio.on` is as local).
 */
export class DirectConnection implements Completer {
  constructor(
    private readonly realtime: Realtime,
    private readonly model: Json,
    private readonly sessionId: string | null,
  ) {}

  async complete(user: UserRecord, payload: Json, context: CallContext): Promise<Answer> {
    const { metadata: _metadata, ...form } = payload;
    const ids = isObject(context.metadata) ? context.metadata : {};
    const channel = `${user.id}:${this.sessionId}:${randomUUID()}`;
    const lines = new Readable({ read() {} });
    let stop: (() => void) | null = null;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      stop?.();
      lines.push(null);
    };
    stop = this.sessionId
      ? this.realtime.relay(
          this.sessionId,
          channel,
          (value) => {
            if (ended) return;
            if (isObject(value) && value.done) end();
            else if (isObject(value)) lines.push(`data: ${JSON.stringify(value)}\n\n`);
            else if (typeof value === 'string') lines.push(value.includes('data:') ? `${value}\n\n` : `data: ${value}\n\n`);
          },
          end,
        )
      : null;
    if (!stop) throw badRequest('Direct connection requires an active WebSocket session; cannot generate completion in this context (e.g. background task).');
    context.signal?.addEventListener('abort', end, { once: true });
    const answer = await this.realtime.callSession(this.sessionId!, user.id, 'events', {
      chat_id: ids.chat_id ?? null,
      message_id: ids.message_id ?? null,
      data: { type: 'request:chat:completion', data: { form_data: form, model: this.model, channel, session_id: this.sessionId } },
    });
    if (form.stream === true && isObject(answer) && answer.status === true) {
      return { kind: 'stream', status: 200, headers: {}, contentType: 'text/event-stream', body: lines };
    }
    end();
    // The browser's error (the connection's JSON error, or what it caught) fails the answer with it.
    if (!isObject(answer) || answer.error || form.stream === true) return { kind: 'json', status: 400, body: isObject(answer) && answer.error ? answer : { error: { message: JSON.stringify(answer) } } };
    return { kind: 'json', status: 200, body: answer };
  }
}
