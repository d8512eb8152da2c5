import { createServer, type IncomingHttpHeaders } from 'node:http';
import { listenLocally } from './server.js';

/**
 * The external content extraction engines for tests, in one server speaking
 * each one's protocol: Apache Tika (`PUT /tika/text`, JSON with
 * `X-TIKA:content`), Docling Serve (`POST /v1/convert/file`, multipart
 * `files`, JSON `document.md_content` with form feeds between pages) and the
 * reference's external loader (`PUT /process`, a list of `{page_content}`),
 * Mistral OCR under `/mistral/v1` (file upload, signed URL, `/ocr`, delete)
 * and Azure Document Intelligence under `/di` (analyze, then an operation
 * polled once `running`, then `succeeded`). A document starting with `FAIL`
 * gets each one's error answer (`ELSEWHERE`: Document Intelligence points its
 * operation at another host). Every request is recorded with its headers, its
 * bytes and (multipart) its form fields.
 */
export interface EngineRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Multipart form fields (a file as `name:type`). */
  fields?: Record<string, string[]>;
}

export interface FakeExtractionEngines {
  url: string;
  requests: EngineRequest[];
  close(): Promise<void>;
}

/** A multipart body's fields, and the text of its file part. */
async function formOf(body: Buffer, contentType: string): Promise<{ fields: Record<string, string[]>; fileText: string }> {
  const form = await new Request('http://fake/', { method: 'POST', body, headers: { 'content-type': contentType } }).formData();
  const fields: Record<string, string[]> = {};
  let fileText = '';
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') (fields[name] ??= []).push(value);
    else {
      fileText = await value.text();
      (fields[name] ??= []).push(`${value.name}:${value.type}`);
    }
  }
  return { fields, fileText };
}

export async function startFakeExtractionEngines(): Promise<FakeExtractionEngines> {
  const requests: EngineRequest[] = [];
  /** Mistral's stored files and Document Intelligence's operations, by id. */
  const mistralFiles = new Map<string, string>();
  const operations = new Map<string, { text: string; polls: number }>();
  let counter = 0;
  let url = '';
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const recorded: EngineRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
    requests.push(recorded);
    const json = (status: number, value: unknown, statusMessage?: string) => {
      res.writeHead(status, statusMessage ?? '', { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'PUT' && req.url === '/tika/text') {
      if (body.subarray(0, 4).toString() === 'FAIL') return json(422, {}, 'Unprocessable Entity');
      return json(200, { 'Content-Type': 'application/pdf', 'X-TIKA:content': `\n  Tika read ${body.length} bytes\n` });
    }
    if (req.method === 'POST' && req.url === '/v1/convert/file') {
      const { fields, fileText } = await formOf(body, req.headers['content-type'] ?? '');
      recorded.fields = fields;
      if (fileText.startsWith('FAIL')) return json(500, { detail: 'conversion failed' }, 'Internal Server Error');
      return json(200, { document: { md_content: `# Page one\n${fields.md_page_break_placeholder?.[0] ?? ''}Page two of ${fileText.length} bytes` }, status: 'success' });
    }
    if (req.method === 'PUT' && req.url === '/process') {
      if (body.subarray(0, 4).toString() === 'FAIL') {
        res.writeHead(502, { 'content-type': 'text/plain' });
        return res.end('loader broke');
      }
      return json(200, [{ page_content: 'Loaded part one', metadata: {} }, { page_content: `part two of ${body.length} bytes`, metadata: { page: 2 } }]);
    }
    const path = (req.url ?? '').split('?')[0];
    if (path.startsWith('/mistral/v1/')) {
      if (req.headers.authorization !== 'Bearer mistral-key') return json(401, { detail: 'Unauthorized' }, 'Unauthorized');
      if (req.method === 'POST' && path === '/mistral/v1/files') {
        const { fields, fileText } = await formOf(body, req.headers['content-type'] ?? '');
        recorded.fields = fields;
        const id = `file-${++counter}`;
        mistralFiles.set(id, fileText);
        return json(200, { id, object: 'file', purpose: 'ocr' });
      }
      const signed = /^\/mistral\/v1\/files\/([^/]+)\/url$/.exec(path);
      if (req.method === 'GET' && signed && mistralFiles.has(signed[1])) return json(200, { url: `https://signed.example/${signed[1]}` });
      const stored = /^\/mistral\/v1\/files\/([^/]+)$/.exec(path);
      if (req.method === 'DELETE' && stored) return json(200, { id: stored[1], deleted: mistralFiles.delete(stored[1]) });
      if (req.method === 'POST' && path === '/mistral/v1/ocr') {
        const request = JSON.parse(body.toString()) as { document: { document_url: string } };
        const url = request.document.document_url;
        const text = url.startsWith('data:application/pdf;base64,') ? Buffer.from(url.split(',')[1], 'base64').toString('latin1') : (mistralFiles.get(url.split('/').pop()!) ?? '');
        if (text.startsWith('FAIL')) return json(500, { detail: 'ocr broke' }, 'Internal Server Error');
        return json(200, { pages: [{ index: 0, markdown: '# OCR page one' }, { index: 1, markdown: '   ' }, { index: 2, markdown: `page three of ${text.length} bytes` }], model: 'mistral-ocr-latest' });
      }
    }
    if (path.startsWith('/di/documentintelligence/documentModels/')) {
      if (req.headers['ocp-apim-subscription-key'] !== 'di-key') return json(401, { error: { code: '401', message: 'Access denied' } }, 'Unauthorized');
      if (req.method === 'POST' && path.endsWith(':analyze')) {
        const id = `op-${++counter}`;
        operations.set(id, { text: body.toString('latin1'), polls: 0 });
        const location = body.toString('latin1').startsWith('ELSEWHERE')
          ? 'http://elsewhere.invalid/operation'
          : `${url}/di/documentintelligence/documentModels/prebuilt-layout/analyzeResults/${id}?api-version=2024-11-30`;
        res.writeHead(202, { 'operation-location': location });
        return res.end();
      }
      const operation = operations.get(path.split('/').pop() ?? '');
      if (req.method === 'GET' && operation) {
        if (operation.polls++ === 0) {
          res.setHeader('retry-after', '1');
          return json(200, { status: 'running' });
        }
        if (operation.text.startsWith('FAIL')) return json(200, { status: 'failed', error: { code: 'InvalidContent', message: 'The file is corrupted or format is unsupported.' } });
        return json(200, { status: 'succeeded', analyzeResult: { content: `# Analyzed\n\n${operation.text.length} bytes` } });
      }
    }
    json(404, { detail: 'Not Found' });
  });
  url = await listenLocally(server);
  return { url, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
