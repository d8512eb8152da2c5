import { type Static, Type } from '@sinclair/typebox';
import { AccessControlSchema, AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/**
 * Notes (models/notes.py, routers/notes.py). `data.content` holds the note as the
 * editor renders it (`md`, `html`, `json`); forms take `access_grants`, or the
 * legacy `access_control` (grants win when both are given).
 */

/** NoteForm (create and update). On update an absent field stays; `data` and `meta` are merged into the stored ones. */
export const NoteForm = Type.Object({
  title: Type.String(),
  data: Maybe(JsonObject()),
  meta: Maybe(JsonObject()),
  access_grants: Maybe(Type.Array(Nullable(JsonObject()))),
  access_control: Type.Optional(AccessControlSchema),
});
export type NoteForm = Static<typeof NoteForm>;

export const NoteAccessGrantsForm = Type.Object({ access_grants: Type.Array(JsonObject()) });
export const NoteParams = Type.Object({ id: Type.String() });

/** `GET /?page=`: 60 a page when given, everything otherwise. */
export const NoteListQuery = Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1 })) });

/** `GET /search`: the reference's filters; `permission` defaults to write, as there. */
export const NoteSearchQuery = Type.Object({
  query: Type.Optional(Type.String()),
  view_option: Type.Optional(Type.String()),
  permission: Type.Optional(Type.Union([Type.Literal('read'), Type.Literal('write')])),
  order_by: Type.Optional(Type.String()),
  direction: Type.Optional(Type.String()),
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
});
export type NoteSearchQuery = Static<typeof NoteSearchQuery>;

/** UserResponse: the owner summary. */
export const NoteUser = Nullable(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String(), email: Type.String() }));

const noteFields = {
  id: Type.String(),
  user_id: Type.String(),
  title: Type.String(),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  is_pinned: Type.Boolean(),
  access_grants: Type.Array(AccessGrantSchema),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
};

/** NoteModel. */
export const NoteModel = Type.Object(noteFields);
/** NoteResponse (`GET /{id}`). */
export const NoteResponse = Type.Object({ ...noteFields, write_access: Type.Boolean() });
/** NoteItemResponse (`GET /`, `GET /pinned`): the content cut to its first 1,000 characters of markdown. */
export const NoteItemResponse = Type.Object({
  id: Type.String(),
  title: Type.String(),
  data: Nullable(JsonObject()),
  is_pinned: Type.Boolean(),
  updated_at: Type.Integer(),
  created_at: Type.Integer(),
  user: NoteUser,
});
/** NoteListResponse (`GET /search`). */
export const NoteListResponse = Type.Object({ items: Type.Array(Type.Object({ ...noteFields, user: NoteUser })), total: Type.Integer() });
