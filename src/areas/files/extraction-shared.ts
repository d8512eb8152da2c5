/** What the queue (main thread) and the extractors (worker threads) share, without loading any extractor. */

/** A reason extraction ended `failed`, written as is into `file.data.error`. */
export class ExtractionError extends Error {}

/** Bytes look like text when the first 8 KB have no NUL (the reference's `_is_text_file`), whatever type was declared. */
export const looksLikeText = (bytes: Buffer): boolean => !bytes.subarray(0, 8192).includes(0);
