/**
 * What the areas need of retrieval: index text into a named collection of chunks, take a
 * file out of one, drop one, and query several at once. Collections are named as the
 * reference names them, so sources and plugins see the same names:
 * `file-<file id>` for one uploaded file, the knowledge base's id for a knowledge base,
 * `user-memory-<user id>` for a user's memories, and a hash for a web search's pages.
 *
 * The implementation (core/retrieval) chunks per the retrieval config, embeds through the
 * configured engine when there is one, and keeps vectors and BM25 terms in one store (the
 * embedded database, or PostgreSQL). Vectors of two embedding models are never compared.
 */

/** Text to index: a file's extracted content, a note, a fetched page; the metadata rides on every chunk. */
export interface RetrievalDocument {
  text: string;
  /** `file_id`, `name`, `source`, `page`, ... as the reference puts them (returned in `sources`). */
  metadata: Record<string, unknown>;
  /**
   * What the text is under, for the lexical index (its document's title, its headings): given
   * by `documents()`, and kept when such a chunk is indexed whole elsewhere (a file's chunks
   * copied into a knowledge base). Otherwise it comes from the metadata and the Markdown.
   */
  title?: string;
  /** The headings of a text that has no Markdown marks for them (a PDF's, a Word document's), for the titles of its chunks. */
  outline?: Outline;
}

/**
 * A text's headings in order, each a line of the text as it stands (a PDF's by font size, a
 * Word document's by paragraph style), and the headings it starts under (a PDF page: those of the
 * pages before). Level 1 is the outermost.
 */
export interface Outline {
  above: string[];
  headings: { level: number; title: string }[];
}

/** One chunk found by a query. `score` is higher for better matches (0..1 after hybrid fusion or reranking). */
export interface RetrievedChunk {
  collection: string;
  text: string;
  metadata: Record<string, unknown>;
  score: number;
}

export interface IndexOptions {
  /** Replace the chunks this file already has in the collection (re-processing, reindexing). */
  replaceFileId?: string;
  /** Keep the text as one chunk (memories, short notes): no splitting. */
  whole?: boolean;
}

export interface QueryOptions {
  /** Chunks to return over all collections; default: the retrieval config's TOP_K. */
  k?: number;
}

export interface Retrieval {
  /** Chunks, embeds and stores `documents` under `collection`; returns how many chunks were stored. An embedding engine that fails throws with its reason and stores nothing. */
  index(collection: string, documents: RetrievalDocument[], options?: IndexOptions): Promise<{ chunks: number }>;
  /** Takes every chunk of one file out of a collection. */
  removeFile(collection: string, fileId: string): Promise<void>;
  /** Takes every chunk of the named collections out of the store. */
  dropCollections(collections: string[]): Promise<void>;
  /** The chunks of a collection in their original order, with their titles (for "full context" and copies). */
  documents(collection: string): Promise<RetrievalDocument[]>;
  /** The best chunks for the queries over the collections (hybrid, reranked and thresholded per the retrieval config). */
  query(collections: string[], queries: string[], options?: QueryOptions): Promise<RetrievedChunk[]>;
}
