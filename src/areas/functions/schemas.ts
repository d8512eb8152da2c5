import { type Static, Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable, Open } from '../../core/http/schema.js';

/** Functions (models/functions.py, routers/functions.py). */

/** FunctionMeta: `description`, `manifest`, and any other keys (`toggle`, `error`), as the reference allows. */
export const FunctionMeta = Open({ description: Maybe(Type.String()), manifest: Maybe(JsonObject()) });

export const FunctionForm = Type.Object({
  id: Type.String({ maxLength: 256 }),
  name: Type.String({ maxLength: 1024 }),
  content: Type.String(),
  meta: FunctionMeta,
});
export type FunctionForm = Static<typeof FunctionForm>;

const responseFields = {
  id: Type.String(),
  user_id: Type.String(),
  type: Type.String(),
  name: Type.String(),
  meta: FunctionMeta,
  is_active: Type.Boolean(),
  is_global: Type.Boolean(),
  updated_at: Type.Integer(),
  created_at: Type.Integer(),
};

/** FunctionResponse: no source (`GET /`, create). */
export const FunctionResponse = Type.Object(responseFields);

/** FunctionUserResponse (`GET /list`): with the owner. */
export const FunctionUserResponse = Type.Object({
  ...responseFields,
  user: Nullable(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String(), email: Type.String() })),
});

/** FunctionModel: the whole record; FunctionWithValvesModel adds the admin valves (export with include_valves, sync). */
export const FunctionModel = Type.Object({ ...responseFields, content: Type.String(), valves: Type.Optional(Nullable(JsonObject())) });

/** An entry of a sync body: an exported record (FunctionWithValvesModel); missing fields take defaults. */
export const SyncFunction = Type.Object({
  id: Type.String({ maxLength: 256 }),
  name: Type.String({ maxLength: 1024 }),
  content: Type.String(),
  meta: Type.Optional(FunctionMeta),
  type: Type.Optional(Type.String()),
  valves: Type.Optional(Nullable(JsonObject())),
  is_active: Type.Optional(Type.Boolean()),
  is_global: Type.Optional(Type.Boolean()),
});
export type SyncFunction = Static<typeof SyncFunction>;

export const SyncFunctionsForm = Type.Object({ functions: Type.Array(SyncFunction, { maxItems: 1000 }) });

export const ExportQuery = Type.Object({ include_valves: Type.Optional(Type.Boolean()) });
