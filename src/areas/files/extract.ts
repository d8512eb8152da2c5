import { readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Text out of a stored file, for the processing queue (the reference's
 * retrieval/loaders/main.py with its default engine): plain text, source code
 * and markup (recognised by their bytes, whatever type the browser sent), Markdown, HTML as clean text, CSV and
 * TSV as `column: value` rows, JSON as text, PDF (unpdf) and DOCX (mammoth)
 * text. Anything else that is not text fails with a readable reason; the file
 * itself stays stored.
 */

const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

export class ExtractionError extends Error {}

const extensionOf = (name: string) => path.extname(name).slice(1).toLowerCase();

/** Text when the bytes look like text: no NUL in the first 8 KB; UTF-8, else Latin-1 (as the reference's `_is_text_file`). */
export function decodeText(bytes: Buffer): string | null {
  if (bytes.subarray(0, 8192).includes(0)) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    return bytes.toString('latin1');
  }
}

/** The extracted text of a file, or an ExtractionError saying why there is none. */
export async function extractText(localPath: string, name: string, contentType: string | null): Promise<string> {
  const extension = extensionOf(name);
  const type = (contentType ?? '').toLowerCase();
  const bytes = await readFile(localPath);
  if (extension === 'pdf' || type === 'application/pdf') return pdfText(bytes);
  if (extension === 'docx' || type === DOCX_TYPE) return docxText(bytes);
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

/**
 * The text of every page, pages apart by a blank line; a locked or broken PDF
 * says so. Page by page, yielding to the event loop between pages: pdf.js runs
 * on the main thread, and requests must not wait for a long document.
 */
async function pdfText(bytes: Buffer): Promise<string> {
  const { getDocumentProxy } = await import('unpdf');
  let document: Awaited<ReturnType<typeof getDocumentProxy>> | null = null;
  try {
    document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    const pages: string[] = [];
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      pages.push(
        (content.items as { str?: string; hasEOL?: boolean }[])
          .map((item) => (item.str ?? '') + (item.hasEOL ? '\n' : ''))
          .join('')
          .trim(),
      );
      page.cleanup();
      await new Promise((resolve) => setImmediate(resolve));
    }
    return pages.join('\n\n');
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

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** The visible text of an HTML page: no scripts, styles or comments, entities decoded, blank runs folded. */
export function htmlToText(html: string): string {
  return html
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<(script|style|noscript|template)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<br\s*\/?>|<\/(p|div|li|tr|h[1-6]|section|article|header|footer|blockquote|pre)\s*>/gi, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, code: string) => {
      if (code[0] === '#') {
        const point = code[1].toLowerCase() === 'x' ? Number.parseInt(code.slice(2), 16) : Number.parseInt(code.slice(1), 10);
        return point > 0 && point <= 0x10ffff ? String.fromCodePoint(point) : '';
      }
      return ENTITIES[code.toLowerCase()] ?? entity;
    })
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
