import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * Bundles the server into dist/parley.js, the file `npm start` runs: one
 * module instead of about a thousand makes start-up several times faster
 * (docs/bench.md). Packages that load native code or read files next to
 * their own modules stay outside, as plain imports, and so do those Parley
 * loads only when needed (undici, pg, ioredis, the socket.io Redis adapter):
 * inside, V8 would still parse their million bytes at every start.
 * Argument: another output file (the tests bundle into a folder of their own).
 */
await build({
  entryPoints: [fileURLToPath(new URL('../src/main.ts', import.meta.url))],
  outfile: process.argv[2] ?? fileURLToPath(new URL('../dist/parley.js', import.meta.url)),
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
    ...['undici', 'pg', 'ioredis', '@socket.io/redis-adapter'],
  ],
  // Bundled CommonJS packages call require() for Node's own modules.
  banner: { js: "import { createRequire as __parleyCreateRequire } from 'node:module'; const require = __parleyCreateRequire(import.meta.url);" },
  logLevel: 'warning',
});
