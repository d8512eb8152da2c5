import { randomUUID } from 'node:crypto';
import { ERROR, HttpError, badRequest } from '../../core/http/errors.js';
import type { EngineHttp } from './http.js';
import type { ComfyUINode } from './schemas.js';

/**
 * ComfyUI (utils/images/comfyui.py): the admin's workflow (API format JSON) gets
 * the request's values at the inputs COMFYUI_WORKFLOW_NODES names, is queued with
 * `POST /prompt` under a client id whose websocket (`/ws?clientId=`) reports
 * progress and the end of the run, then `GET /history/{prompt_id}` lists the
 * images of its SaveImage and PreviewImage nodes, fetched through `GET /view`.
 */
export interface ComfyUIServer {
  baseUrl: string;
  apiKey: string;
}

export interface ComfyUIValues {
  prompt: string;
  negative_prompt?: string | null;
  width?: number;
  height?: number;
  n?: number | null;
  steps?: number | null;
  seed?: number | null;
  /** The names of uploaded input images (editing). */
  image?: string[];
}

type Workflow = Record<string, { inputs: Record<string, unknown>; class_type?: unknown }>;

/** The input a mapped value goes to when the mapping names none (the reference's defaults; `text` is the model's default key). */
const DEFAULT_KEYS: Record<string, string> = { prompt: 'text', negative_prompt: 'text', width: 'width', height: 'height', n: 'batch_size', steps: 'steps' };
const OUTPUT_NODES = new Set(['SaveImage', 'PreviewImage']);
/** The largest seed the reference draws (2^50). */
const MAX_SEED = 1125899906842624;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The workflow with the values put in (_apply_workflow_nodes). A mapping naming a
 * node the workflow lacks is a 400 naming it, before anything is queued.
 */
export function applyWorkflowNodes(workflowText: string, nodes: ComfyUINode[], model: string, values: ComfyUIValues): Workflow {
  let workflow: unknown;
  try {
    workflow = JSON.parse(workflowText);
  } catch {
    throw badRequest(ERROR.DEFAULT('The ComfyUI workflow is not valid JSON; paste it in API format in Admin Settings > Images'));
  }
  if (!isObject(workflow)) throw badRequest(ERROR.DEFAULT('The ComfyUI workflow must be a JSON object of nodes (API format)'));
  // A seed needs no secrecy (and crypto's randomInt stops at 2^48).
  const seed = values.seed ?? Math.floor(Math.random() * MAX_SEED);
  for (const node of nodes) {
    const type = node.type ?? null;
    const key = node.key || (type && DEFAULT_KEYS[type]) || 'text';
    for (const [index, id] of (node.node_ids ?? []).entries()) {
      const target = workflow[id];
      if (!isObject(target) || !isObject(target.inputs)) {
        throw badRequest(ERROR.DEFAULT(`The ComfyUI workflow has no node "${id}" (mapped for ${type ?? key}); check the node ids in Admin Settings > Images`));
      }
      const value = valueFor(type, index, node, model, values, seed);
      if (value !== undefined && value !== null) target.inputs[key] = value;
    }
  }
  return workflow as Workflow;
}

function valueFor(type: string | null, index: number, node: ComfyUINode, model: string, values: ComfyUIValues, seed: number): unknown {
  switch (type) {
    case null:
      return node.value;
    case 'model':
      return model || undefined;
    case 'prompt':
      return values.prompt;
    case 'negative_prompt':
      return values.negative_prompt;
    // Each image node takes the image of its position.
    case 'image':
      return values.image?.[index];
    case 'width':
      return values.width;
    case 'height':
      return values.height;
    case 'n':
      return values.n;
    case 'steps':
      return values.steps;
    case 'seed':
      return seed;
    default:
      return undefined;
  }
}

export function authHeaders(server: ComfyUIServer): Record<string, string> {
  return server.apiKey ? { authorization: `Bearer ${server.apiKey}` } : {};
}

/** Runs the workflow and answers the addresses of its output images (`/view?...`). */
export async function runWorkflow(http: EngineHttp, server: ComfyUIServer, workflow: Workflow, signal?: AbortSignal): Promise<string[]> {
  const clientId = randomUUID();
  const socket = await openSocket(server, clientId, http.timeoutMs);
  let promptId: string;
  try {
    const queued = await http.json(`${server.baseUrl}/prompt`, { json: { prompt: workflow, client_id: clientId }, headers: authHeaders(server), signal });
    if (!isObject(queued) || typeof queued.prompt_id !== 'string') throw new HttpError(502, ERROR.DEFAULT('ComfyUI did not queue the workflow'));
    promptId = queued.prompt_id;
    await socket.finished(promptId, signal);
  } finally {
    socket.close();
  }
  const history = await http.json(`${server.baseUrl}/history/${encodeURIComponent(promptId)}`, { headers: authHeaders(server), signal });
  const run = isObject(history) ? history[promptId] : undefined;
  const outputs = isObject(run) && isObject(run.outputs) ? run.outputs : {};
  const urls = new Set<string>();
  for (const [nodeId, output] of Object.entries(outputs)) {
    if (!OUTPUT_NODES.has(String(workflow[nodeId]?.class_type)) || !isObject(output) || !Array.isArray(output.images)) continue;
    for (const image of output.images) {
      if (!isObject(image)) continue;
      const query = new URLSearchParams({ filename: String(image.filename ?? ''), subfolder: String(image.subfolder ?? ''), type: String(image.type ?? '') });
      urls.add(`${server.baseUrl}/view?${query}`);
    }
  }
  // Saved images rather than previews of the same run, when there are both (as the reference's editing).
  const saved = [...urls].filter((url) => url.includes('type=output'));
  return saved.length > 0 ? saved : [...urls];
}

/** Uploads an input image (`POST /api/upload/image`, type `input`); answers the name the workflow refers to it by. */
export async function uploadImage(http: EngineHttp, server: ComfyUIServer, image: { bytes: Buffer; contentType: string; filename: string }, signal?: AbortSignal): Promise<string> {
  const form = new FormData();
  form.append('image', new Blob([new Uint8Array(image.bytes)], { type: image.contentType }), image.filename);
  form.append('type', 'input');
  const answer = await http.json(`${server.baseUrl}/api/upload/image`, { form, headers: authHeaders(server), signal });
  return isObject(answer) && typeof answer.name === 'string' ? answer.name : image.filename;
}

interface ProgressSocket {
  /** Resolves when ComfyUI reports the prompt done (or the socket closes); rejects with its execution error. */
  finished(promptId: string, signal?: AbortSignal): Promise<void>;
  close(): void;
}

/** The run's websocket, open before the prompt is queued so that no message of the run is missed. */
async function openSocket(server: ComfyUIServer, clientId: string, timeoutMs: number): Promise<ProgressSocket> {
  // ws is loaded at the first ComfyUI run, not at start.
  const { WebSocket } = await import('ws');
  const url = `${server.baseUrl.replace(/^http/, 'ws')}/ws?clientId=${encodeURIComponent(clientId)}`;
  const socket = new WebSocket(url, { headers: authHeaders(server), handshakeTimeout: 10_000, maxPayload: 64 * 1024 * 1024 });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', (error) => reject(new HttpError(502, ERROR.DEFAULT(`ComfyUI's websocket could not be opened: ${error.message}`))));
  });
  const done = new Set<string>();
  const failed = new Map<string, string>();
  let closed = false;
  let wake: () => void = () => undefined;
  socket.on('message', (data, isBinary) => {
    // Binary messages are previews of the run.
    if (isBinary) return;
    let message: unknown;
    try {
      message = JSON.parse(String(data));
    } catch {
      return;
    }
    if (!isObject(message) || !isObject(message.data)) return;
    const { data: body } = message;
    if (message.type === 'executing' && body.node === null && typeof body.prompt_id === 'string') done.add(body.prompt_id);
    if (message.type === 'execution_error' && typeof body.prompt_id === 'string') failed.set(body.prompt_id, String(body.exception_message ?? 'the run failed').trim());
    wake();
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
    wake();
  });
  return {
    finished: (promptId, signal) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new HttpError(504, ERROR.DEFAULT('ComfyUI did not finish the workflow in time'))), timeoutMs);
        const onAbort = () => reject(new HttpError(499, ERROR.DEFAULT('The request was cancelled')));
        signal?.addEventListener('abort', onAbort, { once: true });
        const settle = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        };
        wake = () => {
          const error = failed.get(promptId);
          if (error !== undefined) {
            settle();
            reject(new HttpError(502, ERROR.DEFAULT(`ComfyUI could not run the workflow: ${error}`)));
          } else if (done.has(promptId) || closed) {
            // A closed socket ends the wait, as the reference's; the history tells what was made.
            settle();
            resolve();
          }
        };
        wake();
      }),
    close: () => socket.close(),
  };
}
