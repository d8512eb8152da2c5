import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Extracted, type ExtractedPage, ExtractionError, looksLikeText } from './extraction-shared.js';
import { htmlToText } from './markup.js';
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
  return { text: await documentText(bytes, extension, type, contentType) };
}

async function documentText(bytes: Buffer, extension: string, type: string, contentType: string | null): Promise<string> {
  if (extension === 'docx' || type === DOCX_TYPE) return docxText(bytes);
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
    const pages: ExtractedPage[] = [];
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      const text = (content.items as { str?: string; hasEOL?: boolean }[])
        .map((item) => (item.str ?? '') + (item.hasEOL ? '\n' : ''))
        .join('')
        .trim();
      pages.push({ text, metadata: { ...info, total_pages: document.numPages, page: number - 1, page_label: labels?.[number - 1] || String(number) } });
      page.cleanup();
    }
    return { text: pages.map((page) => page.text).join('\n\n'), pages };
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'PasswordException') throw new ExtractionError('The PDF is password-protected');
    throw new ExtractionError(`The PDF could not be read: ${(error as Error).message}`);
  } finally {
    await document?.loadingTask.destroy();
  }
}

/** The paragraphs of a Word document as plain text. */
async function docxText(bytes: Buffer): Promise<string> {
  const { default: mammoth } = await import('mammoth');
  try {
    return (await mammoth.extractRawText({ buffer: bytes })).value.trim();
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
