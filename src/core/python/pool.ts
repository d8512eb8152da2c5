import { PluginError } from './errors.js';
import type { HostLogger, PythonWorker } from './worker.js';

/** Whose code a request runs and for whom: a worker serves one key for its whole life. */
export interface WorkerKey {
  /** The user the request runs for: the per-user limit counts by it. */
  user: string;
  /** The key of the workers that may serve it (user and tool owner, host.ts). */
  key: string;
}

interface Waiter extends WorkerKey {
  prefer?: (worker: PythonWorker) => boolean;
  resolve(worker: PythonWorker): void;
  reject(error: Error): void;
}

export interface PoolLimits {
  /** Most workers at once (PLUGIN_POOL_MAX). */
  maxWorkers: number;
  /** Most requests in flight per user (PLUGIN_USER_CONCURRENCY); more wait in that user's queue. */
  perUser: number;
}

/**
 * Up to `maxWorkers` workers, each started for one key and never given to
 * another. A worker serves one request at a time (acquire → request → release).
 * A user has at most `perUser` requests in flight; the rest wait in their own
 * FIFO queue, and queues are served in turn, so one user's slow calls hold up
 * nobody else's. When the pool is full, an idle worker of another key is
 * retired to make room.
 */
export class WorkerPool {
  private readonly workers = new Set<PythonWorker>();
  private idle: PythonWorker[] = [];
  /** Per user, in arrival order; the map's order is the round-robin order. */
  private readonly queues = new Map<string, Waiter[]>();
  private readonly active = new Map<string, number>();
  /** The user whose request each busy or starting worker serves. */
  private readonly servedUser = new Map<PythonWorker, string>();
  private closed = false;
  /** Why the last worker failed to start, until one starts again (the readiness check reports it). */
  startFailure: string | null = null;

  constructor(
    private readonly start: (key: string) => PythonWorker,
    private readonly limits: PoolLimits,
    private readonly log: HostLogger,
  ) {}

  /** A worker of `key`, preferring an idle one for which `prefer` holds (it has the tool loaded). */
  acquire(owner: WorkerKey, prefer?: (worker: PythonWorker) => boolean): Promise<PythonWorker> {
    if (this.closed) return Promise.reject(new PluginError('closed', 'The plugin host was closed'));
    const waiting = new Promise<PythonWorker>((resolve, reject) => {
      const queue = this.queues.get(owner.user) ?? [];
      queue.push({ ...owner, prefer, resolve, reject });
      this.queues.set(owner.user, queue);
    });
    this.dispatch();
    return waiting;
  }

  release(worker: PythonWorker): void {
    this.finish(worker);
    if (!worker.exited) {
      if (worker.retired || this.closed) this.discard(worker);
      else this.idle.push(worker);
    }
    this.dispatch();
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
    let waiting = 0;
    for (const queue of this.queues.values()) waiting += queue.length;
    return { workers: this.workers.size, idle: this.idle.length, waiting };
  }

  async close(): Promise<void> {
    this.closed = true;
    const error = new PluginError('closed', 'The plugin host was closed');
    for (const queue of this.queues.values()) for (const waiter of queue.splice(0)) waiter.reject(error);
    this.queues.clear();
    await Promise.all([...this.workers].map((worker) => worker.close()));
    this.idle = [];
  }

  /** Serves the queues in turn, one request per user per round, while there is room. */
  private dispatch(): void {
    let progress = true;
    while (progress && !this.closed) {
      progress = false;
      for (const [user, queue] of [...this.queues]) {
        if ((this.active.get(user) ?? 0) >= this.limits.perUser) continue;
        if (!this.serve(queue[0])) continue;
        queue.shift();
        // To the back of the round: the next user goes first next time.
        this.queues.delete(user);
        if (queue.length > 0) this.queues.set(user, queue);
        progress = true;
      }
    }
  }

  /** Gives `waiter` an idle worker of its key or starts one; false when there is no room. */
  private serve(waiter: Waiter): boolean {
    const mine = this.idle.filter((worker) => worker.key === waiter.key);
    const chosen = (waiter.prefer && mine.find(waiter.prefer)) || mine[0];
    if (chosen) {
      this.idle = this.idle.filter((worker) => worker !== chosen);
      this.begin(chosen, waiter.user);
      waiter.resolve(chosen);
      return true;
    }
    if (this.workers.size >= this.limits.maxWorkers) {
      const other = this.idle.shift();
      if (!other) return false;
      this.discard(other); // idle longest, of another key: its place goes to this request
    }
    this.grow(waiter);
    return true;
  }

  private begin(worker: PythonWorker, user: string): void {
    this.servedUser.set(worker, user);
    this.active.set(user, (this.active.get(user) ?? 0) + 1);
  }

  private finish(worker: PythonWorker): void {
    const user = this.servedUser.get(worker);
    if (user === undefined) return;
    this.servedUser.delete(worker);
    const count = (this.active.get(user) ?? 1) - 1;
    if (count > 0) this.active.set(user, count);
    else this.active.delete(user);
  }

  private grow(waiter: Waiter): void {
    let worker: PythonWorker;
    try {
      worker = this.start(waiter.key);
    } catch (error) {
      // No private folder or sandbox for it: this request fails, the others may still be served.
      this.startFailure = (error as Error).message;
      waiter.reject(error as Error);
      return;
    }
    this.workers.add(worker);
    this.begin(worker, waiter.user);
    worker.onExit = (dead) => this.handleExit(dead);
    worker.ready.then(
      (ready) => {
        this.log.debug({ worker: ready.pid, python: ready.python, pydantic: ready.pydantic }, 'python worker ready');
        this.startFailure = null;
        waiter.resolve(worker);
      },
      (error: Error) => {
        // Whoever asked for this worker learns why there is none; the next in line tries again.
        this.workers.delete(worker);
        this.finish(worker);
        this.startFailure = error.message;
        waiter.reject(error);
        this.dispatch();
      },
    );
  }

  private discard(worker: PythonWorker): void {
    this.workers.delete(worker);
    void worker.close();
  }

  private handleExit(worker: PythonWorker): void {
    this.workers.delete(worker);
    this.idle = this.idle.filter((candidate) => candidate !== worker);
    // A busy worker that died (timeout kill, crash, memory): its caller is told by the request; the slot is free.
    this.finish(worker);
    this.dispatch();
  }
}
