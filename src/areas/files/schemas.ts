import { Type } from '@sinclair/typebox';
import { JsonObject, Nullable } from '../../core/http/schema.js';

/** FileModel: a stored file's record. */
export const FileModel = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  hash: Nullable(Type.String()),
  filename: Type.String(),
  path: Nullable(Type.String()),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  created_at: Nullable(Type.Integer()),
  updated_at: Nullable(Type.Integer()),
});

export const FileContentQuery = Type.Object({ attachment: Type.Optional(Type.Boolean({ default: false })) });
