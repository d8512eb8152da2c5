import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readJson, sendJson } from './fake-upstreams.js';
import { listenLocally } from './server.js';

/**
 * A small OpenAPI tool server (as the open-webui/openapi-servers examples): a
 * weather lookup (GET with path and query parameters) and a note writer (POST
 * with a JSON body described through `$ref`), a slow operation, and its document
 * at `/openapi.json`. Every call is recorded with its headers.
 */
export interface FakeToolServer {
  url: string;
  calls: { method: string; path: string; headers: IncomingMessage['headers']; body: unknown }[];
  close(): Promise<void>;
}

export const TOOL_SERVER_DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'Weather Server', version: '1.0' },
  paths: {
    '/weather/{city}': {
      parameters: [{ name: 'city', in: 'path', required: true, schema: { type: 'string', description: 'The city' } }],
      get: {
        operationId: 'get_weather',
        summary: 'Current weather of a city',
        parameters: [{ name: 'unit', in: 'query', schema: { type: 'string', enum: ['c', 'f'] } }],
      },
    },
    '/notes': {
      post: {
        operationId: 'write_note',
        description: 'Stores a note',
        requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Note' } } } },
      },
    },
    '/slow': { get: { operationId: 'slow_call', summary: 'Never answers in time' } },
  },
  components: { schemas: { Note: { type: 'object', properties: { title: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } }, required: ['title'] } } },
};

export async function startFakeToolServer(): Promise<FakeToolServer> {
  const calls: FakeToolServer['calls'] = [];
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://local');
    if (url.pathname === '/openapi.json') return sendJson(res, 200, TOOL_SERVER_DOCUMENT);
    const body = req.method === 'POST' ? await readJson(req) : null;
    calls.push({ method: req.method ?? '', path: `${url.pathname}${url.search}`, headers: req.headers, body });
    if (url.pathname.startsWith('/weather/')) {
      return sendJson(res, 200, { city: decodeURIComponent(url.pathname.slice(9)), unit: url.searchParams.get('unit'), temperature: 21 });
    }
    if (url.pathname === '/notes') return sendJson(res, 200, [{ stored: body }]);
    if (url.pathname === '/slow') return; // never answers
    sendJson(res, 404, { detail: 'Not Found' });
  });
  const url = await listenLocally(server);
  return {
    url,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
