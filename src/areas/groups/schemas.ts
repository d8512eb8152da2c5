import { Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/** GroupForm / GroupUpdateForm. */
export const GroupForm = Type.Object({
  name: Type.String(),
  description: Type.String(),
  permissions: Maybe(JsonObject()),
  data: Maybe(JsonObject()),
});

/** UserIdsForm: the users to add or remove. */
export const UserIdsForm = Type.Object({
  user_ids: Maybe(Type.Array(Type.String())),
});

export const GroupListQuery = Type.Object({
  share: Type.Optional(Type.Boolean()),
});

const groupModelFields = {
  id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  permissions: Nullable(JsonObject()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
};

/** GroupModel: the stored group, as the user-membership routes list them. */
export const GroupModel = Type.Object(groupModelFields, { additionalProperties: false });

const groupFields = { ...groupModelFields, member_count: Nullable(Type.Integer()) };

/** GroupResponse: the group record with its member count. */
export const GroupResponse = Type.Object(groupFields);

/** GroupInfoResponse: what any verified user may see of a group. */
export const GroupInfoResponse = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  member_count: Nullable(Type.Integer()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});

/** GroupExportResponse: the group with its members' ids. */
export const GroupExportResponse = Type.Object({ ...groupFields, user_ids: Type.Array(Type.String()) });

/** UserInfoResponse, as the member list returns it. */
export const GroupMemberResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Type.String(),
  role: Type.String(),
  bio: Nullable(Type.String()),
  groups: Nullable(Type.Array(Type.Unknown())),
  is_active: Type.Boolean(),
  status_emoji: Nullable(Type.String()),
  status_message: Nullable(Type.String()),
  status_expires_at: Nullable(Type.Integer()),
});

const PreviewItems = Type.Object({
  items: Type.Array(Type.Object({ id: Type.String(), name: Type.String() })),
  total: Type.Integer(),
});

/** The admin access preview of a group: what its grants reach, and its permissions. */
export const GroupPreviewResponse = Type.Object(
  {
    group: Type.Object({ id: Type.String(), name: Type.String() }),
    models: PreviewItems,
    knowledge: PreviewItems,
    tools: PreviewItems,
    permissions: JsonObject(),
  },
);
