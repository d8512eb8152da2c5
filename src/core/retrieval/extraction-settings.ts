import { checks, defineSetting, parsers } from '../../config/settings.js';

/**
 * The content extraction engine settings (the reference's `rag.*` keys and
 * variables, config.py): which engine extracts uploaded documents and how
 * to reach it. Read by the files area's queue (areas/files/engines.ts) and
 * served by the retrieval config routes.
 */

/** A JSON object from the environment; anything else is `{}`, as the reference. */
const jsonObject = (raw: string): Record<string, unknown> => {
  const value = JSON.parse(raw) as unknown;
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
};

/** '' (the built-in extractors), 'tika', 'docling', 'external', 'mistral_ocr' or 'document_intelligence'; the reference's other engines fall back to the built-in ones. */
export const CONTENT_EXTRACTION_ENGINE = defineSetting<string>({
  key: 'rag.content_extraction_engine',
  env: 'CONTENT_EXTRACTION_ENGINE',
  default: '',
  parse: (raw) => raw.trim().toLowerCase(),
  check: checks.string,
});

export const TIKA_SERVER_URL = defineSetting<string>({ key: 'rag.tika_server_url', env: 'TIKA_SERVER_URL', default: 'http://tika:9998', check: checks.string });

/** Asks Tika for the text of images inside PDFs too (`X-Tika-PDFextractInlineImages`). */
export const PDF_EXTRACT_IMAGES = defineSetting<boolean>({
  key: 'rag.pdf_extract_images',
  env: 'PDF_EXTRACT_IMAGES',
  default: false,
  parse: parsers.bool,
  check: checks.bool,
});

export const DOCLING_SERVER_URL = defineSetting<string>({
  key: 'rag.docling_server_url',
  env: 'DOCLING_SERVER_URL',
  default: 'http://docling:5001',
  check: checks.string,
});

export const DOCLING_API_KEY = defineSetting<string>({ key: 'rag.docling_api_key', env: 'DOCLING_API_KEY', default: '', check: checks.string });

/** Form fields added to every Docling conversion (e.g. `{"do_ocr": true, "ocr_lang": ["en"]}`). */
export const DOCLING_PARAMS = defineSetting<Record<string, unknown>>({
  key: 'rag.docling_params',
  env: 'DOCLING_PARAMS',
  default: {},
  parse: jsonObject,
  check: checks.object,
});

export const EXTERNAL_DOCUMENT_LOADER_URL = defineSetting<string>({
  key: 'rag.external_document_loader_url',
  env: 'EXTERNAL_DOCUMENT_LOADER_URL',
  default: '',
  check: checks.string,
});

export const EXTERNAL_DOCUMENT_LOADER_API_KEY = defineSetting<string>({
  key: 'rag.external_document_loader_api_key',
  env: 'EXTERNAL_DOCUMENT_LOADER_API_KEY',
  default: '',
  check: checks.string,
});

/** Headers added to every call of the external loader; `{{FILE_NAME}}`, `{{FILE_CONTENT_TYPE}}` and the other placeholders are filled in. */
export const EXTERNAL_DOCUMENT_LOADER_HEADERS = defineSetting<Record<string, unknown>>({
  key: 'rag.external_document_loader_headers',
  env: 'EXTERNAL_DOCUMENT_LOADER_HEADERS',
  default: {},
  parse: jsonObject,
  check: checks.object,
});

export const MISTRAL_OCR_API_BASE_URL = defineSetting<string>({
  key: 'rag.mistral_ocr_api_base_url',
  env: 'MISTRAL_OCR_API_BASE_URL',
  default: 'https://api.mistral.ai/v1',
  check: checks.string,
});

export const MISTRAL_OCR_API_KEY = defineSetting<string>({ key: 'rag.mistral_ocr_api_key', env: 'MISTRAL_OCR_API_KEY', default: '', check: checks.string });

/** Sends the PDF inline as a data URL instead of uploading it to Mistral's file store first. */
export const MISTRAL_OCR_USE_BASE64 = defineSetting<boolean>({
  key: 'rag.mistral_ocr_use_base64',
  env: 'MISTRAL_OCR_USE_BASE64',
  default: false,
  parse: parsers.bool,
  check: checks.bool,
});

export const DOCUMENT_INTELLIGENCE_ENDPOINT = defineSetting<string>({
  key: 'rag.document_intelligence_endpoint',
  env: 'DOCUMENT_INTELLIGENCE_ENDPOINT',
  default: '',
  check: checks.string,
});

export const DOCUMENT_INTELLIGENCE_KEY = defineSetting<string>({
  key: 'rag.document_intelligence_key',
  env: 'DOCUMENT_INTELLIGENCE_KEY',
  default: '',
  check: checks.string,
});

export const DOCUMENT_INTELLIGENCE_MODEL = defineSetting<string>({
  key: 'rag.document_intelligence_model',
  env: 'DOCUMENT_INTELLIGENCE_MODEL',
  default: 'prebuilt-layout',
  check: checks.string,
});
