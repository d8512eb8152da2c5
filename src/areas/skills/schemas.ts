import { type Static, Type } from '@sinclair/typebox';
import { AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/** Skills (models/skills.py, routers/skills.py). */

const SkillMetaSchema = Type.Object({ tags: Type.Array(Type.String()) });

/** SkillForm (create and update). `access_grants` absent or null leaves the grants alone on update. */
export const SkillForm = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Maybe(Type.String()),
  content: Type.String(),
  meta: Maybe(Type.Object({ tags: Maybe(Type.Array(Type.String())) })),
  is_active: Maybe(Type.Boolean()),
  access_grants: Maybe(Type.Array(Nullable(JsonObject()))),
});
export type SkillForm = Static<typeof SkillForm>;

export const SkillAccessGrantsForm = Type.Object({ access_grants: Type.Array(JsonObject()) });
export const SkillParams = Type.Object({ id: Type.String() });

/** UserResponse: the owner summary. */
const SkillUser = Nullable(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String(), email: Type.String() }));

const summaryFields = {
  id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  meta: SkillMetaSchema,
  is_active: Type.Boolean(),
  access_grants: Type.Array(AccessGrantSchema),
  updated_at: Type.Integer(),
  created_at: Type.Integer(),
};

/** SkillResponse (create): no content. */
export const SkillResponse = Type.Object(summaryFields);
/** SkillModel (update, access update, toggle, export). */
export const SkillModel = Type.Object({ ...summaryFields, content: Type.String() });
/** `GET /` entries: the record with its owner (the reference's response keeps the content). */
export const SkillUserResponse = Type.Object({ ...summaryFields, content: Type.String(), user: SkillUser });
/** `GET /id/{id}`: the record with `user: null` and `write_access`. */
export const SkillAccessResponse = Type.Object({ ...summaryFields, content: Type.String(), user: SkillUser, write_access: Type.Boolean() });
/** `GET /list` items: no content. */
export const SkillListItem = Type.Object({ ...summaryFields, user: SkillUser, write_access: Type.Boolean() });
export const SkillAccessListResponse = Type.Object({ items: Type.Array(SkillListItem), total: Type.Integer() });
