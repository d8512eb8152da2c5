import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * Bundles the server into dist/parley.js, the file `npm start` runs: one
 * module instead of about a thousand makes start-up several times faster
 * (docs/bench.md). Packages that load native code or read files next to
 * their own modules stay outside, as plain imports, and so do those Parley
 * loads only when needed (pg, ioredis, the socket.io Redis adapter, the PDF,
 * office and S3 libraries): inside,
 * V8 would still parse them at every start. undici, also loaded at first use,
 * goes into a chunk of its own beside parley.js (code splitting): loaded from
 * node_modules instead, the first streamed chunk through the proxy came about
 * 1 ms later at the median (measured with the bench).
 *
 * The output replaces the previous build without a moment in which a file is
 * missing: esbuild writes into a staging folder beside the output folder (same
 * depth, so the source maps' relative paths hold), then each file is renamed
 * into place (atomic on one file system), the chunks
 * before parley.js so that a new start finds every chunk it imports. Chunk
 * names carry a hash of their content, and chunks of earlier builds stay: an
 * instance still running an earlier parley.js imports its own chunks at first
 * use, possibly long after this build. Only chunks no longer written by any
 * build for CHUNK_KEEP_DAYS are removed (see "Start-up" in docs/architecture.md).
 * Argument: another output folder (the tests bundle into a folder of their own).
 */
const CHUNK_KEEP_DAYS = 7;
const ENTRY = 'parley.js';

const outdir = path.resolve(process.argv[2] ?? fileURLToPath(new URL('../dist', import.meta.url)));
mkdirSync(outdir, { recursive: true });
// parley.js is dated when the build started, so a source saved during the build counts as newer (scripts/start.mjs).
const startedAt = new Date();
const staging = mkdtempSync(path.join(path.dirname(outdir), `.${path.basename(outdir)}.build-`));
try {
  const common = {
    outdir: staging,
    entryNames: '[name]',
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
      ...['better-sqlite3', 'bcrypt', 'argon2', 'pg-native', '@fastify/static', 'bufferutil', 'utf-8-validate'],
      ...['pg', 'ioredis', '@socket.io/redis-adapter', 'unpdf', 'mammoth', 'jszip', '@aws-sdk/client-s3'],
      // Loaded at the first chat PDF; it reads its fonts next to its own modules.
      'pdfmake',
      // Read at first use through require (core/tokens.ts): megabytes of ranks kept out of the start.
      'js-tiktoken',
      // Loaded only with ENABLE_OTEL (core/observability/telemetry.ts): dozens of packages, some with optional gRPC parts.
      '@opentelemetry/*',
    ],
    // Bundled CommonJS packages call require() for Node's own modules.
    banner: { js: "import { createRequire as __parleyCreateRequire } from 'node:module'; const require = __parleyCreateRequire(import.meta.url);" },
    logLevel: 'warning',
  };
  await Promise.all([
    build({
      ...common,
      // The extraction worker thread's script goes beside parley.js (src/areas/files/extraction-pool.ts).
      entryPoints: {
        parley: fileURLToPath(new URL('../src/main.ts', import.meta.url)),
        'parley-extraction-worker': fileURLToPath(new URL('../src/areas/files/extraction-worker.ts', import.meta.url)),
      },
      chunkNames: 'parley-[name]-[hash]',
      splitting: true,
    }),
    // The commands of the `parley` binary (scripts/parley.mjs: import-openwebui, backup), built
    // apart: as a third entry above, the server's code would move into a chunk both share.
    build({ ...common, entryPoints: { 'parley-cli': fileURLToPath(new URL('../src/cli/main.ts', import.meta.url)) } }),
  ]);

  const written = readdirSync(staging);
  const entryLast = (name) => (name === ENTRY || name === `${ENTRY}.map` ? 1 : 0);
  for (const name of written.sort((a, b) => entryLast(a) - entryLast(b))) renameSync(path.join(staging, name), path.join(outdir, name));
  utimesSync(path.join(outdir, ENTRY), startedAt, startedAt);

  const cutoff = Date.now() - CHUNK_KEEP_DAYS * 24 * 3600 * 1000;
  for (const name of readdirSync(outdir)) {
    if (!/^parley-.*\.js(\.map)?$/.test(name) || written.includes(name)) continue;
    const file = path.join(outdir, name);
    if (statSync(file).mtimeMs < cutoff) rmSync(file, { force: true });
  }
} finally {
  rmSync(staging, { recursive: true, force: true });
}
