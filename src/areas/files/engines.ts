import { openAsBlob } from 'node:fs';
import path from 'node:path';
import { customHeaders } from '../../core/upstream/headers.js';
import { ExtractionError } from './extraction-shared.js';

/**
 * The external content extraction engines (CONTENT_EXTRACTION_ENGINE), spoken
 * to as the reference's loaders do (retrieval/loaders/main.py,
 * external_document.py): the stored bytes go over HTTP, the text comes back.
 * A refused call or an answer without text fails the file with the engine's
 * reason, in the reference's words.
 */
export interface EngineInput {
  /** The bytes, on local disk. */
  path: string;
  /** The file's name as the user gave it. */
  name: string;
  contentType: string | null;
  /** Cancels the call (the extraction timeout). */
  signal: AbortSignal;
}

/** Calls an engine; a connection that fails says so as an ExtractionError after `failure` (the reference's words). */
async function call(failure: string, url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const reason = (error as Error).name === 'TimeoutError' ? 'no answer in time' : ((error as Error & { cause?: Error }).cause?.message ?? (error as Error).message);
    throw new ExtractionError(`${failure}: ${reason}`);
  }
}

const trimSlash = (url: string) => url.replace(/\/+$/, '');

async function json(failure: string, response: Response): Promise<unknown> {
  try {
    return await response.json();
  } catch {
    throw new ExtractionError(`${failure}: the answer is not JSON`);
  }
}

/** Apache Tika: `PUT {url}/tika/text` with the bytes; the text is the answer's `X-TIKA:content`. */
export async function tikaText(serverUrl: string, extractImages: boolean, input: EngineInput): Promise<string> {
  const headers: Record<string, string> = extractImages ? { 'X-Tika-PDFextractInlineImages': 'true' } : {};
  const response = await call('Error calling Tika', `${trimSlash(serverUrl)}/tika/text`, { method: 'PUT', body: await openAsBlob(input.path), headers, signal: input.signal });
  if (!response.ok) throw new ExtractionError(`Error calling Tika: ${response.statusText || response.status}`);
  const answer = (await json('Error calling Tika', response)) as Record<string, unknown> | null;
  const content = answer?.['X-TIKA:content'];
  return (typeof content === 'string' ? content : '<No text content found>').trim();
}

/** A form field's values as requests sends them: a list as repeated fields, anything else as its text. */
function formValues(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(formValues);
  if (value !== null && typeof value === 'object') return [JSON.stringify(value)];
  return [String(value)];
}

const PAGE_BREAK = '\f';

/**
 * Docling Serve: `POST {url}/v1/convert/file`, multipart `files` with the
 * reference's fields (image placeholders, a form feed between pages) and
 * DOCLING_PARAMS; the text is `document.md_content`, pages apart by a space
 * as the reference joins its documents.
 */
export async function doclingText(serverUrl: string, apiKey: string, params: Record<string, unknown>, input: EngineInput): Promise<string> {
  const form = new FormData();
  form.append('files', await openAsBlob(input.path, { type: input.contentType || 'application/octet-stream' }), input.name);
  const fields: Record<string, unknown> = { image_export_mode: 'placeholder', md_page_break_placeholder: PAGE_BREAK, ...params };
  for (const [name, value] of Object.entries(fields)) for (const text of formValues(value)) form.append(name, text);
  const headers: Record<string, string> = apiKey ? { 'X-Api-Key': apiKey } : {};
  const response = await call('Error calling Docling', `${trimSlash(serverUrl)}/v1/convert/file`, { method: 'POST', body: form, headers, signal: input.signal });
  if (!response.ok) {
    const body = await response.text().catch(() => '');
    let detail = body ? ` - ${body}` : '';
    try {
      const parsed = JSON.parse(body) as { detail?: unknown };
      detail = parsed && typeof parsed === 'object' ? ('detail' in parsed ? ` - ${typeof parsed.detail === 'string' ? parsed.detail : JSON.stringify(parsed.detail)}` : '') : detail;
    } catch {
      // not JSON: the text itself is the detail
    }
    throw new ExtractionError(`Error calling Docling: Error calling Docling API: ${response.statusText || response.status}${detail}`);
  }
  const answer = (await json('Error calling Docling', response)) as { document?: { md_content?: unknown } } | null;
  const markdown = typeof answer?.document?.md_content === 'string' ? answer.document.md_content : '';
  if (!markdown) return '<No text content found>';
  const pages = markdown
    .split(PAGE_BREAK)
    .map((page) => page.trim())
    .filter(Boolean);
  return pages.length > 0 ? pages.join(' ') : markdown;
}

/**
 * An external document loader: `PUT {url}/process` with the bytes, the
 * declared type, `Authorization: Bearer <key>`, `X-Filename` and the
 * EXTERNAL_DOCUMENT_LOADER_HEADERS (placeholders filled); the answer is a
 * document `{page_content, metadata}` or a list of them, joined by a space.
 */
export async function externalLoaderText(url: string, apiKey: string, extraHeaders: Record<string, unknown>, input: EngineInput): Promise<string> {
  const headers: Record<string, string> = {};
  if (input.contentType) headers['Content-Type'] = input.contentType;
  headers.Authorization = `Bearer ${apiKey}`;
  headers['X-Filename'] = encodeURIComponent(path.basename(input.path));
  Object.assign(headers, await customHeaders(extraHeaders, { metadata: { file_name: input.name, file_content_type: input.contentType ?? '' } }));
  const response = await call('Error connecting to endpoint', `${trimSlash(url)}/process`, { method: 'PUT', body: await openAsBlob(input.path), headers, signal: input.signal });
  if (!response.ok) throw new ExtractionError(`Error loading document: ${response.status} ${(await response.text().catch(() => '')).slice(0, 500)}`.trim());
  const answer = await json('Error loading document', response);
  const documents = Array.isArray(answer) ? answer : answer && typeof answer === 'object' ? [answer] : null;
  if (!documents || documents.length === 0) throw new ExtractionError('Error loading document: No content returned');
  return documents.map((document) => (document && typeof (document as { page_content?: unknown }).page_content === 'string' ? (document as { page_content: string }).page_content : '')).join(' ');
}
