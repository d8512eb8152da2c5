import { type Static, Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/** One entry of COMFYUI_WORKFLOW_NODES (comfyui.py ComfyUINodeInput): which inputs of which workflow nodes take a value. */
export const ComfyUINode = Type.Object(
  {
    type: Maybe(Type.String({ maxLength: 64 })),
    node_ids: Type.Array(Type.String({ maxLength: 128 }), { maxItems: 64, default: [] }),
    key: Maybe(Type.String({ maxLength: 128 })),
    value: Maybe(Type.String()),
  },
  { additionalProperties: true },
);
export type ComfyUINode = Static<typeof ComfyUINode>;

/** `dict | str | None` fields: an object, its JSON text, or nothing. */
const ObjectOrText = Nullable(Type.Union([JsonObject(), Type.String()]));

/** ImagesConfig (routers/images.py): every field is required, as the reference's model. */
export const ImagesConfig = Type.Object({
  ENABLE_IMAGE_GENERATION: Type.Boolean(),
  ENABLE_IMAGE_PROMPT_GENERATION: Type.Boolean(),
  IMAGE_GENERATION_ENGINE: Type.String(),
  IMAGE_GENERATION_MODEL: Type.String(),
  IMAGE_SIZE: Nullable(Type.String()),
  IMAGE_STEPS: Nullable(Type.Integer()),
  IMAGES_OPENAI_API_BASE_URL: Type.String(),
  IMAGES_OPENAI_API_KEY: Type.String(),
  IMAGES_OPENAI_API_VERSION: Type.String(),
  IMAGES_OPENAI_API_PARAMS: ObjectOrText,
  AUTOMATIC1111_BASE_URL: Type.String(),
  AUTOMATIC1111_API_AUTH: ObjectOrText,
  AUTOMATIC1111_PARAMS: ObjectOrText,
  COMFYUI_BASE_URL: Type.String(),
  COMFYUI_API_KEY: Type.String(),
  COMFYUI_WORKFLOW: Type.String(),
  COMFYUI_WORKFLOW_NODES: Type.Array(ComfyUINode, { maxItems: 64 }),
  IMAGES_GEMINI_API_BASE_URL: Type.String(),
  IMAGES_GEMINI_API_KEY: Type.String(),
  IMAGES_GEMINI_ENDPOINT_METHOD: Type.String(),
  ENABLE_IMAGE_EDIT: Type.Boolean(),
  IMAGE_EDIT_ENGINE: Type.String(),
  IMAGE_EDIT_MODEL: Type.String(),
  IMAGE_EDIT_SIZE: Nullable(Type.String()),
  IMAGES_EDIT_OPENAI_API_BASE_URL: Type.String(),
  IMAGES_EDIT_OPENAI_API_KEY: Type.String(),
  IMAGES_EDIT_OPENAI_API_VERSION: Type.String(),
  IMAGES_EDIT_GEMINI_API_BASE_URL: Type.String(),
  IMAGES_EDIT_GEMINI_API_KEY: Type.String(),
  IMAGES_EDIT_COMFYUI_BASE_URL: Type.String(),
  IMAGES_EDIT_COMFYUI_API_KEY: Type.String(),
  IMAGES_EDIT_COMFYUI_WORKFLOW: Type.String(),
  IMAGES_EDIT_COMFYUI_WORKFLOW_NODES: Type.Array(ComfyUINode, { maxItems: 64 }),
});
export type ImagesConfig = Static<typeof ImagesConfig>;

/** The most images one request may ask for (OpenAI's own limit is 10). */
export const MAX_IMAGES = 10;
const Prompt = Type.String({ maxLength: 32_000 });

/** CreateImageForm. */
export const CreateImageForm = Type.Object({
  model: Maybe(Type.String({ maxLength: 256 })),
  prompt: Prompt,
  size: Maybe(Type.String({ maxLength: 32 })),
  n: Type.Integer({ minimum: 1, maximum: MAX_IMAGES, default: 1 }),
  steps: Maybe(Type.Integer({ minimum: 0, maximum: 10_000 })),
  negative_prompt: Maybe(Type.String({ maxLength: 32_000 })),
});
export type CreateImageForm = Static<typeof CreateImageForm>;

/** EditImageForm: the image(s) as data URIs, http(s) URLs, or the ids (or content paths) of the user's files. */
export const EditImageForm = Type.Object({
  image: Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1, maxItems: MAX_IMAGES })]),
  prompt: Prompt,
  model: Maybe(Type.String({ maxLength: 256 })),
  size: Maybe(Type.String({ maxLength: 32 })),
  n: Maybe(Type.Integer({ minimum: 1, maximum: MAX_IMAGES })),
  negative_prompt: Maybe(Type.String({ maxLength: 32_000 })),
  background: Maybe(Type.String({ maxLength: 32 })),
});
export type EditImageForm = Static<typeof EditImageForm>;

/**
 * The body of `POST /edit`: the form, or the form under `form_data`, as the frontend's
 * `imageEdits` sends it (the reference answers that a 422, so the playground's editing fails there).
 */
export const EditImageBody = Type.Union([EditImageForm, Type.Object({ form_data: EditImageForm })]);
export type EditImageBody = Static<typeof EditImageBody>;

/** What generation and editing answer: the stored files' content paths. */
export const ImageList = Type.Array(Type.Object({ url: Type.String() }));
export type ImageList = Static<typeof ImageList>;

export const ImageModelList = Type.Array(Type.Object({ id: Type.String(), name: Type.String() }));
export type ImageModelList = Static<typeof ImageModelList>;
