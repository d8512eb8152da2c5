import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * Bundles the server into dist/parley.js, the file `npm start` runs: one
 * module instead of about a thousand makes start-up several times faster
 * (docs/bench.md). Packages that load native code or read files next to
 * their own modules stay outside, as plain imports, and so do those Parley
 * loads only when needed (pg, ioredis, the socket.io Redis adapter): inside,
 * V8 would still parse them at every start. undici, also loaded at first use,
 * goes into a chunk of its own beside parley.js (code splitting): loaded from
 * node_modules instead, the first streamed chunk through the proxy came about
 * 1 ms later at the median (measured with the bench).
 * Argument: another output folder (the tests bundle into a folder of their own).
 */
const outdir = process.argv[2] ?? fileURLToPath(new URL('../dist', import.meta.url));
// Chunks carry a hash in their names: drop those of earlier builds.
mkdirSync(outdir, { recursive: true });
for (const name of readdirSync(outdir)) if (/^parley-.*\.js(\.map)?$/.test(name)) rmSync(path.join(outdir, name));

await build({
  entryPoints: [fileURLToPath(new URL('../src/main.ts', import.meta.url))],
  outdir,
  entryNames: 'parley',
  chunkNames: 'parley-[name]-[hash]',
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  legalComments: 'none',
  // Whitespace and syntax only: renamed identifiers would need esbuild's keepNames, whose
  // __name() wrapper runs on every closure Fastify creates per request (about 6% of a
  // request's CPU, measured); unrenamed functions keep their names without it.
  minifyWhitespace: true,
  minifySyntax: true,
  external: [
    ...['better-sqlite3', 'bcrypt', 'pg-native', '@fastify/static', 'bufferutil', 'utf-8-validate'],
    ...['pg', 'ioredis', '@socket.io/redis-adapter'],
  ],
  // Bundled CommonJS packages call require() for Node's own modules.
  banner: { js: "import { createRequire as __parleyCreateRequire } from 'node:module'; const require = __parleyCreateRequire(import.meta.url);" },
  logLevel: 'warning',
});
