import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEnv } from '../../../src/config/env.js';
import type { UserRecord } from '../../../src/core/auth/user.js';
import type { PythonHost } from '../../../src/core/python/host.js';
import { Sandbox } from '../../../src/core/python/sandbox.js';
import { eventually } from '../../helpers/eventually.js';
import { TOOLS_DIR, testHost } from './helpers.js';

/** Issue 14 §3-4: what a call's processes leave behind, and whether one user's calls hold up another's. */
const spawnTool = { id: 'spawn_tool', owner: 'author', content: readFileSync(path.join(TOOLS_DIR, 'isolation', 'spawn_tool.py'), 'utf8') };
const as = (id: string) => ({ caller: { id } as UserRecord });

/** Pids of this machine's processes running `sleep <marker>` (seen from Node, outside any namespace). */
function sleepers(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${marker}\0`) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const uniqueMarker = () => `${900 + Math.floor(Math.random() * 99)}.${process.pid}${Date.now() % 100_000}`;

/** The isolation this machine allows (bwrap or unshare: a PID namespace per worker). */
const isolation = (() => {
  const { host, dataDir } = testHost();
  const mode = host.isolation().mode;
  void host.close().then(() => rmSync(dataDir, { recursive: true, force: true }));
  return mode;
})();

describe.skipIf(isolation === 'none')('processes die with their call (needs bubblewrap, or root for unshare)', () => {
  let host: PythonHost;
  let dispose: () => Promise<void>;
  beforeAll(() => {
    ({ host, dispose } = testHost({ callTimeoutMs: 5000 }));
  });
  afterAll(async () => {
    await dispose();
  });

  it("ends a setsid'd and a double-forked child when the call returns, and reaps the zombie", async () => {
    const marker = uniqueMarker();
    expect((await host.callTool(spawnTool, 'escape', { marker }, as('u1'))).value).toBe('started');
    expect(sleepers(marker)).toEqual([]);
    expect((await host.callTool(spawnTool, 'zombies', {}, as('u1'))).value).toEqual([]);
  });

  it('ends them when the call times out and its worker is killed', async () => {
    const marker = uniqueMarker();
    const calling = host.callTool(spawnTool, 'escape_and_hang', { marker }, { ...as('u1'), timeoutMs: 1500 });
    expect(await eventually(() => sleepers(marker).length === 2)).toBe(true);
    await expect(calling).rejects.toMatchObject({ code: 'timeout' });
    expect(await eventually(() => sleepers(marker).length === 0)).toBe(true);
  });

  it('leaves no plugin process when the host closes in the middle of a call', async () => {
    const { host: closing, dispose: disposeClosing } = testHost();
    const marker = uniqueMarker();
    const calling = closing.callTool(spawnTool, 'escape_and_hang', { marker }, as('u1')).catch((error) => error);
    expect(await eventually(() => sleepers(marker).length === 2)).toBe(true);
    await disposeClosing(); // also fails when a worker outlives it
    expect(await calling).toMatchObject({ code: 'closed' });
    expect(await eventually(() => sleepers(marker).length === 0)).toBe(true);
  });
});

describe.skipIf(isolation !== 'bwrap')('what bubblewrap binds (needs bubblewrap)', () => {
  it('binds a symbolically linked folder through its target, and never one that leads into DATA_DIR', () => {
    const base = mkdtempSync(path.join(tmpdir(), 'parley-binds-'));
    const dataDir = path.join(base, 'data');
    const venv = path.join(base, 'venv');
    mkdirSync(dataDir);
    mkdirSync(venv);
    symlinkSync(venv, path.join(base, 'linked-venv'));
    symlinkSync(dataDir, path.join(base, 'linked-data'));
    const sandbox = Sandbox.detect({ mode: 'bwrap', secret: [dataDir] });
    try {
      const dir = sandbox.makeWorkDir();
      const { args } = sandbox.wrap({ program: 'true', args: [], dir, readOnly: [path.join(base, 'linked-venv'), path.join(base, 'linked-data')], writable: [] });
      const binds = args.flatMap((arg, i) => (arg === '--ro-bind' ? [`${args[i + 1]} -> ${args[i + 2]}`] : []));
      expect(binds).toContain(`${venv} -> ${path.join(base, 'linked-venv')}`);
      expect(binds.filter((bind) => bind.includes('data'))).toEqual([]);
      sandbox.removeWorkDir(dir);
    } finally {
      sandbox.dispose();
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe('fair pool', () => {
  let host: PythonHost;
  let dispose: () => Promise<void>;
  beforeAll(() => {
    ({ host, dispose } = testHost({ poolSize: 3, perUserConcurrency: 2 }));
  });
  afterAll(async () => {
    await dispose();
  });

  const timed = async (run: () => Promise<unknown>) => {
    const started = performance.now();
    await run();
    return performance.now() - started;
  };

  it("answers another user's quick call while one user's four slow calls run and wait", async () => {
    // Warm: each user's worker has the tool loaded, as in a chat that already used it.
    await host.callTool(spawnTool, 'quick', {}, as('b'));
    const unloaded = Math.min(...(await Promise.all([0, 1, 2].map(() => timed(() => host.callTool(spawnTool, 'quick', {}, as('b')))))));
    const slow = Array.from({ length: 4 }, () => host.callTool(spawnTool, 'slow', { seconds: 2 }, as('a')));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(host.stats().waiting).toBe(2); // the per-user limit: two of A's calls queue behind A's own
    const loaded = await timed(() => host.callTool(spawnTool, 'quick', {}, as('b')));
    await Promise.all(slow);
    // Well under a second, and within a small multiple of the same call on an idle pool.
    expect(loaded).toBeLessThan(500);
    expect(loaded / Math.max(unloaded, 5)).toBeLessThan(10);
  });

  it('retires an idle worker of another user to make room when the pool is full', async () => {
    // a, b and c each have a worker; the pool holds 3, so c's idle one makes room for d.
    await host.callTool(spawnTool, 'quick', {}, as('c'));
    const slow = [host.callTool(spawnTool, 'slow', { seconds: 1 }, as('a')), host.callTool(spawnTool, 'slow', { seconds: 1 }, as('b'))];
    expect((await host.callTool(spawnTool, 'quick', {}, as('d'))).value).toBe('quick');
    await Promise.all(slow);
    expect(host.stats().workers).toBeLessThanOrEqual(3);
  });
});

describe.skipIf(process.getuid?.() !== 0)('the plugin user (needs root: runs in CI)', () => {
  const idsOf = (user: string | null, group: string | null = null) => {
    const sandbox = Sandbox.detect({ mode: 'none', secret: [], user, group });
    sandbox.dispose();
    return { uid: sandbox.uid, gid: sandbox.gid };
  };
  const dropped = (user: string | null, group: string | null = null) => {
    const sandbox = Sandbox.detect({ secret: [], user, group });
    sandbox.dispose();
    return { uid: sandbox.uid, gid: sandbox.gid };
  };

  it('defaults to 65534, takes names and numbers, and the group follows the user', () => {
    expect(dropped(null)).toEqual({ uid: 65534, gid: 65534 });
    expect(dropped('daemon')).toEqual({ uid: 1, gid: 1 });
    expect(dropped('4242')).toEqual({ uid: 4242, gid: 4242 });
    expect(dropped('nobody', 'daemon')).toEqual({ uid: 65534, gid: 1 });
    // PLUGIN_SANDBOX=none is no isolation at all: not even the drop.
    expect(idsOf('4242')).toEqual({ uid: null, gid: null });
  });

  it('refuses unknown names and root', () => {
    expect(() => dropped('no-such-user-here')).toThrow('PLUGIN_USER: no such user "no-such-user-here"');
    expect(() => dropped('nobody', 'no-such-group-here')).toThrow('PLUGIN_GROUP: no such group "no-such-group-here"');
    expect(() => dropped('0')).toThrow('PLUGIN_USER and PLUGIN_GROUP must not be root (0)');
    expect(() => dropped('nobody', 'root')).toThrow('PLUGIN_USER and PLUGIN_GROUP must not be root (0)');
  });
});

describe('DATA_DIR modes', () => {
  const parent = mkdtempSync(path.join(tmpdir(), 'parley-modes-'));
  afterAll(() => rmSync(parent, { recursive: true, force: true }));
  const mode = (file: string) => statSync(file).mode & 0o777;

  it('creates DATA_DIR 0700 and the generated secret key 0600', () => {
    const dataDir = path.join(parent, 'fresh');
    readEnv({ DATA_DIR: dataDir });
    expect(mode(dataDir)).toBe(0o700);
    expect(mode(path.join(dataDir, '.webui_secret_key'))).toBe(0o600);
  });

  it('fixes an existing install on start: DATA_DIR, uploads, the database and the key', () => {
    const dataDir = path.join(parent, 'existing');
    mkdirSync(path.join(dataDir, 'uploads'), { recursive: true, mode: 0o755 });
    for (const file of ['.webui_secret_key', 'webui.db', 'webui.db-wal', 'webui.db-shm']) writeFileSync(path.join(dataDir, file), 'x', { mode: 0o644 });
    readEnv({ DATA_DIR: dataDir });
    expect(mode(dataDir)).toBe(0o700);
    expect(mode(path.join(dataDir, 'uploads'))).toBe(0o700);
    for (const file of ['.webui_secret_key', 'webui.db', 'webui.db-wal', 'webui.db-shm']) expect([file, mode(path.join(dataDir, file))]).toEqual([file, 0o600]);
  });
});
