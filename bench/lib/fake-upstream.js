import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

/**
 * An OpenAI-shaped model provider for the streaming scenarios, run as its own
 * process (on the load generator's CPU, like any provider outside Parley):
 * `GET /v1/models` lists MODEL_COUNT models (`fake-model-000`, ...), and
 * `POST /v1/chat/completions` answers any of them as the last user message asks:
 * "N chunks D ms apart" streams N content chunks (`word0`, ` word1`, ...), the
 * first at once, then one every D ms; without such a request, 10 chunks at once.
 * `stream: true` gives Server-Sent Events ending in `data: [DONE]`, otherwise one
 * JSON answer. A client that disconnects stops its stream. For the audio
 * scenario, `POST /v1/audio/transcriptions` reads the upload and answers a
 * fixed text, and `POST /v1/audio/speech` answers a few bytes of MP3.
 */
export const MODEL_COUNT_DEFAULT = 500;
export const modelId = (i) => `fake-model-${String(i).padStart(3, '0')}`;
/** The prompt that makes the fake model stream `chunks` chunks, `delayMs` apart. */
export const streamPrompt = (chunks, delayMs = 0) => `Answer in ${chunks} chunks ${delayMs} ms apart.`;

function askedShape(messages) {
  const last = Array.isArray(messages) ? messages.findLast((m) => m?.role === 'user') : null;
  const text = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
  const match = /(\d+) chunks?(?: (\d+) ms apart)?/.exec(text);
  return { chunks: match ? Number(match[1]) : 10, delayMs: match?.[2] ? Number(match[2]) : 0 };
}

/** An MP3 frame header and padding: what the fake speaks. */
const FAKE_SPEECH = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(4096)]);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function createFakeUpstream({ modelCount = MODEL_COUNT_DEFAULT } = {}) {
  const models = JSON.stringify({
    object: 'list',
    data: Array.from({ length: modelCount }, (_, i) => ({ id: modelId(i), object: 'model', created: 1_700_000_000 + i, owned_by: 'bench' })),
  });

  async function complete(req, res) {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw || '{}');
    const { chunks, delayMs } = askedShape(body.messages);
    const word = (i) => (i === 0 ? 'word0' : ` word${i}`);
    const id = 'chatcmpl-bench';
    const created = Math.floor(Date.now() / 1000);

    if (!body.stream) {
      const content = Array.from({ length: chunks }, (_, i) => word(i)).join('');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id, object: 'chat.completion', created, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }));
      return;
    }
    const event = (delta, finish = null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (let i = 0; i < chunks && !res.destroyed; i++) {
      if (i > 0 && delayMs > 0) await sleep(delayMs);
      res.write(event(i === 0 ? { role: 'assistant', content: word(i) } : { content: word(i) }));
    }
    res.end(`${event({}, 'stop')}data: [DONE]\n\n`);
  }

  return createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (req.method === 'GET' && path === '/health') {
      res.end('{"status":true}');
    } else if (req.method === 'GET' && path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(models);
    } else if (req.method === 'POST' && path === '/v1/chat/completions') {
      complete(req, res).catch((error) => {
        if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: error.message } }));
      });
    } else if (req.method === 'POST' && (path === '/v1/audio/transcriptions' || path === '/v1/audio/speech')) {
      req.resume();
      req.on('end', () => {
        const speech = path.endsWith('/speech');
        res.writeHead(200, { 'content-type': speech ? 'audio/mpeg' : 'application/json' });
        res.end(speech ? FAKE_SPEECH : '{"text":"bench transcript"}');
      });
    } else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"not found"}}');
    }
  });
}

// Run as a process: MODEL_COUNT models, listening on HOST:PORT.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = createFakeUpstream({ modelCount: Number(process.env.MODEL_COUNT) || MODEL_COUNT_DEFAULT });
  server.keepAliveTimeout = 60_000;
  server.listen(Number(process.env.PORT), process.env.HOST);
  process.on('SIGTERM', () => process.exit(0));
}
