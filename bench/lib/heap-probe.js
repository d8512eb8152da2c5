import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Preloaded into the loaded Parley (`node --expose-gc --import <this> dist/parley.js`),
 * outside Parley's code: on SIGUSR2 it runs a full garbage collection and writes
 * `process.memoryUsage()` to `$DATA_DIR/bench-heap.json`. The heap in use right
 * after a full collection is what stays reachable, so comparing it between rounds
 * tells a leak from garbage V8 has not collected yet (which resident memory alone
 * cannot: V8 lets it pile up, sometimes for many rounds, before a major collection).
 */
process.on('SIGUSR2', () => {
  globalThis.gc();
  const file = path.join(process.env.DATA_DIR, 'bench-heap.json');
  writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()));
  renameSync(`${file}.tmp`, file); // whole or absent for the reader
});
