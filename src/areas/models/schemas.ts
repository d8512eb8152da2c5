import { type Static, Type } from '@sinclair/typebox';
import { AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable, Open } from '../../core/http/schema.js';

/**
 * Workspace models (models/models.py, routers/models.py) and the app-level model
 * routes of main.py. Meta and params are open objects: the frontend stores what
 * it likes there (capabilities, toolIds, suggestion_prompts, ...).
 */

/** ModelMeta: the named fields plus whatever else the frontend stores. */
export const ModelMeta = Open({
  profile_image_url: Maybe(Type.String()),
  description: Maybe(Type.String()),
  capabilities: Maybe(JsonObject()),
  knowledge: Maybe(Type.Array(Type.Unknown())),
});

/** ModelForm (create and update); unknown fields are ignored, as `extra='ignore'`. */
export const ModelForm = Type.Object({
  id: Type.String(),
  base_model_id: Maybe(Type.String()),
  name: Type.String(),
  meta: ModelMeta,
  params: JsonObject(),
  access_grants: Maybe(Type.Array(Nullable(JsonObject()))),
  is_active: Type.Optional(Type.Boolean({ default: true })),
});
export type ModelForm = Static<typeof ModelForm>;

export const ModelIdForm = Type.Object({ id: Type.String() });
export const ModelIdQuery = Type.Object({ id: Type.String() });

export const ModelAccessGrantsForm = Type.Object({
  id: Type.String(),
  name: Maybe(Type.String()),
  access_grants: Type.Array(JsonObject()),
});
export type ModelAccessGrantsForm = Static<typeof ModelAccessGrantsForm>;

export const ModelsImportForm = Type.Object({ models: Type.Array(JsonObject()) });

/** SyncModelsForm: full model records, as exported. */
export const SyncModelsForm = Type.Object({
  models: Type.Optional(
    Type.Array(
      Open({
        id: Type.String(),
        user_id: Type.Optional(Type.String()),
        base_model_id: Maybe(Type.String()),
        name: Type.String(),
        params: JsonObject(),
        meta: ModelMeta,
        access_grants: Type.Optional(Type.Array(JsonObject())),
        is_active: Type.Boolean(),
        updated_at: Type.Optional(Type.Integer()),
        created_at: Type.Optional(Type.Integer()),
      }),
      { default: [] },
    ),
  ),
});
export type SyncModelsForm = Static<typeof SyncModelsForm>;

export const TagQuery = Type.Object({ tag: Type.Optional(Type.String()) });

const modelFields = {
  id: Type.String(),
  user_id: Type.String(),
  base_model_id: Nullable(Type.String()),
  name: Type.String(),
  params: JsonObject(),
  meta: JsonObject(),
  access_grants: Type.Array(AccessGrantSchema),
  is_active: Type.Boolean(),
  updated_at: Type.Integer(),
  created_at: Type.Integer(),
};

/** ModelModel / ModelResponse. */
export const ModelModel = Type.Object(modelFields);

/** UserResponse: the owner as model lists show it. */
const ModelOwner = Nullable(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String(), email: Type.String() }));

export const ModelUserResponse = Type.Object({ ...modelFields, user: ModelOwner });
export const ModelAccessResponse = Type.Object({ ...modelFields, user: ModelOwner, write_access: Nullable(Type.Boolean()) });
export const ModelAccessListResponse = Type.Object({ items: Type.Array(ModelAccessResponse), total: Type.Integer() });

/** `GET /api/models` and `/api/models/base`: `{data: [model]}`, each model an open object (frontend-contract §3). */
export const ModelListResponse = Type.Object({ data: Type.Array(JsonObject()) });

export const ModelsQuery = Type.Object({ refresh: Type.Optional(Type.Boolean({ default: false })) });

export const ModelUnloadForm = Type.Object({ model: Type.String() });

/** Bodies of the OpenAI- and Anthropic-style app routes: any JSON object. */
export const OpenBody = JsonObject();
