import { AsyncResource } from 'node:async_hooks';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PARLEY_VERSION } from '../../config/env.js';
import type { UserRecord } from '../auth/user.js';
import type { Tracing } from '../observability/tracing.js';
import type { BridgeSession, PluginBridge } from './bridge.js';
import { PLUGIN_HOST_DIR, pipEnvironment, resolvePython, workerEnvironment } from './environment.js';
import { PluginError } from './errors.js';
import { WorkerPool, type WorkerKey } from './pool.js';
import { RequirementInstaller } from './requirements.js';
import { Sandbox, type SandboxMode } from './sandbox.js';
import { type HostLogger, PythonWorker, type WorkerRequestHandler } from './worker.js';

type JsonObject = Record<string, unknown>;

/** A tool's source and admin valves, as stored. */
export interface ToolSource {
  content: string;
  valves?: JsonObject | null;
  /** The tool's owner (`user_id`): workers are keyed by caller and owner. */
  owner?: string | null;
}

/** A tool named by id (its source comes from the resolver) or given whole; `kind: 'function'` for a function (its own id space). */
export type ToolRef = string | (ToolSource & { id: string; kind?: PluginKind });

/** Tools define `Tools`; functions a Pipe, Filter, Action or Event class. Their ids are separate. */
export type PluginKind = 'tool' | 'function';

/** A function's type and the flags the chat layer reads, from the class its source defines. */
export interface FunctionDescription {
  type: 'pipe' | 'filter' | 'action' | 'event';
  /** A filter shown as a chat toggle (`self.toggle`). */
  toggle: boolean;
  /** An action's `actions` (several buttons), as declared. */
  actions: JsonObject[] | null;
  /** An event function's `events` (the event names it subscribes to), as declared. */
  events: string[] | null;
  /** The class's `icon_url` (or `icon`), for buttons and toggles. */
  icon: string | null;
  has_user_valves: boolean;
  /** A filter that handles the request's files itself (`file_handler`): Parley leaves them alone. */
  file_handler: boolean;
}

/** What a function handler is called for (functions.py on the Python side). */
export type FunctionOperation = 'pipes' | 'priority' | 'pipe' | 'inlet' | 'outlet' | 'stream' | 'action' | 'event';

/** One item a streaming pipe produced: raw SSE text (a streaming response), a JSON object, or a text line. */
export type PipeChunk = { raw: string } | { json: unknown } | { text: string };

export interface FunctionCallContext extends ToolCallContext {
  /** `body` (`event` for a filter's stream). */
  body?: unknown;
  /** Extras by their reserved names (`__task__`, `__session_id__`, `__tools__`, `__id__`, ...). */
  functionExtras?: JsonObject;
  /** Receives a streaming pipe's items while the call runs. */
  onChunk?: (chunk: PipeChunk) => void | Promise<void>;
  /** Stops the call (its worker is ended) when it aborts. */
  signal?: AbortSignal;
}

/** Finds a stored tool for `callTool` & co.; null when there is none. */
export type ToolResolver = (toolId: string) => Promise<ToolSource | null>;

export interface PythonHostOptions {
  /** The server's data: never visible to workers. */
  dataDir: string;
  /** The requirements venv (PLUGIN_VENV_DIR; default `<dataDir>.plugin-venv`, beside DATA_DIR, which is 0700). */
  venvDir?: string | null;
  /** Interpreter (`PYTHON`); default: the repo's .venv-plugin-host if present, else `python3`. */
  python?: string | null;
  /** Most workers at once (PLUGIN_POOL_MAX, alias PLUGIN_POOL_SIZE; default 8). */
  poolSize?: number;
  /** Most calls in flight per user (PLUGIN_USER_CONCURRENCY; default 2); more wait in that user's queue. */
  perUserConcurrency?: number;
  /** PLUGIN_SANDBOX (default auto: bwrap, else unshare when root, else none). */
  sandbox?: 'auto' | SandboxMode;
  /** PLUGIN_USER / PLUGIN_GROUP: whom workers run as when the server runs as root (default 65534). */
  pluginUser?: string | null;
  pluginGroup?: string | null;
  /** Per request: a load, an extraction or a tool call (default 60 s). */
  callTimeoutMs?: number;
  startTimeoutMs?: number;
  /** Address-space limit of each worker (default 1024 MiB; 0: none). */
  memoryLimitMb?: number;
  /** Variables tool code sees on top of the few shared ones (environment.ts). */
  env?: Record<string, string>;
  /** The environment to take PATH, HOME, proxies and PIP_* from (default process.env). */
  baseEnv?: Record<string, string | undefined>;
  /** ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS and not OFFLINE_MODE (default true). */
  pipInstall?: boolean;
  /** PIP_OPTIONS and PIP_PACKAGE_INDEX_OPTIONS, already split on whitespace. */
  pipOptions?: string[];
  pipIndexOptions?: string[];
  installTimeoutMs?: number;
  /** ENABLE_PLUGINS (default true). */
  enabled?: boolean;
  resolveTool?: ToolResolver;
  /** Answers plugins' calls into Parley (the `open_webui` package); without it they fail. */
  bridge?: PluginBridge;
  log?: HostLogger;
  /** A span per call when tracing (docs/deployment.md § OpenTelemetry). */
  tracing?: Tracing | null;
}

/** One request to a plugin's worker: whom it runs for, the plugin's source, the method and its parameters. */
interface ToolCall {
  scope: PluginScope;
  unit: { id: string; kind: PluginKind };
  content: string;
  hash: string;
  method: string;
  params: JsonObject;
  timeoutMs: number;
  onRequest?: WorkerRequestHandler;
  signal?: AbortSignal;
}

export interface FunctionSpec {
  name: string;
  description: string;
  parameters: JsonObject;
}

/** What create/update store, and what the valves/spec routes return. */
export interface ToolExtraction {
  /** The frontmatter, stored as `meta.manifest`. */
  manifest: Record<string, string>;
  specs: FunctionSpec[];
  hasValves: boolean;
  hasUserValves: boolean;
  valvesSchema: JsonObject | null;
  userValvesSchema: JsonObject | null;
  /** For a function: its type and flags (null for a tool). */
  function: FunctionDescription | null;
  /** The content hash the loaded module is cached under. */
  hash: string;
}

/** The Starlette request a tool may read as `__request__` (minimal). */
export interface PluginRequestInfo {
  method?: string;
  url?: string;
  base_url?: string;
  headers?: Record<string, string>;
  cookies?: Record<string, string>;
  query_params?: Record<string, string>;
  client_host?: string | null;
}

/** The other reserved parameters a tool function may declare. */
export type ReservedExtra = '__model__' | '__messages__' | '__files__' | '__chat_id__' | '__message_id__' | '__oauth_token__';

export interface ToolCallContext {
  /**
   * The user the call runs for. The tool's calls into Parley (`open_webui.models.*`
   * and the rest of the compatibility package) are answered as this user, and only
   * while this call runs; without a caller they fail. The call runs in a worker
   * of this user's (and the tool owner's) alone.
   */
  caller?: UserRecord | null;
  /** `__user__` (the host adds `valves` when the tool has UserValves). */
  user?: JsonObject | null;
  /** The calling user's stored user valves for this tool. */
  userValves?: JsonObject | null;
  /** `__metadata__`. */
  metadata?: JsonObject | null;
  request?: PluginRequestInfo;
  extras?: Partial<Record<ReservedExtra, unknown>>;
  /** `__event_emitter__`: absent → the tool gets None. */
  eventEmitter?: (event: unknown) => void | Promise<void>;
  /** `__event_call__`: absent → None. Throwing makes the tool receive `{"error": message}`. */
  eventCall?: (event: unknown) => Promise<unknown>;
  timeoutMs?: number;
}

export interface ToolCallResult {
  /** The raw result as JSON (models dumped, tuples as lists, other objects as `str()`). */
  value: unknown;
  /** What the model is shown: the reference's `process_tool_result` text (null for None). */
  text: string | null;
  files: JsonObject[];
  embeds: string[];
  /** An HTMLResponse result, when that is what the tool returned. */
  response: { status: number; headers: Record<string, string>; body: string } | null;
}

export type ValvesKind = 'valves' | 'user';

/** Who a request is for: the acting user and the author of the code it runs (the tool's owner). */
export interface PluginScope {
  user: string;
  owner: string;
}

const KIND_CLASS: Record<ValvesKind, string> = { valves: 'Valves', user: 'UserValves' };
const ANONYMOUS = 'anonymous';

/** What a worker's cache holds a unit under: tools by id, functions apart. */
function loadedKey(unit: { id: string; kind: PluginKind }): string {
  return unit.kind === 'function' ? `function:${unit.id}` : unit.id;
}

/** Workers are never shared across callers, nor across the owners whose code they ran. */
function workerKey(scope: PluginScope): WorkerKey {
  return { user: scope.user, key: `${scope.user}\u0000${scope.owner}` };
}

const silent: HostLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** The reference's import rewriting (`replace_imports`), applied before a tool is stored. */
export function rewriteImports(content: string): string {
  return content
    .replaceAll('from utils', 'from open_webui.utils')
    .replaceAll('from apps', 'from open_webui.apps')
    .replaceAll('from main', 'from open_webui.main')
    .replaceAll('from config', 'from open_webui.config');
}

export function contentHash(content: string): string {
  return createHash('sha256').update(content).digest('hex').slice(0, 32);
}

/** The parameters a tool call and a function call share: valves, the user and request, and which callbacks exist. */
function callParams(context: ToolCallContext, valves: JsonObject | null | undefined) {
  return {
    valves: valves ?? null,
    user_valves: context.userValves ?? null,
    user: context.user ?? {},
    metadata: context.metadata ?? null,
    request: context.request ?? null,
    event_emitter: Boolean(context.eventEmitter),
    event_call: Boolean(context.eventCall),
    bridge: Boolean(context.caller),
  };
}

/**
 * Runs tool code in a pool of Python worker processes (plugin-host/). User code
 * never runs in Node: a call that hangs, overspends memory or kills its
 * interpreter costs one worker, which is replaced; the caller gets a PluginError.
 */
export class PythonHost {
  readonly python: string;
  private readonly pool: WorkerPool;
  private readonly installer: RequirementInstaller | null;
  private readonly options: PythonHostOptions;
  private readonly venvDir: string;
  private sandboxInUse: Sandbox | null = null;
  private interpreter: InterpreterInfo | null = null;
  private readonly log: HostLogger;
  private readonly callTimeoutMs: number;
  private readonly enabled: boolean;
  private resolver: ToolResolver | null;
  private bridge: PluginBridge | null;
  /** Content hashes whose requirements are installed (or need none). */
  private readonly prepared = new Set<string>();
  private readonly preparing = new Map<string, Promise<void>>();

  constructor(options: PythonHostOptions) {
    this.python = resolvePython(options.python);
    this.log = options.log ?? silent;
    this.callTimeoutMs = options.callTimeoutMs ?? 60_000;
    this.enabled = options.enabled ?? true;
    this.resolver = options.resolveTool ?? null;
    this.bridge = options.bridge ?? null;
    this.options = options;
    const baseEnv = options.baseEnv ?? process.env;
    const venvDir = (this.venvDir = path.resolve(options.venvDir ?? `${path.resolve(options.dataDir)}.plugin-venv`));
    const memoryLimitMb = options.memoryLimitMb ?? 1024;
    const environment = workerEnvironment(baseEnv, options.env ?? {});
    const start = (key: string) => {
      const sandbox = this.sandbox();
      const workDir = sandbox.makeWorkDir();
      const args = ['-m', 'parley_host', '--memory-limit-mb', String(memoryLimitMb), '--site', venvDir];
      // Alone in its PID namespace, the worker ends every process of a call when the call ends.
      if (sandbox.pidNamespace) args.push('--end-strays');
      const { command, args: wrapped } = this.sandboxed(sandbox, this.python, args, workDir, []);
      return new PythonWorker({
        python: this.python,
        command,
        args: wrapped,
        cwd: workDir,
        key,
        workDir,
        onGone: () => sandbox.removeWorkDir(workDir),
        // The version as the reference's process has it; DATA_DIR (open_webui.env) is the worker's own folder.
        env: { ...environment, HOME: workDir, TMPDIR: path.join(workDir, 'tmp'), DATA_DIR: workDir, PARLEY_VERSION },
        startTimeoutMs: options.startTimeoutMs ?? 30_000,
        memoryLimitMb,
        log: this.log,
      });
    };
    this.pool = new WorkerPool(
      start,
      { maxWorkers: Math.max(1, options.poolSize ?? 8), perUser: Math.max(1, options.perUserConcurrency ?? 2) },
      this.log,
    );
    this.installer =
      (options.pipInstall ?? true)
        ? new RequirementInstaller({
            python: this.python,
            venvDir,
            sandbox: () => this.sandbox(),
            wrap: (sandbox, program, args, dir, readOnly) => this.sandboxed(sandbox, program, args, dir, [venvDir], readOnly),
            pipOptions: options.pipOptions ?? [],
            pipIndexOptions: options.pipIndexOptions ?? [],
            env: pipEnvironment(baseEnv, options.env ?? {}),
            timeoutMs: options.installTimeoutMs ?? 600_000,
            log: this.log,
          })
        : null;
  }

  /** The isolation in force (detected on first use): for the start-up log line. */
  isolation(): { mode: SandboxMode; uid: number | null; gid: number | null; level: 'info' | 'warn'; message: string } {
    const sandbox = this.sandbox();
    return { mode: sandbox.mode, uid: sandbox.uid, gid: sandbox.gid, ...sandbox.describe() };
  }

  private sandbox(): Sandbox {
    this.sandboxInUse ??= Sandbox.detect({
      mode: this.options.sandbox ?? 'auto',
      user: this.options.pluginUser,
      group: this.options.pluginGroup,
      secret: [this.options.dataDir],
    });
    return this.sandboxInUse;
  }

  /** `program args` in the sandbox, seeing the interpreter, the plugin host package and the requirements venv. */
  private sandboxed(sandbox: Sandbox, program: string, args: string[], dir: string, writable: string[], extraReadOnly: string[] = []) {
    this.interpreter ??= interpreterInfo(this.python);
    if (program === this.python && this.interpreter.missing) return { command: program, args };
    if (sandbox.mode !== 'bwrap') return sandbox.wrap({ program, args, dir, readOnly: [], writable });
    const readOnly = [...this.interpreter.paths, PLUGIN_HOST_DIR, this.venvDir, ...extraReadOnly];
    // A bare `python3` is found on PATH here, not through shims the sandbox does not have.
    const resolved = program === this.python ? (this.interpreter.executable ?? program) : program;
    return sandbox.wrap({ program: resolved, args, dir, readOnly, writable });
  }

  /** A copy of stored bytes in the worker's private folder, for plugin code to open (Storage.get_file). */
  private async exportFile(worker: PythonWorker, file: string): Promise<string> {
    if (!worker.workDir) return file;
    const sandbox = this.sandbox();
    const dir = path.join(worker.workDir, 'files', createHash('sha256').update(file).digest('hex').slice(0, 16));
    await mkdir(dir, { recursive: true });
    const copy = path.join(dir, path.basename(file));
    await copyFile(file, copy);
    sandbox.own(dir);
    sandbox.own(copy);
    return copy;
  }

  setToolResolver(resolver: ToolResolver): void {
    this.resolver = resolver;
  }

  setBridge(bridge: PluginBridge): void {
    this.bridge = bridge;
  }

  /**
   * Loads a tool's source (create/update) and derives what is stored with it.
   * A source that does not parse or import fails with `python_error` and the
   * Python message; nothing is cached under its id then.
   */
  async extract(toolId: string, content: string, actor?: string | null, kind: PluginKind = 'tool'): Promise<ToolExtraction> {
    const hash = contentHash(content);
    // The content is the acting user's: it runs in their own workers.
    const scope = { user: actor ?? ANONYMOUS, owner: actor ?? ANONYMOUS };
    const raw = await this.onTool<{
      frontmatter: Record<string, string>;
      specs: FunctionSpec[];
      has_valves: boolean;
      has_user_valves: boolean;
      valves_schema: JsonObject | null;
      user_valves_schema: JsonObject | null;
      function: FunctionDescription | null;
    }>({ scope, unit: { id: toolId, kind }, content, hash, method: 'extract', params: { content }, timeoutMs: this.callTimeoutMs });
    return {
      manifest: raw.frontmatter,
      specs: raw.specs,
      hasValves: raw.has_valves,
      hasUserValves: raw.has_user_valves,
      valvesSchema: raw.valves_schema,
      userValvesSchema: raw.user_valves_schema,
      function: raw.function ?? null,
      hash,
    };
  }

  /** The Valves (or UserValves) JSON schema with select options resolved for `user`; null without the class. */
  async valvesSpec(tool: ToolRef, kind: ValvesKind, user?: JsonObject | null, actor?: string | null): Promise<JsonObject | null> {
    const { id, unit, content, owner } = await this.source(tool);
    const scope = { user: actor ?? ANONYMOUS, owner };
    return this.onTool({ scope, unit: { id, kind: unit }, content, hash: contentHash(content), method: 'valves_spec', params: { kind: KIND_CLASS[kind], user: user ?? null }, timeoutMs: this.callTimeoutMs });
  }

  /**
   * What a valves update stores: the keys sent (nulls dropped), coerced by the
   * tool's class. Fails with `no_valves` or `invalid_valves`.
   */
  async validateValves(tool: ToolRef, kind: ValvesKind, values: JsonObject, actor?: string | null): Promise<JsonObject> {
    const { id, unit, content, owner } = await this.source(tool);
    const scope = { user: actor ?? ANONYMOUS, owner };
    return this.onTool({ scope, unit: { id, kind: unit }, content, hash: contentHash(content), method: 'validate_valves', params: { kind: KIND_CLASS[kind], values }, timeoutMs: this.callTimeoutMs });
  }

  /** Calls one function of a tool with the tool's valves and the caller's user valves applied. */
  async callTool(tool: ToolRef, functionName: string, args: JsonObject, context: ToolCallContext = {}): Promise<ToolCallResult> {
    const { id, content, valves, owner } = await this.source(tool);
    const scope = { user: context.caller?.id ?? ANONYMOUS, owner };
    const params = { function: functionName, args, ...callParams(context, valves), extras: context.extras ?? {} };
    return this.asCaller(context, null, (onRequest) =>
      this.onTool({ scope, unit: { id, kind: 'tool' }, content, hash: contentHash(content), method: 'call', params, timeoutMs: context.timeoutMs ?? this.callTimeoutMs, onRequest }),
    );
  }

  /**
   * Runs one operation of a function (functions.py): a pipe (streamed items go to
   * `onChunk` while it runs), a filter's inlet/stream/outlet, an action, an event
   * handler, or a manifold's sub-pipes. The function's admin valves and the
   * caller's user valves apply. `signal` stops it: its worker is ended.
   */
  async callFunction<T = unknown>(fn: ToolSource & { id: string }, operation: FunctionOperation, context: FunctionCallContext = {}): Promise<T> {
    const scope = { user: context.caller?.id ?? ANONYMOUS, owner: fn.owner ?? '' };
    if (context.signal?.aborted) throw new PluginError('cancelled', 'The call was stopped');
    const params = {
      operation,
      body: context.body ?? null,
      ...callParams(context, fn.valves),
      extras: { ...(context.extras ?? {}), ...(context.functionExtras ?? {}) },
    };
    return this.asCaller(context, (chunk) => context.onChunk?.(chunk), (onRequest) =>
      this.onTool<T>({ scope, unit: { id: fn.id, kind: 'function' }, content: fn.content, hash: contentHash(fn.content), method: 'function', params, timeoutMs: context.timeoutMs ?? this.callTimeoutMs, onRequest, signal: context.signal }),
    );
  }

  /**
   * Runs a call with its requests answered: events to the context's emitter, the
   * plugin's calls into Parley as the caller (a bridge session for the call only),
   * and, for a pipe, its streamed items to `onChunk`.
   */
  private async asCaller<T>(context: ToolCallContext, onChunk: ((chunk: PipeChunk) => unknown) | null, run: (onRequest: WorkerRequestHandler) => Promise<T>): Promise<T> {
    const session = context.caller && this.bridge ? this.bridge.open(context.caller) : null;
    const onRequest: WorkerRequestHandler = async (method, message, worker) => {
      if (method === 'pipe_chunk' && onChunk) {
        await onChunk(message.chunk as PipeChunk);
        return null;
      }
      if (method === 'event_emitter') {
        await context.eventEmitter?.(message.event);
        return null;
      }
      if (method === 'event_call') return context.eventCall?.(message.event) ?? null;
      if (method === 'api') return this.api(session, message, worker);
      throw new Error(`Unknown request ${method}`);
    };
    try {
      return await run(onRequest);
    } finally {
      session?.revoke();
    }
  }

  /** A plugin's call into Parley, answered as the session's user (bridge.ts). */
  private async api(session: BridgeSession | null, message: Record<string, unknown>, worker: PythonWorker): Promise<unknown> {
    const op = String(message.op);
    if (!session) {
      throw new PluginError(
        'unavailable',
        this.bridge ? `${op}: this plugin call runs for no user, so Parley cannot answer it` : `${op}: Parley's plugin API is not available here`,
      );
    }
    this.log.debug({ op, session: session.token, user: session.user.id }, 'plugin api call');
    return session.call(op, message.args, (file) => this.exportFile(worker, file));
  }

  /**
   * Starts a worker if none is up and says which Python and pydantic it runs;
   * fails with `unavailable` when there is no usable interpreter. For a start-up
   * log line or a health check: nothing else needs it, workers start lazily.
   */
  async probe(): Promise<{ python: string; executable: string; pydantic: string }> {
    if (!this.enabled) throw new PluginError('disabled', 'Plugins are disabled by ENABLE_PLUGINS=false');
    const worker = await this.pool.acquire(workerKey({ user: ANONYMOUS, owner: ANONYMOUS }));
    try {
      const { python, executable, pydantic } = await worker.ready;
      return { python, executable, pydantic };
    } finally {
      this.pool.release(worker);
    }
  }

  /** Drops a deleted tool (or function) from every worker's cache. */
  forget(toolId: string, kind: PluginKind = 'tool'): void {
    this.pool.each((worker) => {
      if (worker.loaded.delete(loadedKey({ id: toolId, kind }))) worker.notify('unload', { tool_id: toolId, unit: kind });
    });
  }

  stats(): { workers: number; idle: number; waiting: number } {
    return this.pool.stats();
  }

  /** Why plugins cannot run now (the last worker failed to start and none has since), or null. */
  trouble(): string | null {
    return this.enabled && this.pool.startFailure ? `Plugin host not ready: ${this.pool.startFailure}` : null;
  }

  /** Pids of the live workers (tests check that none outlive `close`). */
  workerPids(): number[] {
    const pids: number[] = [];
    this.pool.each((worker) => {
      if (worker.pid && !worker.exited) pids.push(worker.pid);
    });
    return pids;
  }

  async close(): Promise<void> {
    await this.pool.close();
    this.sandboxInUse?.dispose();
  }

  private async source(tool: ToolRef): Promise<{ id: string; unit: PluginKind; content: string; valves: JsonObject | null; owner: string }> {
    if (typeof tool !== 'string') return { id: tool.id, unit: tool.kind ?? 'tool', content: tool.content, valves: tool.valves ?? null, owner: tool.owner ?? '' };
    const found = this.resolver ? await this.resolver(tool) : null;
    if (!found) throw new PluginError('tool_not_found', `Tool not found: ${tool}`);
    return { id: tool, unit: 'tool', content: found.content, valves: found.valves ?? null, owner: found.owner ?? '' };
  }

  /** Runs one request on a worker that has (or is sent) this tool's source. */
  private onTool<T>(call: ToolCall): Promise<T> {
    // The plugin's requests arrive on its worker's pipe, in the context of whoever started the worker:
    // bound to this call's, their queries and log lines belong to this call and its request.
    const run = () => this.runOnWorker<T>({ ...call, onRequest: call.onRequest && AsyncResource.bind(call.onRequest) });
    const tracing = this.options.tracing;
    if (!tracing) return run();
    // The tool's function (or the function's operation) is named; its arguments never are.
    const { unit, method, params } = call;
    const called = params.function ?? params.operation;
    return tracing.child(
      `plugin ${method}`,
      { 'parley.plugin.id': unit.id, 'parley.plugin.kind': unit.kind, 'parley.plugin.method': method, ...(typeof called === 'string' ? { 'parley.plugin.function': called } : {}) },
      run,
    );
  }

  private async runOnWorker<T>({ scope, unit, content, hash, method, params, timeoutMs, onRequest, signal }: ToolCall): Promise<T> {
    if (!this.enabled) throw new PluginError('disabled', 'Plugins are disabled by ENABLE_PLUGINS=false');
    const key = workerKey(scope);
    const toolId = loadedKey(unit);
    await this.prepare(key, content, hash);
    const worker = await this.pool.acquire(key, (candidate) => candidate.loaded.get(toolId) === hash);
    // A stopped call ends its worker (as a timeout does): Python code cannot be interrupted otherwise.
    const stop = () => worker.kill(new PluginError('cancelled', 'The call was stopped; its worker was ended'));
    signal?.addEventListener('abort', stop, { once: true });
    try {
      const send = (withContent: boolean) =>
        worker.request<T>(method, { ...params, tool_id: unit.id, unit: unit.kind, hash, content: withContent ? content : null }, timeoutMs, onRequest, unit.kind);
      const result = await send(worker.loaded.get(toolId) !== hash || method === 'extract').catch((error: PluginError) => {
        // Our view of the worker's cache was stale: send the source after all.
        if (error.details?.hostCode === 'not_loaded') return send(true);
        throw error;
      });
      worker.loaded.set(toolId, hash);
      return result;
    } catch (error) {
      worker.loaded.delete(toolId);
      throw error;
    } finally {
      signal?.removeEventListener('abort', stop);
      this.pool.release(worker);
    }
  }

  /** Installs the source's frontmatter requirements first, once per content hash. */
  private async prepare(key: WorkerKey, content: string, hash: string): Promise<void> {
    if (!this.installer || this.prepared.has(hash)) return;
    let preparing = this.preparing.get(hash);
    if (!preparing) {
      preparing = (async () => {
        const worker = await this.pool.acquire(key);
        let requirements: string[];
        try {
          ({ requirements } = await worker.request<{ requirements: string[] }>('frontmatter', { content }, this.callTimeoutMs));
        } finally {
          this.pool.release(worker);
        }
        if (await this.installer!.install(requirements)) this.pool.retireAll();
        this.prepared.add(hash);
      })().finally(() => this.preparing.delete(hash));
      this.preparing.set(hash, preparing);
    }
    await preparing;
  }
}

interface InterpreterInfo {
  /** Its absolute path when `python` is a bare name; null when it does not run (the worker's start then says why). */
  executable: string | null;
  /** Not there at all: spawned as is, so the worker's start names the missing interpreter (nothing runs). */
  missing: boolean;
  /** Where it and its packages live: bound read-only into the sandbox. */
  paths: string[];
}

function interpreterInfo(python: string): InterpreterInfo {
  const probe = spawnSync(
    python,
    ['-c', 'import json, os, sys; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))), *sys.path]))'],
    { encoding: 'utf8', timeout: 30_000 },
  );
  const own = path.isAbsolute(python) ? [path.dirname(python)] : [];
  if (probe.status !== 0) return { executable: null, missing: (probe.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT', paths: own };
  const [executable, ...paths] = JSON.parse(probe.stdout.trim().split('\n').pop() ?? '[]') as string[];
  return { executable: path.isAbsolute(python) ? python : executable, missing: false, paths: [...own, ...paths.filter(Boolean)] };
}
