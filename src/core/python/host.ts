import { createHash } from 'node:crypto';
import path from 'node:path';
import { PARLEY_VERSION } from '../../config/env.js';
import type { UserRecord } from '../auth/user.js';
import type { BridgeSession, PluginBridge } from './bridge.js';
import { pipEnvironment, resolvePython, workerEnvironment } from './environment.js';
import { PluginError } from './errors.js';
import { WorkerPool } from './pool.js';
import { RequirementInstaller } from './requirements.js';
import { type HostLogger, PythonWorker, type WorkerRequestHandler } from './worker.js';

type JsonObject = Record<string, unknown>;

/** A tool's source and admin valves, as stored. */
export interface ToolSource {
  content: string;
  valves?: JsonObject | null;
}

/** A tool named by id (its source comes from the resolver) or given whole. */
export type ToolRef = string | (ToolSource & { id: string });

/** Finds a stored tool for `callTool` & co.; null when there is none. */
export type ToolResolver = (toolId: string) => Promise<ToolSource | null>;

export interface PythonHostOptions {
  /** Where the requirements venv lives (`<dataDir>/plugin-host/venv`) and the workers' working directory. */
  dataDir: string;
  /** Interpreter (`PYTHON`); default: the repo's .venv-plugin-host if present, else `python3`. */
  python?: string | null;
  /** Most workers at once (default 4). */
  poolSize?: number;
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
   * while this call runs; without a caller they fail.
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

const KIND_CLASS: Record<ValvesKind, string> = { valves: 'Valves', user: 'UserValves' };
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

/**
 * Runs tool code in a pool of Python worker processes (plugin-host/). User code
 * never runs in Node: a call that hangs, overspends memory or kills its
 * interpreter costs one worker, which is replaced; the caller gets a PluginError.
 */
export class PythonHost {
  readonly python: string;
  private readonly pool: WorkerPool;
  private readonly installer: RequirementInstaller | null;
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
    const baseEnv = options.baseEnv ?? process.env;
    const venvDir = path.join(options.dataDir, 'plugin-host', 'venv');
    const memoryLimitMb = options.memoryLimitMb ?? 1024;
    const workerOptions = {
      python: this.python,
      args: ['-m', 'parley_host', '--memory-limit-mb', String(memoryLimitMb), '--site', venvDir],
      cwd: options.dataDir,
      // DATA_DIR and the version as the reference's process has them (open_webui.env, open_webui.config).
      env: { ...workerEnvironment(baseEnv, options.env ?? {}), DATA_DIR: path.resolve(options.dataDir), PARLEY_VERSION },
      startTimeoutMs: options.startTimeoutMs ?? 30_000,
      memoryLimitMb,
      log: this.log,
    };
    this.pool = new WorkerPool(() => new PythonWorker(workerOptions), Math.max(1, options.poolSize ?? 4), this.log);
    this.installer =
      (options.pipInstall ?? true)
        ? new RequirementInstaller({
            python: this.python,
            venvDir,
            pipOptions: options.pipOptions ?? [],
            pipIndexOptions: options.pipIndexOptions ?? [],
            env: pipEnvironment(baseEnv, options.env ?? {}),
            timeoutMs: options.installTimeoutMs ?? 600_000,
            log: this.log,
          })
        : null;
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
  async extract(toolId: string, content: string): Promise<ToolExtraction> {
    const hash = contentHash(content);
    const raw = await this.onTool<{
      frontmatter: Record<string, string>;
      specs: FunctionSpec[];
      has_valves: boolean;
      has_user_valves: boolean;
      valves_schema: JsonObject | null;
      user_valves_schema: JsonObject | null;
    }>(toolId, content, hash, 'extract', { content }, this.callTimeoutMs);
    return {
      manifest: raw.frontmatter,
      specs: raw.specs,
      hasValves: raw.has_valves,
      hasUserValves: raw.has_user_valves,
      valvesSchema: raw.valves_schema,
      userValvesSchema: raw.user_valves_schema,
      hash,
    };
  }

  /** The Valves (or UserValves) JSON schema with select options resolved for `user`; null without the class. */
  async valvesSpec(tool: ToolRef, kind: ValvesKind, user?: JsonObject | null): Promise<JsonObject | null> {
    const { id, content } = await this.source(tool);
    return this.onTool(id, content, contentHash(content), 'valves_spec', { kind: KIND_CLASS[kind], user: user ?? null }, this.callTimeoutMs);
  }

  /**
   * What a valves update stores: the keys sent (nulls dropped), coerced by the
   * tool's class. Fails with `no_valves` or `invalid_valves`.
   */
  async validateValves(tool: ToolRef, kind: ValvesKind, values: JsonObject): Promise<JsonObject> {
    const { id, content } = await this.source(tool);
    return this.onTool(id, content, contentHash(content), 'validate_valves', { kind: KIND_CLASS[kind], values }, this.callTimeoutMs);
  }

  /** Calls one function of a tool with the tool's valves and the caller's user valves applied. */
  async callTool(tool: ToolRef, functionName: string, args: JsonObject, context: ToolCallContext = {}): Promise<ToolCallResult> {
    const { id, content, valves } = await this.source(tool);
    const params = {
      function: functionName,
      args,
      valves: valves ?? null,
      user_valves: context.userValves ?? null,
      user: context.user ?? {},
      metadata: context.metadata ?? null,
      request: context.request ?? null,
      extras: context.extras ?? {},
      event_emitter: Boolean(context.eventEmitter),
      event_call: Boolean(context.eventCall),
      bridge: Boolean(context.caller),
    };
    const session = context.caller && this.bridge ? this.bridge.open(context.caller) : null;
    const onRequest: WorkerRequestHandler = async (method, message) => {
      if (method === 'event_emitter') {
        await context.eventEmitter?.(message.event);
        return null;
      }
      if (method === 'event_call') return context.eventCall?.(message.event) ?? null;
      if (method === 'api') return this.api(session, message);
      throw new Error(`Unknown request ${method}`);
    };
    try {
      return await this.onTool(id, content, contentHash(content), 'call', params, context.timeoutMs ?? this.callTimeoutMs, onRequest);
    } finally {
      session?.revoke();
    }
  }

  /** A plugin's call into Parley, answered as the session's user (bridge.ts). */
  private async api(session: BridgeSession | null, message: Record<string, unknown>): Promise<unknown> {
    const op = String(message.op);
    if (!session) {
      throw new PluginError(
        'unavailable',
        this.bridge ? `${op}: this plugin call runs for no user, so Parley cannot answer it` : `${op}: Parley's plugin API is not available here`,
      );
    }
    this.log.debug({ op, session: session.token, user: session.user.id }, 'plugin api call');
    return session.call(op, message.args);
  }

  /**
   * Starts a worker if none is up and says which Python and pydantic it runs;
   * fails with `unavailable` when there is no usable interpreter. For a start-up
   * log line or a health check: nothing else needs it, workers start lazily.
   */
  async probe(): Promise<{ python: string; executable: string; pydantic: string }> {
    if (!this.enabled) throw new PluginError('disabled', 'Plugins are disabled by ENABLE_PLUGINS=false');
    const worker = await this.pool.acquire();
    try {
      const { python, executable, pydantic } = await worker.ready;
      return { python, executable, pydantic };
    } finally {
      this.pool.release(worker);
    }
  }

  /** Drops a deleted tool from every worker's cache. */
  forget(toolId: string): void {
    this.pool.each((worker) => {
      if (worker.loaded.delete(toolId)) worker.notify('unload', { tool_id: toolId });
    });
  }

  stats(): { workers: number; idle: number; waiting: number } {
    return this.pool.stats();
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
  }

  private async source(tool: ToolRef): Promise<{ id: string; content: string; valves: JsonObject | null }> {
    if (typeof tool !== 'string') return { id: tool.id, content: tool.content, valves: tool.valves ?? null };
    const found = this.resolver ? await this.resolver(tool) : null;
    if (!found) throw new PluginError('tool_not_found', `Tool not found: ${tool}`);
    return { id: tool, content: found.content, valves: found.valves ?? null };
  }

  /** Runs one request on a worker that has (or is sent) this tool's source. */
  private async onTool<T>(
    toolId: string,
    content: string,
    hash: string,
    method: string,
    params: JsonObject,
    timeoutMs: number,
    onRequest?: WorkerRequestHandler,
  ): Promise<T> {
    if (!this.enabled) throw new PluginError('disabled', 'Plugins are disabled by ENABLE_PLUGINS=false');
    await this.prepare(content, hash);
    const worker = await this.pool.acquire((candidate) => candidate.loaded.get(toolId) === hash);
    try {
      const send = (withContent: boolean) =>
        worker.request<T>(method, { ...params, tool_id: toolId, hash, content: withContent ? content : null }, timeoutMs, onRequest);
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
      this.pool.release(worker);
    }
  }

  /** Installs the source's frontmatter requirements first, once per content hash. */
  private async prepare(content: string, hash: string): Promise<void> {
    if (!this.installer || this.prepared.has(hash)) return;
    let preparing = this.preparing.get(hash);
    if (!preparing) {
      preparing = (async () => {
        const worker = await this.pool.acquire();
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
