import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import { HttpError } from '../http/errors.js';
import { PluginError, type WireError, fromWire } from './errors.js';
import { LineSplitter, type ReadyMessage, type RequestMessage, type WorkerMessage, encodeMessage } from './protocol.js';

export interface HostLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Answers a request the worker makes while serving one of ours (events, API calls). */
export type WorkerRequestHandler = (method: string, params: Record<string, unknown>, worker: PythonWorker) => Promise<unknown>;

export interface WorkerOptions {
  /** The interpreter (for messages) and the command that runs it, sandboxed (sandbox.ts). */
  python: string;
  command: string;
  args: string[];
  cwd: string;
  /** Whose calls this worker serves, for its whole life (pool.ts). */
  key: string;
  /** Its private folder (cwd, HOME, TMPDIR), removed when it exits; null: none. */
  workDir: string | null;
  /** Called once the worker has exited (its private folder is removed there). */
  onGone?: () => void;
  env: Record<string, string>;
  startTimeoutMs: number;
  memoryLimitMb: number;
  log: HostLogger;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout | null;
  /** The capability the worker's requests for this call must show (bridge.py): unguessable, dies with the call. */
  token: string;
  onRequest?: WorkerRequestHandler;
}

const STDERR_TAIL = 20;

/**
 * One `python -m parley_host` process, bound to one key (user and tool owner)
 * for its life. It can carry several requests, but the pool gives it one tool
 * request at a time, so killing it on a timeout harms nobody else. In a sandbox
 * it is alone in its PID namespace, which dies with it; its process group is
 * killed as well.
 */
export class PythonWorker {
  private static lastId = 0;
  readonly id = ++PythonWorker.lastId;
  readonly key: string;
  readonly workDir: string | null;
  readonly ready: Promise<ReadyMessage>;
  /** Tool id → content hash of what this worker has loaded (the pool's view of its cache). */
  readonly loaded = new Map<string, string>();
  /** Set when installed requirements make this worker's import paths stale. */
  retired = false;
  exited = false;
  onExit: (worker: PythonWorker) => void = () => {};

  private readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  /** Call token → request id, for the worker's requests (events, API calls). */
  private readonly tokens = new Map<string, number>();
  private readonly stderrTail: string[] = [];
  private nextId = 1;
  /** Why we killed it, when we did: the error the request in flight gets. */
  private killReason: PluginError | null = null;
  private settleReady!: { resolve(ready: ReadyMessage): void; reject(error: Error): void };
  private markGone!: () => void;
  private readonly gone = new Promise<void>((resolve) => {
    this.markGone = resolve;
  });
  private startTimer: NodeJS.Timeout | null = null;

  constructor(private readonly options: WorkerOptions) {
    this.key = options.key;
    this.workDir = options.workDir;
    this.ready = new Promise((resolve, reject) => {
      this.settleReady = { resolve, reject };
    });
    this.ready.catch(() => {}); // observed by whoever waits on it; never an unhandled rejection
    this.child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.startTimer = setTimeout(() => {
      this.kill(new PluginError('unavailable', `The Python worker did not start within ${options.startTimeoutMs} ms`));
    }, options.startTimeoutMs);

    const out = new LineSplitter();
    this.child.stdout!.on('data', (chunk: Buffer) => {
      for (const line of out.push(chunk)) if (line) this.receive(line);
    });
    const err = new LineSplitter();
    this.child.stderr!.on('data', (chunk: Buffer) => {
      for (const line of err.push(chunk)) {
        if (!line) continue;
        this.stderrTail.push(line);
        if (this.stderrTail.length > STDERR_TAIL) this.stderrTail.shift();
        options.log.debug({ worker: this.pid }, line);
      }
    });
    this.child.stdin!.on('error', () => {}); // a dead worker's stdin: the exit handler reports it
    this.child.on('error', (error: NodeJS.ErrnoException) => {
      const reason =
        error.code === 'ENOENT'
          ? new PluginError(
              'unavailable',
              `Python interpreter "${options.python}" was not found. Install Python 3 with pydantic 2 (scripts/setup-python.sh prepares one) or set PYTHON.`,
            )
          : new PluginError('unavailable', `The Python worker could not be started: ${error.message}`);
      this.killReason ??= reason;
      this.handleExit(null, null);
    });
    // 'close' comes after the last output is read (a fatal message, a final reply);
    // 'exit' alone is the fallback for a grandchild that keeps the pipes open.
    this.child.on('close', (code, signal) => this.handleExit(code, signal));
    this.child.on('exit', (code, signal) => {
      setTimeout(() => this.handleExit(code, signal), 250).unref();
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get busy(): boolean {
    return this.pending.size > 0;
  }

  /** Sends a request; on timeout the worker is killed and the request fails with `timeout` (naming `unit`, what ran). */
  request<T>(method: string, params: Record<string, unknown>, timeoutMs: number, onRequest?: WorkerRequestHandler, unit = 'tool'): Promise<T> {
    if (this.exited) return Promise.reject(this.exitError(null, null));
    const id = this.nextId++;
    const token = randomBytes(32).toString('base64url');
    return new Promise<T>((resolve, reject) => {
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              this.kill(new PluginError('timeout', `The ${unit} did not finish within ${formatDuration(timeoutMs)}; its worker was stopped`));
            }, timeoutMs)
          : null;
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer, token, onRequest });
      this.tokens.set(token, id);
      this.write(encodeMessage({ type: 'request', id, method, params: { ...params, call_token: token } }));
    });
  }

  notify(method: string, params: Record<string, unknown>): void {
    if (!this.exited) this.write(encodeMessage({ type: 'notify', method, params }));
  }

  /** Ends the worker at once (its whole process group); requests in flight fail with `reason`. */
  kill(reason: PluginError): void {
    if (this.exited) return;
    this.killReason ??= reason;
    try {
      if (this.child.pid) process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      this.child.kill('SIGKILL');
    }
  }

  /** Asks the worker to leave (end of stdin); kills it if it has not after `graceMs`. */
  async close(graceMs = 1000): Promise<void> {
    if (this.exited) return;
    this.killReason ??= new PluginError('closed', 'The plugin host was closed');
    this.child.stdin!.end();
    const timer = setTimeout(() => this.kill(this.killReason!), graceMs);
    await this.gone;
    clearTimeout(timer);
  }

  private write(line: string): void {
    this.child.stdin!.write(line);
  }

  private receive(line: string): void {
    let message: WorkerMessage;
    try {
      message = JSON.parse(line) as WorkerMessage;
    } catch {
      this.kill(new PluginError('protocol', `The Python worker wrote something that is not a message: ${line.slice(0, 200)}`));
      return;
    }
    switch (message.type) {
      case 'ready':
        if (this.startTimer) clearTimeout(this.startTimer);
        this.settleReady.resolve(message);
        break;
      case 'fatal':
        this.kill(
          new PluginError(
            'unavailable',
            message.code === 'pydantic_missing'
              ? `${message.message}. Run scripts/setup-python.sh, or point PYTHON at an interpreter with pydantic 2.`
              : message.message,
          ),
        );
        break;
      case 'response':
        this.settle(message.id, message);
        break;
      case 'request':
        void this.answer(message);
        break;
    }
  }

  private settle(id: number, message: { result?: unknown; error?: unknown }): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    this.tokens.delete(pending.token);
    if (pending.timer) clearTimeout(pending.timer);
    if (!message.error) {
      pending.resolve(message.result);
      return;
    }
    const error = fromWire(message.error as WireError, this.options.memoryLimitMb);
    // The worker leaves after a MemoryError: it must not be handed out again meanwhile.
    if (error.code === 'memory') this.retired = true;
    pending.reject(error);
  }

  private async answer(message: RequestMessage): Promise<void> {
    const token = message.params?.token;
    const id = typeof token === 'string' ? this.tokens.get(token) : undefined;
    const call = id === undefined ? undefined : this.pending.get(id);
    try {
      // Only the token of a call in flight opens it: a forged one, or one of plugin code that outlived its call, is refused.
      if (!call?.onRequest) throw new HttpError(403, `${message.method}: no call in flight holds this token; Parley refuses the request`);
      const result = await call.onRequest(message.method, message.params, this);
      this.write(encodeMessage({ type: 'response', id: message.id, result: result ?? null }));
    } catch (error) {
      if (this.exited) return;
      // An HttpError's status tells the plugin what kind of refusal it got (parley_host/bridge.py).
      const reply = error instanceof HttpError ? { message: error.message, status: error.statusCode } : { message: (error as Error).message };
      this.write(encodeMessage({ type: 'response', id: message.id, error: reply }));
    }
  }

  private handleExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited) return;
    this.exited = true;
    if (this.startTimer) clearTimeout(this.startTimer);
    const error = this.exitError(code, signal);
    this.settleReady.reject(error);
    this.tokens.clear();
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      if (pending.timer) clearTimeout(pending.timer);
      pending.reject(error);
    }
    this.options.onGone?.();
    this.markGone();
    this.onExit(this);
  }

  private exitError(code: number | null, signal: NodeJS.Signals | null): PluginError {
    if (this.killReason) return this.killReason;
    // A sandbox (bwrap, unshare) reports its program's death by signal N as exit code 128 + N.
    if (!signal && code !== null && code > 128 && this.options.command !== this.options.python) {
      signal = (Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0] as NodeJS.Signals | undefined) ?? null;
    }
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    const memory =
      this.options.memoryLimitMb > 0 && (signal === 'SIGABRT' || signal === 'SIGSEGV' || code === 70)
        ? ` (possibly over its memory limit of ${this.options.memoryLimitMb} MiB)`
        : '';
    const tail = this.stderrTail.slice(-5).join('\n');
    return new PluginError(
      'worker_died',
      `The Python worker exited unexpectedly (${how})${memory}; it was replaced${tail ? `. Its last output:\n${tail}` : ''}`,
    );
  }
}

function formatDuration(ms: number): string {
  return ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`;
}
