import { openAsBlob } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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

/** The JSON object of a successful answer; another status fails with it and the start of its body. */
async function answerOf(failure: string, response: Response): Promise<Record<string, unknown>> {
  if (!response.ok) throw new ExtractionError(`${failure}: ${response.status} ${(await response.text().catch(() => '')).slice(0, 300)}`.trim());
  const answer = await json(failure, response);
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) throw new ExtractionError(`${failure}: the answer is not a JSON object`);
  return answer as Record<string, unknown>;
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

/** The text of Mistral OCR's pages (`pages[].markdown`), as the reference's MistralLoader keeps them. */
function ocrPagesText(answer: Record<string, unknown>): string {
  const pages = Array.isArray(answer.pages) ? (answer.pages as Record<string, unknown>[]) : [];
  if (pages.length === 0) return 'No text content found';
  const texts = pages
    .filter((page) => page && page.markdown !== undefined && page.markdown !== null && page.index !== undefined && page.index !== null)
    .map((page) => String(page.markdown).trim())
    .filter(Boolean);
  return texts.length > 0 ? texts.join(' ') : 'No valid text content found in document';
}

/**
 * Mistral OCR (PDF only): the file uploaded to `{base}/files` (`purpose=ocr`),
 * a signed URL from `{base}/files/{id}/url?expiry=1`, then `POST {base}/ocr`
 * with model `mistral-ocr-latest` and that URL (or, with
 * MISTRAL_OCR_USE_BASE64, the PDF inline as a data URL); the uploaded copy is
 * deleted after, whatever happened.
 */
export async function mistralOcrText(baseUrl: string, apiKey: string, useBase64: boolean, input: EngineInput): Promise<string> {
  const base = trimSlash(baseUrl || 'https://api.mistral.ai/v1');
  const failure = 'Error during processing';
  const auth = { Authorization: `Bearer ${apiKey}` };
  let uploadedId: string | null = null;
  try {
    let documentUrl: string;
    if (useBase64) documentUrl = `data:application/pdf;base64,${(await readFile(input.path)).toString('base64')}`;
    else {
      const form = new FormData();
      form.append('purpose', 'ocr');
      form.append('file', await openAsBlob(input.path, { type: 'application/pdf' }), input.name);
      const uploaded = await answerOf(failure, await call(failure, `${base}/files`, { method: 'POST', body: form, headers: auth, signal: input.signal }));
      if (typeof uploaded.id !== 'string' || !uploaded.id) throw new ExtractionError(`${failure}: File ID not found in upload response.`);
      uploadedId = uploaded.id;
      const signedUrl = `${base}/files/${encodeURIComponent(uploadedId)}/url?expiry=1`;
      const signed = await answerOf(failure, await call(failure, signedUrl, { headers: { ...auth, Accept: 'application/json' }, signal: input.signal }));
      if (typeof signed.url !== 'string' || !signed.url) throw new ExtractionError(`${failure}: Signed URL not found in response.`);
      documentUrl = signed.url;
    }
    const request = { model: 'mistral-ocr-latest', document: { type: 'document_url', document_url: documentUrl }, include_image_base64: false };
    const headers = { ...auth, 'Content-Type': 'application/json', Accept: 'application/json' };
    return ocrPagesText(await answerOf(failure, await call(failure, `${base}/ocr`, { method: 'POST', body: JSON.stringify(request), headers, signal: input.signal })));
  } finally {
    if (uploadedId) {
      const deletion = `${base}/files/${encodeURIComponent(uploadedId)}`;
      await fetch(deletion, { method: 'DELETE', headers: auth, signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
    }
  }
}

/** `location` resolved against `base` when it stays on base's origin (a poll must not be sent elsewhere); else null. */
function sameOrigin(location: string | null, base: string): string | null {
  if (!location) return null;
  try {
    const url = new URL(location, base);
    return url.origin === new URL(base).origin ? url.href : null;
  } catch {
    return null;
  }
}

/** The Document Intelligence REST version the reference's SDK speaks. */
const DOCUMENT_INTELLIGENCE_API_VERSION = '2024-11-30';

/**
 * Azure AI Document Intelligence: `POST {endpoint}/documentintelligence/
 * documentModels/{model}:analyze` with the bytes and
 * `Ocp-Apim-Subscription-Key`, Markdown output; the answer's
 * `Operation-Location` (on the endpoint's origin only) is polled, as its
 * `Retry-After` asks, until the analysis `succeeded`: the text is
 * `analyzeResult.content`.
 */
export async function documentIntelligenceText(endpoint: string, key: string, model: string, input: EngineInput): Promise<string> {
  const failure = 'Error calling Document Intelligence';
  const headers = { 'Ocp-Apim-Subscription-Key': key };
  const analyze =
    `${trimSlash(endpoint)}/documentintelligence/documentModels/${encodeURIComponent(model || 'prebuilt-layout')}:analyze` +
    `?api-version=${DOCUMENT_INTELLIGENCE_API_VERSION}&outputContentFormat=markdown`;
  const started = await call(failure, analyze, {
    method: 'POST',
    body: await openAsBlob(input.path),
    headers: { ...headers, 'Content-Type': 'application/octet-stream' },
    signal: input.signal,
  });
  if (started.status !== 202) throw new ExtractionError(`${failure}: ${started.status} ${(await started.text().catch(() => '')).slice(0, 300)}`.trim());
  const status = sameOrigin(started.headers.get('operation-location'), analyze);
  if (!status) throw new ExtractionError(`${failure}: the answer has no Operation-Location on the endpoint`);
  for (;;) {
    const polled = await call(failure, status, { headers, signal: input.signal });
    const answer = await answerOf(failure, polled);
    if (answer.status === 'succeeded') {
      const result = answer.analyzeResult as { content?: unknown } | undefined;
      return typeof result?.content === 'string' ? result.content : '';
    }
    if (answer.status === 'failed' || answer.status === 'canceled') {
      const error = answer.error as { message?: unknown } | undefined;
      throw new ExtractionError(`${failure}: ${typeof error?.message === 'string' ? error.message : `the analysis ${answer.status}`}`);
    }
    const retryAfter = Number(polled.headers.get('retry-after'));
    try {
      await sleep(Math.min(5, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 1) * 1000, undefined, { signal: input.signal });
    } catch {
      throw new ExtractionError(`${failure}: no answer in time`);
    }
  }
}
