import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenLocally } from './server.js';
import type { Fakes } from './world.js';

/**
 * Model providers for tests: an OpenAI-shaped server and an Ollama-shaped
 * server, answering streamed and not, recording what they were sent, and able
 * to fail, stall or stream forever so that errors, deadlines and client
 * cancellation can be observed from the provider's side.
 *
 * Behaviour is chosen by model name:
 * - `*error*`: answers 500 with a provider error body (`*ratelimit*`: 429; `*missing*`: 404 "model not found");
 * - `*endless*`: streams one chunk every 50 ms until the client goes away;
 * - `*silent*`: sends headers, then nothing (for idle deadlines);
 * - anything else: a short answer that echoes the last user message.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface FakeUpstream {
  url: string;
  requests: RecordedRequest[];
  /** Streams whose client went away before the end. */
  cancelled: number;
  /** Streams still being written. */
  open: number;
  /** Models the list endpoints return (mutable). */
  models: string[];
  /** Answers `/models` or `/api/tags` with an error instead (mutable). */
  listFails: boolean;
  /** Waits until `open` reaches `n` (or times out). */
  waitForOpen(n: number, timeoutMs?: number): Promise<void>;
  waitForCancelled(n: number, timeoutMs?: number): Promise<void>;
  /** Waits until no stream is being written any more. */
  waitForIdle(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: any, fake: FakeUpstream) => void | Promise<void>;

/** A request's body as JSON (its text where it is not JSON, null where empty). */
export async function readJson(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function readBytes(req: IncomingMessage): Promise<{ size: number; text: string }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const all = Buffer.concat(chunks);
  return { size: all.length, text: all.toString('utf8') };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const until = async (check: () => boolean, timeoutMs: number, what: string) => {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** Writes `chunks` one by one (honouring back-pressure), or forever for `endless`, counting cancellations. */
async function stream(res: ServerResponse, fake: FakeUpstream, contentType: string, chunks: string[], endless: (i: number) => string | null) {
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
  fake.open++;
  let gone = false;
  res.on('close', () => {
    if (!res.writableFinished) {
      gone = true;
      fake.cancelled++;
    }
    fake.open--;
  });
  for (const chunk of chunks) {
    if (gone) return;
    if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
  }
  for (let i = 0; !gone; i++) {
    const chunk = endless(i);
    if (chunk === null) break;
    res.write(chunk);
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!gone) res.end();
}

function errorFor(model: string): { status: number; body: unknown } | null {
  if (model.includes('ratelimit')) return { status: 429, body: { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } } };
  if (model.includes('missing')) return { status: 404, body: { error: { message: `The model '${model}' does not exist`, code: 'model_not_found' } } };
  if (model.includes('error')) return { status: 500, body: { error: { message: 'The provider broke', type: 'server_error' } } };
  return null;
}

/** The text of the last user message of a chat request. */
export function lastUserText(messages: any[]): string {
  const last = [...(messages ?? [])].reverse().find((m) => m?.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  if (Array.isArray(last.content)) return last.content.map((p: any) => p?.text ?? '').join('');
  return '';
}

async function start(routes: Record<string, Handler>, models: string[]): Promise<FakeUpstream> {
  let server: Server;
  const fake: FakeUpstream = {
    url: '',
    requests: [],
    cancelled: 0,
    open: 0,
    models,
    listFails: false,
    waitForOpen: (n, timeoutMs = 5000) => until(() => fake.open >= n, timeoutMs, `${n} open streams`),
    waitForCancelled: (n, timeoutMs = 5000) => until(() => fake.cancelled >= n, timeoutMs, `${n} cancelled streams`),
    waitForIdle: (timeoutMs = 5000) => until(() => fake.open === 0, timeoutMs, 'no open streams'),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const body = path.startsWith('/api/blobs/') ? await readBytes(req) : await readJson(req);
    fake.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
    const handler = routes[`${req.method} ${path}`] ?? routes[`${req.method} ${path.slice(0, path.lastIndexOf('/'))}/*`];
    if (!handler) return sendJson(res, 404, { error: `no route ${req.method} ${path}` });
    try {
      await handler(req, res, body, fake);
    } catch (error) {
      if (!res.headersSent) sendJson(res, 500, { error: String(error) });
    }
  });
  server.keepAliveTimeout = 1000;
  fake.url = await listenLocally(server);
  return fake;
}

// ---- OpenAI-shaped -----------------------------------------------------------

/** One streamed Chat Completions chunk, as an SSE `data:` line. */
export const completionChunk = (model: string, delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

function chatCompletionHandler(prefix = ''): Handler {
  return async (_req, res, body, fake) => {
    const model = String(body?.model ?? '');
    const failure = errorFor(model);
    if (failure) return sendJson(res, failure.status, failure.body);
    const text = `${prefix}You said: ${lastUserText(body?.messages)}`;
    if (body?.stream) {
      if (model.includes('silent')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        fake.open++;
        res.on('close', () => fake.open--);
        return;
      }
      const words = text.split(' ');
      const chunks = [completionChunk(model, { role: 'assistant', content: '' }), ...words.map((w, i) => completionChunk(model, { content: i === 0 ? w : ` ${w}` }))];
      const endless = model.includes('endless');
      await stream(res, fake, 'text/event-stream', chunks, (i) => {
        if (endless) return completionChunk(model, { content: ` more${i}` });
        if (i === 0) {
          const usage = body?.stream_options?.include_usage ? `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model, choices: [], usage: { prompt_tokens: 5, completion_tokens: words.length, total_tokens: 5 + words.length } })}\n\n` : '';
          return completionChunk(model, {}, 'stop') + usage + 'data: [DONE]\n\n';
        }
        return null;
      });
      return;
    }
    sendJson(res, 200, {
      id: 'chatcmpl-fake',
      object: 'chat.completion',
      created: 1,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 },
    });
  };
}

const embeddingsHandler: Handler = (_req, res, body) => {
  const model = String(body?.model ?? '');
  const failure = errorFor(model);
  if (failure) return sendJson(res, failure.status, failure.body);
  const inputs = Array.isArray(body?.input) ? body.input : [body?.input];
  sendJson(res, 200, { object: 'list', model, data: inputs.map((_: unknown, index: number) => ({ object: 'embedding', index, embedding: [0.1, 0.2, index] })), usage: { prompt_tokens: 1, total_tokens: 1 } });
};

function responsesHandler(): Handler {
  return async (_req, res, body, fake) => {
    const model = String(body?.model ?? '');
    const failure = errorFor(model);
    if (failure) return sendJson(res, failure.status, failure.body);
    const text = `Responded to: ${typeof body?.input === 'string' ? body.input : JSON.stringify(body?.input)}`;
    if (body?.stream) {
      const events = [
        `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { id: 'resp_fake', model } })}\n\n`,
        `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', delta: text })}\n\n`,
        `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response: { id: 'resp_fake', model, status: 'completed' } })}\n\n`,
      ];
      await stream(res, fake, 'text/event-stream', events, () => null);
      return;
    }
    sendJson(res, 200, {
      id: 'resp_fake',
      object: 'response',
      model,
      status: 'completed',
      output: [{ type: 'message', id: 'msg_fake', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }],
      usage: { input_tokens: 3, output_tokens: 3, total_tokens: 6 },
    });
  };
}

/** The environment that makes an OpenAI-style fake at `url` the server's only provider. */
export function onlyOpenAI(url: string, key = 'sk-fake'): Record<string, string> {
  return { OPENAI_API_BASE_URLS: url, OPENAI_API_KEYS: key, ENABLE_OLLAMA_API: 'false' };
}

export function startFakeOpenAI(models: string[] = ['gpt-fake', 'gpt-fake-endless', 'gpt-fake-error', 'gpt-fake-silent']): Promise<FakeUpstream> {
  const list: Handler = (_req, res, _body, fake) => {
    if (fake.listFails) return sendJson(res, 401, { error: { message: 'Incorrect API key provided', code: 'invalid_api_key' } });
    sendJson(res, 200, { object: 'list', data: fake.models.map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'fake' })) });
  };
  return start(
    {
      'GET /models': list,
      'GET /v1/models': list,
      'POST /chat/completions': chatCompletionHandler(),
      'POST /embeddings': embeddingsHandler,
      'POST /responses': responsesHandler(),
      'POST /audio/speech': (_req, res) => {
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        res.end(Buffer.from('ID3fake-mp3'));
      },
      'GET /files': (_req, res) => sendJson(res, 200, { object: 'list', data: [{ id: 'file-1' }] }),
      'POST /messages': (_req, res, body) =>
        sendJson(res, 200, { id: 'msg_native', type: 'message', role: 'assistant', model: body?.model, content: [{ type: 'text', text: 'native anthropic' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 2 } }),
    },
    models,
  );
}

// ---- Ollama-shaped -----------------------------------------------------------

const ndjson = (value: unknown) => `${JSON.stringify(value)}\n`;

export function startFakeOllama(models: string[] = ['llama-fake:latest', 'llama-fake-endless:latest', 'llama-fake-error:latest'], version = '0.6.2'): Promise<FakeUpstream> {
  const modelEntry = (name: string) => ({
    name,
    model: name,
    modified_at: '2025-01-01T00:00:00Z',
    size: 1234,
    digest: 'sha256:fake',
    details: { format: 'gguf', family: 'llama', parameter_size: '1B', quantization_level: 'Q4_0' },
  });
  const chat: Handler = async (_req, res, body, fake) => {
    const model = String(body?.model ?? '');
    const failure = errorFor(model);
    if (failure) return sendJson(res, failure.status, { error: (failure.body as any).error.message });
    const text = `You said: ${lastUserText(body?.messages) || body?.prompt || ''}`;
    const piece = (content: string, done = false) => ndjson({ model, created_at: '2025-01-01T00:00:00Z', ...(body?.messages ? { message: { role: 'assistant', content } } : { response: content }), done });
    if (body?.stream === false) {
      return sendJson(res, 200, { model, created_at: '2025-01-01T00:00:00Z', ...(body?.messages ? { message: { role: 'assistant', content: text } } : { response: text }), done: true, done_reason: 'stop' });
    }
    const endless = model.includes('endless');
    await stream(res, fake, 'application/x-ndjson', text.split(' ').map((w, i) => piece(i === 0 ? w : ` ${w}`)), (i) => (endless ? piece(` more${i}`) : i === 0 ? piece('', true) : null));
  };
  const progress: Handler = async (_req, res, _body, fake) => {
    await stream(res, fake, 'application/x-ndjson', [ndjson({ status: 'pulling manifest' }), ndjson({ status: 'success' })], () => null);
  };
  return start(
    {
      'GET /api/tags': (_req, res, _body, fake) => {
        if (fake.listFails) return sendJson(res, 500, { error: 'tags failed' });
        sendJson(res, 200, { models: fake.models.map(modelEntry) });
      },
      'GET /api/ps': (_req, res, _body, fake) =>
        sendJson(res, 200, { models: fake.models.slice(0, 1).map((name) => ({ ...modelEntry(name), expires_at: '2030-01-01T00:00:00Z', size_vram: 1 })) }),
      'GET /api/version': (_req, res) => sendJson(res, 200, { version }),
      'POST /api/chat': chat,
      'POST /api/generate': chat,
      'POST /api/show': (_req, res, body, fake) =>
        fake.models.includes(body?.model) ? sendJson(res, 200, { modelfile: '# fake', parameters: '', template: '{{ .Prompt }}', details: modelEntry(body.model).details }) : sendJson(res, 404, { error: `model '${body?.model}' not found` }),
      'POST /api/embed': (_req, res, body) => {
        const inputs = Array.isArray(body?.input) ? body.input : [body?.input];
        sendJson(res, 200, { model: body?.model, embeddings: inputs.map((_: unknown, i: number) => [0.5, i]) });
      },
      'POST /api/embeddings': (_req, res) => sendJson(res, 200, { embedding: [0.5, 0.25] }),
      'POST /api/pull': progress,
      'POST /api/create': progress,
      'POST /api/push': progress,
      'POST /api/blobs/*': (_req, res) => void res.writeHead(201).end(),
      'POST /api/copy': (_req, res, body, fake) => {
        fake.models.push(body.destination);
        res.writeHead(200).end();
      },
      'DELETE /api/delete': (_req, res, body, fake) => {
        if (!fake.models.includes(body?.model)) return sendJson(res, 404, { error: `model '${body?.model}' not found` });
        fake.models.splice(fake.models.indexOf(body.model), 1);
        res.writeHead(200).end();
      },
      'POST /v1/chat/completions': chatCompletionHandler(),
      'POST /v1/completions': (_req, res, body) =>
        sendJson(res, 200, { id: 'cmpl-fake', object: 'text_completion', created: 1, model: body?.model, choices: [{ index: 0, text: `Completed: ${body?.prompt}`, finish_reason: 'stop' }] }),
      'POST /v1/embeddings': embeddingsHandler,
      'POST /v1/responses': responsesHandler(),
      'POST /v1/messages': async (_req, res, body, fake) => {
        const model = String(body?.model ?? '');
        const text = `Anthropic says: ${lastUserText(body?.messages)}`;
        if (body?.stream) {
          const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
          await stream(
            res,
            fake,
            'text/event-stream',
            [
              event('message_start', { type: 'message_start', message: { id: 'msg_fake', type: 'message', role: 'assistant', content: [], model, stop_reason: null, stop_sequence: null, usage: { input_tokens: 3, output_tokens: 0 } } }),
              event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
              event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
              event('content_block_stop', { type: 'content_block_stop', index: 0 }),
              event('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }),
              event('message_stop', { type: 'message_stop' }),
            ],
            () => null,
          );
          return;
        }
        sendJson(res, 200, { id: 'msg_fake', type: 'message', role: 'assistant', model, content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 3 } });
      },
    },
    models,
  );
}

/** One OpenAI-style provider and one Ollama, as a server's connections (for useServer / startWorld). */
export function fakeProviders(models: { openai?: string[]; ollama?: string[] } = {}): Fakes<{ openai: FakeUpstream; ollama: FakeUpstream }> {
  return {
    start: async () => ({ openai: await startFakeOpenAI(models.openai), ollama: await startFakeOllama(models.ollama) }),
    env: ({ openai, ollama }) => ({
      OPENAI_API_BASE_URLS: openai.url,
      OPENAI_API_KEYS: 'sk-upstream-key-1234',
      OLLAMA_BASE_URLS: ollama.url,
      ENABLE_EVALUATION_ARENA_MODELS: 'false',
      MODELS_CACHE_TTL: '1',
    }),
  };
}
