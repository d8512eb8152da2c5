import { parse as parseCookie } from 'cookie';
import { int } from '../../config/env.js';
import type { AccessService } from '../../core/access/service.js';
import type { AccessGrant } from '../../core/access/grants.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { GuardedFetch } from '../../core/http/guarded-fetch.js';
import { webFetchPolicyFromEnv } from '../../core/http/url-guard.js';
import { type Json, isObject } from '../chats/history.js';
import { documentUrl, openApiToolSpecs, operationRequest, toolServerText } from './openapi.js';
import { type ChatFunction, type ToolCallExtras, textOutcome } from './tools.js';
import type { ChatTerminal } from '../terminals/service.js';

/**
 * OpenAPI tool servers in a chat (utils/tools.py get_tools, execute_tool_server;
 * middleware.py direct tool servers). Two kinds:
 *
 * - **Configured** servers (`tool_server.connections`, `/api/v1/configs/tool_servers`)
 *   selected as `server:<id>` in `tool_ids`: enabled, of type `openapi`, readable by
 *   the user (`config.access_grants`; none means admins only). Their document is
 *   read when the chat starts (deadline AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER_DATA); a
 *   server that cannot be read is skipped and the answer says so in a status.
 *   Calls go from Parley to the server with the connection's auth (`none`,
 *   `bearer` key, `session`: the caller's token), under AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER
 *   and the chat's stop.
 * - **Direct** servers (the request's `tool_servers`, `{url, openapi, info, specs, ...}`):
 *   the user's own. For a web client the call goes to the browser (`execute:tool`
 *   event call), which reaches the server as in the reference; for API clients
 *   Parley calls it, through the web-fetch URL rules (ENABLE_LOCAL_WEB_FETCH,
 *   WEB_FETCH_FILTER_LIST), since the address is the user's choice.
 */
export interface ToolServerRequest {
  user: UserRecord;
  toolIds: unknown;
  directServers: unknown;
  /** The caller's token, for `session` auth. */
  token: string | null;
  /** The request's Cookie header: its `oauth_session_id` picks the provider tokens for `system_oauth` auth. */
  cookie: string | null;
  /** Set when the answer has a socket session to run direct calls in. */
  browserCalls: boolean;
}

export interface ToolServerSelection {
  functions: ChatFunction[];
  /** Status descriptions for servers that were skipped. */
  notices: string[];
  /** Direct servers' `system_prompt`s, for the system message. */
  systemPrompts: string[];
}

interface Reply {
  status: number;
  contentType: string;
  body: Buffer;
}

type Transport = (url: string, init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal }) => Promise<Reply>;

const MAX_REPLY_BYTES = 10 * 1024 * 1024;

/** Server ids in `tool_ids`: `server:<id>` and `server:openapi:<id>` (a `|fn,…` suffix is dropped). */
export function toolServerIds(toolIds: unknown, type: 'openapi' | 'mcp'): string[] {
  if (!Array.isArray(toolIds)) return [];
  const ids: string[] = [];
  for (const raw of toolIds) {
    if (typeof raw !== 'string' || !raw.startsWith('server:')) continue;
    const parts = raw.split('|')[0].split(':');
    const [kind, id] = parts.length === 2 ? ['openapi', parts[1]] : parts.length === 3 ? [parts[1], parts[2]] : ['', ''];
    if (kind === type && id && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

/** `config.function_name_filter_list` (utils/misc.is_string_allowed): names ending with an allowed entry, none ending with a `!` entry. */
export function functionAllowed(name: string, filter: unknown): boolean {
  const entries = (typeof filter === 'string' ? filter.split(',') : Array.isArray(filter) ? filter : []).map((e) => String(e ?? '').trim()).filter(Boolean);
  if (entries.length === 0) return true;
  const allow = entries.filter((e) => !e.startsWith('!'));
  const block = entries.filter((e) => e.startsWith('!')).map((e) => e.slice(1));
  if (allow.length > 0 && !allow.some((a) => name.endsWith(a))) return false;
  return !block.some((b) => name.endsWith(b));
}

/** The signed-in user's provider tokens (the oauth area's sessions; app.ts connects them). */
export interface UserOAuthTokens {
  /** The access token of the OAuth session `sessionId` (else the user's newest), refreshed when due. */
  accessTokenFor(userId: string, sessionId: string | null): Promise<string | null>;
  /** The user's token at a tool server's own authorization server (`<type>:<server id>`). */
  clientAccessTokenFor(userId: string, key: string): Promise<string | null>;
}

/**
 * The connection's Authorization and custom headers (build_tool_server_headers): its key (`bearer`),
 * the caller's Parley token (`session`) or the caller's identity-provider token (`system_oauth`).
 */
export function connectionHeaders(connection: Json, token: string | null, oauthToken: string | null = null): Record<string, string> {
  const headers: Record<string, string> = {};
  const authType = connection.auth_type ?? 'bearer';
  if (authType === 'bearer') headers.authorization = `Bearer ${typeof connection.key === 'string' ? connection.key : ''}`;
  else if (authType === 'session' && token) headers.authorization = `Bearer ${token}`;
  else if ((authType === 'system_oauth' || authType === 'oauth_2.1' || authType === 'oauth_2.1_static') && oauthToken) headers.authorization = `Bearer ${oauthToken}`;
  if (isObject(connection.headers)) for (const [name, value] of Object.entries(connection.headers)) if (typeof value === 'string') headers[name] = value;
  return headers;
}

/** An answer as the model reads it: JSON parsed, text as is, other bytes as a data URI. */
function replyValue(reply: Reply): unknown {
  const text = reply.body.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    const type = reply.contentType.split(';')[0].trim();
    return type.startsWith('text/') || !type ? text : `data:${type};base64,${reply.body.toString('base64')}`;
  }
}

/** How long a tool server (OpenAPI or MCP) has to answer a call: AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER, else AIOHTTP_CLIENT_TIMEOUT. */
export function toolServerCallTimeoutMs(raw: Record<string, string | undefined>): number {
  const general = int(raw.AIOHTTP_CLIENT_TIMEOUT, 300);
  return Math.max(1, int(raw.AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER, general > 0 ? general : 300)) * 1000;
}

export class ToolServers {
  private readonly dataTimeoutMs: number;
  private readonly callTimeoutMs: number;
  private readonly guarded: GuardedFetch;
  private oauthTokens: UserOAuthTokens | null = null;

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
  ) {
    const raw = core.env.raw;
    this.dataTimeoutMs = Math.max(1, int(raw.AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER_DATA, 10)) * 1000;
    this.callTimeoutMs = toolServerCallTimeoutMs(raw);
    this.guarded = new GuardedFetch(webFetchPolicyFromEnv(raw));
  }

  connectOAuth(tokens: UserOAuthTokens): void {
    this.oauthTokens = tokens;
  }

  /**
   * The user's OAuth access token for the connection: the sign-in provider's (`system_oauth`) or the
   * one the user authorized at the server's own authorization server (`oauth_2.1`); null otherwise.
   */
  async oauthTokenFor(connection: Json, user: UserRecord, cookie: string | null): Promise<string | null> {
    if (!this.oauthTokens) return null;
    if (connection.auth_type === 'system_oauth') {
      const sessionId = cookie ? (parseCookie(cookie).oauth_session_id ?? null) : null;
      return this.oauthTokens.accessTokenFor(user.id, sessionId);
    }
    if (connection.auth_type === 'oauth_2.1' || connection.auth_type === 'oauth_2.1_static') {
      const info = isObject(connection.info) ? connection.info : {};
      return this.oauthTokens.clientAccessTokenFor(user.id, `${typeof connection.type === 'string' ? connection.type : 'openapi'}:${String(info.id ?? '')}`);
    }
    return null;
  }

  /** Configured servers: Parley's own fetch (an admin chose the address). */
  private readonly direct: Transport = async (url, init) => {
    const response = await fetch(url, { ...init, redirect: 'follow' });
    const body = Buffer.from(await response.arrayBuffer());
    return { status: response.status, contentType: response.headers.get('content-type') ?? '', body };
  };

  /** Users' servers: through the URL guard. */
  private readonly checked: Transport = async (url, init) => {
    const reply = await this.guarded.get(url, { ...init, maxBytes: MAX_REPLY_BYTES });
    const type = reply.headers['content-type'];
    return { status: reply.status, contentType: typeof type === 'string' ? type : '', body: reply.body };
  };

  /** The configured connections (enabled or not) with their ids: `info.id`, else their index. */
  connections(type: 'openapi' | 'mcp'): { id: string; connection: Json }[] {
    const list = this.core.settings.get<unknown>('tool_server.connections');
    if (!Array.isArray(list)) return [];
    return list.flatMap((connection, index) => {
      if (!isObject(connection) || (connection.type ?? 'openapi') !== type) return [];
      const info = isObject(connection.info) ? connection.info : {};
      return [{ id: typeof info.id === 'string' && info.id ? info.id : String(index), connection }];
    });
  }

  /** Whether the user may use a connection (has_connection_access): its `config.access_grants`; none means admins with the bypass only. */
  async mayUse(user: UserRecord, connection: Json): Promise<boolean> {
    const config = isObject(connection.config) ? connection.config : {};
    const grants = Array.isArray(config.access_grants) ? (config.access_grants.filter(isObject) as unknown as AccessGrant[]) : [];
    const subject = await this.access.subjectOf(user);
    return subject.bypass || (grants.length > 0 && this.access.admits(subject, 'read', '', grants));
  }

  /**
   * The enabled servers the user may use, as entries of the tool list (routers/tools.py
   * get_tools): `server:<id>` named by `info.name` (the reference shows the document's
   * title, which `info.name` overrides), `server:mcp:<info.id>`.
   */
  async listed(user: UserRecord): Promise<Json[]> {
    const now = this.core.clock.now();
    const entries: Json[] = [];
    for (const type of ['openapi', 'mcp'] as const) {
      for (const { id, connection } of this.connections(type)) {
        const config = isObject(connection.config) ? connection.config : {};
        const info = isObject(connection.info) ? connection.info : {};
        if (!config.enable || (type === 'mcp' && !info.id) || !(await this.mayUse(user, connection))) continue;
        const toolId = type === 'mcp' ? `server:mcp:${id}` : `server:${id}`;
        const name = typeof info.name === 'string' && info.name ? info.name : type === 'mcp' ? 'MCP Tool Server' : 'Tool Server';
        const description = typeof info.description === 'string' ? info.description : '';
        entries.push({ id: toolId, user_id: toolId, name, meta: { description }, access_grants: [], updated_at: now, created_at: now, user: null, has_user_valves: false });
      }
    }
    return entries;
  }

  async select(request: ToolServerRequest): Promise<ToolServerSelection> {
    const selection: ToolServerSelection = { functions: [], notices: [], systemPrompts: [] };
    const wanted = toolServerIds(request.toolIds, 'openapi');
    if (wanted.length > 0) {
      const configured = this.connections('openapi');
      await Promise.all(
        wanted.map(async (id) => {
          const entry = configured.find((c) => c.id === id);
          const config = entry && isObject(entry.connection.config) ? entry.connection.config : {};
          if (!entry || !config.enable || !(await this.mayUse(request.user, entry.connection))) {
            this.core.log.warn({ serverId: id, userId: request.user.id }, 'Selected tool server is missing, disabled or not usable; skipped');
            return;
          }
          const oauthToken = await this.oauthTokenFor(entry.connection, request.user, request.cookie);
          await this.addConfigured(selection, id, entry.connection, config, connectionHeaders(entry.connection, request.token, oauthToken));
        }),
      );
    }
    for (const server of Array.isArray(request.directServers) ? request.directServers.filter(isObject) : []) this.addDirect(selection, server, request);
    return selection;
  }

  private async addConfigured(selection: ToolServerSelection, id: string, connection: Json, config: Json, headers: Record<string, string>): Promise<void> {
    const url = typeof connection.url === 'string' ? connection.url.replace(/\/+$/, '') : '';
    let doc: Json;
    try {
      doc = await this.document(connection, headers);
    } catch (error) {
      this.core.log.warn({ err: error, serverId: id, url }, 'Tool server could not be read; skipped');
      const info = isObject(connection.info) ? connection.info : {};
      selection.notices.push(`Failed to connect to ${typeof info.name === 'string' && info.name ? info.name : url} OpenAPI tool server`);
      return;
    }
    const functions = this.operationFunctions(id, doc, url, { 'content-type': 'application/json', ...headers });
    selection.functions.push(...functions.filter((fn) => functionAllowed(String(fn.spec.name), config.function_name_filter_list)));
  }

  /** Every operation of an admin's server's document as a function, called at `url` with `headers`. */
  private operationFunctions(source: string, doc: Json, url: string, headers: Record<string, string>): ChatFunction[] {
    return openApiToolSpecs(doc).map((spec) => {
      const name = String(spec.name);
      return { source, spec, run: (args, _user, extras) => this.call(this.direct, doc, url, name, args, headers, extras) };
    });
  }

  /**
   * A terminal's operations (`terminal_id`): `run_command` is told the working directory, and
   * calls that change what the frontend's file pane shows are announced to it (terminal_event_handler).
   */
  terminalFunctions(terminal: ChatTerminal): ChatFunction[] {
    return this.operationFunctions(`terminal:${terminal.id}`, terminal.doc, terminal.url, terminal.headers).map((fn) => {
      const name = String(fn.spec.name);
      const spec = name === 'run_command' && terminal.cwd ? { ...fn.spec, description: `${String(fn.spec.description ?? '')}\n\nThe current working directory is: ${terminal.cwd}` } : fn.spec;
      return {
        ...fn,
        spec,
        run: async (args, user, extras) => {
          const outcome = await fn.run(args, user, extras);
          const event = terminalEvent(name, args, outcome.text);
          if (event) await extras.eventEmitter?.(event);
          return outcome;
        },
      };
    });
  }

  /** A connection's OpenAPI document: its inline `spec` (`spec_type: json`) or the one at `path`. */
  private async document(connection: Json, headers: Record<string, string>): Promise<Json> {
    let doc: unknown;
    if (connection.spec_type === 'json') doc = JSON.parse(typeof connection.spec === 'string' ? connection.spec : '');
    else {
      const reply = await this.direct(documentUrl(String(connection.url ?? ''), typeof connection.path === 'string' ? connection.path : null), {
        method: 'GET',
        headers: { accept: 'application/json', ...headers },
        signal: AbortSignal.timeout(this.dataTimeoutMs),
      });
      if (reply.status !== 200) throw new Error(`HTTP ${reply.status}`);
      doc = JSON.parse(reply.body.toString('utf8'));
    }
    if (!isObject(doc) || !isObject(doc.paths)) throw new Error("not an OpenAPI document (no 'paths')");
    return doc;
  }

  private addDirect(selection: ToolServerSelection, server: Json, request: ToolServerRequest): void {
    const { specs, system_prompt: systemPrompt, ...described } = server;
    const doc = isObject(server.openapi) ? server.openapi : null;
    const list = Array.isArray(specs) ? specs.filter(isObject) : doc ? openApiToolSpecs(doc) : [];
    if (typeof systemPrompt === 'string' && systemPrompt) selection.systemPrompts.push(systemPrompt);
    const url = typeof server.url === 'string' ? server.url : '';
    const info = isObject(server.info) ? server.info : {};
    const source = typeof info.id === 'string' && info.id ? info.id : 'direct';
    for (const spec of list) {
      const name = typeof spec.name === 'string' ? spec.name : '';
      if (!name) continue;
      selection.functions.push({
        source,
        spec,
        run: async (args, _user, extras) => {
          if (request.browserCalls && extras.eventCall) {
            const result = await extras.eventCall({ type: 'execute:tool', data: { id: crypto.randomUUID(), name, params: args, server: described, session_id: extras.metadata?.session_id ?? null } });
            // The frontend answers `[data, headers]`, or an error object.
            return textOutcome(toolServerText(Array.isArray(result) && result.length === 2 ? result[0] : result));
          }
          if (!doc || !url) return textOutcome(toolServerText({ error: 'The tool server sent no OpenAPI document to call it with' }));
          return this.call(this.checked, doc, url, name, args, { 'content-type': 'application/json', ...connectionHeaders(server, request.token) }, extras);
        },
      });
    }
  }

  /** One operation call; failures are the `{error}` the model reads, as the reference. */
  private async call(transport: Transport, doc: Json, url: string, name: string, args: Json, headers: Record<string, string>, extras: ToolCallExtras) {
    const signals = [AbortSignal.timeout(this.callTimeoutMs), ...(extras.signal ? [extras.signal] : [])];
    try {
      const request = operationRequest(doc, url, name, args);
      const reply = await transport(request.url, { method: request.method, headers, ...(request.body !== undefined ? { body: request.body } : {}), signal: AbortSignal.any(signals) });
      if (reply.status >= 400) throw new Error(`HTTP error ${reply.status}: ${reply.body.toString('utf8')}`);
      return textOutcome(toolServerText(replyValue(reply)));
    } catch (error) {
      if (extras.signal?.aborted) throw error;
      const message = error instanceof Error ? (error.name === 'TimeoutError' ? `The tool server did not answer within ${this.callTimeoutMs / 1000} s` : error.message) : String(error);
      return textOutcome(toolServerText({ error: message }));
    }
  }
}

/**
 * The `terminal:*` event a terminal call announces: `display_file` (unless the file does not
 * exist) and `write_file`/`replace_file_content` with the path, `run_command` without data.
 */
function terminalEvent(name: string, args: Json, resultText: string): Json | null {
  const path = typeof args.path === 'string' ? args.path : '';
  if (name === 'run_command') return { type: 'terminal:run_command', data: {} };
  if (!path) return null;
  if (name === 'write_file' || name === 'replace_file_content') return { type: `terminal:${name}`, data: { path } };
  if (name !== 'display_file') return null;
  try {
    const result: unknown = JSON.parse(resultText);
    if (isObject(result) && result.exists === false) return null;
  } catch {
    // not JSON: the file is shown
  }
  return { type: 'terminal:display_file', data: { path } };
}
