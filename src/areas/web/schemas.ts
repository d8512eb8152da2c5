import { Type } from '@sinclair/typebox';

/** ProcessUrlForm (CollectionNameForm + url). */
export const ProcessUrlForm = Type.Object({
  collection_name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  url: Type.String(),
});

/** process_web's query: `process` (store the text, default true) and `overwrite` (replace the collection, default true). */
export const ProcessUrlQuery = Type.Object({
  process: Type.Boolean({ default: true }),
  overwrite: Type.Boolean({ default: true }),
});

/** The frontend sends one to three queries; Parley refuses more than 100 (each one is a provider call). */
export const SearchForm = Type.Object({ queries: Type.Array(Type.String(), { maxItems: 100 }) });

const SearchResult = Type.Object({ link: Type.String(), title: Type.Union([Type.String(), Type.Null()]), snippet: Type.Union([Type.String(), Type.Null()]) });

export const ProcessUrlResponse = Type.Union([
  Type.Object({
    status: Type.Boolean(),
    collection_name: Type.Union([Type.String(), Type.Null()]),
    filename: Type.String(),
    file: Type.Object({
      data: Type.Object({ content: Type.String() }),
      meta: Type.Object({ name: Type.String(), source: Type.String() }),
    }),
  }),
  Type.Object({ status: Type.Boolean(), content: Type.String() }),
]);

export const WebSearchResponse = Type.Union([
  Type.Object({
    status: Type.Boolean(),
    collection_names: Type.Array(Type.String()),
    items: Type.Array(SearchResult),
    filenames: Type.Array(Type.String()),
    loaded_count: Type.Integer(),
  }),
  Type.Object({
    status: Type.Boolean(),
    collection_name: Type.Null(),
    filenames: Type.Array(Type.String()),
    items: Type.Array(SearchResult),
    docs: Type.Array(Type.Object({ content: Type.String(), metadata: Type.Object({}, { additionalProperties: true }) })),
    loaded_count: Type.Integer(),
  }),
]);
