import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Extracted, type ExtractedPage, ExtractionError, looksLikeText } from './extraction-shared.js';
import type { Outline } from '../../core/retrieval/retrieval.js';
import { decodeEntities, htmlToText } from './markup.js';
import { epubText, odtText, pptxText, xlsxText } from './office.js';

/**
 * Text out of a stored file, for the processing queue (the reference's
 * retrieval/loaders/main.py with its default engine): plain text, source code
 * and markup (recognised by their bytes, whatever type the browser sent), Markdown, HTML as clean text, CSV and
 * TSV as `column: value` rows, JSON as text, PDF (unpdf), DOCX (mammoth),
 * XLSX, PPTX, ODT and EPUB (office.ts) text, EML (mailparser) as headers and
 * body. Anything else that is not text fails with a readable reason; the file
 * itself stays stored. Runs in the extraction worker threads (extraction-pool.ts).
 */

const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** The zipped XML formats and mail, by extension. */
const DOCUMENT_READERS: Record<string, (bytes: Buffer) => Promise<string>> = { xlsx: xlsxText, pptx: pptxText, odt: odtText, epub: epubText, eml: mailText };
/** The same, by the type a browser sends when the extension is another. */
const DOCUMENT_TYPES: Record<string, string> = { 'application/epub+zip': 'epub', 'message/rfc822': 'eml' };

const extensionOf = (name: string) => path.extname(name).slice(1).toLowerCase();

/** Text when the bytes look like text: no NUL in the first 8 KB; UTF-8, else Latin-1 (as the reference's `_is_text_file`). */
export function decodeText(bytes: Buffer): string | null {
  if (!looksLikeText(bytes)) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    return bytes.toString('latin1');
  }
}

/** The extracted text of a file (with its pages, a PDF's), or an ExtractionError saying why there is none. */
export async function extractText(localPath: string, name: string, contentType: string | null): Promise<Extracted> {
  const extension = extensionOf(name);
  const type = (contentType ?? '').toLowerCase();
  const bytes = await readFile(localPath);
  if (extension === 'pdf' || type === 'application/pdf') return pdfPages(bytes);
  if (extension === 'docx' || type === DOCX_TYPE) return docxText(bytes);
  return { text: await documentText(bytes, extension, type, contentType) };
}

async function documentText(bytes: Buffer, extension: string, type: string, contentType: string | null): Promise<string> {
  const reader = DOCUMENT_READERS[extension] ?? DOCUMENT_READERS[DOCUMENT_TYPES[type]];
  if (reader) {
    try {
      return await reader(bytes);
    } catch (error) {
      throw new ExtractionError(`The document could not be read: ${(error as Error).message}`);
    }
  }
  const text = decodeText(bytes);
  // Media stays media, unless it is text under a wrong type (`.ts` sent as video/mp2t).
  if ((type.startsWith('image/') || type.startsWith('video/')) && text === null) {
    throw new ExtractionError(`File type ${contentType} is not supported for processing`);
  }
  if (text === null) throw new ExtractionError(`File type ${extension || contentType || 'unknown'} is not supported for processing`);
  if (extension === 'csv' || type === 'text/csv') return csvToText(text, ',');
  if (extension === 'tsv' || type === 'text/tab-separated-values') return csvToText(text, '\t');
  if (extension === 'html' || extension === 'htm' || type === 'text/html') return htmlToText(text);
  return text;
}

/** The document info the reference's PDF loader (pypdf) copies onto every page, by its lower-cased names. */
const PDF_INFO = { Title: 'title', Author: 'author', Subject: 'subject', Creator: 'creator', Producer: 'producer' } as const;

/**
 * A PDF's pages, as the reference's loader reads them (PyPDFLoader, mode `page`): each page's
 * text with `page` (from 0), `page_label` (the document's own labels, else the number),
 * `total_pages` and the document's info; the whole text is the pages apart by a blank line. A
 * locked or broken PDF says so.
 */
export async function pdfPages(bytes: Buffer): Promise<Extracted> {
  const { getDocumentProxy } = await import('unpdf');
  let document: Awaited<ReturnType<typeof getDocumentProxy>> | null = null;
  try {
    document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    const info: Record<string, string> = {};
    const stated = ((await document.getMetadata().catch(() => null))?.info ?? {}) as Record<string, unknown>;
    for (const [key, name] of Object.entries(PDF_INFO)) {
      const value = stated[key];
      if (typeof value === 'string' && value.trim() !== '') info[name] = value.trim();
    }
    const labels = await document.getPageLabels().catch(() => null);
    const lines: PdfLine[][] = [];
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number);
      lines.push(pdfLines((await page.getTextContent()).items as PdfTextItem[]));
      page.cleanup();
    }
    const outlines = pdfOutlines(lines);
    const pages: ExtractedPage[] = lines.map((pageLines, i) => ({
      text: pageLines.map((line) => line.text).join('').trim(),
      metadata: { ...info, total_pages: document!.numPages, page: i, page_label: labels?.[i] || String(i + 1) },
      ...(outlines[i] ? { outline: outlines[i] } : {}),
    }));
    return { text: pages.map((page) => page.text).join('\n\n'), pages };
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'PasswordException') throw new ExtractionError('The PDF is password-protected');
    throw new ExtractionError(`The PDF could not be read: ${(error as Error).message}`);
  } finally {
    await document?.loadingTask.destroy();
  }
}

interface PdfTextItem {
  str?: string;
  hasEOL?: boolean;
  transform?: number[];
}

/** A line of a PDF page as pdf.js gives it (its text ends with its line break), and the largest font size on it. */
interface PdfLine {
  text: string;
  size: number;
}

function pdfLines(items: PdfTextItem[]): PdfLine[] {
  const lines: PdfLine[] = [];
  let text = '';
  let size = 0;
  for (const item of items) {
    const str = item.str ?? '';
    // The font size is the text matrix's vertical scale.
    if (str.trim() !== '' && item.transform) size = Math.max(size, Math.round(Math.hypot(item.transform[2] ?? 0, item.transform[3] ?? 0) * 2) / 2);
    text += str + (item.hasEOL ? '\n' : '');
    if (item.hasEOL) {
      lines.push({ text, size });
      text = '';
      size = 0;
    }
  }
  if (text !== '') lines.push({ text, size });
  return lines;
}

/** A heading's font is this much larger than the body's, at least; its line at most this long. */
const PDF_HEADING_SCALE = 1.1;
const PDF_HEADING_LENGTH = 200;

/**
 * Each page's outline: lines in a font larger than the body's (the size most characters have)
 * are headings, the largest size level 1; a heading wrapped over lines of one size is one title.
 * Null for a page when the document has no such lines.
 */
function pdfOutlines(pages: PdfLine[][]): (Outline | null)[] {
  const characters = new Map<number, number>();
  for (const line of pages.flat()) characters.set(line.size, (characters.get(line.size) ?? 0) + line.text.trim().length);
  const body = [...characters].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
  const isHeading = (line: PdfLine) => body > 0 && line.size >= body * PDF_HEADING_SCALE && line.text.trim().length <= PDF_HEADING_LENGTH && /[\p{L}\p{N}]/u.test(line.text);
  const sizes = [...new Set(pages.flat().filter(isHeading).map((line) => line.size))].sort((a, b) => b - a);
  if (sizes.length === 0) return pages.map(() => null);
  const trail: string[] = [];
  return pages.map((lines) => {
    const outline: Outline = { above: trail.filter(Boolean), headings: [] };
    let previous: PdfLine | null = null;
    for (const line of lines) {
      const heading = isHeading(line) ? { level: sizes.indexOf(line.size) + 1, title: line.text.trim() } : null;
      const last = outline.headings.at(-1);
      if (heading && last && previous && isHeading(previous) && previous.size === line.size) last.title = `${last.title} ${heading.title}`;
      else if (heading) outline.headings.push(heading);
      if (heading) {
        trail.length = heading.level;
        trail[heading.level - 1] = outline.headings.at(-1)!.title;
      }
      previous = line;
    }
    return outline;
  });
}

/**
 * The paragraphs of a Word document as plain text, and its headings (paragraphs of the Title
 * and Heading styles, read from mammoth's HTML: its raw text has no marks for them).
 */
async function docxText(bytes: Buffer): Promise<Extracted> {
  const { default: mammoth } = await import('mammoth');
  try {
    const [raw, html] = await Promise.all([
      mammoth.extractRawText({ buffer: bytes }),
      mammoth.convertToHtml({ buffer: bytes }, { styleMap: ["p[style-name='Title'] => h1.title:fresh", 'p.Title => h1.title:fresh'] }),
    ]);
    const headings = [...html.value.matchAll(/<h([1-6])( class="title")?>(.*?)<\/h\1>/gs)]
      .map((match) => ({ level: match[2] ? 1 : Number(match[1]) + 1, title: decodeEntities(match[3]!.replace(/<[^>]*>/g, '')).trim() }))
      .filter((heading) => heading.title !== '');
    return { text: raw.value.trim(), ...(headings.length > 0 ? { outline: { above: [], headings } } : {}) };
  } catch (error) {
    throw new ExtractionError(`The document could not be read: ${(error as Error).message}`);
  }
}

/**
 * A mail as its headers (From, To, Cc, Subject, Date), a blank line, its text
 * body (else its HTML body as text) and the names of its attachments.
 */
async function mailText(bytes: Buffer): Promise<string> {
  const { simpleParser } = await import('mailparser');
  const mail = await simpleParser(bytes, { skipImageLinks: true, skipTextToHtml: true });
  const addresses = (value: typeof mail.to) => (Array.isArray(value) ? value.map((a) => a.text).join(', ') : (value?.text ?? ''));
  const headers = [
    ['From', addresses(mail.from)],
    ['To', addresses(mail.to)],
    ['Cc', addresses(mail.cc)],
    ['Subject', mail.subject ?? ''],
    ['Date', mail.date?.toISOString() ?? ''],
  ].filter(([, value]) => value);
  const body = mail.text?.trim() || (typeof mail.html === 'string' ? htmlToText(mail.html) : '');
  const attachments = mail.attachments.map((attachment) => attachment.filename ?? '').filter(Boolean);
  return [
    headers.map(([name, value]) => `${name}: ${value}`).join('\n'),
    body,
    attachments.length > 0 ? `Attachments: ${attachments.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

/** Rows of `column: value` lines (LangChain's CSVLoader), one blank line between rows. */
export function csvToText(text: string, separator: string): string {
  const rows = parseDelimited(text, separator).filter((row) => row.some((cell) => cell.trim() !== ''));
  if (rows.length === 0) return '';
  const [header, ...body] = rows;
  return body.map((row) => header.map((column, i) => `${column.trim()}: ${(row[i] ?? '').trim()}`).join('\n')).join('\n\n');
}

/** RFC 4180 fields: quotes around a field, doubled quotes inside it. */
function parseDelimited(text: string, separator: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === separator) {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) rows.push([...row, field]);
  return rows;
}
