import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Sandbox } from '../../../src/core/python/sandbox.js';
import { TOOLS_DIR } from '../../core/python/helpers.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { grantAuthoring, toolBody, TOOLS_ENV } from './helpers.js';

/**
 * Issue 14 §1-2, driven as an attacker would: a plain user allowed to write
 * tools (workspace.tools) creates them over HTTP and runs them as the chat
 * layer does. Nothing of the server's may be reachable from their code.
 */
const probe = (name: string) => readFileSync(path.join(TOOLS_DIR, 'isolation', `${name}.py`), 'utf8');
const root = process.getuid?.() === 0;
/** Whether this machine gives workers a sandbox (bubblewrap, or unshare as root). */
const sandboxed = (() => {
  const sandbox = Sandbox.detect({ secret: [] });
  sandbox.dispose();
  return sandbox.mode !== 'none';
})();

/** A NAME=value of this process's start-up environment that workers must never see (not on the allow-list). */
function ownEnvironmentMarker(): string {
  const entries = readFileSync('/proc/self/environ', 'utf8').split('\0');
  const marker = entries.find((entry) => /^(?!PATH=|HOME=|LANG=|LC_|TZ=|TMPDIR=|USER=|PWD=)[A-Z_]+=.{6,}/.test(entry));
  if (!marker) throw new Error('no environment variable to look for');
  return marker;
}

describe('plugin isolation (issue 14)', () => {
  const world = useServer({
    env: TOOLS_ENV,
    admin: 'Admin Isolation',
    users: { mallory: ['user', 'Mallory Author'], victim: ['user', 'Victor Victim'] },
  });
  const call = async (tool: string, fn: string, args: Record<string, unknown>, as: Account) =>
    (await world.server.parley.services.tools.callTool(tool, fn, args, { user: await world.record(as) })).value;

  beforeAll(async () => {
    await grantAuthoring(world.server, world.admin, [world.mallory]);
    for (const name of ['snoop_tool', 'forge_tool', 'leftover_tool']) {
      const res = await world.api.post('/api/v1/tools/create', toolBody(name, { content: probe(name) }), { token: world.mallory.token });
      expect(res.status, res.text).toBe(200);
    }
    // The same leftover code owned by another author: its workers are not Mallory's.
    const res = await world.api.post('/api/v1/tools/create', toolBody('admin_leftover_tool', { content: probe('leftover_tool') }), {
      token: world.admin.token,
    });
    expect(res.status, res.text).toBe(200);
  }, 60_000);

  it('logs the isolation in force', () => {
    const isolation = world.server.parley.services.python.isolation();
    expect(isolation.message).toMatch(/^plugin isolation: /);
    if (root) expect(isolation.uid).toBe(65534);
  });

  // Without bubblewrap, as a user other than root, there is no isolation to test: the start-up line says so.
  it.skipIf(!sandboxed)("keeps a non-admin author's tool away from environments, process memory, open files and DATA_DIR (needs bubblewrap or root)", async () => {
    const dataDir = world.server.dataDir;
    // A generated key, as a server without WEBUI_SECRET_KEY keeps it.
    writeFileSync(path.join(dataDir, '.webui_secret_key'), 'generated-secret', { mode: 0o600 });
    const marker = ownEnvironmentMarker();
    const seen = (await call('snoop_tool', 'snoop', { data_dir: dataDir, marker }, world.mallory)) as Record<string, unknown>;

    expect(seen.leaked).toEqual([]);
    expect(seen.database_fds).toEqual([]);
    expect(seen.secret_env).toEqual([]);
    for (const attempt of ['parent_environ', 'parent_mem', 'secret_key', 'database', 'wal', 'listing']) {
      expect([attempt, seen[attempt]]).toEqual([attempt, expect.stringMatching(/^(PermissionError|FileNotFoundError|OSError)$/)]);
    }
    expect(String(seen.cwd).startsWith(dataDir)).toBe(false);
    // A private PID namespace: the worker and the sandbox's init, nothing of the server's.
    expect((seen.pids as number[]).every((pid) => pid <= 2)).toBe(true);
  });

  it.skipIf(!root)('runs workers as the plugin user, not root (needs root: runs in CI)', async () => {
    const seen = (await call('snoop_tool', 'snoop', { data_dir: world.server.dataDir, marker: 'x' }, world.mallory)) as Record<string, unknown>;
    expect(seen.uid).toBe(65534);
  });

  it('refuses bridge calls with a made-up token, a request id or the token of an ended call', async () => {
    const refused = 'no call in flight holds this token; Parley refuses the request';
    const first = (await call('forge_tool', 'forge', {}, world.mallory)) as Record<string, string>;
    expect(first).toEqual({
      made_up: `api: ${refused}`,
      request_id: `api: ${refused}`,
      none: `api: ${refused}`,
      event_made_up: `event_emitter: ${refused}`,
      own: 'ANSWERED',
    });
    const second = (await call('forge_tool', 'forge', {}, world.mallory)) as Record<string, string>;
    expect(second.previous_call).toBe(`api: ${refused}`);
    expect(second.own).toBe('ANSWERED');
  });

  it("never runs one user's leftover code in another user's call, nor in another author's tool", async () => {
    expect(await call('leftover_tool', 'plant', {}, world.victim)).toBe('planted');
    expect(await call('leftover_tool', 'plant', {}, world.mallory)).toBe('planted');
    // The victim's next call of Mallory's tool sees only what the victim's own call left.
    expect(await call('leftover_tool', 'look', {}, world.victim)).toEqual({ planted_by: world.victim.id, threads: ['parley-leftover'] });
    // Another author's tool, same caller: a worker of its own.
    expect(await call('admin_leftover_tool', 'look', {}, world.victim)).toEqual({ planted_by: null, threads: [] });
    expect(await call('admin_leftover_tool', 'look', {}, world.admin)).toEqual({ planted_by: null, threads: [] });
  });
});
