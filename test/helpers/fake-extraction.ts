import { createServer, type IncomingHttpHeaders } from 'node:http';
import { listenLocally } from './server.js';

/**
 * The external content extraction engines for tests, in one server speaking
 * each one's protocol: Apache Tika (`PUT /tika/text`, JSON with
 * `X-TIKA:content`), Docling Serve (`POST /v1/convert/file`, multipart
 * `files`, JSON `document.md_content` with form feeds between pages) and the
 * reference's external loader (`PUT /process`, a list of `{page_content}`).
 * A body starting with `FAIL` gets each one's error answer. Every request is
 * recorded with its headers, its bytes and (Docling) its form fields.
 */
export interface EngineRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Docling's form fields (`files` as the uploaded file's name and text). */
  fields?: Record<string, string[]>;
}

export interface FakeExtractionEngines {
  url: string;
  requests: EngineRequest[];
  close(): Promise<void>;
}

export async function startFakeExtractionEngines(): Promise<FakeExtractionEngines> {
  const requests: EngineRequest[] = [];
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
      const form = await new Request('http://fake/', { method: 'POST', body, headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
      const fields: Record<string, string[]> = {};
      let fileText = '';
      for (const [name, value] of form.entries()) {
        if (typeof value === 'string') (fields[name] ??= []).push(value);
        else {
          fileText = await value.text();
          (fields[name] ??= []).push(`${value.name}:${value.type}`);
        }
      }
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
    json(404, { detail: 'Not Found' });
  });
  const url = await listenLocally(server);
  return { url, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
