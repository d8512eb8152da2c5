import { buffer } from 'node:stream/consumers';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { FetchLimitError, GuardedFetch } from '../../core/http/guarded-fetch.js';
import { ERROR, HttpError, badRequest, forbidden } from '../../core/http/errors.js';
import { UrlRefusedError, webFetchPolicyFromEnv } from '../../core/http/url-guard.js';
import { rasterOf } from '../../core/raster.js';
import { userInfoHeaders } from '../../core/upstream/headers.js';
import { type UpstreamOptions, readUpstreamOptions } from '../../core/upstream/options.js';
import type { FilesService } from '../files/service.js';
import { type ComfyUIServer, type ComfyUIValues, applyWorkflowNodes, authHeaders, runWorkflow, uploadImage } from './comfyui.js';
import {
  type Edit,
  type Generation,
  type ImageSource,
  type InputImage,
  automatic1111Edit,
  automatic1111Generate,
  automatic1111Headers,
  automatic1111SetModel,
  base,
  geminiEdit,
  geminiGenerate,
  objectOf,
  openaiEdit,
  openaiGenerate,
} from './engines.js';
import { EngineHttp } from './http.js';
import type { ComfyUINode, CreateImageForm, EditImageForm, ImageList, ImageModelList, ImagesConfig } from './schemas.js';
import { IMAGE_CONFIG_KEYS, type ImageOptions, readImageOptions } from './settings.js';

/**
 * `/api/v1/images` (routers/images.py): the image settings, the engine's model
 * list, generation and editing. Every image an engine makes is stored as a file
 * of the user who asked (the files area), and answered as its content path
 * (`/api/v1/files/{id}/content`), which only its owner (or an admin) may read.
 */

/** Where the images of a chat answer belong (kept in the files' metadata). */
export interface ImageMetadata {
  chat_id?: string | null;
  message_id?: string | null;
}

type Config = ImagesConfig;

/** The most an input image may weigh (the `large` body class of the edit route). */
const MAX_INPUT_BYTES = 32 * 1024 * 1024;
const SIZE = /^(\d{1,5})x(\d{1,5})$/;
const DATA_URI = /^data:([^;,]*)(?:;[^,]*)?;base64,/i;
const FILE_URL = /^(?:\/api\/v1\/files\/)?([A-Za-z0-9_-]{1,128})(?:\/content)?$/;
const NOT_AN_IMAGE = 'is not a PNG, JPEG, GIF or WebP image';

const OPENAI_MODELS = [
  { id: 'dall-e-2', name: 'DALL·E 2' },
  { id: 'dall-e-3', name: 'DALL·E 3' },
  { id: 'gpt-image-1', name: 'GPT-IMAGE 1' },
  { id: 'gpt-image-1.5', name: 'GPT-IMAGE 1.5' },
];
const GEMINI_MODELS = [{ id: 'imagen-3.0-generate-002', name: 'imagen-3.0 generate-002' }];

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** `value[key]` when value is an object (or an array and key an index), else undefined. */
function field(value: unknown, key: string | number): unknown {
  if (Array.isArray(value) && typeof key === 'number') return value[key];
  return isObject(value) ? value[key] : undefined;
}

function parseSize(size: string | null | undefined): [number, number] | null {
  const match = SIZE.exec(size ?? '');
  return match ? [Number(match[1]), Number(match[2])] : null;
}

export class ImagesService {
  readonly options: ImageOptions;
  private readonly http: EngineHttp;
  private readonly guarded: GuardedFetch;
  private readonly forwardUserInfo: UpstreamOptions['forwardUserInfo'];

  constructor(
    private readonly core: Core,
    private readonly deps: { files: FilesService; access: AccessService },
  ) {
    this.options = readImageOptions(core.env.raw);
    this.http = new EngineHttp(this.options.timeoutMs);
    this.guarded = new GuardedFetch(webFetchPolicyFromEnv(core.env.raw));
    this.forwardUserInfo = readUpstreamOptions(core.env.raw).forwardUserInfo;
  }

  /** The user's identity for OpenAI-compatible engines, as for model providers (ENABLE_FORWARD_USER_INFO_HEADERS). */
  private identity(user: UserRecord): Promise<Record<string, string>> {
    return this.forwardUserInfo.enabled ? userInfoHeaders(this.forwardUserInfo, user) : Promise.resolve({});
  }

  async close(): Promise<void> {
    await Promise.all([this.http.close(), this.guarded.close()]);
  }

  // ---- settings ----------------------------------------------------------------------

  config(): Config {
    return Object.fromEntries(Object.entries(IMAGE_CONFIG_KEYS).map(([field, key]) => [field, this.core.settings.get(key)])) as Config;
  }

  get generationEnabled(): boolean {
    return this.core.settings.get<boolean>(IMAGE_CONFIG_KEYS.ENABLE_IMAGE_GENERATION);
  }

  get editEnabled(): boolean {
    return this.core.settings.get<boolean>(IMAGE_CONFIG_KEYS.ENABLE_IMAGE_EDIT);
  }

  get promptGenerationEnabled(): boolean {
    return this.core.settings.get<boolean>(IMAGE_CONFIG_KEYS.ENABLE_IMAGE_PROMPT_GENERATION);
  }

  /** Admins always; others by `features.image_generation`. */
  async mayGenerate(user: UserRecord): Promise<boolean> {
    return isAdmin(user) || (await this.deps.access.hasPermission(user, 'features.image_generation'));
  }

  /** `POST /config/update`: the reference's size and steps rules, then every field in one transaction with `config.updated`. */
  async updateConfig(user: UserRecord, form: Config): Promise<Config> {
    const { options } = this;
    if (form.IMAGE_SIZE === 'auto' && !options.autoSizeModels.test(form.IMAGE_GENERATION_MODEL)) {
      throw badRequest(ERROR.INCORRECT_FORMAT(`  (auto is only allowed with models matching ${options.autoSizeModels.source}).`));
    }
    if (form.IMAGE_SIZE !== null && form.IMAGE_SIZE !== 'auto' && form.IMAGE_SIZE !== '' && !SIZE.test(form.IMAGE_SIZE)) {
      throw badRequest(ERROR.INCORRECT_FORMAT('  (e.g., 512x512).'));
    }
    if (form.IMAGE_EDIT_SIZE && form.IMAGE_EDIT_SIZE !== 'auto' && !SIZE.test(form.IMAGE_EDIT_SIZE)) throw badRequest(ERROR.INCORRECT_FORMAT('  (e.g., 512x512).'));
    if (form.IMAGE_STEPS !== null && form.IMAGE_STEPS < 0) throw badRequest(ERROR.INCORRECT_FORMAT('  (e.g., 50).'));
    const values: Record<string, unknown> = {
      ...form,
      // The frontend sends objects; a JSON text is taken too, anything else is refused.
      IMAGES_OPENAI_API_PARAMS: paramsOf('IMAGES_OPENAI_API_PARAMS', form.IMAGES_OPENAI_API_PARAMS),
      AUTOMATIC1111_PARAMS: paramsOf('AUTOMATIC1111_PARAMS', form.AUTOMATIC1111_PARAMS),
      COMFYUI_BASE_URL: form.COMFYUI_BASE_URL.replace(/^\/+|\/+$/g, ''),
      IMAGES_EDIT_COMFYUI_BASE_URL: form.IMAGES_EDIT_COMFYUI_BASE_URL.replace(/^\/+|\/+$/g, ''),
    };
    const updates = Object.fromEntries(Object.entries(IMAGE_CONFIG_KEYS).map(([field, key]) => [key, values[field]]));
    const { settings, events, clock } = this.core;
    const data = {
      image_generation_enabled: form.ENABLE_IMAGE_GENERATION,
      image_edit_enabled: form.ENABLE_IMAGE_EDIT,
      image_generation_engine: form.IMAGE_GENERATION_ENGINE,
      image_edit_engine: form.IMAGE_EDIT_ENGINE,
    };
    await settings.update(updates, clock.now(), {
      refused: (problems) => badRequest(`Invalid config: ${problems.join('; ')}`),
      alongside: (trx) => events.publish({ event: 'config.updated', actor: user, subjectId: 'images', subjectType: 'config', data }, trx),
    });
    const config = this.config();
    // As the reference: Automatic1111 is switched to the chosen checkpoint, and a failure only logged.
    if ((config.IMAGE_GENERATION_ENGINE === '' || config.IMAGE_GENERATION_ENGINE === 'automatic1111') && config.IMAGE_GENERATION_MODEL) {
      await automatic1111SetModel(this.http, config, config.IMAGE_GENERATION_MODEL).catch((error: unknown) =>
        this.core.log.warn({ err: error instanceof Error ? error.message : String(error) }, 'Automatic1111 could not be switched to the image model'),
      );
    }
    return config;
  }

  /** `GET /config/url/verify`: the Automatic1111 or ComfyUI server answers (other engines: true). */
  async verifyUrl(): Promise<boolean> {
    const config = this.config();
    const check =
      config.IMAGE_GENERATION_ENGINE === 'automatic1111'
        ? this.http.json(`${base(config.AUTOMATIC1111_BASE_URL)}/sdapi/v1/options`, { headers: automatic1111Headers(config) })
        : config.IMAGE_GENERATION_ENGINE === 'comfyui'
          ? this.http.json(`${base(config.COMFYUI_BASE_URL)}/object_info`, { headers: authHeaders(this.comfyui(config, 'generation')) })
          : null;
    if (!check) return true;
    await check.catch(() => {
      throw badRequest(ERROR.INVALID_URL);
    });
    return true;
  }

  /** `GET /models`: the engine's models (fixed lists for OpenAI and Gemini; asked of Automatic1111 and ComfyUI). */
  async models(): Promise<ImageModelList> {
    const config = this.config();
    switch (config.IMAGE_GENERATION_ENGINE) {
      case 'openai':
        return OPENAI_MODELS;
      case 'gemini':
        return GEMINI_MODELS;
      case 'comfyui':
        return this.comfyuiModels(config);
      case '':
      case 'automatic1111': {
        const models = await this.http.json(`${base(config.AUTOMATIC1111_BASE_URL)}/sdapi/v1/sd-models`, { headers: automatic1111Headers(config) });
        if (!Array.isArray(models)) throw badRequest(ERROR.DEFAULT('Failed to retrieve image generation models'));
        return models.filter(isObject).map((model) => ({ id: String(model.title ?? ''), name: String(model.model_name ?? '') }));
      }
      default:
        return [];
    }
  }

  /** The choices of the model node's `*_name` input in `/object_info` (the checkpoints when no model node is mapped). */
  private async comfyuiModels(config: Config): Promise<ImageModelList> {
    const server = this.comfyui(config, 'generation');
    const info = await this.http.json(`${server.baseUrl}/object_info`, { headers: authHeaders(server) });
    const requiredOf = (classType: string) => field(field(field(info, classType), 'input'), 'required');
    const modelNode = config.COMFYUI_WORKFLOW_NODES.find((node) => node.type === 'model')?.node_ids?.[0];
    let classType = 'CheckpointLoaderSimple';
    let inputKey: string | undefined = 'ckpt_name';
    if (modelNode) {
      const workflow = applyWorkflowNodes(config.COMFYUI_WORKFLOW, [], '', { prompt: '' });
      classType = String(workflow[modelNode]?.class_type ?? '');
      const required = requiredOf(classType);
      inputKey = isObject(required) ? Object.keys(required).find((key) => key.includes('_name')) : undefined;
      if (!inputKey) return [];
    }
    const choices = field(field(requiredOf(classType), inputKey), 0);
    if (!Array.isArray(choices)) throw badRequest(ERROR.DEFAULT('Failed to retrieve image generation models'));
    return choices.map((model) => ({ id: String(model), name: String(model) }));
  }

  // ---- generation ----------------------------------------------------------------------

  /** `POST /generations`: image generation on, and the user allowed; `image.generated`. */
  async generate(user: UserRecord, form: CreateImageForm): Promise<ImageList> {
    if (!this.generationEnabled || !(await this.mayGenerate(user))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const images = await this.generations(user, form);
    await this.core.events.publish({
      event: 'image.generated',
      actor: user,
      subjectType: 'image',
      data: { model: form.model ?? null, size: form.size ?? null, n: form.n, prompt_preview: form.prompt.slice(0, 300) },
    });
    return images;
  }

  /** Generates and stores the images (the chat step calls this after its own checks). */
  async generations(user: UserRecord, form: CreateImageForm, metadata: ImageMetadata = {}): Promise<ImageList> {
    const config = this.config();
    const engine = config.IMAGE_GENERATION_ENGINE;
    const [width, height] = parseSize(form.size) ?? parseSize(config.IMAGE_SIZE) ?? [512, 512];
    const request: Generation = {
      model: form.model || config.IMAGE_GENERATION_MODEL || (engine === 'openai' ? 'dall-e-2' : engine === 'gemini' ? 'imagen-3.0-generate-002' : ''),
      prompt: form.prompt,
      n: form.n ?? 1,
      size: form.size || config.IMAGE_SIZE || null,
      width,
      height,
      steps: form.steps ?? config.IMAGE_STEPS ?? null,
      negativePrompt: form.negative_prompt ?? null,
    };
    let sources: ImageSource[];
    switch (engine) {
      case 'openai':
        sources = await openaiGenerate(this.http, config, this.options, request, await this.identity(user));
        break;
      case 'gemini':
        sources = await geminiGenerate(this.http, config, request);
        break;
      case 'comfyui': {
        const values: ComfyUIValues = { prompt: request.prompt, width, height, n: request.n, steps: request.steps, negative_prompt: request.negativePrompt };
        sources = await this.runComfyUI(this.comfyui(config, 'generation'), config.COMFYUI_WORKFLOW, config.COMFYUI_WORKFLOW_NODES, request.model, values);
        break;
      }
      case '':
      case 'automatic1111':
        if (form.model) await automatic1111SetModel(this.http, config, form.model).catch(() => undefined);
        sources = await automatic1111Generate(this.http, config, request);
        break;
      default:
        throw badRequest(ERROR.DEFAULT(`Unknown image generation engine "${engine}"`));
    }
    const stored = { model: request.model, prompt: request.prompt, n: request.n, size: `${width}x${height}`, ...metadata };
    return this.store(user, sources, stored);
  }

  // ---- editing --------------------------------------------------------------------------

  /** `POST /edit`: image editing on, and the user allowed to generate images; `image.edited`. */
  async edit(user: UserRecord, form: EditImageForm): Promise<ImageList> {
    if (!this.editEnabled || !(await this.mayGenerate(user))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const images = await this.edits(user, form);
    await this.core.events.publish({
      event: 'image.edited',
      actor: user,
      subjectType: 'image',
      data: { model: form.model ?? null, size: form.size ?? null, n: form.n ?? null, prompt_preview: form.prompt.slice(0, 300) },
    });
    return images;
  }

  /** Edits the images (data URIs, web addresses or the user's files) and stores the results. */
  async edits(user: UserRecord, form: EditImageForm, metadata: ImageMetadata = {}): Promise<ImageList> {
    const config = this.config();
    const size = parseSize(form.size) ? form.size! : parseSize(config.IMAGE_EDIT_SIZE) ? config.IMAGE_EDIT_SIZE : null;
    const [width, height] = parseSize(size) ?? [null, null];
    const inputs = Array.isArray(form.image) ? form.image : [form.image];
    const images = await Promise.all(inputs.map((input, index) => this.inputImage(user, input, index)));
    const request: Edit = {
      model: form.model ?? config.IMAGE_EDIT_MODEL,
      prompt: form.prompt,
      n: form.n ?? null,
      size,
      width,
      height,
      background: form.background ?? null,
      images,
      many: Array.isArray(form.image),
    };
    let sources: ImageSource[];
    switch (config.IMAGE_EDIT_ENGINE) {
      case 'openai':
        if (this.options.normalizeOpenAIEdits) request.images = await Promise.all(images.map(upright));
        sources = await openaiEdit(this.http, config, this.options, request, await this.identity(user));
        break;
      case 'gemini':
        sources = await geminiEdit(this.http, config, request);
        break;
      case 'comfyui': {
        const server = this.comfyui(config, 'edit');
        const names = [];
        for (const image of images) names.push(await uploadImage(this.http, server, image));
        const values: ComfyUIValues = { prompt: form.prompt, image: names, width: width ?? undefined, height: height ?? undefined, n: form.n ?? null };
        sources = await this.runComfyUI(server, config.IMAGES_EDIT_COMFYUI_WORKFLOW, config.IMAGES_EDIT_COMFYUI_WORKFLOW_NODES, request.model, values);
        break;
      }
      case 'automatic1111':
        sources = await automatic1111Edit(this.http, config, request);
        break;
      default:
        throw badRequest(ERROR.DEFAULT(`Unknown image edit engine "${config.IMAGE_EDIT_ENGINE}"`));
    }
    return this.store(user, sources, { model: request.model, prompt: request.prompt, n: request.n, size, ...metadata });
  }

  /**
   * An image to edit (load_url_image): a data URI; an http(s) address, fetched through the URL
   * guard; or a file the user may read, by id or content path. Only raster images are taken.
   */
  private async inputImage(user: UserRecord, input: string, index: number): Promise<InputImage> {
    let bytes: Buffer;
    const dataUri = DATA_URI.exec(input);
    if (dataUri) bytes = Buffer.from(input.slice(dataUri[0].length), 'base64');
    else if (/^https?:\/\//i.test(input)) bytes = await this.fetchGuarded(input, MAX_INPUT_BYTES, 'Error loading image');
    else {
      const id = FILE_URL.exec(input)?.[1];
      if (!id) throw badRequest(ERROR.DEFAULT('Error loading image: give a data URI, an http(s) address or a file id'));
      const file = await this.deps.files.content(user, id);
      if (file.size > MAX_INPUT_BYTES) throw badRequest(ERROR.DEFAULT('Error loading image: the file is larger than 32 MB'));
      bytes = await buffer(file.open());
    }
    if (bytes.length > MAX_INPUT_BYTES) throw badRequest(ERROR.DEFAULT('Error loading image: the image is larger than 32 MB'));
    const raster = rasterOf(bytes);
    if (!raster) throw badRequest(ERROR.DEFAULT(`Error loading image: image ${index + 1} ${NOT_AN_IMAGE}`));
    return { bytes, contentType: `image/${raster}`, filename: `image-${index + 1}.${raster === 'jpeg' ? 'jpg' : raster}` };
  }

  // ---- engines and results -----------------------------------------------------------------

  private comfyui(config: Config, purpose: 'generation' | 'edit'): ComfyUIServer {
    return purpose === 'generation'
      ? { baseUrl: base(config.COMFYUI_BASE_URL), apiKey: config.COMFYUI_API_KEY }
      : { baseUrl: base(config.IMAGES_EDIT_COMFYUI_BASE_URL), apiKey: config.IMAGES_EDIT_COMFYUI_API_KEY };
  }

  private async runComfyUI(server: ComfyUIServer, workflowText: string, nodes: ComfyUINode[], model: string, values: ComfyUIValues): Promise<ImageSource[]> {
    const workflow = applyWorkflowNodes(workflowText, nodes, model, values);
    if (!/^https?:\/\//i.test(server.baseUrl)) throw badRequest(ERROR.DEFAULT('The ComfyUI base URL is not set; set it in Admin Settings > Images'));
    const urls = await runWorkflow(this.http, server, workflow);
    return urls.map((url) => ({ url, trusted: true, headers: authHeaders(server) }));
  }

  /** A web address's bytes through the URL guard (no DNS rebinding, redirects checked, size bounded). */
  private async fetchGuarded(url: string, maxBytes: number, what: string): Promise<Buffer> {
    try {
      const answer = await this.guarded.get(url, { signal: AbortSignal.timeout(this.options.timeoutMs), maxBytes });
      if (answer.status >= 400) throw badRequest(ERROR.DEFAULT(`${what}: ${url} answered ${answer.status}`));
      return answer.body;
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (error instanceof UrlRefusedError || error instanceof FetchLimitError) throw badRequest(ERROR.DEFAULT(`${what}: ${error.message}`));
      throw badRequest(ERROR.DEFAULT(`${what}: ${error instanceof Error ? error.message : String(error)}`));
    }
  }

  /** The engine's images as files of the user (upload_image), answered as their content paths. */
  private async store(user: UserRecord, sources: ImageSource[], metadata: Record<string, unknown>): Promise<ImageList> {
    const images: ImageList = [];
    for (const source of sources) {
      const bytes = await this.sourceBytes(source);
      const raster = rasterOf(bytes);
      if (!raster) throw new HttpError(502, ERROR.DEFAULT(`The image engine answered with something that ${NOT_AN_IMAGE}`));
      const file = await this.deps.files.upload(user, {
        filename: `generated-image.${raster === 'jpeg' ? 'jpg' : raster}`,
        content: bytes,
        contentType: `image/${raster}`,
        metadata,
        process: false,
      });
      images.push({ url: `/api/v1/files/${file.id}/content` });
    }
    return images;
  }

  private async sourceBytes(source: ImageSource): Promise<Buffer> {
    if ('base64' in source) {
      const prefix = DATA_URI.exec(source.base64);
      return Buffer.from(prefix ? source.base64.slice(prefix[0].length) : source.base64, 'base64');
    }
    if (source.trusted) return (await this.http.bytes(source.url, { headers: source.headers })).body;
    // An address on another origin than the engine's: anywhere the engine (or whoever answers for it) points.
    return this.fetchGuarded(source.url, 64 * 1024 * 1024, 'The generated image could not be fetched').catch((error: unknown) => {
      throw error instanceof HttpError ? new HttpError(502, error.detail) : error;
    });
  }
}

/** A `dict | str | None` form field as the object stored (a JSON text is parsed; '' and null are none). */
function paramsOf(field: string, value: unknown): Record<string, unknown> {
  if (typeof value === 'string' && value.trim()) {
    const parsed = objectOf(value);
    if (Object.keys(parsed).length === 0 && value.trim() !== '{}') throw badRequest(ERROR.DEFAULT(`${field} must be a JSON object`));
    return parsed;
  }
  return isObject(value) ? value : {};
}

/**
 * A JPEG turned upright and flattened to one RGB frame before OpenAI gets it
 * (normalize_openai_edit_image_data_url): the Images API rejects EXIF-rotated,
 * multi-picture (MPO) and CMYK JPEGs. Other images pass as they are.
 */
async function upright(image: InputImage): Promise<InputImage> {
  if (image.contentType !== 'image/jpeg') return image;
  // sharp (libvips) is loaded at the first JPEG to edit, not at start.
  const { default: sharp } = await import('sharp');
  const meta = await sharp(image.bytes, { limitInputPixels: 64_000_000 }).metadata();
  const needs = (meta.orientation ?? 1) !== 1 || (meta.pages ?? 1) > 1 || (meta.space !== 'srgb' && meta.space !== 'b-w');
  if (!needs) return image;
  const bytes = await sharp(image.bytes, { limitInputPixels: 64_000_000 }).autoOrient().toColourspace('srgb').jpeg({ quality: 95 }).toBuffer();
  return { ...image, bytes };
}
