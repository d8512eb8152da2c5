import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PythonHost } from '../../../src/core/python/host.js';
import { testHost } from './helpers.js';

/** Builds a tiny wheel offline, so pip needs no index. */
function buildWheel(dir: string, name: string, value: number): string {
  const wheel = path.join(dir, `${name}-1.0-py3-none-any.whl`);
  const script = `
import sys, zipfile
wheel, name, value = sys.argv[1], sys.argv[2], sys.argv[3]
info = f"{name}-1.0.dist-info"
with zipfile.ZipFile(wheel, "w") as z:
    z.writestr(f"{name}/__init__.py", f"VALUE = {value}\\n")
    z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\\nName: {name}\\nVersion: 1.0\\n")
    z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\\nGenerator: parley-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr(f"{info}/RECORD", "")
`;
  execFileSync('python3', ['-c', script, wheel, name, String(value)]);
  chmodSync(wheel, 0o644); // pip runs as the plugin user, whatever the umask
  return wheel;
}

const toolNeeding = (requirements: string, module: string) =>
  `"""\ntitle: needs ${module}\nrequirements: ${requirements}\n"""\nimport ${module}\n\nclass Tools:\n    def value(self) -> int:\n        """The installed package's value."""\n        return ${module}.VALUE\n`;

describe('frontmatter requirements', { timeout: 180_000 }, () => {
  const wheels = mkdtempSync(path.join(tmpdir(), 'parley-wheels-'));
  chmodSync(wheels, 0o755); // pip runs as the plugin user

  buildWheel(wheels, 'parley_alpha_pkg', 1);
  buildWheel(wheels, 'parley_beta_pkg', 2);
  // By name, from the operator's --find-links: pip runs sandboxed and sees only the paths the operator's settings name.
  const alpha = 'parley_alpha_pkg';
  const beta = 'parley_beta_pkg';
  const logged: string[] = [];
  let host: PythonHost;
  let dataDir: string;
  let dispose: () => Promise<void>;

  beforeAll(() => {
    ({ host, dataDir, dispose } = testHost({
      pipInstall: true,
      pipOptions: ['--no-index', '--find-links', wheels],
      log: {
        debug() {},
        warn() {},
        error() {},
        info: (object: object, message?: string) => {
          logged.push(`${message} ${JSON.stringify((object as { requirements?: string[] }).requirements)}`);
        },
      },
    }));
  });
  afterAll(async () => {
    await dispose();
    rmSync(wheels, { recursive: true, force: true });
  });

  it('installs into a venv beside DATA_DIR, one install at a time, then the tool loads and runs', async () => {
    const [first, second] = await Promise.all([
      host.extract('alpha', toolNeeding(alpha, 'parley_alpha_pkg')),
      host.extract('beta', toolNeeding(beta, 'parley_beta_pkg')),
    ]);
    expect(first.manifest.requirements).toBe(alpha);
    expect(second.specs.map((spec) => spec.name)).toEqual(['value']);
    expect((await host.callTool({ id: 'alpha', content: toolNeeding(alpha, 'parley_alpha_pkg') }, 'value', {})).value).toBe(1);
    expect((await host.callTool({ id: 'beta', content: toolNeeding(beta, 'parley_beta_pkg') }, 'value', {})).value).toBe(2);

    // Never interleaved: each install finishes before the next starts.
    const installs = logged.filter((line) => line.includes('tool requirements'));
    expect(installs).toHaveLength(4);
    expect(installs[0].startsWith('installing')).toBe(true);
    expect(installs[1].startsWith('installed')).toBe(true);
    expect(installs[0].slice('installing'.length)).toBe(installs[1].slice('installed'.length));
    expect(installs[2].startsWith('installing')).toBe(true);

    const venv = `${dataDir}.plugin-venv`;
    expect(existsSync(path.join(venv, 'bin', 'python'))).toBe(true);
    const site = path.join(venv, 'lib', readdirSync(path.join(venv, 'lib'))[0], 'site-packages');
    expect(readdirSync(site)).toEqual(expect.arrayContaining(['parley_alpha_pkg', 'parley_beta_pkg']));
    // Not in the interpreter the host runs on.
    expect(() => execFileSync(host.python, ['-c', 'import parley_alpha_pkg'], { stdio: 'ignore' })).toThrow();
  });

  it("counts the host interpreter's own packages as installed (no reinstall, no index needed)", async () => {
    await host.extract('uses_pydantic', toolNeeding('pydantic>=2', 'pydantic').replace('return pydantic.VALUE', 'return 0'));
    const site = path.join(`${dataDir}.plugin-venv`, 'lib');
    const packages = readdirSync(path.join(site, readdirSync(site)[0], 'site-packages'));
    expect(packages.some((entry) => entry.startsWith('pydantic'))).toBe(false);
  });

  it('counts the standard tool environment as installed (docs/plugin-compat.md)', async () => {
    const content = toolNeeding('fastapi, aiohttp, httpx, requests, beautifulsoup4, pytz', 'bs4').replace('return bs4.VALUE', 'return 0');
    await host.extract('uses_standard', content);
    const site = path.join(`${dataDir}.plugin-venv`, 'lib');
    const packages = readdirSync(path.join(site, readdirSync(site)[0], 'site-packages'));
    expect(packages.filter((entry) => /^(fastapi|aiohttp|httpx|requests|bs4|beautifulsoup4|pytz)/i.test(entry))).toEqual([]);
  });

  it('installs each exact requirement once per process', async () => {
    const before = logged.length;
    await host.extract('alpha_again', toolNeeding(alpha, 'parley_alpha_pkg').replace('title: needs', 'title: again'));
    expect(logged.length).toBe(before);
  });

  it('fails the load when pip fails', async () => {
    const missing = path.join(wheels, 'absent_pkg-1.0-py3-none-any.whl');
    await expect(host.extract('absent', toolNeeding(missing, 'absent_pkg'))).rejects.toMatchObject({
      code: 'requirements',
      message: expect.stringContaining(`Installing ${missing} failed`),
    });
  });

  it('installs nothing when the switch is off', async () => {
    const { host: off, dataDir: offDir, dispose: disposeOff } = testHost({ pipInstall: false });
    try {
      await expect(off.extract('alpha', toolNeeding(alpha, 'parley_alpha_pkg'))).rejects.toMatchObject({
        code: 'python_error',
        message: expect.stringMatching(/^ModuleNotFoundError: No module named 'parley_alpha_pkg': it is not installed/),
      });
      expect(existsSync(`${offDir}.plugin-venv`)).toBe(false);
    } finally {
      await disposeOff();
    }
  });
});
