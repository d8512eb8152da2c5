import { type Static, Type } from '@sinclair/typebox';
import { AccessControlSchema, AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/**
 * Prompts (models/prompts.py, models/prompt_history.py, routers/prompts.py).
 * Forms take `access_grants`, or the legacy `access_control` (grants win when
 * both are given); records carry `access_grants`.
 */

const Tags = Type.Array(Nullable(Type.String()));

/** PromptForm (create and update). `access_grants` absent or null leaves the grants alone on update. */
export const PromptForm = Type.Object({
  command: Type.String(),
  name: Type.String(),
  content: Type.String(),
  data: Maybe(JsonObject()),
  meta: Maybe(JsonObject()),
  tags: Maybe(Tags),
  access_grants: Maybe(Type.Array(Nullable(JsonObject()))),
  access_control: Type.Optional(AccessControlSchema),
  version_id: Maybe(Type.String()),
  commit_message: Maybe(Type.String()),
  is_production: Maybe(Type.Boolean()),
});
export type PromptForm = Static<typeof PromptForm>;

/** PromptMetadataForm: name, command and tags, without a new version. */
export const PromptMetadataForm = Type.Object({ name: Type.String(), command: Type.String(), tags: Maybe(Tags) });
export type PromptMetadataForm = Static<typeof PromptMetadataForm>;

export const PromptVersionForm = Type.Object({ version_id: Type.String() });
export const PromptAccessGrantsForm = Type.Object({ access_grants: Type.Array(JsonObject()) });

export const PromptParams = Type.Object({ id: Type.String() });
export const PromptVersionParams = Type.Object({ id: Type.String(), history_id: Type.String() });
export const HistoryQuery = Type.Object({ page: Type.Optional(Type.Integer({ minimum: 0, default: 0 })) });

/** UserResponse: the owner or author summary. */
export const PromptUser = Nullable(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String(), email: Type.String() }));

const promptFields = {
  id: Type.String(),
  command: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  content: Type.String(),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  tags: Tags,
  is_active: Type.Boolean(),
  version_id: Nullable(Type.String()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
  access_grants: Type.Array(AccessGrantSchema),
};

/** PromptModel. */
export const PromptModel = Type.Object(promptFields);

/** PromptAccessResponse (`GET /id/{id}`, `/list` items). */
export const PromptAccessResponse = Type.Object({ ...promptFields, user: PromptUser, write_access: Nullable(Type.Boolean()) });
export const PromptAccessListResponse = Type.Object({ items: Type.Array(PromptAccessResponse), total: Type.Integer() });

const versionFields = {
  id: Type.String(),
  prompt_id: Type.String(),
  parent_id: Nullable(Type.String()),
  snapshot: JsonObject(),
  user_id: Type.String(),
  commit_message: Nullable(Type.String()),
  created_at: Type.Integer(),
};

/** PromptHistoryModel: one version. */
export const PromptHistoryModel = Type.Object(versionFields);
/** PromptHistoryResponse: a version with its author. */
export const PromptHistoryResponse = Type.Object({ ...versionFields, user: PromptUser });
