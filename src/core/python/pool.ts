import { PluginError } from './errors.js';
import type { HostLogger, PythonWorker } from './worker.js';

interface Waiter {
  resolve(worker: PythonWorker): void;
  reject(error: Error): void;
}

/**
 * Up to `size` workers, started when first needed. A worker serves one request
 * at a time (acquire → request → release); requests beyond that wait in order.
 * A worker that dies is replaced, so capacity comes back without a caller
 * paying for the start-up.
 */
export class WorkerPool {
  private readonly workers = new Set<PythonWorker>();
  private idle: PythonWorker[] = [];
  private readonly waiters: Waiter[] = [];
  /** Workers that got as far as `ready`; only those are replaced when they die. */
  private readonly up = new WeakSet<PythonWorker>();
  private closed = false;

  constructor(
    private readonly start: () => PythonWorker,
    private readonly size: number,
    private readonly log: HostLogger,
  ) {}

  /** An idle worker, preferring one for which `prefer` holds (it has the tool loaded). */
  acquire(prefer?: (worker: PythonWorker) => boolean): Promise<PythonWorker> {
    if (this.closed) return Promise.reject(new PluginError('closed', 'The plugin host was closed'));
    const index = prefer ? this.idle.findIndex(prefer) : -1;
    const chosen = index >= 0 ? this.idle.splice(index, 1)[0] : this.idle.shift();
    if (chosen) return Promise.resolve(chosen);
    const waiting = new Promise<PythonWorker>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (this.workers.size < this.size) this.grow();
    return waiting;
  }

  release(worker: PythonWorker): void {
    if (worker.exited) return; // its exit handler has already done the bookkeeping
    if (worker.retired || this.closed) {
      this.discard(worker);
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(worker);
    else this.idle.push(worker);
  }

  /** Stops using the current workers (new import paths); busy ones leave when released. */
  retireAll(): void {
    for (const worker of this.workers) worker.retired = true;
    for (const worker of this.idle) this.discard(worker);
    this.idle = [];
  }

  each(visit: (worker: PythonWorker) => void): void {
    for (const worker of this.workers) visit(worker);
  }

  stats(): { workers: number; idle: number; waiting: number } {
    return { workers: this.workers.size, idle: this.idle.length, waiting: this.waiters.length };
  }

  async close(): Promise<void> {
    this.closed = true;
    const error = new PluginError('closed', 'The plugin host was closed');
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    await Promise.all([...this.workers].map((worker) => worker.close()));
    this.idle = [];
  }

  private grow(): void {
    const worker = this.start();
    this.workers.add(worker);
    worker.onExit = (dead) => this.handleExit(dead);
    worker.ready.then(
      (ready) => {
        this.up.add(worker);
        this.log.debug({ worker: ready.pid, python: ready.python, pydantic: ready.pydantic }, 'python worker ready');
        this.release(worker);
      },
      (error: Error) => {
        // Whoever asked for this worker learns why there is none; the next in line tries again.
        this.workers.delete(worker);
        this.waiters.shift()?.reject(error);
        if (this.waiters.length > 0 && this.workers.size < this.size && !this.closed) this.grow();
      },
    );
  }

  private discard(worker: PythonWorker): void {
    this.workers.delete(worker);
    void worker.close();
  }

  private handleExit(worker: PythonWorker): void {
    if (!this.up.has(worker)) return; // a failed start: handled where `ready` rejects
    const known = this.workers.delete(worker);
    this.idle = this.idle.filter((candidate) => candidate !== worker);
    if (this.closed || this.workers.size >= this.size) return;
    if (known && !worker.retired) {
      // A worker that was up died (timeout kill, crash, memory): start its replacement now.
      this.log.warn({ worker: worker.pid }, 'python worker exited; replacing it');
      this.grow();
    } else if (this.waiters.length > 0) {
      this.grow();
    }
  }
}
