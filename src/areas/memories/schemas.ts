import { type Static, Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/** Memories (models/memories.py, routers/memories.py, 0.10.1's paths and types). */

const MemoryType = Type.Union([Type.Literal('user'), Type.Literal('context')]);
const TypeFilter = Type.Union([Type.Literal('user'), Type.Literal('context'), Type.Literal('all')]);

/** MemoryModel. */
export const MemoryModel = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  type: MemoryType,
  path: Nullable(Type.String()),
  content: Type.String(),
  meta: Nullable(JsonObject()),
  updated_at: Type.Integer(),
  created_at: Type.Integer(),
});

export const AddMemoryForm = Type.Object({ content: Type.String(), type: Type.Optional(MemoryType), path: Maybe(Type.String()) });
export type AddMemoryForm = Static<typeof AddMemoryForm>;

export const MemoryUpdateForm = Type.Object({ content: Maybe(Type.String()), type: Maybe(MemoryType), path: Maybe(Type.String()) });
export type MemoryUpdateForm = Static<typeof MemoryUpdateForm>;

export const MemoryOperation = Type.Object({
  action: Type.Union([Type.Literal('add'), Type.Literal('replace'), Type.Literal('remove'), Type.Literal('move')]),
  id: Maybe(Type.String()),
  content: Maybe(Type.String()),
  type: Maybe(MemoryType),
  path: Maybe(Type.String()),
});
export type MemoryOperation = Static<typeof MemoryOperation>;

export const UpdateMemoriesForm = Type.Object({
  operations: Type.Array(MemoryOperation),
  source: Maybe(Type.Union([Type.Literal('tool'), Type.Literal('background_review')])),
});
export type UpdateMemoriesForm = Static<typeof UpdateMemoriesForm>;

export const QueryMemoryForm = Type.Object({ content: Type.String(), k: Maybe(Type.Integer({ minimum: 1, maximum: 1000 })) });

export const SearchMemoriesForm = Type.Object({
  query: Maybe(Type.String()),
  type: Type.Optional(TypeFilter),
  path: Maybe(Type.String()),
  memory_id: Maybe(Type.String()),
  limit: Type.Optional(Type.Integer()),
});
export type SearchMemoriesForm = Static<typeof SearchMemoriesForm>;

/** ListMemoryPathsForm. */
export const ListMemoryPathsForm = Type.Object({ query: Maybe(Type.String()), type: Type.Optional(TypeFilter), limit: Type.Optional(Type.Integer()) });
export type ListMemoryPathsForm = Static<typeof ListMemoryPathsForm>;

/** ReadMemoryPathForm. */
export const ReadMemoryPathForm = Type.Object({
  path: Type.String(),
  type: Type.Optional(TypeFilter),
  include_children: Type.Optional(Type.Boolean()),
  limit: Type.Optional(Type.Integer()),
});
export type ReadMemoryPathForm = Static<typeof ReadMemoryPathForm>;

/** The vector store's SearchResult, one query's lists. */
export const MemoryQueryResult = Type.Object({
  ids: Type.Array(Type.Array(Type.String())),
  documents: Type.Array(Type.Array(Type.String())),
  metadatas: Type.Array(Type.Array(JsonObject())),
  distances: Type.Array(Type.Array(Type.Number())),
});

export const MemoryOperationResult = Type.Object({}, { additionalProperties: true });

export const PathGroup = Type.Object({ path: Nullable(Type.String()), type: Type.String(), count: Type.Integer(), updated_at: Type.Integer(), children: Type.Array(Type.String()) });
export const PathGroups = Type.Object({ paths: Type.Array(PathGroup), count: Type.Integer() });
export const PathRead = Type.Object({ path: Type.String(), parents: Type.Array(Type.String()), children: Type.Array(Type.String()), memories: Type.Array(MemoryModel) });

export const MemoryParams = Type.Object({ memory_id: Type.String() });
