import { encodingOf } from '../tokens.js';
import type { Outline, RetrievalDocument } from './retrieval.js';

/**
 * Splitting text into chunks as the reference's save_docs_to_vector_db does: optional
 * Markdown-header sections (with small ones merged up to CHUNK_MIN_SIZE_TARGET), then
 * LangChain's RecursiveCharacterTextSplitter or TokenTextSplitter with CHUNK_SIZE and
 * CHUNK_OVERLAP; each chunk's metadata gets `start_index`, its offset in the section.
 */
export interface ChunkingOptions {
  splitter: 'character' | 'token';
  chunkSize: number;
  chunkOverlap: number;
  markdownHeaders: boolean;
  minSizeTarget: number;
  /** tiktoken encoding of the token splitter (TIKTOKEN_ENCODING_NAME). */
  encoding: string;
}

const SEPARATORS = ['\n\n', '\n', ' ', ''];

/** LangChain's _merge_splits: join pieces up to `size`, keeping up to `overlap` of the tail in the next chunk. */
function mergeSplits(splits: string[], separator: string, size: number, overlap: number, length: (s: string) => number): string[] {
  const sepLength = length(separator);
  const chunks: string[] = [];
  let current: string[] = [];
  let total = 0;
  const emit = () => {
    const joined = current.join(separator).trim();
    if (joined) chunks.push(joined);
  };
  for (const piece of splits) {
    const pieceLength = length(piece);
    if (total + pieceLength + (current.length > 0 ? sepLength : 0) > size && current.length > 0) {
      emit();
      while (total > overlap || (total + pieceLength + (current.length > 0 ? sepLength : 0) > size && total > 0)) {
        total -= length(current[0]!) + (current.length > 1 ? sepLength : 0);
        current = current.slice(1);
      }
    }
    current.push(piece);
    total += pieceLength + (current.length > 1 ? sepLength : 0);
  }
  emit();
  return chunks;
}

/** Splits on `separator`, keeping it at the start of the following piece (LangChain's keep_separator). */
function splitKeepingSeparator(text: string, separator: string): string[] {
  if (separator === '') return [...text];
  const parts = text.split(separator);
  return parts.map((part, i) => (i === 0 ? part : separator + part)).filter((part) => part !== '');
}

function recursiveSplit(text: string, separators: string[], size: number, overlap: number, length: (s: string) => number): string[] {
  let separator = separators.at(-1)!;
  let rest: string[] = [];
  for (const [i, candidate] of separators.entries()) {
    if (candidate === '' || text.includes(candidate)) {
      separator = candidate;
      rest = separators.slice(i + 1);
      break;
    }
  }
  const chunks: string[] = [];
  let good: string[] = [];
  for (const piece of splitKeepingSeparator(text, separator)) {
    if (length(piece) < size) {
      good.push(piece);
      continue;
    }
    if (good.length > 0) chunks.push(...mergeSplits(good, '', size, overlap, length));
    good = [];
    if (rest.length === 0) chunks.push(piece);
    else chunks.push(...recursiveSplit(piece, rest, size, overlap, length));
  }
  if (good.length > 0) chunks.push(...mergeSplits(good, '', size, overlap, length));
  return chunks;
}

/** LangChain's split_text_on_tokens: windows of `size` tokens moving by `size - overlap`. */
function tokenSplit(text: string, size: number, overlap: number, encodingName: string): string[] {
  const encoding = encodingOf(encodingName);
  const ids = encoding.encode(text);
  const step = Math.max(1, size - overlap);
  const chunks: string[] = [];
  for (let start = 0; start < ids.length; start += step) {
    chunks.push(encoding.decode(ids.slice(start, Math.min(start + size, ids.length))));
    if (start + size >= ids.length) break;
  }
  return chunks;
}

const FENCE = /^(```|~~~)/;
const HEADING = /^(#{1,6}) +(.*?)(?: +#+)?$/;

/**
 * Markdown's code fences and headings, line by line: a heading line is one outside a fence.
 * `read` takes the next line and tells the heading it is (level and title), or null.
 */
class MarkdownLines {
  private fence: string | null = null;

  read(line: string): { level: number; title: string } | null {
    const trimmed = line.trim();
    const fenceMark = FENCE.exec(trimmed)?.[1];
    if (fenceMark && (this.fence === null || this.fence === fenceMark)) {
      this.fence = this.fence === null ? fenceMark : null;
      return null;
    }
    if (this.fence !== null) return null;
    const heading = HEADING.exec(trimmed);
    return heading ? { level: heading[1]!.length, title: heading[2]!.trim() } : null;
  }
}

/** Sections at Markdown headers (outside code fences), each keeping its header line (strip_headers=False). */
export function markdownSections(text: string): string[] {
  const sections: string[] = [];
  const lines = new MarkdownLines();
  let current: string[] = [];
  const flush = () => {
    const section = current.join('\n').trim();
    if (section) sections.push(section);
    current = [];
  };
  for (const line of text.split('\n')) {
    if (lines.read(line)) flush();
    current.push(line);
  }
  flush();
  return sections;
}

/**
 * The headings a position of a text is under (`# A`, `## B` → ['A', 'B']), read forward
 * once as positions increase: chunks ask in order, so a document is scanned once. A text with
 * an outline (a PDF page, a Word document) also has its outline's headings, each taking effect at
 * the line that reads it, and starts under the outline's `above`.
 */
class HeadingTrail {
  private readonly lines = new MarkdownLines();
  private readonly trail: string[];
  private nextHeading = 0;
  private scanned = 0;

  constructor(
    private readonly text: string,
    private readonly outline?: Outline,
  ) {
    this.trail = [...(outline?.above ?? [])];
  }

  /** The headings of the lines that start at or before `offset` (a chunk that opens a section is under its heading). */
  at(offset: number): string[] {
    while (this.scanned <= offset && this.scanned < this.text.length) {
      const end = this.text.indexOf('\n', this.scanned);
      const lineEnd = end === -1 ? this.text.length : end;
      const line = this.text.slice(this.scanned, lineEnd);
      const heading = this.lines.read(line) ?? this.outlined(line.trim());
      if (heading) {
        this.trail.length = Math.min(this.trail.length, heading.level - 1);
        this.trail[heading.level - 1] = heading.title;
      }
      this.scanned = lineEnd + 1;
    }
    return this.trail.filter((title) => title !== undefined && title !== '');
  }

  /**
   * The outline's heading this line reads (its first line, when a heading wraps), looked for
   * among the next few: one the text does not show as a line of its own is passed over.
   */
  private outlined(line: string): { level: number; title: string } | null {
    if (!this.outline || line === '') return null;
    const { headings } = this.outline;
    for (let i = this.nextHeading; i < Math.min(headings.length, this.nextHeading + OUTLINE_LOOKAHEAD); i++) {
      const heading = headings[i]!;
      if (heading.title === line || heading.title.startsWith(`${line} `)) {
        this.nextHeading = i + 1;
        return heading;
      }
    }
    return null;
  }
}

/** Outline headings looked for past one the text did not show. */
const OUTLINE_LOOKAHEAD = 3;

/** The reference's merge_docs_to_target_size over one document's sections (they share source and file). */
function mergeToTargetSize(sections: string[], minSize: number, maxSize: number, length: (s: string) => number): string[] {
  const merged: string[] = [];
  const emit = (content: string) => {
    const previous = merged.at(-1);
    if (length(content) < minSize && previous !== undefined && length(`${previous}\n\n${content}`) <= maxSize) merged[merged.length - 1] = `${previous}\n\n${content}`;
    else merged.push(content);
  };
  let current: string | null = null;
  for (const next of sections) {
    if (current === null) {
      current = next;
      continue;
    }
    const joined: string = `${current}\n\n${next}`;
    if (length(current) < minSize && length(joined) <= maxSize) current = joined;
    else {
      emit(current);
      current = next;
    }
  }
  if (current !== null) emit(current);
  return merged;
}

/** A chunk, and the Markdown headings it is under (the lexical index weighs them; they are not returned). */
export interface Chunk extends RetrievalDocument {
  headings: string[];
}

/** Chunks of `documents`, each with its document's metadata and `start_index`. */
export function chunkDocuments(documents: RetrievalDocument[], options: ChunkingOptions): Chunk[] {
  const length =
    options.splitter === 'token' ? (s: string) => encodingOf(options.encoding).encode(s).length : (s: string) => s.length;
  const overlap = Math.min(options.chunkOverlap, Math.max(0, options.chunkSize - 1));
  const chunks: Chunk[] = [];
  for (const document of documents) {
    let sections = options.markdownHeaders ? markdownSections(document.text) : [document.text];
    if (options.markdownHeaders && options.minSizeTarget > 0) sections = mergeToTargetSize(sections, options.minSizeTarget, options.chunkSize, length);
    // Sections are the document's text in order (trimmed, perhaps joined by blank lines): their
    // headings are followed through one trail, so a chunk knows the headings above it.
    const trail = new HeadingTrail(sections.join('\n\n'), document.outline);
    let sectionStart = 0;
    for (const section of sections) {
      const pieces =
        options.splitter === 'token'
          ? tokenSplit(section, options.chunkSize, overlap, options.encoding)
          : recursiveSplit(section, SEPARATORS, options.chunkSize, overlap, length);
      // LangChain's add_start_index: search from just past where the previous chunk's overlap began.
      let index = -1;
      let previousLength = 0;
      for (const piece of pieces) {
        const offset = index + previousLength - overlap;
        index = section.indexOf(piece, Math.max(0, offset));
        previousLength = piece.length;
        chunks.push({ text: piece, metadata: { ...document.metadata, start_index: index }, headings: trail.at(sectionStart + Math.max(0, index)) });
      }
      sectionStart += section.length + 2;
    }
  }
  return chunks;
}
