import { Type } from '@sinclair/typebox';
import { JsonObject, Nullable } from '../../core/http/schema.js';

const fileFields = {
  id: Type.String(),
  user_id: Type.String(),
  hash: Nullable(Type.String()),
  filename: Type.String(),
  path: Nullable(Type.String()),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  created_at: Nullable(Type.Integer()),
  updated_at: Nullable(Type.Integer()),
};
const { path: _path, ...listedFields } = fileFields;

/** FileModel: a stored file's record. */
export const FileModel = Type.Object(fileFields);

/** FileModelResponse: a record in listings, without the server-side path. */
export const FileModelResponse = Type.Object(listedFields);

/** An upload's answer: the record, with `status: true` when queued for processing. */
export const FileUploadResponse = Type.Object({ ...fileFields, status: Type.Optional(Type.Boolean()) });

export const FileListResponse = Type.Object({ items: Type.Array(FileModelResponse), total: Type.Integer() });

export const UploadQuery = Type.Object({
  process: Type.Boolean({ default: true }),
  process_in_background: Type.Boolean({ default: true }),
});

export const FileListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, default: 1 }),
  content: Type.Boolean({ default: true }),
});

export const FileSearchQuery = Type.Object({
  filename: Type.String(),
  content: Type.Boolean({ default: true }),
  skip: Type.Integer({ minimum: 0, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
});

export const ProcessStatusQuery = Type.Object({ stream: Type.Boolean({ default: false }) });

export const FileContentQuery = Type.Object({ attachment: Type.Optional(Type.Boolean({ default: false })) });

/** ContentForm: the new extracted text. */
export const ContentForm = Type.Object({ content: Type.String() });

export const FileDataContent = Type.Object({ content: Type.String() });

/** FileRenameForm (0.11.0). */
export const FileRenameForm = Type.Object({ filename: Type.String({ minLength: 1 }) });

export const FileIdNameParams = Type.Object({ id: Type.String(), file_name: Type.String() });
