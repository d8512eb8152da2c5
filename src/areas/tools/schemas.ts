import { type Static, Type } from '@sinclair/typebox';
import { AccessControlSchema, AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable, Open } from '../../core/http/schema.js';

/**
 * Tools (interface §2.1–2.4, models/tools.py, routers/tools.py). Records carry
 * both `access_grants` and the legacy `access_control` derived from them; forms
 * accept either (grants win when both are given).
 */

/** ToolMeta in forms: unknown keys are ignored; `manifest` and `has_user_valves` are recomputed from the source. */
export const ToolMetaForm = Type.Object(
  {
    description: Maybe(Type.String()),
    manifest: Maybe(JsonObject()),
    has_user_valves: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
);

export const ToolMeta = Type.Object({
  description: Nullable(Type.String()),
  manifest: Nullable(JsonObject()),
  has_user_valves: Type.Boolean(),
});

/** ToolForm (create and update). `access_grants: null` is a 422, as in the reference: omit it to leave grants alone. */
export const ToolForm = Type.Object({
  id: Type.String(),
  name: Type.String(),
  content: Type.String(),
  meta: ToolMetaForm,
  access_grants: Type.Optional(Type.Array(Nullable(JsonObject()))),
  access_control: Type.Optional(AccessControlSchema),
});
export type ToolForm = Static<typeof ToolForm>;

export const ToolAccessGrantsForm = Type.Object({ access_grants: Type.Array(JsonObject()) });
export type ToolAccessGrantsForm = Static<typeof ToolAccessGrantsForm>;

export const LoadUrlForm = Type.Object({ url: Type.String() });
export const LoadUrlResponse = Type.Object({ name: Type.String(), content: Type.String() });

/** Valves update bodies: any object of valve values. */
export const ValvesForm = JsonObject();
/** Stored valves (`null`: none configured, `{}`: configured, tool defaults apply) or a Valves JSON schema (`null`: no such class). */
export const ValvesResponse = Nullable(JsonObject());

/** UserResponse: the owner summary. */
export const ToolOwner = Nullable(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String(), email: Type.String() }));

const Specs = Type.Array(JsonObject());

const responseFields = {
  id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  meta: ToolMeta,
  access_grants: Type.Array(AccessGrantSchema),
  access_control: AccessControlSchema,
  updated_at: Type.Integer(),
  created_at: Type.Integer(),
};

/** ToolResponse: no source, no specs (create). */
export const ToolResponse = Type.Object(responseFields);

/** ToolModel: the whole record (update, access update, export). */
export const ToolModel = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  content: Type.String(),
  specs: Specs,
  meta: ToolMeta,
  access_grants: Type.Array(AccessGrantSchema),
  access_control: AccessControlSchema,
  updated_at: Type.Integer(),
  created_at: Type.Integer(),
});

/** ToolUserResponse (`GET /`), extra fields allowed: the specs ride along, as in the reference. */
export const ToolUserResponse = Open({ ...responseFields, user: ToolOwner, has_user_valves: Nullable(Type.Boolean()), specs: Specs });

/** ToolAccessResponse (`GET /list`, `GET /id/{id}`); `content` only for callers who may change the tool. */
export const ToolAccessResponse = Open({
  ...responseFields,
  user: ToolOwner,
  has_user_valves: Nullable(Type.Boolean()),
  write_access: Nullable(Type.Boolean()),
  content: Type.Optional(Type.String()),
  specs: Specs,
});
