import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PluginError } from './errors.js';
import type { Sandbox, SandboxedCommand } from './sandbox.js';
import type { HostLogger } from './worker.js';

export interface InstallerOptions {
  /** The interpreter the workers run; the venv is made from it and sees its packages. */
  python: string;
  venvDir: string;
  pipOptions: string[];
  pipIndexOptions: string[];
  env: Record<string, string>;
  timeoutMs: number;
  log: HostLogger;
  /** pip runs packages' build code: it runs in the workers' sandbox, as their user, with the venv writable. */
  sandbox: () => Sandbox;
  wrap: (sandbox: Sandbox, program: string, args: string[], dir: string, readOnly: string[]) => SandboxedCommand;
}

/**
 * Installs tools' frontmatter `requirements:` with pip into a virtual environment
 * beside DATA_DIR (PLUGIN_VENV_DIR), never into the interpreter the host runs on. Installs run one
 * at a time; each exact requirement string is installed once per process, as in
 * the reference. The venv's site-packages sees the host interpreter's packages
 * (a .pth file), so pip does not reinstall what is already there; workers put the
 * venv after their own packages (parley_host/__main__.py).
 */
export class RequirementInstaller {
  private readonly installed = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: InstallerOptions) {}

  /** Resolves true when something was installed (workers must then be restarted to see it). */
  install(requirements: string[]): Promise<boolean> {
    if (requirements.every((requirement) => this.installed.has(requirement))) return Promise.resolve(false);
    const run = this.queue.then(() => this.installNow(requirements));
    this.queue = run.catch(() => {});
    return run;
  }

  private async installNow(requirements: string[]): Promise<boolean> {
    const wanted = requirements.filter((requirement) => !this.installed.has(requirement));
    if (wanted.length === 0) return false;
    const python = await this.venvPython();
    const { pipOptions, pipIndexOptions, log } = this.options;
    log.info({ requirements: wanted }, 'installing tool requirements');
    const result = await this.sandboxed(python, ['-m', 'pip', 'install', '--disable-pip-version-check', ...pipOptions, ...wanted, ...pipIndexOptions]);
    if (result.code !== 0) {
      const tail = result.output.trim().split('\n').slice(-6).join('\n');
      throw new PluginError('requirements', `Installing ${wanted.join(', ')} failed (${result.how}): ${tail}`);
    }
    for (const requirement of wanted) this.installed.add(requirement);
    log.info({ requirements: wanted }, 'installed tool requirements');
    return true;
  }

  private async venvPython(): Promise<string> {
    const { venvDir, python } = this.options;
    const venvPython = path.join(venvDir, 'bin', 'python');
    if (!existsSync(venvPython)) {
      await mkdir(venvDir, { recursive: true });
      this.options.sandbox().own(venvDir);
      const made = await this.sandboxed(python, ['-m', 'venv', venvDir]);
      if (made.code !== 0) {
        throw new PluginError('requirements', `Could not create the requirements environment ${venvDir}: ${made.output.trim().slice(-500)}`);
      }
    }
    // Rewritten each run: the host interpreter may have moved since the venv was made.
    const probe = await this.run(python, [
      '-c',
      'import json, sys; print(json.dumps([sys.version_info[:2], [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]]))',
    ]);
    if (probe.code === 0) {
      const [[major, minor], dirs] = JSON.parse(probe.output.trim().split('\n').pop() ?? '[]') as [[number, number], string[]];
      const site = path.join(venvDir, 'lib', `python${major}.${minor}`, 'site-packages');
      // Readable by the workers' user whatever the server's umask.
      if (existsSync(site)) {
        const file = path.join(site, '_parley_host_base.pth');
        await writeFile(file, `${dirs.join('\n')}\n`);
        await chmod(file, 0o644);
      }
    }
    return venvPython;
  }

  /** Runs in the sandbox, in a private folder of its own (pip's cwd, HOME and temp files). */
  private async sandboxed(program: string, args: string[]): Promise<{ code: number | null; how: string; output: string }> {
    const sandbox = this.options.sandbox();
    const dir = sandbox.makeWorkDir();
    try {
      const { command, args: wrapped } = this.options.wrap(sandbox, program, args, dir, this.operatorPaths());
      return await this.run(command, wrapped, { cwd: dir, env: { ...this.options.env, HOME: dir, TMPDIR: path.join(dir, 'tmp') } });
    } finally {
      sandbox.removeWorkDir(dir);
    }
  }

  /**
   * Local folders and files the operator's pip settings name (--find-links, a
   * certificate bundle, a constraints file): visible to pip in the sandbox. Paths
   * in a tool's `requirements:` are not: the tool's author is not trusted.
   */
  private operatorPaths(): string[] {
    const { pipOptions, pipIndexOptions, env } = this.options;
    const values = [...pipOptions, ...pipIndexOptions, ...Object.entries(env).filter(([name]) => name.startsWith('PIP_')).flatMap(([, value]) => value.split(/\s+/))];
    return values
      .map((value) => value.replace(/^--[\w-]+=/, '').replace(/^file:\/\//, ''))
      .filter((value) => path.isAbsolute(value) && existsSync(value));
  }

  private run(
    command: string,
    args: string[],
    where: { cwd?: string; env: Record<string, string> } = { env: this.options.env },
  ): Promise<{ code: number | null; how: string; output: string }> {
    return new Promise((resolve) => {
      const child = spawn(command, args, { ...where, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      const collect = (chunk: Buffer) => {
        output = (output + chunk.toString('utf8')).slice(-20_000);
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      const timer = setTimeout(() => child.kill('SIGKILL'), this.options.timeoutMs);
      child.on('error', (error) => {
        clearTimeout(timer);
        resolve({ code: -1, how: error.message, output: error.message });
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, how: signal ? `signal ${signal}` : `exit code ${code}`, output });
      });
    });
  }
}
