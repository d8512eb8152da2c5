import type { Readable } from 'node:stream';
import type { AccessService } from '../../core/access/service.js';
import type { AccessGrant } from '../../core/access/grants.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { UpstreamService } from '../../core/upstream/service.js';

/**
 * Terminal servers (0.11.0 routers/terminals.py): the admin's
 * `terminal_server.connections` (Open Terminal servers or orchestrators). A
 * user lists those they may use and reaches them through Parley: HTTP requests
 * and the interactive websocket, with the connection's credential added and
 * the user named (`X-User-Id`, and `user_id` on the websocket), so an
 * orchestrator applies its per-user policy. A connection with a `policy_id` is
 * reached through the orchestrator's route for that policy (`/p/{policy_id}`).
 */
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A refusal in the proxy's own shape, `{"error": ...}`, as the reference answers. */
export class TerminalRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The websocket close code for the same refusal. */
    readonly closeCode = 4003,
  ) {
    super(message);
  }
}

/** Headers of the terminal's answer that describe its hop, not the answer. */
const STRIPPED_RESPONSE_HEADERS = new Set(['transfer-encoding', 'connection', 'content-encoding', 'content-length', 'keep-alive']);

/** How long a proxied request may take (the reference's total timeout). */
const PROXY_TIMEOUT_MS = 300_000;

export interface ChatTerminal {
  id: string;
  /** Where its operations are called (the policy route included). */
  url: string;
  headers: Record<string, string>;
  /** Its OpenAPI document. */
  doc: Json;
  cwd: string | null;
  systemPrompt: string | null;
}

export interface TerminalAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Readable;
}

/**
 * A proxied path made safe (_sanitize_proxy_path): decoded until stable (8 rounds at
 * most, and still encoded after that is refused), no backslash, normalised, no way
 * above the server's base; a trailing slash is kept. Null when refused.
 */
export function sanitizeProxyPath(path: string): string | null {
  let decoded = path;
  for (let round = 0; round < 8; round++) {
    const once = decodeOnce(decoded);
    if (once === null) return null;
    if (once === decoded) break;
    decoded = once;
  }
  if (decodeOnce(decoded) !== decoded) return null;
  if (decoded.includes('\\') || decoded.includes('\0')) return null;
  const trailing = decoded.endsWith('/');
  const parts: string[] = [];
  for (const part of decoded.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) return null;
      parts.pop();
    } else parts.push(part);
  }
  let cleaned = parts.join('/');
  if (cleaned === '') return null;
  if (trailing) cleaned += '/';
  return cleaned;
}

function decodeOnce(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** How long a terminal server's tools document and system prompt are kept (the server may change them). */
const SPEC_KEPT_MS = 5 * 60_000;

/** Tools documents kept at most (one per server and connection setting; per user for session auth). */
const SPECS_KEPT = 200;

export class TerminalsService {
  private readonly extraHeaders: Record<string, string>;
  /**
   * Each server's tools document and system prompt, as the reference keeps them between chat turns
   * (app.state.TERMINAL_SERVERS): by the connection as configured (a changed setting asks again)
   * and, when the server is reached with the user's own credentials, by user.
   */
  private readonly specs = new Map<string, { at: number; doc: unknown; systemPrompt: string | null }>();

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly upstream: UpstreamService,
  ) {
    this.extraHeaders = proxyHeaders(core.env.raw.TERMINAL_PROXY_HEADERS);
  }

  private connections(): Json[] {
    const list = this.core.settings.get<unknown>('terminal_server.connections');
    return Array.isArray(list) ? list.filter(isObject) : [];
  }

  /**
   * has_connection_access: a bypassing admin always; a connection without grants
   * is the admins'; otherwise its `config.access_grants` decide (read).
   */
  async mayUse(user: UserRecord, connection: Json): Promise<boolean> {
    const config = isObject(connection.config) ? connection.config : {};
    const grants = Array.isArray(config.access_grants) ? (config.access_grants.filter(isObject) as unknown as AccessGrant[]) : [];
    const subject = await this.access.subjectOf(user);
    if (subject.bypass) return true;
    if (grants.length === 0) return isAdmin(user);
    return this.access.admits(subject, 'read', '', grants);
  }

  /** `GET /api/v1/terminals/`: the enabled servers the user may use. */
  async list(user: UserRecord): Promise<{ id: string; url: string; name: string }[]> {
    const listed = [];
    for (const connection of this.connections()) {
      if (connection.enabled === false || !(await this.mayUse(user, connection))) continue;
      listed.push({ id: String(connection.id ?? ''), url: String(connection.url ?? ''), name: String(connection.name ?? '') });
    }
    return listed;
  }

  /** The connection a user reaches by id, or the reference's refusal (404, 403 disabled, 403 denied). */
  async reachable(user: UserRecord, serverId: string): Promise<{ connection: Json; baseUrl: string }> {
    const connection = this.connections().find((c) => c.id === serverId);
    if (!connection) throw new TerminalRefusal(404, `Terminal server '${serverId}' not found`, 4004);
    if (connection.enabled === false) throw new TerminalRefusal(403, 'Terminal server disabled');
    if (!(await this.mayUse(user, connection))) throw new TerminalRefusal(403, 'Access denied');
    const baseUrl = terminalServerUrl(connection);
    if (!baseUrl) throw new TerminalRefusal(503, 'Terminal server URL not configured');
    return { connection, baseUrl };
  }

  /**
   * The credential a terminal call carries: the connection's key (`bearer`, the
   * default), the caller's own session token and cookies (`session`), or none.
   * Parley keeps no OAuth sessions, so `system_oauth` sends no credential.
   */
  credentials(connection: Json, caller: { token: string | null; cookie: string | null }): Record<string, string> {
    const authType = connection.auth_type ?? 'bearer';
    if (authType === 'bearer') {
      const key = bearerToken(connection.key);
      return key ? { authorization: `Bearer ${key}` } : {};
    }
    if (authType === 'session') return { ...(caller.token ? { authorization: `Bearer ${caller.token}` } : {}), ...(caller.cookie ? { cookie: caller.cookie } : {}) };
    return {};
  }

  /** One HTTP request through to the terminal server; its answer is relayed as it arrives. */
  async proxy(
    user: UserRecord,
    serverId: string,
    request: { method: string; path: string; query: string; contentType: string | null; sessionId: string | null; body: Buffer | null; token: string | null; cookie: string | null; signal: AbortSignal },
  ): Promise<TerminalAnswer> {
    const { connection, baseUrl } = await this.reachable(user, serverId);
    const safePath = sanitizeProxyPath(request.path);
    if (safePath === null) throw new TerminalRefusal(400, 'Invalid path');
    const url = `${baseUrl}/${safePath}${request.query ? `?${request.query}` : ''}`;
    const headers: Record<string, string> = {
      'x-user-id': user.id,
      ...(request.sessionId ? { 'x-session-id': request.sessionId } : {}),
      ...this.credentials(connection, request),
      ...(request.contentType ? { 'content-type': request.contentType } : {}),
    };
    try {
      const response = await this.upstream.client.send({
        url,
        method: request.method,
        headers,
        body: request.body && request.body.length > 0 ? request.body : null,
        signal: request.signal,
        timeoutMs: PROXY_TIMEOUT_MS,
      });
      const relayed: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined && !STRIPPED_RESPONSE_HEADERS.has(name.toLowerCase())) relayed[name] = value;
      }
      return { status: response.status, headers: { ...relayed, ...this.extraHeaders }, body: response.body };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.core.log.warn({ server: serverId, err: message }, 'Terminal proxy error');
      throw new TerminalRefusal(502, `Terminal proxy error: ${message}`);
    }
  }

  /** The terminal server's websocket for a session: its URL (the user named) and what to send first. */
  async socketTarget(user: UserRecord, serverId: string, sessionId: string): Promise<{ url: string; firstMessage: string | null; connection: Json }> {
    const { connection, baseUrl } = await this.reachable(user, serverId);
    // A dot segment would be resolved away by the URL, reaching another path of the server.
    if (sessionId === '.' || sessionId === '..') throw new TerminalRefusal(400, 'Invalid session id');
    const base = baseUrl.replace(/^https:\/\//, 'wss://').replace(/^http:\/\//, 'ws://');
    // The session id is one opaque segment: it cannot smuggle a query that names another user.
    const url = `${base}/api/terminals/${encodeURIComponent(sessionId)}?${new URLSearchParams({ user_id: user.id })}`;
    const key = bearerToken(connection.key);
    const firstMessage = (connection.auth_type ?? 'bearer') === 'bearer' ? JSON.stringify({ type: 'auth', token: key }) : null;
    return { url, firstMessage, connection };
  }

  /**
   * A terminal as a chat's tools (`terminal_id`, utils/tools.get_terminal_tools):
   * its OpenAPI document (`path`, `/openapi.json` by default), the headers its
   * calls carry (credential, the user, the chat as `X-Session-Id` for the working
   * directory), and what the model is told: the working directory and the
   * server's own system prompt when it offers one. Refusals and failures are errors
   * with the reference's words.
   */
  async chatTerminal(user: UserRecord, terminalId: string, caller: { token: string | null; cookie: string | null; chatId: string | null }): Promise<ChatTerminal> {
    let reached: { connection: Json; baseUrl: string };
    try {
      reached = await this.reachable(user, terminalId);
    } catch (error) {
      if (!(error instanceof TerminalRefusal)) throw error;
      if (error.status === 404) throw new Error(`Terminal server '${terminalId}' not found`);
      if (error.message === 'Access denied') throw new Error(`Access denied to terminal ${terminalId}`);
      if (error.status === 403) throw new Error(`Terminal server '${terminalId}' is disabled`);
      throw new Error(error.message);
    }
    const { connection, baseUrl } = reached;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-user-id': user.id,
      ...this.credentials(connection, caller),
      ...(caller.chatId ? { 'x-session-id': caller.chatId } : {}),
    };
    const [{ doc, systemPrompt }, cwd] = await Promise.all([
      this.spec(user, connection, baseUrl, headers),
      // The working directory is the chat's session's: asked every turn.
      this.getJson(`${baseUrl}/files/cwd`, headers, 5_000).catch(() => null),
    ]).catch((error: unknown) => {
      this.core.log.warn({ terminal: terminalId, err: error instanceof Error ? error.message : String(error) }, 'Terminal server unavailable');
      throw new Error(`Terminal server '${terminalId}' is unavailable`);
    });
    if (!isObject(doc) || !isObject(doc.paths)) throw new Error(`Terminal server '${terminalId}' has no available tools`);
    return { id: terminalId, url: baseUrl, headers, doc, cwd: isObject(cwd) && typeof cwd.cwd === 'string' ? cwd.cwd : null, systemPrompt };
  }

  /** The server's tools document (`path`, `/openapi.json` by default) and system prompt, kept for SPEC_KEPT_MS once read with tools. */
  private async spec(user: UserRecord, connection: Json, baseUrl: string, headers: Record<string, string>): Promise<{ doc: unknown; systemPrompt: string | null }> {
    const key = `${(connection.auth_type ?? 'bearer') === 'session' ? user.id : ''}\n${JSON.stringify(connection)}`;
    const now = Date.now();
    const kept = this.specs.get(key);
    if (kept && now - kept.at < SPEC_KEPT_MS) return kept;
    const path = typeof connection.path === 'string' && connection.path ? connection.path : '/openapi.json';
    const [doc, systemPrompt] = await Promise.all([
      this.getJson(path.includes('://') ? path : `${baseUrl}${path.startsWith('/') ? '' : '/'}${path}`, headers, 10_000),
      this.systemPrompt(baseUrl, headers).catch(() => null),
    ]);
    // A document without tools is asked again next turn: the server may be starting.
    if (isObject(doc) && isObject(doc.paths)) {
      if (this.specs.size >= SPECS_KEPT) this.specs.clear();
      this.specs.set(key, { at: now, doc, systemPrompt });
    }
    return { doc, systemPrompt };
  }

  /** The server's system prompt (`/system`), asked only when `/api/config` lists the `system` feature. */
  private async systemPrompt(baseUrl: string, headers: Record<string, string>): Promise<string | null> {
    const config = await this.getJson(`${baseUrl}/api/config`, headers, 3_000);
    if (!isObject(config) || !isObject(config.features) || !config.features.system) return null;
    const answer = await this.getJson(`${baseUrl}/system`, headers, 3_000);
    return isObject(answer) && typeof answer.prompt === 'string' && answer.prompt ? answer.prompt : null;
  }

  private async getJson(url: string, headers: Record<string, string>, timeoutMs: number): Promise<unknown> {
    const response = await this.upstream.client.send({ url, headers: { ...headers, accept: 'application/json' }, timeoutMs });
    const text = await response.body.text();
    if (response.status !== 200) throw new Error(`HTTP ${response.status} from ${url}`);
    return JSON.parse(text) as unknown;
  }

  async sessionEvent(user: UserRecord, event: 'terminal.session.opened' | 'terminal.session.closed', sessionId: string, serverId: string): Promise<void> {
    await this.core.events.publish({ event, actor: user, subjectId: sessionId, subjectType: 'terminal.session', data: { server_id: serverId } });
  }
}

/** The connection's base URL, through the orchestrator's policy route when it names one (utils/terminals.py). */
export function terminalServerUrl(connection: Json): string {
  const base = String(connection.url ?? '').replace(/\/+$/, '');
  const policyId = String(connection.policy_id ?? '').trim();
  return policyId ? `${base}/p/${encodeURIComponent(policyId)}` : base;
}

/** A key as a bare token (normalize_bearer_token): a pasted `Bearer ` prefix removed. */
function bearerToken(key: unknown): string {
  return typeof key === 'string' ? key.trim().replace(/^bearer\s+/i, '') : '';
}

/** `TERMINAL_PROXY_HEADERS`: a JSON object of headers added to every proxied answer; anything else adds none. */
function proxyHeaders(raw: string | undefined): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(raw ?? '{}');
    return isObject(parsed) ? Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)])) : {};
  } catch {
    return {};
  }
}
