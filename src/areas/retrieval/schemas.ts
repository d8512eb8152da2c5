import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Open } from '../../core/http/schema.js';
import { webConfigForm } from '../../core/web/config.js';

const fields = <T extends TSchema>(names: readonly string[], schema: T) => Object.fromEntries(names.map((name) => [name, schema]));

const STRING_FIELDS = [
  'CONTENT_EXTRACTION_ENGINE', 'PDF_LOADER_MODE', 'DATALAB_MARKER_API_KEY', 'DATALAB_MARKER_API_BASE_URL', 'DATALAB_MARKER_ADDITIONAL_CONFIG',
  'DATALAB_MARKER_OUTPUT_FORMAT', 'EXTERNAL_DOCUMENT_LOADER_URL', 'EXTERNAL_DOCUMENT_LOADER_API_KEY', 'TIKA_SERVER_URL', 'DOCLING_SERVER_URL',
  'DOCLING_API_KEY', 'DOCUMENT_INTELLIGENCE_ENDPOINT', 'DOCUMENT_INTELLIGENCE_KEY', 'DOCUMENT_INTELLIGENCE_MODEL', 'MISTRAL_OCR_API_BASE_URL',
  'MISTRAL_OCR_API_KEY', 'PADDLEOCR_VL_BASE_URL', 'PADDLEOCR_VL_TOKEN', 'MINERU_API_MODE', 'MINERU_API_URL', 'MINERU_API_KEY',
  'RAG_RERANKING_MODEL', 'RAG_RERANKING_ENGINE', 'RAG_EXTERNAL_RERANKER_URL', 'RAG_EXTERNAL_RERANKER_API_KEY', 'RAG_EXTERNAL_RERANKER_TIMEOUT',
  'TEXT_SPLITTER', 'RAG_TOKENIZER_MODEL',
] as const;
const BOOLEAN_FIELDS = [
  'BYPASS_EMBEDDING_AND_RETRIEVAL', 'RAG_FULL_CONTEXT', 'ENABLE_RAG_HYBRID_SEARCH', 'ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS', 'PDF_EXTRACT_IMAGES',
  'DATALAB_MARKER_SKIP_CACHE', 'DATALAB_MARKER_FORCE_OCR', 'DATALAB_MARKER_PAGINATE', 'DATALAB_MARKER_STRIP_EXISTING_OCR',
  'DATALAB_MARKER_DISABLE_IMAGE_EXTRACTION', 'DATALAB_MARKER_FORMAT_LINES', 'DATALAB_MARKER_USE_LLM', 'MISTRAL_OCR_USE_BASE64',
  'ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER', 'ENABLE_GOOGLE_DRIVE_INTEGRATION', 'ENABLE_ONEDRIVE_INTEGRATION',
] as const;
const INTEGER_FIELDS = ['TOP_K', 'TOP_K_RERANKER', 'MINERU_API_TIMEOUT', 'RAG_RERANKING_BATCH_SIZE', 'CHUNK_SIZE', 'CHUNK_MIN_SIZE_TARGET', 'CHUNK_OVERLAP'] as const;
const NUMBER_FIELDS = ['RELEVANCE_THRESHOLD', 'HYBRID_BM25_WEIGHT'] as const;
const OBJECT_FIELDS = ['EXTERNAL_DOCUMENT_LOADER_HEADERS', 'DOCLING_PARAMS', 'MINERU_PARAMS'] as const;
/** An integer, or '' for "no limit" (the reference's Union[int, str | None]). */
const LIMIT_FIELDS = ['FILE_MAX_SIZE', 'FILE_MAX_COUNT', 'FILE_IMAGE_COMPRESSION_WIDTH', 'FILE_IMAGE_COMPRESSION_HEIGHT'] as const;
/** Lists where null is refused (422), as pydantic refuses None for `list[...] = None`. */
export const LIST_FIELDS = ['ALLOWED_FILE_EXTENSIONS', 'YOUTUBE_LOADER_LANGUAGE', 'CONTENT_EXTRACTION_SUPPORTED_MEDIA_MIME_TYPES'] as const;

/**
 * The reference's ConfigForm with the 0.11.0 fields: every field optional, null (or absent)
 * leaving the setting unchanged, except the lists; `web` is web search's part
 * (core/web/config.ts). Other keys are ignored, as pydantic ignores them.
 */
export const RetrievalConfigForm = Open({
  ...fields(STRING_FIELDS, Maybe(Type.String())),
  ...fields(BOOLEAN_FIELDS, Maybe(Type.Boolean())),
  ...fields(INTEGER_FIELDS, Maybe(Type.Integer())),
  ...fields(NUMBER_FIELDS, Maybe(Type.Number())),
  ...fields(OBJECT_FIELDS, Maybe(JsonObject())),
  ...fields(LIMIT_FIELDS, Maybe(Type.Union([Type.Integer(), Type.String()]))),
  ...fields(LIST_FIELDS, Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 1000 }))),
  MINERU_FILE_EXTENSIONS: Maybe(Type.Array(Type.String(), { maxItems: 1000 })),
  RAG_TEMPLATE: Maybe(Type.String()),
  web: Maybe(webConfigForm),
});
export type RetrievalConfigForm = Record<string, unknown>;

export const RetrievalConfigResponse = JsonObject();

const Connection = Type.Object({ url: Type.String(), key: Type.String() });

/** The reference's EmbeddingModelUpdateForm. */
export const EmbeddingConfigForm = Open({
  openai_config: Maybe(Connection),
  ollama_config: Maybe(Connection),
  azure_openai_config: Maybe(Type.Object({ url: Type.String(), key: Type.String(), version: Type.String() })),
  RAG_EMBEDDING_ENGINE: Type.String(),
  RAG_EMBEDDING_MODEL: Type.String(),
  RAG_EMBEDDING_BATCH_SIZE: Maybe(Type.Integer()),
  ENABLE_ASYNC_EMBEDDING: Maybe(Type.Boolean()),
  RAG_EMBEDDING_CONCURRENT_REQUESTS: Maybe(Type.Integer()),
});
export type EmbeddingConfigForm = Static<typeof EmbeddingConfigForm>;

export const EmbeddingConfigResponse = Type.Object({
  status: Type.Boolean(),
  RAG_EMBEDDING_ENGINE: Type.String(),
  RAG_EMBEDDING_MODEL: Type.String(),
  RAG_EMBEDDING_BATCH_SIZE: Type.Integer(),
  ENABLE_ASYNC_EMBEDDING: Type.Boolean(),
  RAG_EMBEDDING_CONCURRENT_REQUESTS: Type.Integer(),
  openai_config: Connection,
  ollama_config: Connection,
  azure_openai_config: Type.Object({ url: Type.String(), key: Type.String(), version: Type.String() }),
});
export type EmbeddingConfigResponse = Static<typeof EmbeddingConfigResponse>;

/** Collection names as the reference accepts them (_SAFE_COLLECTION_NAME_RE); others are refused before the store. */
export const COLLECTION_NAME = /^[A-Za-z0-9_-]{1,255}$/;

export const ProcessTextForm = Open({ name: Type.String(), content: Type.String(), collection_name: Maybe(Type.String()) });
export type ProcessTextForm = Static<typeof ProcessTextForm>;

export const ProcessFileForm = Open({ file_id: Type.String(), content: Maybe(Type.String()), collection_name: Maybe(Type.String()) });
export type ProcessFileForm = Static<typeof ProcessFileForm>;

export const ProcessResponse = Type.Object(
  { status: Type.Boolean(), collection_name: Type.Union([Type.String(), Type.Null()]), filename: Type.Optional(Type.String()), content: Type.String() },
);

const FileInBatch = Open({ id: Type.String(), filename: Type.Optional(Type.String()), meta: Maybe(JsonObject()), data: Maybe(JsonObject()) });
export const BatchProcessFilesForm = Open({ files: Type.Array(FileInBatch, { maxItems: 1000 }), collection_name: Type.String() });
export type BatchProcessFilesForm = Static<typeof BatchProcessFilesForm>;

const BatchResult = Type.Object({ file_id: Type.String(), status: Type.String(), error: Maybe(Type.String()) });
export const BatchProcessFilesResponse = Type.Object({ results: Type.Array(BatchResult), errors: Type.Array(BatchResult) });
export type BatchProcessFilesResponse = Static<typeof BatchProcessFilesResponse>;

const searchOptions = {
  k: Maybe(Type.Integer()),
  k_reranker: Maybe(Type.Integer()),
  r: Maybe(Type.Number()),
  hybrid: Maybe(Type.Boolean()),
  hybrid_bm25_weight: Maybe(Type.Number()),
};
export const QueryDocForm = Open({ collection_name: Type.String(), query: Type.String(), ...searchOptions });
export type QueryDocForm = Static<typeof QueryDocForm>;
export const QueryCollectionsForm = Open({
  collection_names: Type.Array(Type.String(), { maxItems: 1000 }),
  query: Type.String(),
  ...searchOptions,
  enable_enriched_texts: Maybe(Type.Boolean()),
});
export type QueryCollectionsForm = Static<typeof QueryCollectionsForm>;

/** The reference's query result: one list per query, best first, `distances` the scores. */
export const QueryResult = Type.Object({
  distances: Type.Array(Type.Array(Type.Number())),
  documents: Type.Array(Type.Array(Type.String())),
  metadatas: Type.Array(Type.Array(JsonObject())),
});
export type QueryResult = Static<typeof QueryResult>;

export const DeleteForm = Open({ collection_name: Type.String(), file_id: Type.String() });
export type DeleteForm = Static<typeof DeleteForm>;
