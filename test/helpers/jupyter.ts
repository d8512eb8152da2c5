import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './child-server.js';

export interface TestJupyter {
  url: string;
  /** The token it takes (empty when it takes a password). */
  token: string;
  stop(): void;
}

/**
 * A real jupyter_server with an ipykernel on a free port of 127.0.0.1, token
 * auth (or `password` auth: its login form), its runtime and config in a temporary folder. scripts/ensure-jupyter.sh
 * installs both into .venv-jupyter (from the pip mirror) when missing.
 */
export async function startJupyter(options: { password?: string } = {}): Promise<TestJupyter> {
  const root = path.resolve(import.meta.dirname, '../..');
  const python = path.resolve(root, execFileSync('bash', [path.join(root, 'scripts/ensure-jupyter.sh')], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim());
  const home = mkdtempSync(path.join(tmpdir(), 'parley-jupyter-'));
  const port = await freePort();
  const token = options.password ? '' : 'jupyter-test-token';
  const auth = options.password
    ? [`--PasswordIdentityProvider.hashed_password=${execFileSync(python, ['-c', 'import sys; from jupyter_server.auth import passwd; print(passwd(sys.argv[1]))', options.password], { encoding: 'utf8' }).trim()}`]
    : [];
  const env = { ...process.env, HOME: home, JUPYTER_RUNTIME_DIR: path.join(home, 'runtime'), JUPYTER_CONFIG_DIR: path.join(home, 'config'), JUPYTER_DATA_DIR: path.join(home, 'data') };
  const child: ChildProcess = spawn(
    python,
    ['-m', 'jupyter_server', `--port=${port}`, '--ip=127.0.0.1', '--no-browser', `--IdentityProvider.token=${token}`, ...auth, `--ServerApp.root_dir=${home}`, '--ServerApp.port_retries=0', '--allow-root'],
    { env, stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  const stop = () => {
    child.kill();
    rmSync(home, { recursive: true, force: true });
  };
  for (let attempt = 0; attempt < 600; attempt++) {
    if (child.exitCode !== null) break;
    try {
      // Any answer means it listens (with a password, the API answers 403 before a login).
      await fetch(`${url}/api/status`);
      return { url, token, stop };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  stop();
  throw new Error('jupyter_server did not start');
}
