import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { buildParley, type Parley } from '../../src/app.js';
import { readEnv } from '../../src/config/env.js';
import type { Clock } from '../../src/core/clock.js';
import type { EventPayload } from '../../src/core/events/publish.js';

/**
 * Starts a real Parley on a free port with its own data folder and its own
 * database: a fresh SQLite file, or, when TEST_DATABASE_URL points at a
 * PostgreSQL server, a fresh database on it (dropped on close).
 */
export interface TestServer {
  url: string;
  parley: Parley;
  api: ApiClient;
  dataDir: string;
  databaseUrl: string | null;
  close(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** Reuse a data folder and database of an earlier server (restart tests). */
  reuse?: { dataDir: string; databaseUrl: string | null };
  /** Collects the server's log lines of level warn and above (parsed), instead of discarding them. */
  warnings?: Record<string, unknown>[];
}

export const dialect = process.env.TEST_DATABASE_URL ? 'postgres' : 'sqlite';

export async function createTestDatabase(): Promise<string | null> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return null;
  const name = `parley_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropTestDatabase(databaseUrl: string | null): Promise<void> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base || !databaseUrl) return;
  const name = new URL(databaseUrl).pathname.slice(1);
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await client.end();
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.reuse?.dataDir ?? mkdtempSync(path.join(tmpdir(), 'parley-test-'));
  const databaseUrl = options.reuse ? options.reuse.databaseUrl : await createTestDatabase();
  const env = readEnv({
    DATA_DIR: dataDir,
    WEBUI_SECRET_KEY: 'test-secret-key',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...options.env,
  });
  const warnings = options.warnings;
  const parley = await buildParley({
    env,
    clock: options.clock,
    logLevel: warnings ? 'warn' : (process.env.TEST_LOG_LEVEL ?? 'silent'),
    logStream: warnings && { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) },
  });
  await parley.app.listen({ port: 0, host: '127.0.0.1' });
  const address = parley.app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  let closed = false;
  return {
    url,
    parley,
    api: new ApiClient(url),
    dataDir,
    databaseUrl,
    async close() {
      if (closed) return;
      closed = true;
      await parley.close();
    },
  };
}

/** Every event the server publishes from now on, in order (appended to `events`). */
export function recordEvents(server: TestServer, events: EventPayload[] = []): EventPayload[] {
  server.parley.core.events.subscribe((event) => {
    events.push(event);
  });
  return events;
}

/** Stops the server and removes its data folder and database. */
export async function destroyServer(server: TestServer): Promise<void> {
  await server.close();
  await dropTestDatabase(server.databaseUrl);
  rmSync(server.dataDir, { recursive: true, force: true });
}

/** Runs `use` against a server of its own, destroyed afterwards whatever happens. */
export async function withServer<T>(options: StartOptions, use: (server: TestServer) => Promise<T>): Promise<T> {
  const server = await startServer(options);
  try {
    return await use(server);
  } finally {
    await destroyServer(server);
  }
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface RequestOptions {
  token?: string | null;
  cookie?: string;
  headers?: Record<string, string>;
  /** Raw body text, sent as JSON content type (for malformed-JSON tests). */
  raw?: string;
}

/** A small HTTP client that speaks to Parley as the frontend and SDKs do. */
export class ApiClient {
  constructor(readonly baseUrl: string) {}

  async request<T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.cookie) headers.cookie = options.cookie;
    let payload: string | undefined;
    if (options.raw !== undefined) payload = options.raw;
    else if (body !== undefined) payload = JSON.stringify(body);
    if (payload !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(this.baseUrl + path, { method, headers, body: payload, redirect: 'manual' });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: response.status, body: parsed as T, headers: response.headers, text };
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, undefined, options);
  }

  post<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('POST', path, body, options);
  }

  put<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('PUT', path, body, options);
  }

  delete<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('DELETE', path, undefined, options);
  }
}

/** Listens on a free port of 127.0.0.1; answers the base URL. */
export async function listenLocally(server: NetServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The base URL of a local port nothing listens on (bound, then released). */
export async function closedPortUrl(): Promise<string> {
  const server = createNetServer();
  const url = await listenLocally(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return url;
}

/** A settable clock for expiry and schedule tests. */
export class TestClock implements Clock {
  constructor(private ms = Date.now()) {}
  now() {
    return Math.floor(this.ms / 1000);
  }
  nowMs() {
    return this.ms;
  }
  advance(seconds: number) {
    this.ms += seconds * 1000;
  }
}
