import { checks, defineSetting, parsers } from '../../config/settings.js';

/** `rag.file.allowed_extensions` (RAG_ALLOWED_FILE_EXTENSIONS): extensions a processed upload may have; empty: any. */
export const ALLOWED_FILE_EXTENSIONS = defineSetting<string[]>({
  key: 'rag.file.allowed_extensions',
  env: 'RAG_ALLOWED_FILE_EXTENSIONS',
  default: [],
  parse: parsers.list,
  check: checks.list,
});
