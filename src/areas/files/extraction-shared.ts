/** What the queue (main thread) and the extractors (worker threads) share, without loading any extractor. */
import type { Outline } from '../../core/retrieval/retrieval.js';

/** One page of a paged document (a PDF), with what the reference's loader puts on its chunks: `page` (from 0), `page_label`, `total_pages`, the document's info. */
export interface ExtractedPage {
  text: string;
  metadata: Record<string, unknown>;
  outline?: Outline;
}

/** A file's text, and its pages when it has them (each indexed as a document of its own, so citations name the page). */
export interface Extracted {
  text: string;
  pages?: ExtractedPage[];
  /** Its headings, when the format marks them otherwise than Markdown does (a Word document's styles). */
  outline?: Outline;
}

/** A reason extraction ended `failed`, written as is into `file.data.error`. */
export class ExtractionError extends Error {}

/** Bytes look like text when the first 8 KB have no NUL (the reference's `_is_text_file`), whatever type was declared. */
export const looksLikeText = (bytes: Buffer): boolean => !bytes.subarray(0, 8192).includes(0);
