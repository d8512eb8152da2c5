import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PluginError } from './errors.js';
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
}

/**
 * Installs tools' frontmatter `requirements:` with pip into a virtual environment
 * under DATA_DIR, never into the interpreter the host runs on. Installs run one
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
    const result = await this.run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', ...pipOptions, ...wanted, ...pipIndexOptions]);
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
      const made = await this.run(python, ['-m', 'venv', venvDir]);
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
      if (existsSync(site)) await writeFile(path.join(site, '_parley_host_base.pth'), `${dirs.join('\n')}\n`);
    }
    return venvPython;
  }

  private run(command: string, args: string[]): Promise<{ code: number | null; how: string; output: string }> {
    return new Promise((resolve) => {
      const child = spawn(command, args, { env: this.options.env, stdio: ['ignore', 'pipe', 'pipe'] });
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
