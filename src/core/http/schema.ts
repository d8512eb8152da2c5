import { type Static, type TSchema, Type, type TObject, type TProperties, type ObjectOptions } from '@sinclair/typebox';

/** `T | None` in the reference's pydantic models. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** `field: T | None = None`: may be absent or null. */
export const Maybe = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));

/** Free-form JSON object (`dict` in the reference). */
export const JsonObject = (options: ObjectOptions = {}) => Type.Object({}, { additionalProperties: true, ...options });

/** Any JSON value. */
export const Json = Type.Unknown();

/** A response model that, like pydantic's `extra='allow'`, lets further fields through. */
export const Open = <T extends TProperties>(properties: T, options: ObjectOptions = {}): TObject<T> =>
  Type.Object(properties, { additionalProperties: true, ...options });

export const StatusResponse = Type.Object({ status: Type.Boolean() });

/** Path parameter `{id}`. */
export const IdParams = Type.Object({ id: Type.String() });

/** The query of a workspace page (`GET …/list` of models, prompts): search text, view, tag, order, page. */
export const WorkspaceListQuery = Type.Object({
  query: Type.Optional(Type.String()),
  view_option: Type.Optional(Type.String()),
  tag: Type.Optional(Type.String()),
  order_by: Type.Optional(Type.String()),
  direction: Type.Optional(Type.String()),
  page: Type.Optional(Type.Integer({ default: 1 })),
});
export type WorkspaceListQuery = Static<typeof WorkspaceListQuery>;
