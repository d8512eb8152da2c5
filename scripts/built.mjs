import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * dist/ built first only when it is missing or older than what it is built from.
 * `npm ci` and `npm install` build it already (the `prepare` script), so this
 * normally costs a few file dates and no build. Returns the path of `file` in dist/.
 */
export function ensureBuilt(file) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const entry = path.join(root, 'dist', 'parley.js');
  const modified = (name) => statSync(name, { throwIfNoEntry: false })?.mtimeMs ?? -1;
  const sources = [
    ...readdirSync(path.join(root, 'src'), { recursive: true }).map((name) => path.join(root, 'src', String(name))),
    ...['scripts/bundle.mjs', 'package.json', 'package-lock.json'].map((name) => path.join(root, name)),
  ];
  const built = Math.min(modified(entry), modified(path.join(root, 'dist', file)));
  if (sources.some((name) => modified(name) > built)) {
    console.error(built < 0 ? 'parley: building dist/' : 'parley: sources changed since the last build; building dist/');
    const bundled = spawnSync(process.execPath, [path.join(root, 'scripts', 'bundle.mjs')], { stdio: 'inherit' });
    if (bundled.status !== 0) process.exit(bundled.status ?? 1);
  }
  return path.join(root, 'dist', file);
}
