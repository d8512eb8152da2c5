import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openBrowser } from '../areas/completions/setup.js';
import { fakeProviders } from '../helpers/fake-upstreams.js';
import { withServer } from '../helpers/server.js';
import { as } from '../helpers/users.js';
import { useServer } from '../helpers/world.js';

/**
 * Request limits and timeouts (issue 14 items 5 and 6; docs/configuration.md § Request limits),
 * over real sockets: what the server answers, when it closes a connection, and that it stays up.
 */
const MiB = 1024 * 1024;
const MARKER = '…[truncated]';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`Timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A raw connection to the server: what it was sent back, and when the server closed it. */
interface RawConnection {
  socket: net.Socket;
  readonly text: string;
  /** Milliseconds from connecting until the socket closed. */
  closed: Promise<number>;
  isClosed(): boolean;
  /** Waits for a whole response (by its Content-Length) and answers its status and JSON body. */
  response(timeoutMs?: number): Promise<{ status: number; headers: string; body: any }>;
}

async function connect(url: string): Promise<RawConnection> {
  const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const opened = Date.now();
  let text = '';
  let isClosed = false;
  socket.on('data', (chunk) => {
    text += chunk.toString('utf8');
  });
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) =>
    socket.once('close', () => {
      isClosed = true;
      resolve(Date.now() - opened);
    }),
  );
  const parse = () => {
    const end = text.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const headers = text.slice(0, end);
    const length = Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? 0);
    const body = text.slice(end + 4);
    if (Buffer.byteLength(body) < length) return null;
    return { status: Number(headers.split(' ')[1]), headers, body: length ? JSON.parse(body.slice(0, length)) : null };
  };
  return {
    socket,
    get text() {
      return text;
    },
    closed,
    isClosed: () => isClosed,
    async response(timeoutMs = 5000) {
      await until(() => parse() !== null || isClosed, timeoutMs, 'a response');
      const parsed = parse();
      if (!parsed) throw new Error(`connection closed without a response: ${JSON.stringify(text)}`);
      return parsed;
    },
  };
}

const head = (method: string, path: string, headers: Record<string, string | number>) =>
  `${method} ${path} HTTP/1.1\r\nHost: parley\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;

/** Writes a body (chunked, or plain bytes) piece by piece until the server answers (or `total` is sent); answers the bytes sent. */
async function sendBody(connection: RawConnection, total: number, chunked = true, piece = 64 * 1024): Promise<number> {
  let sent = 0;
  while (sent < total && !connection.text && !connection.isClosed()) {
    const size = chunked ? piece : Math.min(piece, total - sent);
    const chunk = chunked ? `${size.toString(16)}\r\n${'a'.repeat(size)}\r\n` : 'a'.repeat(size);
    if (!connection.socket.write(chunk)) await Promise.race([new Promise((resolve) => connection.socket.once('drain', resolve)), connection.closed]);
    sent += size;
    await sleep(2);
  }
  return sent;
}

/** JSON text nesting arrays `depth` deep inside a chat form. */
const deepChat = (depth: number) => `{"chat":{"title":"deep","deep":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;

describe('request body limits', () => {
  const world = useServer({ admin: 'Limits Admin' });

  it('refuses a sign-in body over 1 MiB from its Content-Length, before reading any of it', async () => {
    const connection = await connect(world.server.url);
    // Headers only: the answer cannot depend on reading the body.
    connection.socket.write(head('POST', '/api/v1/auths/signin', { 'content-type': 'application/json', 'content-length': 2 * MiB }));
    const response = await connection.response();
    expect(response.status).toBe(413);
    expect(response.body.detail).toContain(String(MiB));
    connection.socket.destroy();
  });

  it('refuses a chunked sign-in body at the chunk that passes the limit, not at its end', async () => {
    const connection = await connect(world.server.url);
    connection.socket.write(head('POST', '/api/v1/auths/signin', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }));
    const sent = await sendBody(connection, 16 * MiB);
    const response = await connection.response();
    expect(response.status).toBe(413);
    expect(sent).toBeLessThan(3 * MiB);
    connection.socket.destroy();
  });

  it('gives ordinary routes 2 MiB and routes that carry chats more', async () => {
    const filler = (bytes: number) => ({ timezone: 'UTC', filler: 'x'.repeat(bytes) });
    const small = await world.api.post('/api/v1/auths/update/timezone', filler(1.5 * MiB), as(world.admin));
    expect(small.status).toBe(200);
    const big = await world.api.post('/api/v1/auths/update/timezone', filler(2.5 * MiB), as(world.admin));
    expect(big.status).toBe(413);
    expect(big.body.detail).toContain(String(2 * MiB));

    const chat = await world.api.post('/api/v1/chats/new', { chat: { title: 'big', messages: [{ role: 'user', content: 'x'.repeat(3 * MiB) }] } }, as(world.admin));
    expect(chat.status, chat.text.slice(0, 300)).toBe(200);
    await world.api.delete(`/api/v1/chats/${chat.body.id}`, as(world.admin));
    const tooBig = await connect(world.server.url);
    tooBig.socket.write(head('POST', '/api/v1/chats/new', { authorization: `Bearer ${world.admin.token}`, 'content-type': 'application/json', 'content-length': 40 * MiB }));
    expect((await tooBig.response()).status).toBe(413);
    tooBig.socket.destroy();
  });

  it('answers 401 to a body sent without credentials to a signed-in route, without reading it', async () => {
    const connection = await connect(world.server.url);
    connection.socket.write(head('POST', '/api/v1/chats/new', { 'content-type': 'application/json', 'content-length': 30 * MiB }));
    expect((await connection.response()).status).toBe(401);
    connection.socket.destroy();
  });

  it('never echoes a long input in a 422: it is cut, with a marker', async () => {
    const long = await world.api.post('/api/v1/chats/new', { chat: 'e'.repeat(5000) }, as(world.admin));
    expect(long.status).toBe(422);
    expect(long.body.detail).toEqual([{ type: 'dict_type', loc: ['body', 'chat'], msg: 'Input should be a valid dictionary', input: `${'e'.repeat(256)}${MARKER}` }]);
    const listed = await world.api.post('/api/v1/auths/signin', { email: ['e'.repeat(5000)], password: 'p'.repeat(5000) });
    expect(listed.status).toBe(422);
    expect(listed.text.length).toBeLessThan(1000);
    expect(listed.body.detail[0].input).toBe(`["${'e'.repeat(254)}${MARKER}`);

    const missing = await world.api.post('/api/v1/auths/signin', { email: 'x'.repeat(600_000) });
    expect(missing.status).toBe(422);
    const whole = missing.body.detail.find((detail: any) => detail.loc.join('.') === 'body.password');
    expect(whole.input).toBe(`{"email":"${'x'.repeat(256 - 10)}${MARKER}`);

    // Short inputs are echoed as sent, as FastAPI does.
    const short = await world.api.post('/api/v1/auths/signin', { email: 'a@b.c' });
    expect(short.body.detail).toEqual([{ type: 'missing', loc: ['body', 'password'], msg: 'Field required', input: { email: 'a@b.c' } }]);
  });

  it('answers JSON nested deeper than 100 levels with a 422 and stores nothing', async () => {
    const before = (await world.api.get('/api/v1/chats/', as(world.admin))).body.length;
    for (const depth of [101, 4100, 200_000]) {
      const res = await world.api.post('/api/v1/chats/new', undefined, { ...as(world.admin), raw: deepChat(depth) });
      expect(res.status, `depth ${depth}`).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ type: 'json_invalid', loc: ['body', 0], ctx: { error: 'Nesting deeper than 100 levels' } });
    }
    // Brackets inside strings are text, not nesting.
    const quoted = await world.api.post('/api/v1/chats/new', { chat: { title: '[{'.repeat(500), note: '\\"[[[' } }, as(world.admin));
    expect(quoted.status).toBe(200);
    const allowed = await world.api.post('/api/v1/chats/new', undefined, { ...as(world.admin), raw: deepChat(100) });
    expect(allowed.status, allowed.text.slice(0, 300)).toBe(200);
    expect((await world.api.get('/api/v1/chats/', as(world.admin))).body.length).toBe(before + 2);
  });
});

describe('request bodies in flight', () => {
  it('refuses new bodies with 503 past the cap, without reading them, and releases the count on every path', async () => {
    await withServer({ env: { BODY_BYTES_IN_FLIGHT_MAX: '300000' } }, async (server) => {
      const signin = (bytes: number) => server.api.post('/api/v1/auths/signin', undefined, { raw: JSON.stringify({ email: 'a'.repeat(bytes) }) });

      // A declared body holds its whole length while it arrives; then the client leaves.
      const held = await connect(server.url);
      held.socket.write(head('POST', '/api/v1/auths/signin', { 'content-type': 'application/json', 'content-length': 250_000 }) + '{"email":"');
      await sleep(100);
      const refused = await signin(100_000);
      expect(refused.status).toBe(503);
      expect(refused.body.detail).toMatch(/try again/);
      held.socket.destroy();
      await until(() => held.isClosed());
      await sleep(50);
      expect((await signin(100_000)).status).toBe(422);

      // A chunked body counts what has arrived; its end releases it.
      const chunked = await connect(server.url);
      chunked.socket.write(head('POST', '/api/v1/auths/signin', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }));
      const text = JSON.stringify({ email: 'c'.repeat(250_000) });
      chunked.socket.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`);
      await sleep(100);
      expect((await signin(100_000)).status).toBe(503);
      chunked.socket.write('0\r\n\r\n');
      expect((await chunked.response()).status).toBe(422);
      expect((await signin(100_000)).status).toBe(422);
    });
  });

  it('stays up under many concurrent large bodies, and releases them all', async () => {
    // A cap just above the one body checked at the end: any byte left counted would refuse it.
    await withServer({ env: { BODY_BYTES_IN_FLIGHT_MAX: '1100000' } }, async (server) => {
      const attempts = Array.from({ length: 24 }, async (_, i) => {
        const connection = await connect(server.url);
        if (i % 2 === 0) {
          connection.socket.write(head('POST', '/api/v1/auths/signin', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }));
          await sendBody(connection, 8 * MiB);
        } else {
          connection.socket.write(head('POST', '/api/v1/auths/signin', { 'content-type': 'application/json', 'content-length': 900_000 }) + '{"email":"');
          await sendBody(connection, 900_000 - 10, false);
        }
        const response = await connection.response(10_000);
        connection.socket.destroy();
        return response.status;
      });
      const statuses = await Promise.all(attempts);
      for (const status of statuses) expect([413, 422, 503]).toContain(status);
      expect(statuses).toContain(503);
      expect((await server.api.get('/health')).status).toBe(200);
      await sleep(100);
      // Nothing is left counted (refused at a chunk, refused before, read whole, or left).
      const res = await server.api.post('/api/v1/auths/signin', undefined, { raw: JSON.stringify({ email: 'a'.repeat(1_000_000) }) });
      expect(res.status).toBe(422);
    });
  });
});

describe('uploads', () => {
  it('refuses an Ollama model upload over FILE_MAX_SIZE from its Content-Length, and while it streams', async () => {
    await withServer({ env: { RAG_FILE_MAX_SIZE: '1', ENABLE_OPENAI_API: 'false' } }, async (server) => {
      const admin = (await server.api.post('/api/v1/auths/signup', { name: 'Up', email: 'up@example.com', password: 'secret-Passw0rd!' })).body;
      const message = "Oops! The file you're trying to upload is too large. Please upload a file that is less than 1 MB.";
      const declared = await connect(server.url);
      declared.socket.write(
        head('POST', '/ollama/models/upload', { authorization: `Bearer ${admin.token}`, 'content-type': 'multipart/form-data; boundary=XX', 'content-length': 2 * MiB }),
      );
      expect(await declared.response()).toMatchObject({ status: 413, body: { detail: message } });
      declared.socket.destroy();

      // Chunked: refused at the chunk that passes the limit, and the partial file is removed.
      const streamed = await connect(server.url);
      streamed.socket.write(
        head('POST', '/ollama/models/upload', { authorization: `Bearer ${admin.token}`, 'content-type': 'multipart/form-data; boundary=XX', 'transfer-encoding': 'chunked' }),
      );
      const part = '--XX\r\nContent-Disposition: form-data; name="file"; filename="model.gguf"\r\n\r\n';
      streamed.socket.write(`${Buffer.byteLength(part).toString(16)}\r\n${part}\r\n`);
      const sent = await sendBody(streamed, 16 * MiB);
      expect(await streamed.response()).toMatchObject({ status: 413, body: { detail: message } });
      expect(sent).toBeLessThan(3 * MiB);
      streamed.socket.destroy();
      expect(existsSync(path.join(server.dataDir, 'uploads', 'model.gguf'))).toBe(false);

      // Multipart bodies go to upload routes only.
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(10)]), 'model.gguf');
      const elsewhere = await fetch(`${server.url}/api/v1/auths/signin`, { method: 'POST', body: form });
      expect(elsewhere.status).toBe(415);
    });
  });
});

describe('timeouts', () => {
  const world = useServer({
    fakes: fakeProviders(),
    admin: 'Timeouts Admin',
    env: {
      HTTP_HEADERS_TIMEOUT: '0.5',
      HTTP_REQUEST_TIMEOUT: '1',
      HTTP_BODY_IDLE_TIMEOUT: '0.5',
      HTTP_KEEP_ALIVE_TIMEOUT: '0.3',
      HTTP_CONNECTIONS_CHECKING_INTERVAL: '0.1',
    },
  });

  it('closes a connection whose headers stop half-way within the header timeout', async () => {
    const connection = await connect(world.server.url);
    connection.socket.write('POST /api/v1/auths/signin HTTP/1.1\r\nHost: parley\r\n');
    const after = await connection.closed;
    expect(after).toBeGreaterThanOrEqual(400);
    expect(after).toBeLessThan(2500);
  });

  it('closes a connection that never sends anything within the header timeout', async () => {
    const connection = await connect(world.server.url);
    const after = await connection.closed;
    expect(after).toBeGreaterThanOrEqual(400);
    expect(after).toBeLessThan(2500);
  });

  it('closes a connection whose body stops half-way within the body idle timeout', async () => {
    const connection = await connect(world.server.url);
    connection.socket.write(head('POST', '/api/v1/auths/signin', { 'content-type': 'application/json', 'content-length': 100 }) + '{"email":');
    const after = await connection.closed;
    expect(after).toBeGreaterThanOrEqual(400);
    expect(after).toBeLessThan(2500);
  });

  it('closes an idle kept-alive connection after the keep-alive timeout', async () => {
    const connection = await connect(world.server.url);
    connection.socket.write(head('GET', '/health', {}));
    expect((await connection.response()).status).toBe(200);
    const answered = Date.now();
    await connection.closed;
    // Node keeps the socket 1 s longer than the timeout it advertises (`Keep-Alive: timeout=0`).
    const idle = Date.now() - answered;
    expect(idle).toBeGreaterThanOrEqual(200);
    expect(idle).toBeLessThan(3000);
  });

  it.each([
    ['/api/chat/completions', 'gpt-fake-endless'],
    ['/openai/chat/completions', 'gpt-fake-endless'],
    ['/ollama/api/chat', 'llama-fake-endless:latest'],
  ])('keeps streaming an answer from %s longer than the request timeout', async (url, model) => {
    const controller = new AbortController();
    const response = await fetch(`${world.server.url}${url}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'go on' }] }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const started = Date.now();
    const reader = response.body!.getReader();
    let lateChunks = 0;
    try {
      while (Date.now() - started < 1700) {
        const { done } = await reader.read();
        expect(done).toBe(false);
        if (Date.now() - started > 1200) lateChunks++;
      }
    } finally {
      controller.abort();
    }
    expect(lateChunks).toBeGreaterThan(3);
  });

  it('keeps a socket.io connection open longer than every timeout', async () => {
    const browser = await openBrowser(world.server.url, world.admin.token);
    try {
      await sleep(1800);
      expect(browser.socket.connected).toBe(true);
      expect(await browser.socket.timeout(2000).emitWithAck('user-join', { auth: { token: world.admin.token } })).toEqual({ id: world.admin.id, name: world.admin.name });
    } finally {
      browser.close();
    }
  });
});

describe('connection cap', () => {
  it('closes connections past HTTP_MAX_CONNECTIONS at once, and serves again when some close', async () => {
    await withServer({ env: { HTTP_MAX_CONNECTIONS: '4' } }, async (server) => {
      const open = await Promise.all(Array.from({ length: 4 }, () => connect(server.url)));
      await sleep(50);
      const extra = await connect(server.url);
      expect(await extra.closed).toBeLessThan(500);
      for (const connection of open) connection.socket.destroy();
      await sleep(50);
      const again = await connect(server.url);
      again.socket.write(head('GET', '/health', { connection: 'close' }));
      expect((await again.response()).status).toBe(200);
    });
  });
});
