import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { completionChunk, lastUserText, onlyOpenAI, readJson, sendJson } from './fake-upstreams.js';
import { listenLocally } from './server.js';
import type { Fakes } from './world.js';

/**
 * A scriptable OpenAI-compatible model for the chat pipeline's tests: each
 * `POST /chat/completions` is answered by `script(body)`, which says what to
 * write (text streamed word by word, tool calls), how fast, and whether to
 * break the connection midway or stream until the client goes away. The
 * default script answers the task prompts (titles, tags, follow-ups) with their
 * JSON and echoes the last user message otherwise.
 */
export interface ModelReply {
  text?: string;
  /** Content pieces sent exactly as given, one chunk each (instead of `text` word by word). */
  chunks?: string[];
  /** Reasoning deltas sent before the content, one chunk each, under this field (default `reasoning_content`). */
  reasoning?: string[];
  reasoningField?: string;
  toolCalls?: { name: string; arguments: string | Record<string, unknown>; id?: string }[];
  /** Pause before each chunk (ms). */
  delayMs?: number;
  /** Destroys the connection after this many content chunks. */
  breakAfter?: number;
  /** Keeps streaming ` more<i>` until the client goes away. */
  endless?: boolean;
  /** An error answer instead. */
  status?: number;
  error?: string;
}

export type Script = (body: any) => ModelReply | Promise<ModelReply>;

export interface FakeModel {
  url: string;
  /** Every chat request's body, in order. */
  requests: any[];
  models: string[];
  script: Script;
  /** Streams being written now, and those whose client left before the end. */
  open: number;
  cancelled: number;
  /** Chat requests that are not task prompts (titles, tags, follow-ups). */
  chatRequests(): any[];
  waitFor(check: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const TITLE = 'A Fake Title';
export const TAGS = ['Testing', 'Fakes'];
export const FOLLOW_UPS = ['What else?', 'Why?'];

const TASK_MARKERS = ['Generate a concise title', 'Generate 1-3 broad tags', 'Suggest 3-5 relevant follow-up'];

export { lastUserText };

export const isTaskPrompt = (body: any) => TASK_MARKERS.some((marker) => lastUserText(body?.messages).includes(marker));

export const defaultScript: Script = (body) => {
  const prompt = lastUserText(body?.messages);
  if (prompt.includes(TASK_MARKERS[0])) return { text: JSON.stringify({ title: TITLE }) };
  if (prompt.includes(TASK_MARKERS[1])) return { text: JSON.stringify({ tags: TAGS }) };
  if (prompt.includes(TASK_MARKERS[2])) return { text: JSON.stringify({ follow_ups: FOLLOW_UPS }) };
  return { text: `You said: ${prompt}` };
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startFakeModel(models: string[] = ['fake-model']): Promise<FakeModel> {
  let server: Server;
  const fake: FakeModel = {
    url: '',
    requests: [],
    models,
    script: defaultScript,
    open: 0,
    cancelled: 0,
    chatRequests: () => fake.requests.filter((body) => !isTaskPrompt(body)),
    async waitFor(check, what, timeoutMs = 5000) {
      const start = Date.now();
      while (!check()) {
        if (Date.now() - start > timeoutMs) throw new Error(`Timed out waiting for ${what}`);
        await sleep(5);
      }
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  async function answer(req: IncomingMessage, res: ServerResponse) {
    const body = await readJson(req);
    fake.requests.push(body);
    const reply = await fake.script(body);
    const model = String(body?.model ?? '');
    if (reply.status) return sendJson(res, reply.status, { error: { message: reply.error ?? 'The provider broke', type: 'server_error' } });
    const words = reply.chunks ?? (reply.text ?? '').split(' ').filter(Boolean).map((w, i) => (i === 0 ? w : ` ${w}`));
    const calls = (reply.toolCalls ?? []).map((call, i) => ({
      id: call.id ?? `call_${i}_${Math.random().toString(36).slice(2, 8)}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    }));
    const usage = { prompt_tokens: 5, completion_tokens: words.length, total_tokens: 5 + words.length };
    if (!body?.stream) {
      const message: Record<string, unknown> = { role: 'assistant', content: words.join('') || null };
      if (reply.reasoning) message[reply.reasoningField ?? 'reasoning_content'] = reply.reasoning.join('');
      if (calls.length > 0) message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
      return sendJson(res, 200, {
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 1,
        model,
        choices: [{ index: 0, message, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop' }],
        usage,
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    fake.open++;
    let gone = false;
    res.on('close', () => {
      fake.open--;
      if (!res.writableFinished) {
        gone = true;
        fake.cancelled++;
      }
    });
    const write = async (text: string) => {
      if (reply.delayMs) await sleep(reply.delayMs);
      if (!gone) res.write(text);
    };
    await write(completionChunk(model, { role: 'assistant', content: '' }));
    for (const piece of reply.reasoning ?? []) await write(completionChunk(model, { [reply.reasoningField ?? 'reasoning_content']: piece }));
    for (const [i, word] of words.entries()) {
      if (gone) return;
      if (reply.breakAfter !== undefined && i >= reply.breakAfter) {
        // Let what was written reach the client first.
        await sleep(20);
        res.destroy();
        return;
      }
      await write(completionChunk(model, { content: word }));
    }
    for (let i = 0; reply.endless && !gone; i++) {
      await write(completionChunk(model, { content: ` more${i}` }));
      await sleep(reply.delayMs ? 0 : 20);
    }
    for (const [index, call] of calls.entries()) {
      await write(completionChunk(model, { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
      await write(completionChunk(model, { tool_calls: [{ index, function: { arguments: call.arguments } }] }));
    }
    await write(completionChunk(model, {}, calls.length > 0 ? 'tool_calls' : 'stop'));
    if (body?.stream_options?.include_usage) await write(`data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model, choices: [], usage })}\n\n`);
    await write('data: [DONE]\n\n');
    if (!gone) res.end();
  }

  server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && (path === '/models' || path === '/v1/models')) {
      return sendJson(res, 200, { object: 'list', data: fake.models.map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'fake' })) });
    }
    if (req.method === 'POST' && (path === '/chat/completions' || path === '/v1/chat/completions')) {
      answer(req, res).catch((error) => {
        if (!res.headersSent) sendJson(res, 500, { error: { message: String(error) } });
        else res.destroy();
      });
      return;
    }
    sendJson(res, 404, { error: `no route ${req.method} ${path}` });
  });
  server.keepAliveTimeout = 1000;
  fake.url = await listenLocally(server);
  return fake;
}

/** The scriptable model as a server's only provider (for useServer / startWorld). */
export function fakeModel(models?: string[]): Fakes<{ model: FakeModel }> {
  return {
    start: async () => ({ model: await startFakeModel(models) }),
    env: ({ model }) => ({ ...onlyOpenAI(model.url), ENABLE_EVALUATION_ARENA_MODELS: 'false', ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS: 'false' }),
  };
}
