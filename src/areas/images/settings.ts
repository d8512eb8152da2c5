import { checks, defineSetting, parsers, type SettingDefinition } from '../../config/settings.js';
import { schemaProblem } from '../../core/http/validation.js';
import { Type } from '@sinclair/typebox';
import { ComfyUINode } from './schemas.js';

/**
 * The image settings, with the reference's keys and environment variables
 * (config.py, "Images"), and the map from ImagesConfig's field names to those
 * keys (routers/images.py IMAGE_CONFIG_KEYS).
 */
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const flag = (key: string, env: string, fallback: boolean) => defineSetting({ key, env, default: fallback, parse: parsers.bool, check: checks.bool });
const text = (key: string, env: string, fallback = '') => defineSetting({ key, env, default: fallback, check: checks.string });
/** A variable that falls back to another one (IMAGES_OPENAI_API_KEY to OPENAI_API_KEY...), then to `fallback`. */
const textOr = (key: string, env: string, other: string, fallback = '') =>
  defineSetting({ key, env, default: fallback, seedFrom: [env, other], seed: (e) => e[env] ?? (e[other] || fallback), check: checks.string });
const objectTextOrNull = (v: unknown) => (v === null || typeof v === 'string' || isObject(v) ? null : 'must be an object, a string or null');
const params = (key: string, env: string) =>
  defineSetting<Record<string, unknown> | string | null>({ key, env, default: {}, parse: parsers.jsonOr({}, isObject), check: objectTextOrNull });
const nodeListProblem = schemaProblem(Type.Array(ComfyUINode));
/** A variable's list that does not fit the form's shape counts as none, as one that does not parse. */
const nodes = (key: string, env: string) =>
  defineSetting<ComfyUINode[]>({ key, env, default: [], parse: parsers.jsonOr([], (v) => nodeListProblem(v) === null), check: nodeListProblem });
const keyOf = (definition: SettingDefinition<unknown>) => definition.key;

/** The OpenAI base URL without its trailing slash, as config.py normalizes OPENAI_API_BASE_URL. */
const openaiBase = (env: Record<string, string | undefined>) => (env.OPENAI_API_BASE_URL || 'https://api.openai.com/v1').replace(/\/$/, '');
const openaiBaseOr = (key: string, env: string) =>
  defineSetting({ key, env, default: '', seedFrom: [env, 'OPENAI_API_BASE_URL'], seed: (e) => e[env] ?? openaiBase(e), check: checks.string });

/** config.py COMFYUI_DEFAULT_WORKFLOW: checkpoint, prompts, empty latent, sampler, decoder, save. */
const DEFAULT_WORKFLOW = JSON.stringify(
  {
    '3': {
      inputs: { seed: 0, steps: 20, cfg: 8, sampler_name: 'euler', scheduler: 'normal', denoise: 1, model: ['4', 0], positive: ['6', 0], negative: ['7', 0], latent_image: ['5', 0] },
      class_type: 'KSampler',
      _meta: { title: 'KSampler' },
    },
    '4': { inputs: { ckpt_name: 'model.safetensors' }, class_type: 'CheckpointLoaderSimple', _meta: { title: 'Load Checkpoint' } },
    '5': { inputs: { width: 512, height: 512, batch_size: 1 }, class_type: 'EmptyLatentImage', _meta: { title: 'Empty Latent Image' } },
    '6': { inputs: { text: 'Prompt', clip: ['4', 1] }, class_type: 'CLIPTextEncode', _meta: { title: 'CLIP Text Encode (Prompt)' } },
    '7': { inputs: { text: '', clip: ['4', 1] }, class_type: 'CLIPTextEncode', _meta: { title: 'CLIP Text Encode (Prompt)' } },
    '8': { inputs: { samples: ['3', 0], vae: ['4', 2] }, class_type: 'VAEDecode', _meta: { title: 'VAE Decode' } },
    '9': { inputs: { filename_prefix: 'ComfyUI', images: ['8', 0] }, class_type: 'SaveImage', _meta: { title: 'Save Image' } },
  },
  null,
  2,
);

export const IMAGE_CONFIG_KEYS = {
  ENABLE_IMAGE_GENERATION: keyOf(flag('image_generation.enable', 'ENABLE_IMAGE_GENERATION', false)),
  ENABLE_IMAGE_PROMPT_GENERATION: keyOf(flag('image_generation.prompt.enable', 'ENABLE_IMAGE_PROMPT_GENERATION', true)),
  IMAGE_GENERATION_ENGINE: keyOf(text('image_generation.engine', 'IMAGE_GENERATION_ENGINE', 'openai')),
  IMAGE_GENERATION_MODEL: keyOf(text('image_generation.model', 'IMAGE_GENERATION_MODEL')),
  IMAGE_SIZE: keyOf(defineSetting<string | null>({ key: 'image_generation.size', env: 'IMAGE_SIZE', default: '512x512', check: checks.nullableString })),
  IMAGE_STEPS: keyOf(defineSetting<number | null>({ key: 'image_generation.steps', env: 'IMAGE_STEPS', default: 50, parse: parsers.int, check: checks.nullableInt })),
  IMAGES_OPENAI_API_BASE_URL: keyOf(openaiBaseOr('image_generation.openai.api_base_url', 'IMAGES_OPENAI_API_BASE_URL')),
  IMAGES_OPENAI_API_KEY: keyOf(textOr('image_generation.openai.api_key', 'IMAGES_OPENAI_API_KEY', 'OPENAI_API_KEY')),
  IMAGES_OPENAI_API_VERSION: keyOf(text('image_generation.openai.api_version', 'IMAGES_OPENAI_API_VERSION')),
  // The reference reads this one from IMAGES_OPENAI_PARAMS.
  IMAGES_OPENAI_API_PARAMS: keyOf(params('image_generation.openai.params', 'IMAGES_OPENAI_PARAMS')),
  AUTOMATIC1111_BASE_URL: keyOf(text('image_generation.automatic1111.base_url', 'AUTOMATIC1111_BASE_URL')),
  // `user:password` text (the form's type also allows an object, which is never used).
  AUTOMATIC1111_API_AUTH: keyOf(
    defineSetting<Record<string, unknown> | string | null>({ key: 'image_generation.automatic1111.api_auth', env: 'AUTOMATIC1111_API_AUTH', default: '', check: objectTextOrNull }),
  ),
  AUTOMATIC1111_PARAMS: keyOf(params('image_generation.automatic1111.api_params', 'AUTOMATIC1111_PARAMS')),
  COMFYUI_BASE_URL: keyOf(text('image_generation.comfyui.base_url', 'COMFYUI_BASE_URL')),
  COMFYUI_API_KEY: keyOf(text('image_generation.comfyui.api_key', 'COMFYUI_API_KEY')),
  COMFYUI_WORKFLOW: keyOf(text('image_generation.comfyui.workflow', 'COMFYUI_WORKFLOW', DEFAULT_WORKFLOW)),
  COMFYUI_WORKFLOW_NODES: keyOf(nodes('image_generation.comfyui.nodes', 'COMFYUI_WORKFLOW_NODES')),
  IMAGES_GEMINI_API_BASE_URL: keyOf(textOr('image_generation.gemini.api_base_url', 'IMAGES_GEMINI_API_BASE_URL', 'GEMINI_API_BASE_URL')),
  IMAGES_GEMINI_API_KEY: keyOf(textOr('image_generation.gemini.api_key', 'IMAGES_GEMINI_API_KEY', 'GEMINI_API_KEY')),
  IMAGES_GEMINI_ENDPOINT_METHOD: keyOf(text('image_generation.gemini.endpoint_method', 'IMAGES_GEMINI_ENDPOINT_METHOD')),
  ENABLE_IMAGE_EDIT: keyOf(flag('images.edit.enable', 'ENABLE_IMAGE_EDIT', false)),
  IMAGE_EDIT_ENGINE: keyOf(text('images.edit.engine', 'IMAGE_EDIT_ENGINE', 'openai')),
  IMAGE_EDIT_MODEL: keyOf(text('images.edit.model', 'IMAGE_EDIT_MODEL')),
  IMAGE_EDIT_SIZE: keyOf(defineSetting<string | null>({ key: 'images.edit.size', env: 'IMAGE_EDIT_SIZE', default: '', check: checks.nullableString })),
  IMAGES_EDIT_OPENAI_API_BASE_URL: keyOf(openaiBaseOr('images.edit.openai.api_base_url', 'IMAGES_EDIT_OPENAI_API_BASE_URL')),
  IMAGES_EDIT_OPENAI_API_KEY: keyOf(textOr('images.edit.openai.api_key', 'IMAGES_EDIT_OPENAI_API_KEY', 'OPENAI_API_KEY')),
  IMAGES_EDIT_OPENAI_API_VERSION: keyOf(text('images.edit.openai.api_version', 'IMAGES_EDIT_OPENAI_API_VERSION')),
  IMAGES_EDIT_GEMINI_API_BASE_URL: keyOf(textOr('images.edit.gemini.api_base_url', 'IMAGES_EDIT_GEMINI_API_BASE_URL', 'GEMINI_API_BASE_URL')),
  IMAGES_EDIT_GEMINI_API_KEY: keyOf(textOr('images.edit.gemini.api_key', 'IMAGES_EDIT_GEMINI_API_KEY', 'GEMINI_API_KEY')),
  IMAGES_EDIT_COMFYUI_BASE_URL: keyOf(text('images.edit.comfyui.base_url', 'IMAGES_EDIT_COMFYUI_BASE_URL')),
  IMAGES_EDIT_COMFYUI_API_KEY: keyOf(text('images.edit.comfyui.api_key', 'IMAGES_EDIT_COMFYUI_API_KEY')),
  IMAGES_EDIT_COMFYUI_WORKFLOW: keyOf(text('images.edit.comfyui.workflow', 'IMAGES_EDIT_COMFYUI_WORKFLOW')),
  IMAGES_EDIT_COMFYUI_WORKFLOW_NODES: keyOf(nodes('images.edit.comfyui.nodes', 'IMAGES_EDIT_COMFYUI_WORKFLOW_NODES')),
} as const;

/** Process-level rules read once from the environment (config.py constants, never changed at run time). */
export interface ImageOptions {
  /** Models that may use IMAGE_SIZE `auto` (IMAGE_AUTO_SIZE_MODELS_REGEX_PATTERN). */
  autoSizeModels: RegExp;
  /** Models that answer with URLs, so no `response_format` is sent (IMAGE_URL_RESPONSE_MODELS_REGEX_PATTERN). */
  urlResponseModels: RegExp;
  /** JPEG edit inputs are turned upright and flattened before OpenAI gets them (ENABLE_OPENAI_IMAGE_EDIT_NORMALIZATION). */
  normalizeOpenAIEdits: boolean;
  /** Deadline of one call to an engine, a ComfyUI run included (AIOHTTP_CLIENT_TIMEOUT, default 300 s). */
  timeoutMs: number;
}

export function readImageOptions(env: Record<string, string | undefined>): ImageOptions {
  const pattern = (raw: string | undefined) => {
    try {
      // Anchored at the start, as Python's re.match.
      return new RegExp(`^(?:${raw || 'gpt-image'})`);
    } catch {
      return /^gpt-image/;
    }
  };
  const timeout = Number.parseInt(env.AIOHTTP_CLIENT_TIMEOUT ?? '', 10);
  return {
    autoSizeModels: pattern(env.IMAGE_AUTO_SIZE_MODELS_REGEX_PATTERN),
    urlResponseModels: pattern(env.IMAGE_URL_RESPONSE_MODELS_REGEX_PATTERN),
    normalizeOpenAIEdits: (env.ENABLE_OPENAI_IMAGE_EDIT_NORMALIZATION ?? 'true').toLowerCase() === 'true',
    timeoutMs: (Number.isFinite(timeout) && timeout > 0 ? timeout : 300) * 1000,
  };
}
