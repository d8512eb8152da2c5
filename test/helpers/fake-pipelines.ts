import { createServer, type IncomingMessage } from 'node:http';
import { listenLocally } from './server.js';
import { type RecordedRequest, sendJson } from './fake-upstreams.js';

/**
 * A Pipelines server (open-webui/pipelines) for tests, speaking its API with a
 * bearer key: `/models` with `pipelines: true`, the pipelines list, upload
 * (multipart `file`), add, delete, valves with their spec (validated: `prefix`
 * must be a string), the filters' `/{id}/filter/inlet|outlet`, and chat
 * completions for its pipe. Its pipelines:
 * - `echo`: a pipe answering `echo: <last user message>`;
 * - `tagger`: a filter for every model (priority 1): inlet appends ` [tagger in]`
 *   to the last user message, outlet appends ` [tagger out]` to the last message;
 * - `guard`: a filter for `echo` only (priority 0, so first): inlet refuses `forbidden`
 *   with 403 `{detail}`, and appends ` [guard in]` otherwise.
 */
export interface FakePipelines {
  url: string;
  key: string;
  requests: RecordedRequest[];
  /** Answers `/models` without the `pipelines` flag: an ordinary OpenAI connection (mutable). */
  plain: boolean;
  valves: Record<string, Record<string, unknown>>;
  uploads: { filename: string; content: string }[];
  close(): Promise<void>;
}

const MODELS = [
  { id: 'echo', name: 'Echo', object: 'model', created: 0, owned_by: 'openai', pipeline: { type: 'pipe', valves: true } },
  { id: 'tagger', name: 'Tagger', object: 'model', created: 0, owned_by: 'openai', pipeline: { type: 'filter', pipelines: ['*'], priority: 1, valves: true } },
  { id: 'guard', name: 'Guard', object: 'model', created: 0, owned_by: 'openai', pipeline: { type: 'filter', pipelines: ['echo'], priority: 0, valves: false } },
];

async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const lastOf = (messages: any[], role?: string) => [...messages].reverse().find((m) => !role || m.role === role);

export async function fakePipelines(key = 'pipelines-key'): Promise<FakePipelines> {
  const fake: FakePipelines = { url: '', key, requests: [], plain: false, valves: { tagger: { prefix: 'tag' }, echo: { greeting: 'echo' } }, uploads: [], close: async () => {} };
  const server = createServer(async (req, res) => {
    const raw = await readRaw(req);
    const type = req.headers['content-type'] ?? '';
    let body: any = null;
    if (type.includes('application/json') && raw.length > 0) body = JSON.parse(raw.toString('utf8'));
    const path = (req.url ?? '/').split('?')[0];
    fake.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${key}`) return sendJson(res, 403, { detail: 'Invalid API key' });

    if (req.method === 'GET' && path === '/models') return sendJson(res, 200, { data: MODELS, object: 'list', ...(fake.plain ? {} : { pipelines: true }) });
    if (req.method === 'GET' && path === '/pipelines') return sendJson(res, 200, { data: MODELS.map(({ id, name, pipeline }) => ({ id, name, type: pipeline.type, valves: pipeline.valves })) });
    if (req.method === 'POST' && path === '/pipelines/upload') {
      const boundary = /boundary=(.+)$/.exec(type)?.[1];
      const text = raw.toString('utf8');
      const filename = /filename="([^"]+)"/.exec(text)?.[1];
      if (!boundary || !filename) return sendJson(res, 400, { detail: 'No file' });
      const content = text.slice(text.indexOf('\r\n\r\n') + 4, text.lastIndexOf(`\r\n--${boundary}`));
      fake.uploads.push({ filename, content });
      if (!content.includes('class Pipeline')) return sendJson(res, 400, { detail: 'No Pipeline class found' });
      return sendJson(res, 200, { status: true, detail: `Pipeline ${filename} uploaded successfully`, id: filename.replace(/\.py$/, '') });
    }
    if (req.method === 'POST' && path === '/pipelines/add') {
      if (!String(body?.url ?? '').startsWith('https://')) return sendJson(res, 400, { detail: 'Invalid URL' });
      return sendJson(res, 200, { status: true, detail: `Pipeline added from ${body.url}`, id: 'added' });
    }
    if (req.method === 'DELETE' && path === '/pipelines/delete') {
      if (!MODELS.some((m) => m.id === body?.id)) return sendJson(res, 404, { detail: `Pipeline ${body?.id} not found` });
      return sendJson(res, 200, { status: true, detail: `Pipeline ${body.id} deleted successfully` });
    }
    const valves = /^\/([^/]+)\/valves(\/spec|\/update)?$/.exec(path);
    if (valves) {
      const id = decodeURIComponent(valves[1]);
      if (!(id in fake.valves)) return sendJson(res, 404, { detail: `Pipeline ${id} not found` });
      if (valves[2] === '/spec') return sendJson(res, 200, { title: 'Valves', type: 'object', properties: { prefix: { title: 'Prefix', type: 'string', default: 'tag' } } });
      if (valves[2] === '/update') {
        if (body === null || typeof body !== 'object' || ('prefix' in body && typeof body.prefix !== 'string')) return sendJson(res, 422, { detail: 'prefix: Input should be a valid string' });
        fake.valves[id] = { ...fake.valves[id], ...body };
      }
      return sendJson(res, 200, fake.valves[id]);
    }
    const filter = /^\/([^/]+)\/filter\/(inlet|outlet)$/.exec(path);
    if (req.method === 'POST' && filter) {
      const [, id, stage] = filter;
      const payload = body.body;
      if (id === 'guard' && stage === 'inlet') {
        const last = lastOf(payload.messages, 'user');
        if (last?.content === 'forbidden') return sendJson(res, 403, { detail: 'Guard refused the message' });
        last.content += ' [guard in]';
      }
      if (id === 'tagger' && stage === 'inlet') lastOf(payload.messages, 'user').content += ` [${fake.valves.tagger.prefix} in]`;
      if (id === 'tagger' && stage === 'outlet') lastOf(payload.messages).content += ` [${fake.valves.tagger.prefix} out]`;
      return sendJson(res, 200, payload);
    }
    if (req.method === 'POST' && path === '/chat/completions') {
      const text = `echo: ${lastOf(body.messages, 'user')?.content ?? ''}`;
      return sendJson(res, 200, { id: 'chatcmpl-1', object: 'chat.completion', created: 0, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }] });
    }
    sendJson(res, 404, { detail: 'Not Found' });
  });
  fake.url = await listenLocally(server);
  fake.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return fake;
}
