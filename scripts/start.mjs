import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * What `npm start` runs: dist/parley.js, built first only when it is missing or
 * older than what it is built from. `npm ci` and `npm install` build it already
 * (the `prepare` script), so a start normally costs a few file dates here and
 * no build. The server runs in this process, with the Node flags `npm start`
 * gives this script.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const entry = path.join(root, 'dist', 'parley.js');

const modified = (file) => statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? -1;
const sources = [
  ...readdirSync(path.join(root, 'src'), { recursive: true }).map((name) => path.join(root, 'src', String(name))),
  ...['scripts/bundle.mjs', 'package.json', 'package-lock.json'].map((name) => path.join(root, name)),
];
const built = modified(entry);
if (sources.some((file) => modified(file) > built)) {
  console.error(built < 0 ? 'parley: building dist/' : 'parley: sources changed since the last build; building dist/');
  const bundled = spawnSync(process.execPath, [path.join(root, 'scripts', 'bundle.mjs')], { stdio: 'inherit' });
  if (bundled.status !== 0) process.exit(bundled.status ?? 1);
}
await import(pathToFileURL(entry).href);
