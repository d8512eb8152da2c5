import { open } from 'node:fs/promises';
import path from 'node:path';
import type { SettingsStore } from '../../config/settings.js';
import {
  CONTENT_EXTRACTION_ENGINE,
  DOCLING_API_KEY,
  DOCLING_PARAMS,
  DOCLING_SERVER_URL,
  DOCUMENT_INTELLIGENCE_ENDPOINT,
  DOCUMENT_INTELLIGENCE_KEY,
  DOCUMENT_INTELLIGENCE_MODEL,
  EXTERNAL_DOCUMENT_LOADER_API_KEY,
  EXTERNAL_DOCUMENT_LOADER_HEADERS,
  EXTERNAL_DOCUMENT_LOADER_URL,
  MISTRAL_OCR_API_BASE_URL,
  MISTRAL_OCR_API_KEY,
  MISTRAL_OCR_USE_BASE64,
  PDF_EXTRACT_IMAGES,
  TIKA_SERVER_URL,
} from '../../core/retrieval/extraction-settings.js';
import { doclingText, documentIntelligenceText, externalLoaderText, mistralOcrText, tikaText } from './engines.js';
import { ExtractionPool } from './extraction-pool.js';
import { type Extracted, ExtractionError, looksLikeText } from './extraction-shared.js';

export interface ExtractionOptions {
  /** Worker threads of the built-in extractors (CONTENT_EXTRACTION_WORKERS). */
  workers: number;
  /** Longest extraction of one file, built-in or by an engine (CONTENT_EXTRACTION_TIMEOUT, ms). */
  timeoutMs: number;
  /** Heap of one worker thread (CONTENT_EXTRACTION_WORKER_MEMORY_MB): a document that needs more (a zip bomb) fails alone. */
  workerMemoryMb: number;
}

/** A stored file to extract. */
export interface ExtractionInput {
  /** The bytes, on local disk. */
  path: string;
  name: string;
  contentType: string | null;
}

/** Speech-to-text of a stored recording (the audio area's): its text, or '' when no engine is configured. */
export interface SpeechTranscriber {
  /** Whether speech-to-text takes this type (its SUPPORTED_CONTENT_TYPES). */
  takes(contentType: string): boolean;
  transcribeStored(input: { path: string; name: string }): Promise<string>;
}

/** Extensions the reference reads as text even when an engine is set (loaders/main.py `known_source_ext`). */
const SOURCE_EXTENSIONS = new Set(
  'go py java sh bat ps1 cmd js ts css cpp hpp h c cs sql log ini pl pm r dart dockerfile env php hs hsc lua nginxconf conf m mm plsql perl rb rs db2 scala bash swift vue svelte ex exs erl tsx jsx lhs json yaml yml toml'.split(
    ' ',
  ),
);

/** The reference's `Loader._is_text_file`: read locally, never sent to Tika or Docling. */
const isTextFile = (extension: string, type: string) => SOURCE_EXTENSIONS.has(extension) || (type.includes('text/') && !type.includes('html'));

/** What the reference sends to Document Intelligence: by extension, or by declared type. */
const DOCUMENT_INTELLIGENCE_EXTENSIONS = new Set(['pdf', 'docx', 'ppt', 'pptx']);
const DOCUMENT_INTELLIGENCE_TYPES = new Set([
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.ms-powerpoint',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
]);

async function head(file: string): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(8192);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * What the queue calls to turn a stored file into text, as the reference's
 * `process_uploaded_file` routes it: text under a media type (`.ts` as
 * video/mp2t) is text; what speech-to-text takes (audio and WebM video by
 * default) is transcribed (empty without a configured engine); other video
 * completes empty and images
 * fail, unless the external loader takes everything; then the configured
 * engine (CONTENT_EXTRACTION_ENGINE), or the built-in extractors in worker
 * threads.
 */
export class ContentExtraction {
  private readonly pool: ExtractionPool;
  /** Connected once the audio area is built (app.ts). */
  transcriber: SpeechTranscriber | null = null;

  constructor(
    private readonly settings: SettingsStore,
    private readonly options: ExtractionOptions,
  ) {
    this.pool = new ExtractionPool(options.workers, options.timeoutMs, options.workerMemoryMb);
  }

  /** The file's text, and its pages when the built-in extractor read a paged document (a PDF). */
  async extract(input: ExtractionInput): Promise<Extracted> {
    const found = await this.found(input);
    return typeof found === 'string' ? { text: found } : found;
  }

  private async found(input: ExtractionInput): Promise<Extracted | string> {
    const extension = path.extname(input.name).slice(1).toLowerCase();
    let type = (input.contentType ?? '').toLowerCase();
    if ((type.startsWith('image/') || type.startsWith('video/')) && looksLikeText(await head(input.path))) type = 'text/plain';
    const engine = this.settings.get(CONTENT_EXTRACTION_ENGINE);
    if (this.transcriber?.takes(type)) return this.transcriber.transcribeStored(input);
    if ((type.startsWith('image/') || type.startsWith('video/')) && engine !== 'external') {
      if (type.startsWith('video/')) return '';
      throw new ExtractionError(`File type ${input.contentType} is not supported for processing`);
    }
    const remote = { ...input, contentType: type || null, signal: AbortSignal.timeout(this.options.timeoutMs) };
    const local = () => this.pool.run({ path: input.path, name: input.name, contentType: type || null });
    switch (engine) {
      case 'external': {
        const url = this.settings.get(EXTERNAL_DOCUMENT_LOADER_URL);
        const key = this.settings.get(EXTERNAL_DOCUMENT_LOADER_API_KEY);
        return url && key ? externalLoaderText(url, key, this.settings.get(EXTERNAL_DOCUMENT_LOADER_HEADERS), remote) : local();
      }
      case 'tika': {
        const url = this.settings.get(TIKA_SERVER_URL);
        return url && !isTextFile(extension, type) ? tikaText(url, this.settings.get(PDF_EXTRACT_IMAGES), remote) : local();
      }
      case 'docling': {
        const url = this.settings.get(DOCLING_SERVER_URL);
        return url && !isTextFile(extension, type)
          ? doclingText(url, this.settings.get(DOCLING_API_KEY), this.settings.get(DOCLING_PARAMS), remote)
          : local();
      }
      case 'mistral_ocr': {
        const key = this.settings.get(MISTRAL_OCR_API_KEY);
        return key && extension === 'pdf'
          ? mistralOcrText(this.settings.get(MISTRAL_OCR_API_BASE_URL), key, this.settings.get(MISTRAL_OCR_USE_BASE64), remote)
          : local();
      }
      case 'document_intelligence': {
        const endpoint = this.settings.get(DOCUMENT_INTELLIGENCE_ENDPOINT);
        const key = this.settings.get(DOCUMENT_INTELLIGENCE_KEY);
        // Without a key the reference signs in with Azure's default credentials, which Parley does not have.
        return endpoint && key && (DOCUMENT_INTELLIGENCE_EXTENSIONS.has(extension) || DOCUMENT_INTELLIGENCE_TYPES.has(type))
          ? documentIntelligenceText(endpoint, key, this.settings.get(DOCUMENT_INTELLIGENCE_MODEL), remote)
          : local();
      }
      default:
        return local();
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
