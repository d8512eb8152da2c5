import { ERROR, HttpError } from '../../core/http/errors.js';
import type { EngineHttp } from './http.js';
import type { ImagesConfig } from './schemas.js';
import type { ImageOptions } from './settings.js';

/**
 * The request shapes of the HTTP engines (routers/images.py image_generations and
 * image_edits): OpenAI's Images API (JSON for generations, multipart for edits),
 * Gemini (`:predict` for Imagen, `:generateContent`), Automatic1111's
 * `/sdapi/v1/txt2img` (and `img2img` for editing, which the reference lacks).
 * Each answers where the images are; the service fetches and stores them.
 */
export type ImageSource =
  /** Base64 bytes, or a data URI. */
  | { base64: string }
  /**
   * An address the engine answered with. One on the engine's own origin is trusted (the admin configured it, as the
   * reference's ComfyUI outputs) and gets the engine's headers; any other goes through the URL guard, without them.
   */
  | { url: string; trusted: boolean; headers: Record<string, string> };

export interface Generation {
  model: string;
  prompt: string;
  n: number;
  /** OpenAI's `size` (`WxH` or `auto`), when one is set. */
  size: string | null;
  width: number;
  height: number;
  steps: number | null;
  negativePrompt: string | null;
}

export interface InputImage {
  bytes: Buffer;
  contentType: string;
  filename: string;
}

export interface Edit {
  model: string;
  prompt: string;
  n: number | null;
  size: string | null;
  width: number | null;
  height: number | null;
  background: string | null;
  /** The input images (PNG, JPEG, GIF or WebP). */
  images: InputImage[];
  /** The form sent a list (`image[]`) rather than one image (`image`). */
  many: boolean;
}

type Config = ImagesConfig;
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
/** A base URL without its trailing slashes. */
export const base = (url: string) => url.replace(/\/+$/, '');
const withVersion = (url: string, version: string) => (version ? `${url}?api-version=${encodeURIComponent(version)}` : url);

/** A `dict | str | None` setting as an object (the config route stores objects; an unparsable text counts as none). */
export function objectOf(value: unknown): Record<string, unknown> {
  if (isObject(value)) return value;
  if (typeof value === 'string' && value.trim()) {
    try {
      const parsed = JSON.parse(value) as unknown;
      if (isObject(parsed)) return parsed;
    } catch {
      // Not JSON: nothing to add.
    }
  }
  return {};
}

function malformed(engine: string): HttpError {
  return new HttpError(502, ERROR.DEFAULT(`${engine} answered without images`));
}

// ---- OpenAI ----------------------------------------------------------------------

function openaiImages(body: unknown, baseUrl: string, headers: Record<string, string>): ImageSource[] {
  if (!isObject(body) || !Array.isArray(body.data)) throw malformed('OpenAI');
  const origin = new URL(baseUrl).origin;
  return body.data.filter(isObject).map((image): ImageSource => {
    if (typeof image.url === 'string' && image.url) {
      // The key goes only to the engine's own origin, never to a storage host it points to.
      const trusted = safeOrigin(image.url) === origin;
      return { url: image.url, trusted, headers: trusted ? headers : {} };
    }
    if (typeof image.b64_json === 'string') return { base64: image.b64_json };
    throw malformed('OpenAI');
  });
}

const safeOrigin = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
};

/** `identity`: the user's headers when ENABLE_FORWARD_USER_INFO_HEADERS is on (include_user_info_headers). */
export async function openaiGenerate(http: EngineHttp, config: Config, options: ImageOptions, request: Generation, identity: Record<string, string>): Promise<ImageSource[]> {
  const baseUrl = base(config.IMAGES_OPENAI_API_BASE_URL);
  const headers = { authorization: `Bearer ${config.IMAGES_OPENAI_API_KEY}`, ...identity };
  const payload = {
    model: request.model,
    prompt: request.prompt,
    n: request.n,
    ...(request.size ? { size: request.size } : {}),
    ...(options.urlResponseModels.test(request.model) ? {} : { response_format: 'b64_json' }),
    ...objectOf(config.IMAGES_OPENAI_API_PARAMS),
  };
  const body = await http.json(withVersion(`${baseUrl}/images/generations`, config.IMAGES_OPENAI_API_VERSION), { json: payload, headers });
  return openaiImages(body, baseUrl, headers);
}

export async function openaiEdit(http: EngineHttp, config: Config, options: ImageOptions, request: Edit, identity: Record<string, string>): Promise<ImageSource[]> {
  const baseUrl = base(config.IMAGES_EDIT_OPENAI_API_BASE_URL);
  const headers = { authorization: `Bearer ${config.IMAGES_EDIT_OPENAI_API_KEY}`, ...identity };
  const form = new FormData();
  form.append('model', request.model);
  form.append('prompt', request.prompt);
  if (request.n) form.append('n', String(request.n));
  if (request.size) form.append('size', request.size);
  if (request.background) form.append('background', request.background);
  if (!options.urlResponseModels.test(request.model)) form.append('response_format', 'b64_json');
  for (const image of request.images) {
    form.append(request.many ? 'image[]' : 'image', new Blob([new Uint8Array(image.bytes)], { type: image.contentType }), image.filename);
  }
  const body = await http.json(withVersion(`${baseUrl}/images/edits`, config.IMAGES_EDIT_OPENAI_API_VERSION), { form, headers });
  return openaiImages(body, baseUrl, headers);
}

// ---- Gemini ----------------------------------------------------------------------

function geminiParts(body: unknown): ImageSource[] {
  if (!isObject(body) || !Array.isArray(body.candidates)) throw malformed('Gemini');
  const images: ImageSource[] = [];
  for (const candidate of body.candidates) {
    const parts = isObject(candidate) && isObject(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts : [];
    for (const part of parts) {
      if (isObject(part) && isObject(part.inlineData) && typeof part.inlineData.data === 'string' && part.inlineData.data) images.push({ base64: part.inlineData.data });
    }
  }
  return images;
}

export async function geminiGenerate(http: EngineHttp, config: Config, request: Generation): Promise<ImageSource[]> {
  const headers = { 'x-goog-api-key': config.IMAGES_GEMINI_API_KEY };
  const url = (method: string) => `${base(config.IMAGES_GEMINI_API_BASE_URL)}/models/${encodeURIComponent(request.model)}:${method}`;
  if (config.IMAGES_GEMINI_ENDPOINT_METHOD === 'generateContent') {
    return geminiParts(await http.json(url('generateContent'), { json: { contents: [{ parts: [{ text: request.prompt }] }] }, headers }));
  }
  // '' and 'predict': Imagen's predict endpoint.
  const payload = { instances: { prompt: request.prompt }, parameters: { sampleCount: request.n, outputOptions: { mimeType: 'image/png' } } };
  const body = await http.json(url('predict'), { json: payload, headers });
  if (!isObject(body) || !Array.isArray(body.predictions)) throw malformed('Gemini');
  return body.predictions.filter((p) => isObject(p) && typeof p.bytesBase64Encoded === 'string').map((p) => ({ base64: (p as { bytesBase64Encoded: string }).bytesBase64Encoded }));
}

export async function geminiEdit(http: EngineHttp, config: Config, request: Edit): Promise<ImageSource[]> {
  const parts: unknown[] = [{ text: request.prompt }];
  for (const image of request.images) parts.push({ inline_data: { mime_type: image.contentType, data: image.bytes.toString('base64') } });
  const url = `${base(config.IMAGES_EDIT_GEMINI_API_BASE_URL)}/models/${encodeURIComponent(request.model)}:generateContent`;
  return geminiParts(await http.json(url, { json: { contents: [{ parts }] }, headers: { 'x-goog-api-key': config.IMAGES_EDIT_GEMINI_API_KEY } }));
}

// ---- Automatic1111 ----------------------------------------------------------------

/** `AUTOMATIC1111_API_AUTH` (`user:password`) as HTTP Basic. */
export function automatic1111Headers(config: Config): Record<string, string> {
  const auth = config.AUTOMATIC1111_API_AUTH;
  return typeof auth === 'string' && auth ? { authorization: `Basic ${Buffer.from(auth, 'utf8').toString('base64')}` } : {};
}

function automatic1111Images(body: unknown): ImageSource[] {
  if (!isObject(body) || !Array.isArray(body.images)) throw malformed('Automatic1111');
  return body.images.filter((image): image is string => typeof image === 'string').map((image) => ({ base64: image }));
}

/** Selects the checkpoint when it is not the current one (set_image_model); answers the current one. */
export async function automatic1111SetModel(http: EngineHttp, config: Config, model: string): Promise<void> {
  const url = `${base(config.AUTOMATIC1111_BASE_URL)}/sdapi/v1/options`;
  const headers = automatic1111Headers(config);
  const options = await http.json(url, { headers });
  if (!isObject(options) || options.sd_model_checkpoint === model) return;
  await http.json(url, { json: { ...options, sd_model_checkpoint: model }, headers });
}

export async function automatic1111Generate(http: EngineHttp, config: Config, request: Generation): Promise<ImageSource[]> {
  const payload = {
    prompt: request.prompt,
    batch_size: request.n,
    width: request.width,
    height: request.height,
    ...(request.steps !== null ? { steps: request.steps } : {}),
    ...(request.negativePrompt !== null ? { negative_prompt: request.negativePrompt } : {}),
    ...objectOf(config.AUTOMATIC1111_PARAMS),
  };
  const url = `${base(config.AUTOMATIC1111_BASE_URL)}/sdapi/v1/txt2img`;
  return automatic1111Images(await http.json(url, { json: payload, headers: automatic1111Headers(config) }));
}

export async function automatic1111Edit(http: EngineHttp, config: Config, request: Edit): Promise<ImageSource[]> {
  const payload = {
    prompt: request.prompt,
    init_images: request.images.map((image) => image.bytes.toString('base64')),
    ...(request.n ? { batch_size: request.n } : {}),
    ...(request.width && request.height ? { width: request.width, height: request.height } : {}),
    ...objectOf(config.AUTOMATIC1111_PARAMS),
  };
  const url = `${base(config.AUTOMATIC1111_BASE_URL)}/sdapi/v1/img2img`;
  return automatic1111Images(await http.json(url, { json: payload, headers: automatic1111Headers(config) }));
}
