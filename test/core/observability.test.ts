import { createServer, type IncomingMessage } from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver } from '../areas/events/receiver.js';
import { createTool, toolBody, TOOLS_ENV } from '../areas/tools/helpers.js';
import { eventually } from '../helpers/eventually.js';
import { onlyOpenAI, startFakeOpenAI } from '../helpers/fake-upstreams.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { destroyServer, listenLocally, startServer, type TestServer, withServer } from '../helpers/server.js';
import { addUser, signup } from '../helpers/users.js';

/** One sample of a Prometheus text exposition: its value, or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

describe('request ids', () => {
  it('answers every request, errors included, with its id, taking a sane incoming one', async () => {
    const warnings: Record<string, unknown>[] = [];
    await withServer({ warnings, env: { ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' } }, async (server) => {
      const fresh = await server.api.get('/api/v1/chats/');
      expect(fresh.status).toBe(401);
      expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      const other = await server.api.get('/api/v1/chats/');
      expect(other.headers.get('x-request-id')).not.toBe(fresh.headers.get('x-request-id'));

      const given = await server.api.get('/health', { headers: { 'x-request-id': 'proxy-1234.abc' } });
      expect(given.headers.get('x-request-id')).toBe('proxy-1234.abc');
      for (const hostile of ['a b', 'x'.repeat(129), 'line\u00e9', '']) {
        const answered = (await server.api.get('/health', { headers: { 'x-request-id': hostile } })).headers.get('x-request-id');
        expect(answered).toMatch(/^[0-9a-f-]{36}$/);
      }

      // A service's own log line (the readiness check's) carries the id of the request it served.
      server.parley.services.python.trouble = () => 'Plugin host not ready: no interpreter';
      const notReady = await server.api.get('/ready', { headers: { 'x-request-id': 'probe-42' } });
      expect(notReady.status).toBe(503);
      expect(notReady.body).toEqual({ detail: 'Plugin host not ready: no interpreter' });
      expect(notReady.headers.get('x-request-id')).toBe('probe-42');
      expect(warnings.find((line) => line.msg === 'readiness check failed')).toMatchObject({ reqId: 'probe-42', reason: 'Plugin host not ready: no interpreter' });
    });
  });

  it('keeps the id to the answer and the request logger with LOG_REQUEST_CONTEXT=false', async () => {
    const warnings: Record<string, unknown>[] = [];
    await withServer({ warnings, env: { LOG_REQUEST_CONTEXT: 'false', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' } }, async (server) => {
      server.parley.services.python.trouble = () => 'Plugin host not ready: no interpreter';
      const notReady = await server.api.get('/ready', { headers: { 'x-request-id': 'probe-43' } });
      expect(notReady.headers.get('x-request-id')).toBe('probe-43');
      const line = warnings.find((l) => l.msg === 'readiness check failed');
      expect(line).toBeDefined();
      expect(line).not.toHaveProperty('reqId');
    });
  });
});

describe('Prometheus metrics', () => {
  it('are off unless enabled', async () => {
    await withServer({ env: { ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' } }, async (server) => {
      expect((await server.api.get('/metrics')).status).toBe(404);
    });
  });

  it('are served at METRICS_PATH to the bearer of METRICS_TOKEN, with latencies by route pattern', async () => {
    const env = { ENABLE_METRICS: 'true', METRICS_PATH: '/internal/metrics', METRICS_TOKEN: 'scrape-secret', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' };
    await withServer({ env }, async (server) => {
      const admin = await signup(server.api, 'Metrics Admin');
      expect((await server.api.get('/internal/metrics')).status).toBe(401);
      expect((await server.api.get('/internal/metrics', { token: 'scrape-secre' })).status).toBe(401);
      expect((await server.api.get('/internal/metrics', { token: admin.token })).status).toBe(401);
      for (const id of ['first-chat', 'second-chat']) expect((await server.api.get(`/api/v1/chats/${id}`, { token: admin.token })).status).toBe(401);

      const scraped = await server.api.get('/internal/metrics', { token: 'scrape-secret' });
      expect(scraped.status).toBe(200);
      expect(scraped.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = scraped.text;
      expect(sample(text, 'parley_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/chats/:id', status: '401' })).toBe(2);
      expect(text).not.toContain('first-chat');
      expect(sample(text, 'parley_http_request_duration_seconds_bucket', { route: '/api/v1/chats/:id', le: '+Inf' })).toBe(2);
      // The scrape itself is in flight while it is answered.
      expect(sample(text, 'parley_http_requests_in_flight')).toBe(1);
      expect(sample(text, 'parley_generations_running')).toBe(0);
      expect(sample(text, 'parley_plugin_workers', { state: 'busy' })).toBe(0);
      expect(sample(text, 'parley_plugin_queue_waiting')).toBe(0);
      expect(sample(text, 'parley_webhook_deliveries', { status: 'pending' })).toBe(0);
      expect(sample(text, 'parley_webhook_deliveries', { status: 'failed' })).toBe(0);
      expect(sample(text, 'parley_webhook_attempts_total', { outcome: 'failed' })).toBe(0);
      expect(sample(text, 'parley_processing_queue', { status: 'pending' })).toBe(0);
      expect(sample(text, 'parley_process_resident_memory_bytes')).toBeGreaterThan(0);
    });
  });

  it('ask an admin credential when no token is set', async () => {
    await withServer({ env: { ENABLE_METRICS: 'true', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' } }, async (server) => {
      const admin = await signup(server.api, 'Scrape Admin');
      const user = await addUser(server.api, admin, 'user');
      expect((await server.api.get('/metrics')).status).toBe(401);
      expect((await server.api.get('/metrics', { token: user.token })).status).toBe(401);
      const scraped = await server.api.get('/metrics', { token: admin.token });
      expect(scraped.status).toBe(200);
      expect(sample(scraped.text, 'parley_http_request_duration_seconds_count', { method: 'POST', route: '/api/v1/auths/signup', status: '200' })).toBe(1);
    });
  });

  it('count failed webhook attempts and the backlog they leave', async () => {
    const receiver = await Receiver.start(() => ({ status: 500 }));
    try {
      const env = { ENABLE_METRICS: 'true', METRICS_TOKEN: 'scrape', EVENT_WEBHOOK_ALLOW_LOCAL: 'true', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' };
      await withServer({ env }, async (server) => {
        const admin = await signup(server.api, 'Webhook Admin');
        expect((await server.api.post('/api/events/webhooks', { url: `${receiver.url}/down`, events: ['chat.created'] }, { token: admin.token })).status).toBe(200);
        await server.api.post('/api/v1/chats/new', { chat: { title: 'Undeliverable' } }, { token: admin.token });
        await receiver.waitFor((received) => received.length >= 1);
        const text = await eventually(async () => {
          const scraped = (await server.api.get('/metrics', { token: 'scrape' })).text;
          return (sample(scraped, 'parley_webhook_attempts_total', { outcome: 'failed' }) ?? 0) >= 1 ? scraped : undefined;
        });
        expect(sample(text, 'parley_webhook_attempts_total', { outcome: 'succeeded' })).toBe(0);
        // Retried later: still in the backlog.
        expect(sample(text, 'parley_webhook_deliveries', { status: 'pending' })).toBe(1);
      });
    } finally {
      await receiver.close();
    }
  });

  it('refuse to start with a malformed METRICS_PATH', async () => {
    await expect(startServer({ env: { ENABLE_METRICS: 'true', METRICS_PATH: 'metrics x' } })).rejects.toThrow(/METRICS_PATH must be a path/);
  });
});

/** An OTLP/HTTP collector: keeps the JSON bodies posted to /v1/traces and /v1/metrics. */
async function startCollector() {
  const received: { path: string; body: any; authorization?: string }[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ path: request.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')), authorization: request.headers.authorization });
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const url = await listenLocally(server);
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The spans a collector received. */
function spansOf(received: { path: string; body: any }[]): any[] {
  return received.filter((r) => r.path === '/v1/traces').flatMap((r) => r.body.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)));
}

/** A span's attributes as plain values (OTLP/JSON sends 64-bit integers as strings). */
function attributesOf(span: any): Record<string, unknown> {
  return Object.fromEntries(span.attributes.map((a: any) => [a.key, Object.values(a.value)[0]]));
}

/** OTLP's span kinds: SPAN_KIND_SERVER and SPAN_KIND_CLIENT. */
const SERVER = 2;
const CLIENT = 3;

describe('OpenTelemetry export', () => {
  it('sends a span per request and the request durations to the OTLP endpoint', async () => {
    const collector = await startCollector();
    try {
      const env = {
        ENABLE_OTEL: 'true',
        ENABLE_OTEL_TRACES: 'true',
        ENABLE_OTEL_METRICS: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_SERVICE_NAME: 'parley-under-test',
        OTEL_BASIC_AUTH_USERNAME: 'otel',
        OTEL_BASIC_AUTH_PASSWORD: 'pw',
        OTEL_METRICS_EXPORT_INTERVAL_MILLIS: '200',
        ENABLE_OLLAMA_API: 'false',
        ENABLE_OPENAI_API: 'false',
      };
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      await withServer({ env }, async (server) => {
        const res = await server.api.get('/api/v1/chats/some-chat', { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, 'x-request-id': 'traced-1' } });
        expect(res.status).toBe(401);
        await eventually(() => collector.received.some((r) => r.path === '/v1/metrics' && JSON.stringify(r.body).includes('http.server.request.duration')));
      });
      // Closing the server flushed the spans.
      const traces = collector.received.filter((r) => r.path === '/v1/traces');
      const span = spansOf(collector.received).find((s: any) => s.name === 'GET /api/v1/chats/:id');
      expect(span).toBeDefined();
      expect(span.traceId).toBe(traceId);
      const attributes = attributesOf(span);
      expect(attributes).toMatchObject({ 'http.route': '/api/v1/chats/:id', 'parley.request_id': 'traced-1' });
      expect(Number(attributes['http.response.status_code'])).toBe(401);
      const resource = JSON.stringify(traces[0].body.resourceSpans[0].resource);
      expect(resource).toContain('parley-under-test');
      expect(traces[0].authorization).toBe(`Basic ${Buffer.from('otel:pw').toString('base64')}`);
    } finally {
      await collector.close();
    }
  });
});

describe('OpenTelemetry child spans', () => {
  it("give each request's queries, provider calls and plugin calls a span under the request's", async () => {
    const collector = await startCollector();
    const provider = await startFakeOpenAI();
    // Credentials in the base URL and a key in the query string must never reach a span.
    const base = provider.url.replace('http://', 'http://svc:base-secret@');
    try {
      const env = {
        ...TOOLS_ENV,
        ...onlyOpenAI(base, 'sk-header-secret'),
        ENABLE_OPENAI_API_PASSTHROUGH: 'true',
        ENABLE_OTEL: 'true',
        ENABLE_OTEL_TRACES: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      };
      let system = '';
      const admin = await withServer({ env }, async (server) => {
        system = server.parley.core.database.dialect === 'postgres' ? 'postgresql' : 'sqlite';
        const account = await signup(server.api, 'Traced Admin', 'traced-Passw0rd!');
        const proxied = await server.api.get('/openai/files?api_key=query-secret', { token: account.token });
        expect(proxied.status, proxied.text).toBe(200);
        const streamed = await server.api.post('/openai/chat/completions', { model: 'gpt-fake', stream: true, messages: [{ role: 'user', content: 'hi' }] }, { token: account.token });
        expect(streamed.status, streamed.text).toBe(200);
        await createTool(server, account, 'traced_tool');
        expect(provider.requests.some((r) => r.path === '/files')).toBe(true);
        return account;
      });
      const spans = spansOf(collector.received);
      const serverSpan = (name: string) => {
        const found = spans.find((s) => s.name === name && s.kind === SERVER);
        expect(found, name).toBeDefined();
        return found;
      };
      const childrenOf = (parent: any) => spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);

      // The sign-up's queries: one span each, the SQL with placeholders, never the values.
      const signupSpan = serverSpan('POST /api/v1/auths/signup');
      const queries = childrenOf(signupSpan).filter((s) => s.name.startsWith('db '));
      const insert = queries.find((s) => s.name === 'db insert' && String(attributesOf(s)['db.query.text']).includes('"user"'));
      expect(insert, JSON.stringify(queries.map((s) => s.name))).toBeDefined();
      expect(insert.kind).toBe(CLIENT);
      expect(attributesOf(insert)).toMatchObject({ 'db.system.name': system, 'db.operation.name': 'INSERT' });
      expect(attributesOf(insert)['db.query.text']).toMatch(system === 'postgresql' ? /\$1/ : /\?/);
      expect(queries.some((s) => s.name === 'db select' && attributesOf(s)['db.operation.name'] === 'SELECT')).toBe(true);

      // The provider call: its URL without credentials nor query string.
      const proxySpan = serverSpan('GET /openai/*');
      const call = childrenOf(proxySpan).find((s) => s.name === 'GET');
      expect(call).toBeDefined();
      expect(call.kind).toBe(CLIENT);
      const port = Number(new URL(provider.url).port);
      expect(attributesOf(call)).toMatchObject({ 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'url.full': `http://127.0.0.1:${port}/files` });
      expect(Number(attributesOf(call)['server.port'])).toBe(port);
      expect(Number(attributesOf(call)['http.response.status_code'])).toBe(200);
      // A streamed answer's span is exported, so it was ended (when its body closed).
      const completionSpan = serverSpan('POST /openai/chat/completions');
      const streamedCall = childrenOf(completionSpan).find((s) => s.name === 'POST');
      expect(attributesOf(streamedCall)['url.full']).toBe(`http://127.0.0.1:${port}/chat/completions`);
      expect(Number(attributesOf(streamedCall)['http.response.status_code'])).toBe(200);

      // The tool's source loaded in the plugin host when it was created.
      const createSpan = serverSpan('POST /api/v1/tools/create');
      const extract = childrenOf(createSpan).find((s) => s.name === 'plugin extract');
      expect(extract).toBeDefined();
      expect(extract.kind).toBe(CLIENT);
      expect(attributesOf(extract)).toMatchObject({ 'parley.plugin.id': 'traced_tool', 'parley.plugin.kind': 'tool', 'parley.plugin.method': 'extract' });
      expect(extract.status?.code ?? 0).not.toBe(2);
      expect(childrenOf(createSpan).some((s) => s.name === 'db insert')).toBe(true);

      // No value a user sent, and no credential, is in any span.
      const exported = JSON.stringify(spans);
      for (const secret of [admin.email, admin.name, 'traced-Passw0rd!', 'base-secret', 'query-secret', 'sk-header-secret']) expect(exported).not.toContain(secret);
    } finally {
      await provider.close();
      await collector.close();
    }
  }, 60_000);

  it('marks a failed plugin call as an error, and leaves queries outside requests untraced', async () => {
    const collector = await startCollector();
    try {
      const env = { ...TOOLS_ENV, ENABLE_OTEL: 'true', ENABLE_OTEL_TRACES: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' };
      await withServer({ env }, async (server) => {
        const account = await signup(server.api, 'Failing Admin');
        const broken = await server.api.post('/api/v1/tools/create', toolBody('broken_tool', { content: 'def broken(:\n' }), { token: account.token });
        expect(broken.status).toBe(400);
        // Outside a request: not recorded (the scheduler's polls would each be a trace).
        await expect(sql`SELECT * FROM no_such_table WHERE id = ${'looked-for-id'}`.execute(server.parley.core.db)).rejects.toThrow();
      });
      const spans = spansOf(collector.received);
      expect(spans.filter((s) => String(attributesOf(s)['db.query.text'] ?? '').includes('no_such_table'))).toEqual([]);
      expect(spans.filter((s) => s.name.startsWith('db ')).every((s) => s.parentSpanId)).toBe(true);
      expect(JSON.stringify(spans)).not.toContain('looked-for-id');

      const createSpan = spans.find((s) => s.name === 'POST /api/v1/tools/create');
      const extract = spans.find((s) => s.name === 'plugin extract' && s.parentSpanId === createSpan.spanId);
      expect(extract.status.code).toBe(2);
      expect(attributesOf(extract)['error.type']).toBe('python_error');
    } finally {
      await collector.close();
    }
  }, 60_000);
});

describe('readiness and sign-outs with Redis away', () => {
  let redis: TestRedis;
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    redis = await startRedis();
    const env = { REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'parley-readiness', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' };
    first = await startServer({ env });
    second = await startServer({ env, reuse: { dataDir: first.dataDir, databaseUrl: first.databaseUrl } });
  }, 60_000);

  afterAll(async () => {
    await second?.close();
    if (first) await destroyServer(first);
    redis?.stop();
  });

  it('is ready with the database and Redis up, 503 with the reason while Redis is down, and refuses a session signed out meanwhile', async () => {
    expect((await second.api.get('/ready')).body).toEqual({ status: true });
    expect((await second.api.get('/health/db')).body).toEqual({ status: true });
    const admin = await signup(first.api, 'Ready Admin');
    const signedIn = await first.api.post('/api/v1/auths/signin', { email: admin.email, password: 'secret-Passw0rd!' });
    const session = signedIn.body.token as string;
    expect((await second.api.get('/api/v1/auths/', { token: session })).status).toBe(200);

    redis.stop();
    const notReady = await eventually(async () => {
      const res = await second.api.get('/ready');
      return res.status === 503 ? res : undefined;
    });
    expect(notReady.body.detail).toMatch(/^Redis not ready/);
    expect((await second.api.get('/health')).status).toBe(200);

    // The sign-out on the first cannot be announced; the second reads it from the database.
    expect((await first.api.post('/api/v1/auths/signout', undefined, { token: session })).status).toBe(200);
    expect((await second.api.get('/api/v1/auths/', { token: session })).status).toBe(401);
    expect((await second.api.get('/api/v1/auths/', { token: admin.token })).status).toBe(200);

    redis = await startRedis(Number(new URL(redis.url).port));
    await eventually(async () => (await second.api.get('/ready')).status === 200, 15_000);
    expect((await second.api.get('/api/v1/auths/', { token: session })).status).toBe(401);
  }, 40_000);
});

describe('readiness of the plugin host', () => {
  it('is 503 with the reason once a worker failed to start', async () => {
    await withServer({ env: { PYTHON: '/nonexistent/python3', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' } }, async (server) => {
      expect((await server.api.get('/ready')).status).toBe(200);
      await expect(server.parley.services.python.probe()).rejects.toThrow();
      const notReady = await server.api.get('/ready');
      expect(notReady.status).toBe(503);
      expect(notReady.body.detail).toMatch(/^Plugin host not ready: /);
      expect((await server.api.get('/health')).status).toBe(200);
    });
  });
});

describe('a database of a newer schema', () => {
  it('is refused at start with the migrations this version does not know, and left unchanged', async () => {
    const server = await startServer({ env: { ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' } });
    try {
      await sql`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999_from_the_future', '2030-01-01T00:00:00.000Z')`.execute(server.parley.core.db);
      await server.close();
      const reuse = { dataDir: server.dataDir, databaseUrl: server.databaseUrl };
      await expect(startServer({ reuse })).rejects.toThrow(
        /The database schema is newer than this Parley: it has migration 9999_from_the_future, which this version \(\S+\) does not know/,
      );
    } finally {
      await destroyServer(server);
    }
  });
});
