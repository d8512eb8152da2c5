import { type Static, Type } from '@sinclair/typebox';
import { AccessControlSchema, AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable, Open } from '../../core/http/schema.js';

/**
 * Knowledge bases (models/knowledge.py, routers/knowledge.py). Forms take
 * `access_grants`, or the legacy `access_control`; records carry `access_grants`.
 */

/** KnowledgeForm (create and update). `access_grants` absent or null leaves the grants alone on update. */
export const KnowledgeForm = Type.Object({
  name: Type.String(),
  description: Type.String(),
  access_grants: Maybe(Type.Array(Nullable(JsonObject()))),
  access_control: Type.Optional(AccessControlSchema),
});
export type KnowledgeForm = Static<typeof KnowledgeForm>;

export const KnowledgeAccessGrantsForm = Type.Object({ access_grants: Type.Array(JsonObject()) });

/** KnowledgeFileIdForm; `directory_id` places the file in a folder (0.11.0). */
export const KnowledgeFileIdForm = Type.Object({ file_id: Type.String(), directory_id: Maybe(Type.String()) });
export type KnowledgeFileIdForm = Static<typeof KnowledgeFileIdForm>;

export const KnowledgeDirectoryCreateForm = Type.Object({ name: Type.String(), parent_id: Maybe(Type.String()) });
/** KnowledgeDirectoryUpdateForm: `parent_id` '__unset__' (the default) leaves the parent; null moves to the top level. */
export const KnowledgeDirectoryUpdateForm = Type.Object({ name: Maybe(Type.String()), parent_id: Maybe(Type.String()) });
export const KnowledgeFileMoveForm = Type.Object({ file_id: Type.String(), directory_id: Maybe(Type.String()) });

/** FileManifestEntry: a file of the client's folder (`path` its folder, '' at the top). */
export const FileManifestEntry = Type.Object({ filename: Type.String(), path: Type.String(), checksum: Type.String(), size: Type.Integer() });
export const SyncDiffForm = Type.Object({ manifest: Type.Array(FileManifestEntry) });
export type SyncDiffForm = Static<typeof SyncDiffForm>;
export const SyncDiffResponse = Type.Object({
  added: Type.Array(JsonObject()),
  modified: Type.Array(JsonObject()),
  deleted: Type.Array(JsonObject()),
  mkdir: Type.Array(Type.String()),
  rmdir: Type.Array(Type.String()),
  unmodified_count: Type.Integer(),
  directory_map: Type.Record(Type.String(), Type.String()),
});
export const SyncCleanupForm = Type.Object({ file_ids: Type.Array(Type.String()), dir_ids: Type.Optional(Type.Array(Type.String(), { default: [] })) });

export const KnowledgeParams = Type.Object({ id: Type.String() });
export const DirectoryParams = Type.Object({ id: Type.String(), dir_id: Type.String() });
export const PageQuery = Type.Object({ page: Type.Optional(Type.Integer({ default: 1 })) });
export const KnowledgeSearchQuery = Type.Object({
  query: Type.Optional(Type.String()),
  view_option: Type.Optional(Type.String()),
  source: Type.Optional(Type.String()),
  page: Type.Optional(Type.Integer({ default: 1 })),
});
export const FileSearchQuery = Type.Object({
  query: Type.Optional(Type.String()),
  include_content: Type.Optional(Type.Boolean({ default: false })),
  page: Type.Optional(Type.Integer({ default: 1 })),
});
export type FileSearchQuery = Static<typeof FileSearchQuery>;
export const KnowledgeFilesQuery = Type.Object({
  query: Type.Optional(Type.String()),
  include_content: Type.Optional(Type.Boolean({ default: false })),
  view_option: Type.Optional(Type.String()),
  order_by: Type.Optional(Type.String()),
  direction: Type.Optional(Type.String()),
  directory_id: Type.Optional(Type.String()),
  page: Type.Optional(Type.Integer({ default: 1 })),
  limit: Type.Optional(Type.Integer()),
});
export type KnowledgeFilesQuery = Static<typeof KnowledgeFilesQuery>;
export const RemoveFileQuery = Type.Object({ delete_file: Type.Optional(Type.Boolean({ default: true })) });
export const ResetQuery = Type.Object({ include_directories: Type.Optional(Type.Boolean({ default: true })) });
export const DeleteDirectoryQuery = Type.Object({ move_files: Type.Optional(Type.Boolean({ default: true })) });
export const PendingQuery = Type.Object({ stream: Type.Optional(Type.Boolean({ default: false })) });

/** UserResponse: the owner or the one who added a file. */
export const KnowledgeUser = Nullable(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String(), email: Type.String() }));

const knowledgeFields = {
  id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  meta: Nullable(JsonObject()),
  access_grants: Type.Array(AccessGrantSchema),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
};

/** FileMetadataResponse. */
export const FileMetadata = Open({ id: Type.String(), hash: Nullable(Type.String()), meta: Nullable(JsonObject()), created_at: Type.Integer(), updated_at: Type.Integer() });

/** KnowledgeResponse (create, reset, the external routes). */
export const KnowledgeResponse = Type.Object({ ...knowledgeFields, files: Maybe(Type.Array(FileMetadata)) });
/** KnowledgeFilesResponse (get, update, file routes): the files, and whether the caller may write. */
export const KnowledgeFilesResponse = Type.Object({
  ...knowledgeFields,
  files: Maybe(Type.Array(FileMetadata)),
  write_access: Maybe(Type.Boolean()),
  warnings: Type.Optional(JsonObject()),
});
/** KnowledgeAccessResponse (listings): with the owner, `write_access` and `file_count` (0.11.0). */
export const KnowledgeAccessResponse = Type.Object({ ...knowledgeFields, user: KnowledgeUser, write_access: Maybe(Type.Boolean()), file_count: Type.Integer() });
export const KnowledgeAccessListResponse = Type.Object({ items: Type.Array(KnowledgeAccessResponse), total: Type.Integer() });

/** KnowledgeDirectoryModel. */
export const KnowledgeDirectoryModel = Type.Object({
  id: Type.String(),
  knowledge_id: Type.String(),
  parent_id: Nullable(Type.String()),
  name: Type.String(),
  user_id: Type.String(),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});

/** FileUserResponse: a file with the one who added it (and, in the cross-base search, its knowledge base as `collection`). */
export const FileUserResponse = Open({
  id: Type.String(),
  user_id: Type.String(),
  hash: Nullable(Type.String()),
  filename: Type.String(),
  meta: Nullable(JsonObject()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
  user: KnowledgeUser,
});
/** KnowledgeFileListResponse: a page of files, the folders at that level and the path to it (0.11.0). */
export const KnowledgeFileListResponse = Type.Object({
  items: Type.Array(FileUserResponse),
  directories: Type.Array(KnowledgeDirectoryModel),
  breadcrumbs: Type.Array(KnowledgeDirectoryModel),
  total: Type.Integer(),
});

// ---- external knowledge ------------------------------------------------------

export const ExternalKnowledgeConnectionForm = Type.Object({
  name: Type.String(),
  provider: Type.String(),
  endpoint: Type.String(),
  auth_config: Maybe(JsonObject()),
  config: Maybe(JsonObject()),
  capabilities: Maybe(JsonObject()),
  enabled: Type.Optional(Type.Boolean({ default: true })),
});
export type ExternalKnowledgeConnectionForm = Static<typeof ExternalKnowledgeConnectionForm>;
export const ExternalKnowledgeSourceForm = Type.Object({ type: Type.Optional(Type.String({ default: 'collection' })), name: Type.String(), config: Maybe(JsonObject()) });
export type ExternalKnowledgeSourceForm = Static<typeof ExternalKnowledgeSourceForm>;
const grantsField = Maybe(Type.Array(JsonObject()));
export const ExternalKnowledgeCreateForm = Type.Object({
  name: Type.String(),
  description: Type.Optional(Type.String({ default: '' })),
  connection_id: Type.String(),
  source: ExternalKnowledgeSourceForm,
  access_grants: grantsField,
});
export type ExternalKnowledgeCreateForm = Static<typeof ExternalKnowledgeCreateForm>;
export const ExternalKnowledgeSourceCreateForm = Type.Object({
  name: Type.String(),
  description: Type.Optional(Type.String({ default: '' })),
  connection: ExternalKnowledgeConnectionForm,
  source: ExternalKnowledgeSourceForm,
  access_grants: grantsField,
  test_query: Type.String(),
  test_count: Type.Optional(Type.Integer({ default: 5 })),
});
export type ExternalKnowledgeSourceCreateForm = Static<typeof ExternalKnowledgeSourceCreateForm>;
export const ExternalKnowledgeSourceTestForm = Type.Object({
  connection_id: Maybe(Type.String()),
  connection: ExternalKnowledgeConnectionForm,
  source: ExternalKnowledgeSourceForm,
  query: Type.String(),
  count: Type.Optional(Type.Integer({ default: 5 })),
});
export type ExternalKnowledgeSourceTestForm = Static<typeof ExternalKnowledgeSourceTestForm>;
export const ExternalKnowledgeRetrieveTestForm = Type.Object({ query: Type.String(), source: Maybe(ExternalKnowledgeSourceForm), count: Type.Optional(Type.Integer({ default: 5 })) });
export const ExternalConnectionListResponse = Type.Object({ items: Type.Array(JsonObject()), total: Type.Integer() });
export const ExternalTestResult = Type.Object({ documents: Type.Array(Type.Unknown()), metadatas: Type.Array(Type.Unknown()), distances: Type.Array(Type.Unknown()) });
