import { checks, defineSetting, parsers, type SettingDefinition } from '../../config/settings.js';
import * as engines from './extraction-settings.js';

/**
 * Every persistent setting of retrieval (the reference's config.py `rag.*` keys and their
 * environment variables), named by the field `/api/v1/retrieval/config` shows it under.
 * RAG_TEMPLATE lives with the template (retrieval/template.ts); web search's settings with
 * core/web. The extraction engines' settings are kept and reported as the reference does
 * (the files area extracts in process and reads none of them).
 */
const text = (key: string, env: string, fallback = '') => defineSetting<string>({ key, env, default: fallback, check: checks.string });
const flag = (key: string, env: string, fallback: boolean) => defineSetting<boolean>({ key, env, default: fallback, parse: parsers.bool, check: checks.bool });
const integer = (key: string, env: string, fallback: number, min = 0) =>
  defineSetting<number>({ key, env, default: fallback, parse: parsers.int, check: checks.intWithin(min) });
const nullableInteger = (key: string, env: string) =>
  defineSetting<number | null>({
    key,
    env,
    default: null,
    parse: (raw) => (Number.isFinite(Number.parseInt(raw, 10)) ? Number.parseInt(raw, 10) : null),
    check: checks.nullableInt,
  });
const number = (key: string, env: string, fallback: number) =>
  defineSetting<number>({ key, env, default: fallback, parse: Number.parseFloat, check: (v) => (typeof v === 'number' && Number.isFinite(v) ? null : 'must be a number') });
const list = (key: string, env: string, fallback: string[] = []) => defineSetting<string[]>({ key, env, default: fallback, parse: parsers.list, check: checks.list });
/** A JSON object in the environment; anything else is `{}`, as the reference's try/except. */
const object = (key: string, env: string) =>
  defineSetting<Record<string, unknown>>({
    key,
    env,
    default: {},
    parse: (raw) => {
      const value = JSON.parse(raw) as unknown;
      return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
    },
    check: checks.object,
  });

// Retrieval proper.
export const TOP_K = integer('rag.top_k', 'RAG_TOP_K', 3, 1);
export const TOP_K_RERANKER = integer('rag.top_k_reranker', 'RAG_TOP_K_RERANKER', 3, 1);
export const RELEVANCE_THRESHOLD = number('rag.relevance_threshold', 'RAG_RELEVANCE_THRESHOLD', 0);
export const HYBRID_BM25_WEIGHT = number('rag.hybrid_bm25_weight', 'RAG_HYBRID_BM25_WEIGHT', 0.5);
export const ENABLE_RAG_HYBRID_SEARCH = flag('rag.enable_hybrid_search', 'ENABLE_RAG_HYBRID_SEARCH', false);
export const ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS = flag('rag.enable_hybrid_search_enriched_texts', 'ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS', false);
export const BYPASS_EMBEDDING_AND_RETRIEVAL = flag('rag.bypass_embedding_and_retrieval', 'BYPASS_EMBEDDING_AND_RETRIEVAL', false);
export const RAG_FULL_CONTEXT = flag('rag.full_context', 'RAG_FULL_CONTEXT', false);

// Embeddings.
export const RAG_EMBEDDING_ENGINE = text('rag.embedding_engine', 'RAG_EMBEDDING_ENGINE');
export const RAG_EMBEDDING_MODEL = text('rag.embedding_model', 'RAG_EMBEDDING_MODEL', 'sentence-transformers/all-MiniLM-L6-v2');
export const RAG_EMBEDDING_BATCH_SIZE = defineSetting<number>({
  key: 'rag.embedding_batch_size',
  env: 'RAG_EMBEDDING_BATCH_SIZE',
  seedFrom: ['RAG_EMBEDDING_BATCH_SIZE', 'RAG_EMBEDDING_OPENAI_BATCH_SIZE'],
  seed: (env) => Number.parseInt(env.RAG_EMBEDDING_BATCH_SIZE || env.RAG_EMBEDDING_OPENAI_BATCH_SIZE || '1', 10) || 1,
  default: 1,
  check: checks.intWithin(1),
});
export const ENABLE_ASYNC_EMBEDDING = flag('rag.enable_async_embedding', 'ENABLE_ASYNC_EMBEDDING', true);
export const RAG_EMBEDDING_CONCURRENT_REQUESTS = integer('rag.embedding_concurrent_requests', 'RAG_EMBEDDING_CONCURRENT_REQUESTS', 0);
export const RAG_OPENAI_API_BASE_URL = defineSetting<string>({
  key: 'rag.openai.api_base_url',
  env: 'RAG_OPENAI_API_BASE_URL',
  seedFrom: ['RAG_OPENAI_API_BASE_URL', 'OPENAI_API_BASE_URL'],
  seed: (env) => env.RAG_OPENAI_API_BASE_URL || env.OPENAI_API_BASE_URL || 'https://api.openai.com/v1',
  default: 'https://api.openai.com/v1',
  check: checks.string,
});
export const RAG_OPENAI_API_KEY = defineSetting<string>({
  key: 'rag.openai.api_key',
  env: 'RAG_OPENAI_API_KEY',
  seedFrom: ['RAG_OPENAI_API_KEY', 'OPENAI_API_KEY'],
  seed: (env) => env.RAG_OPENAI_API_KEY || env.OPENAI_API_KEY || '',
  default: '',
  check: checks.string,
});
export const RAG_OLLAMA_BASE_URL = defineSetting<string>({
  key: 'rag.ollama.base_url',
  env: 'RAG_OLLAMA_BASE_URL',
  seedFrom: ['RAG_OLLAMA_BASE_URL', 'OLLAMA_BASE_URL'],
  seed: (env) => env.RAG_OLLAMA_BASE_URL || env.OLLAMA_BASE_URL || 'http://localhost:11434',
  default: 'http://localhost:11434',
  check: checks.string,
});
export const RAG_OLLAMA_API_KEY = text('rag.ollama.api_key', 'RAG_OLLAMA_API_KEY');
export const RAG_AZURE_OPENAI_BASE_URL = text('rag.azure_openai.base_url', 'RAG_AZURE_OPENAI_BASE_URL');
export const RAG_AZURE_OPENAI_API_KEY = text('rag.azure_openai.api_key', 'RAG_AZURE_OPENAI_API_KEY');
export const RAG_AZURE_OPENAI_API_VERSION = text('rag.azure_openai.api_version', 'RAG_AZURE_OPENAI_API_VERSION');

// Reranking.
export const RAG_RERANKING_ENGINE = text('rag.reranking_engine', 'RAG_RERANKING_ENGINE');
export const RAG_RERANKING_MODEL = text('rag.reranking_model', 'RAG_RERANKING_MODEL');
export const RAG_RERANKING_BATCH_SIZE = integer('rag.reranking_batch_size', 'RAG_RERANKING_BATCH_SIZE', 32, 1);
export const RAG_EXTERNAL_RERANKER_URL = text('rag.external_reranker_url', 'RAG_EXTERNAL_RERANKER_URL');
export const RAG_EXTERNAL_RERANKER_API_KEY = text('rag.external_reranker_api_key', 'RAG_EXTERNAL_RERANKER_API_KEY');
/** Seconds, as a string (the reference's type); empty: the upstream client's deadline. */
export const RAG_EXTERNAL_RERANKER_TIMEOUT = text('rag.external_reranker_timeout', 'RAG_EXTERNAL_RERANKER_TIMEOUT');

// Chunking.
export const TEXT_SPLITTER = text('rag.text_splitter', 'RAG_TEXT_SPLITTER');
export const RAG_TOKENIZER_MODEL = text('rag.tokenizer_model', 'RAG_TOKENIZER_MODEL');
export const TIKTOKEN_ENCODING_NAME = text('rag.tiktoken_encoding_name', 'TIKTOKEN_ENCODING_NAME', 'cl100k_base');
export const ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER = flag('rag.enable_markdown_header_text_splitter', 'ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER', true);
export const CHUNK_SIZE = integer('rag.chunk_size', 'CHUNK_SIZE', 1000, 1);
export const CHUNK_MIN_SIZE_TARGET = integer('rag.chunk_min_size_target', 'CHUNK_MIN_SIZE_TARGET', 0);
export const CHUNK_OVERLAP = integer('rag.chunk_overlap', 'CHUNK_OVERLAP', 100);

// Uploads (read by the files area and the upload body limit).
export const FILE_MAX_SIZE = nullableInteger('rag.file.max_size', 'RAG_FILE_MAX_SIZE');
export const FILE_MAX_COUNT = nullableInteger('rag.file.max_count', 'RAG_FILE_MAX_COUNT');
/** Extensions a processed upload may have; empty: any. */
export const ALLOWED_FILE_EXTENSIONS = list('rag.file.allowed_extensions', 'RAG_ALLOWED_FILE_EXTENSIONS');
export const YOUTUBE_LOADER_LANGUAGE = list('rag.youtube_loader_language', 'YOUTUBE_LOADER_LANGUAGE', ['en']);
/** Media types the extraction engine is given as media (0.11.0); empty: the engine's own list. */
export const CONTENT_EXTRACTION_SUPPORTED_MEDIA_MIME_TYPES = list('rag.content_extraction_supported_media_mime_types', 'CONTENT_EXTRACTION_SUPPORTED_MEDIA_MIME_TYPES');
export const YOUTUBE_LOADER_PROXY_URL = text('rag.youtube_loader_proxy_url', 'YOUTUBE_LOADER_PROXY_URL');

// Content extraction engines: the ones Parley calls are extraction-settings.ts's; the others are reported and stored.
const extraction = {
  CONTENT_EXTRACTION_ENGINE: engines.CONTENT_EXTRACTION_ENGINE,
  PDF_EXTRACT_IMAGES: engines.PDF_EXTRACT_IMAGES,
  PDF_LOADER_MODE: text('rag.pdf_loader_mode', 'PDF_LOADER_MODE', 'page'),
  DATALAB_MARKER_API_KEY: text('rag.datalab_marker_api_key', 'DATALAB_MARKER_API_KEY'),
  DATALAB_MARKER_API_BASE_URL: text('rag.datalab_marker_api_base_url', 'DATALAB_MARKER_API_BASE_URL'),
  DATALAB_MARKER_ADDITIONAL_CONFIG: text('rag.datalab_marker_additional_config', 'DATALAB_MARKER_ADDITIONAL_CONFIG'),
  DATALAB_MARKER_SKIP_CACHE: flag('rag.datalab_marker_skip_cache', 'DATALAB_MARKER_SKIP_CACHE', false),
  DATALAB_MARKER_FORCE_OCR: flag('rag.datalab_marker_force_ocr', 'DATALAB_MARKER_FORCE_OCR', false),
  DATALAB_MARKER_PAGINATE: flag('rag.datalab_marker_paginate', 'DATALAB_MARKER_PAGINATE', false),
  DATALAB_MARKER_STRIP_EXISTING_OCR: flag('rag.datalab_marker_strip_existing_ocr', 'DATALAB_MARKER_STRIP_EXISTING_OCR', false),
  DATALAB_MARKER_DISABLE_IMAGE_EXTRACTION: flag('rag.datalab_marker_disable_image_extraction', 'DATALAB_MARKER_DISABLE_IMAGE_EXTRACTION', false),
  DATALAB_MARKER_FORMAT_LINES: flag('rag.datalab_marker_format_lines', 'DATALAB_MARKER_FORMAT_LINES', false),
  DATALAB_MARKER_USE_LLM: flag('rag.datalab_marker_use_llm', 'DATALAB_MARKER_USE_LLM', false),
  DATALAB_MARKER_OUTPUT_FORMAT: text('rag.datalab_marker_output_format', 'DATALAB_MARKER_OUTPUT_FORMAT', 'markdown'),
  EXTERNAL_DOCUMENT_LOADER_URL: engines.EXTERNAL_DOCUMENT_LOADER_URL,
  EXTERNAL_DOCUMENT_LOADER_API_KEY: engines.EXTERNAL_DOCUMENT_LOADER_API_KEY,
  EXTERNAL_DOCUMENT_LOADER_HEADERS: engines.EXTERNAL_DOCUMENT_LOADER_HEADERS,
  TIKA_SERVER_URL: engines.TIKA_SERVER_URL,
  DOCLING_SERVER_URL: engines.DOCLING_SERVER_URL,
  DOCLING_API_KEY: engines.DOCLING_API_KEY,
  DOCLING_PARAMS: engines.DOCLING_PARAMS,
  DOCUMENT_INTELLIGENCE_ENDPOINT: engines.DOCUMENT_INTELLIGENCE_ENDPOINT,
  DOCUMENT_INTELLIGENCE_KEY: engines.DOCUMENT_INTELLIGENCE_KEY,
  DOCUMENT_INTELLIGENCE_MODEL: engines.DOCUMENT_INTELLIGENCE_MODEL,
  MISTRAL_OCR_API_BASE_URL: engines.MISTRAL_OCR_API_BASE_URL,
  MISTRAL_OCR_API_KEY: engines.MISTRAL_OCR_API_KEY,
  MISTRAL_OCR_USE_BASE64: engines.MISTRAL_OCR_USE_BASE64,
  PADDLEOCR_VL_BASE_URL: text('rag.paddleocr_vl_base_url', 'PADDLEOCR_VL_BASE_URL', 'http://localhost:8080'),
  PADDLEOCR_VL_TOKEN: text('rag.paddleocr_vl_token', 'PADDLEOCR_VL_TOKEN'),
  MINERU_API_MODE: text('rag.mineru_api_mode', 'MINERU_API_MODE', 'local'),
  MINERU_API_URL: text('rag.mineru_api_url', 'MINERU_API_URL', 'http://localhost:8000'),
  MINERU_API_KEY: text('rag.mineru_api_key', 'MINERU_API_KEY'),
  MINERU_API_TIMEOUT: defineSetting<number | string>({ key: 'rag.mineru_api_timeout', env: 'MINERU_API_TIMEOUT', default: '300', check: (v) => (typeof v === 'string' || Number.isInteger(v) ? null : 'must be an integer') }),
  MINERU_PARAMS: object('rag.mineru_params', 'MINERU_PARAMS'),
  MINERU_FILE_EXTENSIONS: list('rag.mineru_file_extensions', 'MINERU_FILE_EXTENSIONS', ['pdf']),
};

/** The retrieval settings by the config form's field names (the reference's ConfigForm and get_rag_config). */
export const RETRIEVAL_CONFIG_FIELDS = {
  TOP_K,
  BYPASS_EMBEDDING_AND_RETRIEVAL,
  RAG_FULL_CONTEXT,
  ENABLE_RAG_HYBRID_SEARCH,
  ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS,
  TOP_K_RERANKER,
  RELEVANCE_THRESHOLD,
  HYBRID_BM25_WEIGHT,
  ...extraction,
  RAG_RERANKING_MODEL,
  RAG_RERANKING_ENGINE,
  RAG_RERANKING_BATCH_SIZE,
  RAG_EXTERNAL_RERANKER_URL,
  RAG_EXTERNAL_RERANKER_API_KEY,
  RAG_EXTERNAL_RERANKER_TIMEOUT,
  TEXT_SPLITTER,
  RAG_TOKENIZER_MODEL,
  ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER,
  CHUNK_SIZE,
  CHUNK_MIN_SIZE_TARGET,
  CHUNK_OVERLAP,
  FILE_MAX_SIZE,
  FILE_MAX_COUNT,
  ALLOWED_FILE_EXTENSIONS,
  YOUTUBE_LOADER_LANGUAGE,
  CONTENT_EXTRACTION_SUPPORTED_MEDIA_MIME_TYPES,
} satisfies Record<string, SettingDefinition<any>>;
