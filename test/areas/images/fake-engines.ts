import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import sharp from 'sharp';
import { type WebSocket, WebSocketServer } from 'ws';
import { sendJson } from '../../helpers/fake-upstreams.js';
import { listenLocally } from '../../helpers/server.js';

/**
 * The image engines on one local server, each under its own prefix and speaking its
 * documented protocol, recording what they were sent:
 * - `/openai/v1`: OpenAI's Images API (`/images/generations` JSON, `/images/edits` multipart);
 * - `/gemini/v1beta`: `models/{model}:predict` and `:generateContent`;
 * - `/a1111`: Automatic1111's `/sdapi/v1/{options,sd-models,txt2img,img2img}`;
 * - `/comfyui`: ComfyUI's `/prompt`, `/history/{id}`, `/view`, `/object_info`, `/api/upload/image`
 *   and the progress websocket `/ws?clientId=`.
 * `/stored/{name}.png` serves an image as a storage host would (OpenAI's URL answers).
 */
export interface EngineRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** JSON bodies parsed; multipart bodies as their fields (files as `{filename, type, size}`). */
  body: any;
}

export interface FakeEngines {
  url: string;
  requests: EngineRequest[];
  /** Requests whose path starts with `prefix`. */
  seen(prefix: string): EngineRequest[];
  /** The next answer of any engine route is this error instead (cleared once used). */
  failNext: { status: number; body: unknown } | null;
  /** OpenAI answers with URLs of this origin instead of base64 (null: base64, or URLs on its own origin for gpt-image models). */
  urlOrigin: string | null;
  /** ComfyUI reports an execution error for the next prompt. */
  comfyFailNext: boolean;
  /** Websocket messages ComfyUI sent, in order. */
  comfyMessages: string[];
  /** The PNG every engine answers with (2×2, one colour per engine). */
  png: Record<'openai' | 'gemini' | 'a1111' | 'comfyui', Buffer>;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A multipart body's fields, read with the platform's own parser. */
async function formFields(req: IncomingMessage, raw: Buffer): Promise<Record<string, unknown>> {
  const form = await new Request('http://fake/', { method: 'POST', headers: { 'content-type': String(req.headers['content-type']) }, body: raw }).formData();
  const fields: Record<string, unknown> = {};
  for (const [name, value] of form.entries()) {
    const entry = typeof value === 'string' ? value : { filename: value.name, type: value.type, size: value.size, bytes: Buffer.from(await value.arrayBuffer()) };
    fields[name] = name in fields ? [fields[name], entry].flat() : entry;
  }
  return fields;
}

const pngOf = (r: number, g: number, b: number) => sharp({ create: { width: 2, height: 2, channels: 3, background: { r, g, b } } }).png().toBuffer();

export async function startFakeEngines(): Promise<FakeEngines> {
  const png = { openai: await pngOf(255, 0, 0), gemini: await pngOf(0, 255, 0), a1111: await pngOf(0, 0, 255), comfyui: await pngOf(255, 255, 0) };
  const sockets = new Map<string, WebSocket>();
  const prompts = new Map<string, any>();
  let promptCount = 0;
  let checkpoint = 'v1-5.safetensors';

  const fake: FakeEngines = {
    url: '',
    requests: [],
    seen: (prefix) => fake.requests.filter((r) => r.path.startsWith(prefix)),
    failNext: null,
    urlOrigin: null,
    comfyFailNext: false,
    comfyMessages: [],
    png,
    close: async () => {
      for (const socket of sockets.values()) socket.terminate();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const raw = await readBody(req);
    const multipart = String(req.headers['content-type'] ?? '').startsWith('multipart/form-data');
    const body = raw.length === 0 ? null : multipart ? await formFields(req, raw) : JSON.parse(raw.toString('utf8'));
    const path = url.pathname;
    fake.requests.push({ method: req.method ?? 'GET', path: path + url.search, headers: req.headers, body });
    if (path.startsWith('/stored/')) {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(png.openai);
    }
    if (fake.failNext) {
      const { status, body: error } = fake.failNext;
      fake.failNext = null;
      return sendJson(res, status, error);
    }
    // ---- OpenAI
    if (path === '/openai/v1/images/generations' || path === '/openai/v1/images/edits') {
      const n = Number(body.n ?? 1);
      const asUrl = !body.response_format;
      const data = Array.from({ length: n }, (_, i) =>
        asUrl ? { url: `${fake.urlOrigin ?? fake.url}/stored/image-${i}.png` } : { b64_json: png.openai.toString('base64'), revised_prompt: body.prompt },
      );
      return sendJson(res, 200, { created: 1, data });
    }
    // ---- Gemini
    const gemini = /^\/gemini\/v1beta\/models\/([^/:]+):(predict|generateContent)$/.exec(path);
    if (gemini) {
      if (gemini[2] === 'predict') {
        const count = Number(body.parameters?.sampleCount ?? 1);
        return sendJson(res, 200, { predictions: Array.from({ length: count }, () => ({ mimeType: 'image/png', bytesBase64Encoded: png.gemini.toString('base64') })) });
      }
      return sendJson(res, 200, {
        candidates: [{ content: { parts: [{ text: 'Here it is' }, { inlineData: { mimeType: 'image/png', data: png.gemini.toString('base64') } }] } }],
      });
    }
    // ---- Automatic1111
    if (path === '/a1111/sdapi/v1/options') {
      if (req.method === 'POST') checkpoint = body.sd_model_checkpoint;
      return sendJson(res, 200, req.method === 'POST' ? null : { sd_model_checkpoint: checkpoint, samples_format: 'png' });
    }
    if (path === '/a1111/sdapi/v1/sd-models') {
      return sendJson(res, 200, [
        { title: 'v1-5.safetensors [abc]', model_name: 'v1-5', hash: 'abc' },
        { title: 'sdxl.safetensors [def]', model_name: 'sdxl', hash: 'def' },
      ]);
    }
    if (path === '/a1111/sdapi/v1/txt2img' || path === '/a1111/sdapi/v1/img2img') {
      const count = Number(body.batch_size ?? 1);
      return sendJson(res, 200, { images: Array.from({ length: count }, () => png.a1111.toString('base64')), parameters: body, info: '{}' });
    }
    // ---- ComfyUI
    if (path === '/comfyui/object_info') {
      return sendJson(res, 200, {
        CheckpointLoaderSimple: { input: { required: { ckpt_name: [['sd15.safetensors', 'sdxl.safetensors']] } } },
        UNETLoader: { input: { required: { unet_name: [['flux-kontext.safetensors']], weight_dtype: [['default']] } } },
      });
    }
    if (path === '/comfyui/api/upload/image') {
      return sendJson(res, 200, { name: `uploaded-${(body.image as any).filename}`, subfolder: '', type: 'input' });
    }
    if (path === '/comfyui/prompt') {
      const promptId = `prompt-${++promptCount}`;
      prompts.set(promptId, body.prompt);
      sendJson(res, 200, { prompt_id: promptId, number: promptCount, node_errors: {} });
      const socket = sockets.get(body.client_id);
      const fail = fake.comfyFailNext;
      fake.comfyFailNext = false;
      const send = (message: unknown) => {
        const text = JSON.stringify(message);
        fake.comfyMessages.push(text);
        socket?.send(text);
      };
      setTimeout(() => {
        send({ type: 'execution_start', data: { prompt_id: promptId } });
        send({ type: 'executing', data: { node: '3', prompt_id: promptId } });
        send({ type: 'progress', data: { value: 1, max: 2, prompt_id: promptId, node: '3' } });
        socket?.send(Buffer.from([0, 0, 0, 1, 0, 0, 0, 2]));
        if (fail) return send({ type: 'execution_error', data: { prompt_id: promptId, node_id: '3', exception_message: 'CUDA out of memory' } });
        send({ type: 'executing', data: { node: null, prompt_id: promptId } });
      }, 20);
      return;
    }
    const history = /^\/comfyui\/history\/(.+)$/.exec(path);
    if (history) {
      const id = decodeURIComponent(history[1]);
      const workflow = prompts.get(id) ?? {};
      const outputs: Record<string, unknown> = {};
      for (const [nodeId, node] of Object.entries<any>(workflow)) {
        if (node.class_type === 'SaveImage') outputs[nodeId] = { images: [{ filename: `ComfyUI_${id}.png`, subfolder: '', type: 'output' }] };
        if (node.class_type === 'PreviewImage') outputs[nodeId] = { images: [{ filename: `preview_${id}.png`, subfolder: '', type: 'temp' }] };
      }
      return sendJson(res, 200, { [id]: { prompt: [], outputs, status: { completed: true } } });
    }
    if (path === '/comfyui/view') {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(png.comfyui);
    }
    sendJson(res, 404, { detail: 'Not Found' });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => sendJson(res, 500, { detail: String(error) }));
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname !== '/comfyui/ws') return socket.destroy();
    fake.requests.push({ method: 'WS', path: url.pathname + url.search, headers: req.headers, body: null });
    wss.handleUpgrade(req, socket, head, (ws) => {
      const clientId = url.searchParams.get('clientId') ?? '';
      sockets.set(clientId, ws);
      ws.send(JSON.stringify({ type: 'status', data: { status: { exec_info: { queue_remaining: 0 } }, sid: clientId } }));
      ws.on('close', () => sockets.delete(clientId));
    });
  });
  fake.url = await listenLocally(server);
  return fake;
}
