import { type Static, Type } from '@sinclair/typebox';
import { AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

const Int = Type.Integer();

/** FolderForm (extra fields refused, as the reference's `extra='forbid'`). */
export const FolderForm = Type.Object(
  { name: Type.String(), data: Maybe(JsonObject()), meta: Maybe(JsonObject()), parent_id: Maybe(Type.String()) },
  { additionalProperties: false },
);
export type FolderForm = Static<typeof FolderForm>;

export const FolderUpdateForm = Type.Object(
  { name: Maybe(Type.String()), data: Maybe(JsonObject()), meta: Maybe(JsonObject()) },
  { additionalProperties: false },
);

export const FolderParentIdForm = Type.Object({ parent_id: Maybe(Type.String()) }, { additionalProperties: true });
export const FolderIsExpandedForm = Type.Object({ is_expanded: Type.Boolean() }, { additionalProperties: true });
/** FolderAccessGrantsForm: entries are checked by the access service. */
export const FolderAccessGrantsForm = Type.Object({ access_grants: Type.Array(JsonObject()) }, { additionalProperties: true });

export const DeleteFolderQuery = Type.Object({ delete_contents: Type.Optional(Type.Boolean({ default: true })) });
export const SharedChatsQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1 })),
  sort_by: Type.Optional(Type.String({ default: 'unread_updated_at' })),
  sort_dir: Type.Optional(Type.String({ default: 'desc' })),
});

const folderFields = {
  id: Type.String(),
  parent_id: Nullable(Type.String()),
  user_id: Type.String(),
  name: Type.String(),
  items: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  data: Nullable(JsonObject()),
  is_expanded: Type.Boolean(),
  created_at: Int,
  updated_at: Int,
};

/** FolderModel. */
export const FolderModel = Type.Object(folderFields);

/** FolderModel with its grants (get by id and access update, 0.11.0). */
export const FolderWithGrants = Type.Object({ ...folderFields, access_grants: Type.Array(AccessGrantSchema) });

/** FolderNameIdResponse (0.11.0: `unread_count`, subfolders included). */
export const FolderNameIdResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  meta: Nullable(Type.Object({ icon: Nullable(Type.Unknown()) })),
  parent_id: Nullable(Type.String()),
  is_expanded: Type.Boolean(),
  unread_count: Int,
  created_at: Int,
  updated_at: Int,
});

export const SharedFolderResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  parent_id: Nullable(Type.String()),
  user_id: Type.String(),
  owner_name: Nullable(Type.String()),
  permission: Type.String(),
  access_grants: Type.Array(AccessGrantSchema),
  is_expanded: Type.Boolean(),
  meta: Nullable(JsonObject()),
  created_at: Int,
  updated_at: Int,
});

export const SharedFolderChatsResponse = Type.Object({
  chats: Type.Array(
    Type.Object({
      id: Type.String(),
      title: Type.String(),
      user_id: Type.String(),
      updated_at: Int,
      created_at: Int,
      last_read_at: Nullable(Int),
      owner_name: Type.String(),
      active: Type.Boolean(),
      readonly: Type.Boolean(),
    }),
  ),
  folder_permission: Type.String(),
  total: Type.Optional(Int),
  has_more: Type.Optional(Type.Boolean()),
});

export const FolderReadResponse = Type.Object({
  folder_id: Type.String(),
  folder_ids: Type.Array(Type.String()),
  updated_count: Int,
  folder_unread_counts: Type.Record(Type.String(), Int),
});
