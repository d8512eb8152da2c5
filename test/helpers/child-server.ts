import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, dropTestDatabase } from './server.js';

/**
 * Parley as a separate process, for tests that kill it with SIGKILL or run what
 * `npm start` runs. Builds go to temporary folders under `.tmp/` inside the
 * repository, so the compiled code finds `node_modules`.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `tsc`'s output in a fresh folder; the entry is `main.js` in it. */
export async function buildParleyOnce(): Promise<{ dir: string; remove(): void }> {
  mkdirSync(path.join(ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(path.join(ROOT, '.tmp', 'events-build-'));
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  // Type errors elsewhere in the tree do not stop the emit; a missing main.js does.
  await promisify(execFile)(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.json'), '--outDir', dir, '--sourceMap', 'false'], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  }).catch(() => undefined);
  if (!existsSync(path.join(dir, 'main.js'))) throw new Error(`build into ${dir} produced no main.js`);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * For a describe block whose tests start and kill Parley processes on one store: a build, a data
 * folder and a fresh database (on PostgreSQL runs), made before the tests and removed after them.
 */
export function useBuiltServerStore(prefix: string): { entry: string; dataDir: string; databaseUrl: string | null } {
  const store = { entry: '', dataDir: '', databaseUrl: null as string | null };
  let build: { dir: string; remove(): void } | undefined;
  beforeAll(async () => {
    build = await buildParleyOnce();
    store.entry = path.join(build.dir, 'main.js');
    store.dataDir = mkdtempSync(path.join(tmpdir(), `${prefix}-`));
    store.databaseUrl = await createTestDatabase();
  }, 180_000);
  afterAll(async () => {
    build?.remove();
    await dropTestDatabase(store.databaseUrl);
    if (store.dataDir) rmSync(store.dataDir, { recursive: true, force: true });
  });
  return store;
}

/** The bundle `npm start` runs (scripts/bundle.mjs), in a fresh folder or again into `dir`. */
export async function bundleParley(dir?: string): Promise<{ file: string; remove(): void }> {
  mkdirSync(path.join(ROOT, '.tmp'), { recursive: true });
  dir ??= mkdtempSync(path.join(ROOT, '.tmp', 'bundle-'));
  await promisify(execFile)(process.execPath, [path.join(ROOT, 'scripts', 'bundle.mjs'), dir], { cwd: ROOT });
  return { file: path.join(dir, 'parley.js'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export class ChildServer {
  readonly url: string;
  private exited: Promise<number | null>;
  output = '';

  private constructor(
    private readonly child: ChildProcess,
    port: number,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    child.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Runs `entry` (a built `main.js` or the bundle) and waits for `/health`. */
  static async start(entry: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<ChildServer> {
    const port = await freePort();
    const child = spawn(process.execPath, [...nodeFlags, entry], {
      cwd: ROOT,
      // NODE_OPTIONS: the run on the second Node runtime loads its native addons through it (scripts/test.sh).
      env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: process.env.NODE_OPTIONS ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = new ChildServer(child, port);
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const res = await fetch(`${server.url}/health`);
        if (res.ok) return server;
      } catch {
        // not listening yet
      }
      if (child.exitCode !== null) throw new Error(`parley exited with ${child.exitCode}:\n${server.output}`);
      if (Date.now() > deadline) throw new Error(`parley did not start:\n${server.output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** SIGKILL: no shutdown code runs. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM: the clean shutdown path. */
  async stop(): Promise<number | null> {
    this.child.kill('SIGTERM');
    return this.exited;
  }
}
