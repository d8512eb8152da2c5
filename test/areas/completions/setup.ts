import { randomUUID } from 'node:crypto';
import { io, type Socket } from 'socket.io-client';
import { afterAll, beforeAll } from 'vitest';
import type { ServerWorld } from '../../helpers/world.js';

/** What a socket received: every `events` payload, in arrival order, stamped by the shared sequence. */
export interface Received {
  seq: number;
  chat_id: string;
  message_id: string;
  type: string;
  data: any;
}

/** One counter for socket arrivals and HTTP replies, so tests can tell which came first. */
let sequence = 0;
export const stamp = () => ++sequence;

export interface Browser {
  socket: Socket;
  received: Received[];
  /** Waits for an event matching `check` (already received or still to come). */
  next(check: (event: Received) => boolean, what?: string, timeoutMs?: number): Promise<Received>;
  close(): void;
}

/** A socket as the web frontend opens it (websocket transport, the token in the handshake). */
export async function openBrowser(url: string, token?: string): Promise<Browser> {
  const socket = io(url, { path: '/ws/socket.io', transports: ['websocket'], auth: token ? { token } : {}, reconnection: false, forceNew: true });
  const received: Received[] = [];
  socket.on('events', (payload: any) => {
    received.push({ seq: stamp(), chat_id: payload.chat_id, message_id: payload.message_id, type: payload.data?.type, data: payload.data?.data });
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  return {
    socket,
    received,
    async next(check, what = 'an event', timeoutMs = 5000) {
      const start = Date.now();
      for (;;) {
        const found = received.find(check);
        if (found) return found;
        if (Date.now() - start > timeoutMs) throw new Error(`Timed out waiting for ${what}; got ${JSON.stringify(received.map((r) => r.type))}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    close: () => void socket.close(),
  };
}

/** The admin's browser for the tests of the enclosing file or describe: opened in beforeAll, closed in afterAll. */
export function useBrowser(world: ServerWorld): Browser {
  const browser = {} as Browser;
  beforeAll(async () => {
    Object.assign(browser, await openBrowser(world.server.url, world.admin.token));
  });
  afterAll(() => {
    browser.close?.();
  });
  return browser;
}

/** The frontend's request for a new message (Chat.svelte sendMessage), as in the contract's journey (d). */
export function webRequest(
  socket: Socket,
  options: { model?: string; content: string; chatId?: string; parentId?: string | null; system?: string; extra?: Record<string, unknown> },
) {
  const userId = randomUUID();
  const assistantId = randomUUID();
  const model = options.model ?? 'fake-model';
  const now = Math.floor(Date.now() / 1000);
  const body = {
    stream: true,
    model,
    messages: options.system ? [{ role: 'system', content: options.system }] : [],
    params: {},
    tool_servers: [],
    features: { voice: false, image_generation: false, code_interpreter: false, web_search: false },
    variables: { '{{USER_NAME}}': 'Tester' },
    model_item: { id: model, name: model, object: 'model', owned_by: 'openai' },
    session_id: socket.id,
    ...(options.chatId ? { chat_id: options.chatId } : {}),
    id: assistantId,
    parent_id: options.parentId ?? null,
    user_message: { id: userId, parentId: options.parentId ?? null, childrenIds: [], role: 'user', content: options.content, timestamp: now, models: [model] },
    background_tasks: options.chatId ? { follow_up_generation: true } : { title_generation: true, tags_generation: true, follow_up_generation: true },
    ...options.extra,
  };
  return { body, userId, assistantId };
}

/** The text of an answer's output items. */
export function outputText(output: any[]): string {
  return (output ?? [])
    .filter((item) => item.type === 'message')
    .map((item) => item.content.map((p: any) => p.text).join(''))
    .join('\n');
}
