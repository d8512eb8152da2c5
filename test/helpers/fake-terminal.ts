import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { type RecordedRequest, sendJson } from './fake-upstreams.js';
import { listenLocally } from './server.js';

/**
 * An Open Terminal server (or orchestrator) for tests. HTTP: `/api/config` (with
 * the `system` feature: `/system` has a prompt), `/files/cwd`, `/openapi.json` (two
 * operations: `run_command`, `POST /execute`; `display_file`, `POST /files/display`, where
 * `/missing.txt` does not exist), `/api/files` (lists the query's `dir`), `/api/echo` (answers the request's
 * body with its content type), `/api/fail` (500), and the same under
 * `/p/{policy}/` as an orchestrator routes a policy. Websocket
 * `/api/terminals/{session}`: the first message must be `{"type": "auth",
 * "token": <key>}` (else closed 4001), then each text message is answered
 * `echo:<text>` and binary messages are sent back as they came.
 */
export interface FakeTerminal {
  url: string;
  key: string;
  requests: RecordedRequest[];
  /** Websocket sessions: their URL and the messages received. */
  sessions: { url: string; messages: string[] }[];
  close(): Promise<void>;
}

const OPENAPI = {
  openapi: '3.1.0',
  info: { title: 'Open Terminal', version: '1' },
  paths: {
    '/execute': {
      post: {
        operationId: 'run_command',
        description: 'Runs a shell command.',
        requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } } } },
      },
    },
    '/files/display': {
      post: {
        operationId: 'display_file',
        description: 'Shows a file to the user.',
        requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } } },
      },
    },
  },
};

export async function fakeTerminal(key = 'terminal-key'): Promise<FakeTerminal> {
  const fake: FakeTerminal = { url: '', key, requests: [], sessions: [], close: async () => {} };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://terminal');
    fake.requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body });
    const path = url.pathname.replace(/^\/p\/[^/]+/, '');
    if (req.headers.authorization !== `Bearer ${key}`) return sendJson(res, 401, { detail: 'Unauthorized' });
    if (path === '/api/config') return sendJson(res, 200, { version: 'fake', features: { system: true } });
    if (path === '/system') return sendJson(res, 200, { prompt: 'You can run commands in a terminal.' });
    if (path === '/files/cwd') return sendJson(res, 200, { cwd: '/home/user' });
    if (path === '/openapi.json') return sendJson(res, 200, OPENAPI);
    if (path === '/files/display' && req.method === 'POST') {
      const { path: file } = JSON.parse(body);
      return sendJson(res, 200, { path: file, exists: file !== '/missing.txt' });
    }
    if (path === '/execute' && req.method === 'POST') {
      const { command } = JSON.parse(body);
      return sendJson(res, 200, { output: `ran ${command} as ${req.headers['x-user-id']} in ${req.headers['x-session-id'] ?? 'no session'}` });
    }
    if (path === '/api/files') return sendJson(res, 200, { dir: url.searchParams.get('dir'), entries: ['a.txt'] });
    if (path === '/api/echo') {
      res.writeHead(201, { 'content-type': req.headers['content-type'] ?? 'text/plain', 'x-terminal': 'yes' });
      return res.end(body);
    }
    if (path === '/api/fail') return sendJson(res, 500, { detail: 'disk full' });
    sendJson(res, 404, { detail: 'Not Found' });
  });
  const sockets = new WebSocketServer({ server });
  sockets.on('connection', (socket, request) => {
    const session = { url: request.url ?? '', messages: [] as string[] };
    fake.sessions.push(session);
    let authed = false;
    socket.on('message', (data: Buffer, binary: boolean) => {
      if (!authed) {
        const payload = JSON.parse(data.toString('utf8'));
        if (payload.type !== 'auth' || payload.token !== key) return socket.close(4001, 'Invalid token');
        authed = true;
        return;
      }
      session.messages.push(binary ? `<${data.length} bytes>` : data.toString('utf8'));
      if (binary) socket.send(data, { binary: true });
      else if (data.toString('utf8') === 'exit') socket.close(1000, 'bye');
      else socket.send(`echo:${data.toString('utf8')}`);
    });
  });
  fake.url = await listenLocally(server);
  fake.close = async () => {
    for (const client of sockets.clients) client.terminate();
    sockets.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}
