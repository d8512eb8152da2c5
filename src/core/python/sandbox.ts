import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * How plugin workers (and pip) are kept away from the server:
 * - `bwrap`: bubblewrap, a private PID/IPC/UTS namespace and a file system of
 *   read-only binds of what the plugin environment needs (no DATA_DIR, private
 *   /proc and /tmp); as root, the worker also drops to PLUGIN_USER/PLUGIN_GROUP.
 * - `unshare`: (root, no usable bwrap) a private PID namespace and /proc, and the
 *   uid drop; the file system is the host's, guarded by DATA_DIR's 0700.
 * - `none`: the worker runs as the server's user; only the environment allow-list holds.
 */
export type SandboxMode = 'bwrap' | 'unshare' | 'none';

export interface SandboxSettings {
  /** PLUGIN_SANDBOX: `auto` (default) picks the first that works of bwrap, unshare, none. */
  mode?: 'auto' | SandboxMode;
  /** PLUGIN_USER / PLUGIN_GROUP (names or numbers): whom workers run as when Parley runs as root. */
  user?: string | null;
  group?: string | null;
  /** Paths that must never be visible to plugin code (DATA_DIR). */
  secret: string[];
}

/** The command that runs a program in the sandbox. */
export interface SandboxedCommand {
  command: string;
  args: string[];
}

/** nobody/nogroup: present on every Debian-like system and container, owns nothing of Parley's. */
export const DEFAULT_PLUGIN_ID = 65534;

const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];

function works(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore', timeout: 10_000 });
  return result.status === 0;
}

/** The line of `name` in /etc/passwd or /etc/group, split on colons; null when there is none. */
function entry(database: '/etc/passwd' | '/etc/group', name: string): string[] | null {
  const line = readFileSync(database, 'utf8')
    .split('\n')
    .find((candidate) => candidate.split(':')[0] === name);
  return line ? line.split(':') : null;
}

/** PLUGIN_USER and PLUGIN_GROUP as numbers; the group defaults to the user's own (its number, or its account's group). */
function resolveIds(user: string | null | undefined, group: string | null | undefined): { uid: number; gid: number } {
  let uid = DEFAULT_PLUGIN_ID;
  let gid = DEFAULT_PLUGIN_ID;
  if (user && /^\d+$/.test(user)) uid = gid = Number(user);
  else if (user) {
    const account = entry('/etc/passwd', user);
    if (!account) throw new Error(`PLUGIN_USER: no such user "${user}"`);
    uid = Number(account[2]);
    gid = Number(account[3]);
  }
  if (group && /^\d+$/.test(group)) gid = Number(group);
  else if (group) {
    const found = entry('/etc/group', group);
    if (!found) throw new Error(`PLUGIN_GROUP: no such group "${group}"`);
    gid = Number(found[2]);
  }
  // Root's ids would give plugin code the very files the drop keeps it from.
  if (uid === 0 || gid === 0) throw new Error('PLUGIN_USER and PLUGIN_GROUP must not be root (0)');
  return { uid, gid };
}

/** True when `inner` is `outer` or below it. */
function within(inner: string, outer: string): boolean {
  const relative = path.relative(outer, inner);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

export class Sandbox {
  /** The uid/gid workers run as; null when they keep the server's (not root). */
  readonly uid: number | null;
  readonly gid: number | null;
  /** Folder of the workers' private folders (removed by `dispose`). */
  readonly workRoot: string;

  private constructor(
    readonly mode: SandboxMode,
    ids: { uid: number; gid: number } | null,
    private readonly secret: string[],
  ) {
    // `none` is no isolation at all: not even the uid drop (the worker could not reach an interpreter under /root).
    this.uid = mode === 'none' ? null : (ids?.uid ?? null);
    this.gid = mode === 'none' ? null : (ids?.gid ?? null);
    this.workRoot = mkdtempSync(path.join(tmpdir(), 'parley-plugins-'));
    // Workers (another uid) must reach their own folder below it, not list it.
    chmodSync(this.workRoot, 0o711);
  }

  /** Picks the strongest mode this machine allows (or the one asked for; fails when it does not work). */
  static detect(settings: SandboxSettings): Sandbox {
    const root = process.getuid?.() === 0;
    const ids = root ? resolveIds(settings.user, settings.group) : null;
    const wanted = settings.mode ?? 'auto';
    const setpriv = !root || works('setpriv', ['--reuid', String(ids!.uid), '--regid', String(ids!.gid), '--clear-groups', '--no-new-privs', 'true']);
    const candidates: SandboxMode[] = wanted === 'auto' ? ['bwrap', 'unshare', 'none'] : [wanted];
    for (const mode of candidates) {
      const sandbox = new Sandbox(mode, ids, settings.secret.map((entry) => path.resolve(entry)));
      if (mode === 'none' || (setpriv && sandbox.usable())) return sandbox;
      sandbox.dispose();
      if (wanted !== 'auto') throw new Error(`PLUGIN_SANDBOX=${mode} does not work on this machine`);
    }
    throw new Error('unreachable');
  }

  private usable(): boolean {
    const dir = this.makeWorkDir();
    try {
      const probe = this.wrap({ program: 'true', args: [], dir, readOnly: [], writable: [] });
      return works(probe.command, probe.args);
    } finally {
      this.removeWorkDir(dir);
    }
  }

  /** DATA_DIR as given and as resolved (it may be reached through a symbolic link). */
  private secrets(): string[] {
    return this.secret.flatMap((secret) => (existsSync(secret) ? [secret, realpathSync(secret)] : [secret]));
  }

  /** Whether a worker is alone in a PID namespace (it can then end every process of its call). */
  get pidNamespace(): boolean {
    return this.mode !== 'none';
  }

  /** The one start-up line: what is in force and what is not covered. */
  describe(): { level: 'info' | 'warn'; message: string } {
    const who = this.uid === null ? "the server's user" : `uid ${this.uid}, gid ${this.gid}`;
    if (this.mode === 'bwrap') {
      return {
        level: 'info',
        message: `plugin isolation: bubblewrap (private PID namespace and /proc, read-only system and Python folders, no DATA_DIR; workers run as ${who})`,
      };
    }
    if (this.mode === 'unshare') {
      return {
        level: 'warn',
        message: `plugin isolation: unshare (private PID namespace and /proc; workers run as ${who}); bubblewrap is not usable, so the file system is not narrowed: only file permissions keep workers out of DATA_DIR`,
      };
    }
    return {
      level: 'warn',
      message:
        'plugin isolation: NONE (PLUGIN_SANDBOX=none, or neither bubblewrap nor unshare usable): plugin workers run as the server\'s user and can read DATA_DIR (database, secret key, uploads) and other processes of that user; only the environment allow-list applies. Install bubblewrap (apt-get install bubblewrap) to isolate them',
    };
  }

  /** A new private folder for one worker (its cwd, HOME and /tmp), owned by the plugin user. */
  makeWorkDir(): string {
    const dir = mkdtempSync(path.join(this.workRoot, 'w-'));
    mkdirSync(path.join(dir, 'tmp'));
    mkdirSync(path.join(dir, 'files'));
    this.own(dir);
    this.own(path.join(dir, 'tmp'));
    this.own(path.join(dir, 'files'));
    return dir;
  }

  /** Hands a path to the plugin user (a copied file, the requirements venv). */
  own(target: string): void {
    if (this.uid !== null) chownSync(target, this.uid, this.gid!);
  }

  removeWorkDir(dir: string): void {
    rmSync(dir, { recursive: true, force: true });
  }

  dispose(): void {
    rmSync(this.workRoot, { recursive: true, force: true });
  }

  /**
   * The command that runs `program` in the sandbox with `dir` as its private
   * folder; `readOnly` and `writable` are the other paths it needs (the
   * interpreter, the plugin host package, the requirements venv).
   */
  wrap(spec: { program: string; args: string[]; dir: string; readOnly: string[]; writable: string[] }): SandboxedCommand {
    const drop =
      this.uid === null ? [] : ['setpriv', '--reuid', String(this.uid), '--regid', String(this.gid), '--clear-groups', '--no-new-privs'];
    if (this.mode === 'none') {
      return drop.length > 0 ? { command: drop[0], args: [...drop.slice(1), spec.program, ...spec.args] } : { command: spec.program, args: spec.args };
    }
    if (this.mode === 'unshare') {
      return { command: 'unshare', args: ['--pid', '--fork', '--kill-child', '--mount-proc', ...drop, spec.program, ...spec.args] };
    }
    return { command: 'bwrap', args: [...this.bwrapArgs(spec), '--', ...drop, spec.program, ...spec.args] };
  }

  private bwrapArgs(spec: { dir: string; readOnly: string[]; writable: string[] }): string[] {
    const args = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
    for (const dir of SYSTEM_DIRS) {
      if (!existsSync(dir)) continue;
      const link = lstatSync(dir).isSymbolicLink();
      args.push(...(link ? ['--symlink', readlinkSync(dir), dir] : ['--ro-bind', dir, dir]));
    }
    // resolv.conf may point into /run (systemd-resolved). /tmp: a fresh one, as code expects it writable.
    args.push('--ro-bind-try', '/run/systemd/resolve', '/run/systemd/resolve', '--perms', '1777', '--tmpfs', '/tmp');
    const binds = [
      ...unique(spec.readOnly).map((target) => ({ target, flag: '--ro-bind' })),
      ...unique(spec.writable).map((target) => ({ target, flag: '--bind' })),
    ]
      .filter(({ target }) => existsSync(target) && !SYSTEM_DIRS.some((system) => within(target, system)))
      // bwrap cannot follow a symbolic link to an absolute path in a source (a symlinked venv): bind
      // what it points to, under the path the interpreter knows.
      .map((bind) => ({ ...bind, source: realpathSync(bind.target) }))
      // Never a folder that holds (or is inside) DATA_DIR, whatever path leads there.
      .filter(({ target, source }) => !this.secrets().some((secret) => [target, source].some((own) => within(secret, own) || within(own, secret))))
      .sort((a, b) => a.target.length - b.target.length);
    const made = new Set<string>(['/', '/tmp']);
    const parents = (target: string) => {
      // Folders bwrap makes on the way are 0700 unless told: the plugin user must pass them.
      const missing: string[] = [];
      for (let dir = path.dirname(target); !made.has(dir); dir = path.dirname(dir)) missing.unshift(dir);
      for (const dir of missing) {
        args.push('--perms', '0755', '--dir', dir);
        made.add(dir);
      }
    };
    const bound: string[] = [];
    for (const { target, source, flag } of binds) {
      if (flag === '--ro-bind' && bound.some((outer) => within(target, outer))) continue;
      parents(target);
      args.push(flag, source, target);
      bound.push(target);
      made.add(target);
    }
    parents(spec.dir);
    args.push('--bind', spec.dir, spec.dir);
    args.push('--proc', '/proc', '--dev', '/dev', '--chdir', spec.dir);
    return args;
  }
}

function unique(paths: string[]): string[] {
  return [...new Set(paths.filter((entry) => path.isAbsolute(entry)).map((entry) => path.resolve(entry)))];
}
