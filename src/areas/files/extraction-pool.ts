import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type Extracted, ExtractionError } from './extraction-shared.js';
import type { ExtractionReply, ExtractionTask } from './extraction-worker.js';

interface Slot {
  worker: Worker;
  /** The task the worker is on; null when idle. */
  task: Pending | null;
}

interface Pending {
  task: ExtractionTask;
  resolve: (extracted: Extracted) => void;
  reject: (error: Error) => void;
  timer?: NodeJS.Timeout;
}

/**
 * The local extractors (extract.ts) in a pool of worker threads, so pdf.js or
 * an office document never holds the event loop that answers requests. At most
 * `size` workers of at most `memoryMb` of heap each, started at first use and
 * kept; a task past `timeoutMs` has its worker terminated, and a worker that
 * crashes (an uncaught error, out of memory) fails its task with the reason:
 * either way a new worker takes the next task.
 */
export class ExtractionPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  /** The worker's script, known before the first worker starts. */
  private entry: URL | string | null = null;

  constructor(
    private readonly size: number,
    private readonly timeoutMs: number,
    private readonly memoryMb: number,
  ) {}

  /** The text (and pages) of a stored file, or an ExtractionError. */
  async run(task: ExtractionTask): Promise<Extracted> {
    this.entry ??= await workerEntry();
    return new Promise((resolve, reject) => {
      this.queue.push({ task, resolve, reject });
      this.dispatch();
    });
  }

  /** Ends every worker; tasks still queued fail (a later task starts new workers). */
  async close(): Promise<void> {
    for (const pending of this.queue.splice(0)) pending.reject(new ExtractionError('The server is shutting down'));
    await Promise.all(this.slots.splice(0).map((slot) => slot.worker.terminate()));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((candidate) => candidate.task === null);
      if (!slot) {
        if (this.slots.length >= this.size) return;
        slot = this.spawn();
      }
      this.assign(slot, this.queue.shift()!);
    }
  }

  private assign(slot: Slot, pending: Pending): void {
    slot.task = pending;
    slot.worker.ref();
    pending.timer = setTimeout(() => {
      this.end(slot, new ExtractionError(`Extraction took longer than ${this.timeoutMs / 1000} seconds`));
      void slot.worker.terminate();
    }, this.timeoutMs);
    slot.worker.postMessage(pending.task);
  }

  private spawn(): Slot {
    const worker = new Worker(this.entry!, { stdout: false, stderr: false, resourceLimits: { maxOldGenerationSizeMb: this.memoryMb } });
    const slot: Slot = { worker, task: null };
    worker.on('message', (reply: ExtractionReply) => {
      const pending = slot.task;
      if (!pending) return;
      clearTimeout(pending.timer);
      slot.task = null;
      worker.unref();
      if ('extracted' in reply) pending.resolve(reply.extracted);
      else pending.reject(reply.readable ? new ExtractionError(reply.error) : new Error(reply.error));
      this.dispatch();
    });
    worker.on('error', (error) => this.end(slot, new ExtractionError(`The extraction worker stopped: ${error.message}`)));
    worker.on('exit', (code) => this.end(slot, new ExtractionError(`The extraction worker stopped (exit code ${code})`)));
    this.slots.push(slot);
    return slot;
  }

  /** Takes a worker out of the pool (timed out, crashed or gone), failing its task, and lets the queue go on. */
  private end(slot: Slot, reason: ExtractionError): void {
    const index = this.slots.indexOf(slot);
    if (index < 0) return;
    this.slots.splice(index, 1);
    const pending = slot.task;
    slot.task = null;
    if (pending) {
      clearTimeout(pending.timer);
      pending.reject(reason);
    }
    this.dispatch();
  }
}

let entryOfProcess: Promise<URL | string> | null = null;

/**
 * The worker's script. The bundle ships it beside parley.js
 * (scripts/bundle.mjs), `tsc`'s output beside this module; run from the
 * TypeScript sources (the tests), it is bundled once per process with esbuild
 * into `.tmp/`, where Node finds the packages it imports in the checkout's
 * node_modules.
 */
function workerEntry(): Promise<URL | string> {
  if (!import.meta.url.endsWith('.ts')) {
    const compiled = new URL('./extraction-worker.js', import.meta.url);
    return Promise.resolve(existsSync(compiled) ? compiled : new URL('./parley-extraction-worker.js', import.meta.url));
  }
  entryOfProcess ??= (async () => {
    const { build } = await import('esbuild');
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const result = await build({
      entryPoints: [fileURLToPath(new URL('./extraction-worker.ts', import.meta.url))],
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node20',
      write: false,
      logLevel: 'silent',
    });
    const code = result.outputFiles[0].contents;
    const folder = path.join(root, '.tmp');
    const target = path.join(folder, `extraction-worker-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
    await mkdir(folder, { recursive: true });
    const staging = `${target}.${process.pid}`;
    await writeFile(staging, code);
    await rename(staging, target);
    return target;
  })();
  return entryOfProcess;
}
