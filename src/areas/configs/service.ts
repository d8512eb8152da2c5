import { int } from '../../config/env.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { retryOnDeadlock } from '../../core/db/database.js';
import { badRequest, HttpError } from '../../core/http/errors.js';
import { OAuthClients, type OAuthRegistration } from './oauth-clients.js';
import { bodyOf, callRemote, listMcpToolSpecs, wellKnownUrls } from './remote.js';
import type {
  BannerModel,
  CodeInterpreterConfigForm,
  ConnectionsConfigForm,
  ModelsConfigForm,
  ModelsDefaultsResponse,
  PromptSuggestion,
  SubagentsConfigForm,
  TerminalServerConnection,
  TerminalServerLifecycleForm,
  TerminalServerPolicyForm,
  TerminalServerRefreshForm,
  ToolServerConnection,
} from './schemas.js';
import {
  BANNERS,
  CODE_EXECUTION_CONFIG_KEYS,
  CONNECTIONS_CONFIG_KEYS,
  DEFAULT_MODEL_METADATA,
  MODELS_CONFIG_KEYS,
  PROMPT_SUGGESTIONS,
  SUBAGENTS_CONFIG_KEYS,
  TERMINAL_SERVER_CONNECTIONS,
  TOOL_SERVER_CONNECTIONS,
} from './settings.js';

type KeyMap = Readonly<Record<string, string>>;
type Values = Record<string, unknown>;

interface ConfigEvent {
  event: string;
  subjectId: string;
  /** Computed after the write, so it sees the stored values. */
  data: () => Record<string, unknown>;
}

const OAUTH_AUTH_TYPES = new Set(['oauth_2.1', 'oauth_2.1_static']);

/** Python's repr of a list of strings, as the reference puts it into one of its messages. */
const pythonList = (items: string[]) => `[${items.map((item) => `'${item}'`).join(', ')}]`;

/**
 * The rules of `/api/v1/configs`: each form reads and writes a fixed set of
 * persistent settings, every write is one transaction together with its event,
 * and calls out to configured servers run under a deadline.
 */
export class ConfigsService {
  /** Deadline of every call to a configured server (the reference's tool-server data timeout). */
  private readonly remoteTimeoutMs: number;

  constructor(private readonly core: Core) {
    this.remoteTimeoutMs = Math.max(1, int(core.env.raw.AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER_DATA, 10)) * 1000;
    this.oauthClients = new OAuthClients(core.env.raw.OAUTH_CLIENT_INFO_ENCRYPTION_KEY || core.env.secretKey, () => this.deadline());
  }

  private readonly oauthClients: OAuthClients;

  /** The form's fields with their stored values; the settings' checks keep them of the form's types. */
  private valuesOf<T = Values>(keys: KeyMap): T {
    return Object.fromEntries(Object.entries(keys).map(([field, key]) => [field, this.core.settings.get(key)])) as T;
  }

  private updatesOf(form: Values, keys: KeyMap): Values {
    return Object.fromEntries(Object.entries(form).filter(([field]) => field in keys).map(([field, value]) => [keys[field], value]));
  }

  /**
   * Checks the values against the settings' rules, then writes them and publishes
   * the event in one transaction. If anything fails the store is reloaded, so the
   * in-memory values never run ahead of the database.
   */
  private async write(user: UserRecord, updates: Values, event: ConfigEvent | null): Promise<void> {
    const { settings, events, clock } = this.core;
    await settings.update(updates, clock.now(), {
      refused: (problems) => badRequest(`Invalid config: ${problems.join('; ')}`),
      alongside: async (trx) => {
        if (!event) return;
        await events.publish({ event: event.event, actor: user, subjectId: event.subjectId, subjectType: 'config', data: event.data() }, trx);
      },
    });
  }

  private async writeForm<T extends Values>(
    user: UserRecord,
    form: T,
    keys: KeyMap,
    event: Omit<ConfigEvent, 'data'> & { data?: ConfigEvent['data'] },
  ): Promise<T> {
    await this.write(user, this.updatesOf(form, keys), { ...event, data: event.data ?? (() => this.valuesOf(keys)) });
    return this.valuesOf<T>(keys);
  }

  exportAll(): Values {
    return this.core.settings.all();
  }

  namespace(namespace: string): Values {
    return this.core.settings.namespace(namespace);
  }

  /** Every key or nothing: a value a known setting refuses fails the whole import. */
  async importConfig(user: UserRecord, config: Values): Promise<Values> {
    const { settings, events, db, clock } = this.core;
    const problems = await settings.validate(config);
    if (problems.length > 0) throw badRequest(`Invalid config: ${problems.join('; ')}`);
    try {
      // Replacing imported webhooks deletes rows the delivery dispatcher may hold: PostgreSQL can pick
      // the import as a deadlock victim, and then it is simply run again.
      await retryOnDeadlock(() =>
        db.transaction().execute(async (trx) => {
          await settings.set(config, clock.now(), trx);
          await events.publish({ event: 'config.imported', actor: user, subjectId: 'import', data: { keys: Object.keys(config) } }, trx);
        }),
      );
    } catch (error) {
      await settings.reload();
      throw error;
    }
    return settings.all();
  }

  connections(): ConnectionsConfigForm {
    return this.valuesOf(CONNECTIONS_CONFIG_KEYS);
  }

  setConnections(user: UserRecord, form: ConnectionsConfigForm): Promise<ConnectionsConfigForm> {
    return this.writeForm(user, form, CONNECTIONS_CONFIG_KEYS, { event: 'config.connections.updated', subjectId: 'connections' });
  }

  toolServers(): { TOOL_SERVER_CONNECTIONS: unknown } {
    return { TOOL_SERVER_CONNECTIONS: this.core.settings.get(TOOL_SERVER_CONNECTIONS) };
  }

  async setToolServers(user: UserRecord, connections: ToolServerConnection[]): Promise<{ TOOL_SERVER_CONNECTIONS: unknown }> {
    await this.write(
      user,
      { [TOOL_SERVER_CONNECTIONS.key]: connections },
      {
        event: 'config.tool_servers.updated',
        subjectId: TOOL_SERVER_CONNECTIONS.key,
        data: () => ({ count: connections.length, types: connections.map((c) => c.type ?? 'openapi') }),
      },
    );
    return { TOOL_SERVER_CONNECTIONS: connections };
  }

  terminalServers(): { TERMINAL_SERVER_CONNECTIONS: unknown } {
    return { TERMINAL_SERVER_CONNECTIONS: this.core.settings.get(TERMINAL_SERVER_CONNECTIONS) };
  }

  /** Policies and lifecycles live on the orchestrator, so they are not stored with the connection. */
  async setTerminalServers(user: UserRecord, connections: TerminalServerConnection[]): Promise<{ TERMINAL_SERVER_CONNECTIONS: unknown }> {
    const stored = connections.map((connection) => {
      const { policy: _policy, lifecycle: _lifecycle, ...rest } = connection as Values;
      return rest;
    });
    await this.write(
      user,
      { [TERMINAL_SERVER_CONNECTIONS.key]: stored },
      { event: 'config.terminal_servers.updated', subjectId: TERMINAL_SERVER_CONNECTIONS.key, data: () => ({ count: stored.length }) },
    );
    return { TERMINAL_SERVER_CONNECTIONS: stored };
  }

  codeExecution(): CodeInterpreterConfigForm {
    return this.valuesOf(CODE_EXECUTION_CONFIG_KEYS);
  }

  setCodeExecution(user: UserRecord, form: CodeInterpreterConfigForm): Promise<CodeInterpreterConfigForm> {
    return this.writeForm(user, form, CODE_EXECUTION_CONFIG_KEYS, {
      event: 'config.code_execution.updated',
      subjectId: 'code_execution',
      data: () => {
        const values = this.codeExecution();
        return {
          code_execution_enabled: values.ENABLE_CODE_EXECUTION,
          code_execution_engine: values.CODE_EXECUTION_ENGINE,
          code_interpreter_enabled: values.ENABLE_CODE_INTERPRETER,
          code_interpreter_engine: values.CODE_INTERPRETER_ENGINE,
        };
      },
    });
  }

  modelsDefaults(): ModelsDefaultsResponse {
    return { DEFAULT_MODEL_METADATA: this.core.settings.get(DEFAULT_MODEL_METADATA) };
  }

  models(): ModelsConfigForm {
    return this.valuesOf(MODELS_CONFIG_KEYS);
  }

  setModels(user: UserRecord, form: ModelsConfigForm): Promise<ModelsConfigForm> {
    return this.writeForm(user, form, MODELS_CONFIG_KEYS, {
      event: 'config.models.updated',
      subjectId: 'models',
      data: () => ({
        default_models: form.DEFAULT_MODELS,
        default_pinned_models: form.DEFAULT_PINNED_MODELS,
        model_order_count: form.MODEL_ORDER_LIST.length,
      }),
    });
  }

  subagents(): SubagentsConfigForm {
    return this.valuesOf(SUBAGENTS_CONFIG_KEYS);
  }

  setSubagents(user: UserRecord, form: SubagentsConfigForm): Promise<SubagentsConfigForm> {
    return this.writeForm(user, form, SUBAGENTS_CONFIG_KEYS, {
      event: 'config.subagents.updated',
      subjectId: 'subagents',
      data: () => ({ enabled: form.ENABLE_SUBAGENTS }),
    });
  }

  async setSuggestions(user: UserRecord, suggestions: PromptSuggestion[]): Promise<PromptSuggestion[]> {
    await this.write(
      user,
      { [PROMPT_SUGGESTIONS.key]: suggestions },
      { event: 'config.suggestions.updated', subjectId: PROMPT_SUGGESTIONS.key, data: () => ({ count: suggestions.length }) },
    );
    return this.core.settings.get(PROMPT_SUGGESTIONS) as PromptSuggestion[];
  }

  banners(): BannerModel[] {
    return (this.core.settings.get(BANNERS) ?? []) as BannerModel[];
  }

  async setBanners(user: UserRecord, banners: BannerModel[]): Promise<BannerModel[]> {
    await this.write(
      user,
      { [BANNERS.key]: banners },
      { event: 'config.banners.updated', subjectId: BANNERS.key, data: () => ({ count: banners.length }) },
    );
    return this.banners();
  }

  /** `POST /oauth/clients/register` (oauth-clients.ts): any failure is the reference's 400. */
  async registerOAuthClient(form: OAuthRegistration, type: string | undefined, requestBase: string): Promise<Values> {
    const redirectBase = this.core.settings.get<string>('webui.url') || requestBase;
    try {
      return await this.oauthClients.register(form, type, redirectBase);
    } catch (error) {
      this.core.log.debug({ err: error, url: form.url }, 'OAuth client registration failed');
      throw badRequest('Failed to register OAuth client');
    }
  }

  private deadline(): AbortSignal {
    return AbortSignal.timeout(this.remoteTimeoutMs);
  }

  private static bearer(authType: string | null | undefined, key: string | null | undefined): Record<string, string> {
    return authType === 'bearer' && key ? { authorization: `Bearer ${key}` } : {};
  }

  /** Tells an orchestrator (it has a policies API) from a plain terminal server. */
  async verifyTerminalServer(form: TerminalServerConnection): Promise<Values> {
    const base = (form.url ?? '').replace(/\/+$/, '');
    if (!base) throw badRequest('Terminal server URL is required');
    const headers = ConfigsService.bearer(form.auth_type, form.key);
    const signal = this.deadline();
    for (const [path, type] of [
      ['/api/v1/policies', 'orchestrator'],
      ['/api/config', 'terminal'],
    ] as const) {
      try {
        const response = await callRemote(`${base}${path}`, { headers, signal });
        await response.body?.cancel();
        if (response.ok) return { status: true, type };
      } catch {
        // unreachable or timed out: try the next kind, then give the reference's answer
      }
    }
    throw badRequest('Failed to connect to the terminal server');
  }

  /** Reads (no data) or writes (data) one document on an orchestrator, passing its errors through. */
  private async proxyToOrchestrator(
    form: { url: string; key?: string | null; auth_type?: string | null },
    path: string,
    method: string,
    json: unknown,
    failure: string,
  ): Promise<unknown> {
    const base = (form.url ?? '').replace(/\/+$/, '');
    if (!base) throw badRequest('Terminal server URL is required');
    let response: Response;
    try {
      response = await callRemote(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...ConfigsService.bearer(form.auth_type, form.key) },
        json,
        signal: this.deadline(),
      });
      if (response.ok) return await bodyOf(response);
      throw new HttpError(response.status, await response.text());
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw badRequest(failure);
    }
  }

  terminalPolicy(form: TerminalServerPolicyForm): Promise<unknown> {
    const data = form.policy_data ?? null;
    return this.proxyToOrchestrator(
      form,
      `/api/v1/policies/${encodeURIComponent(form.policy_id)}`,
      data === null ? 'GET' : 'PUT',
      data,
      'Failed to access policy on terminal server',
    );
  }

  terminalLifecycle(form: TerminalServerLifecycleForm): Promise<unknown> {
    const data = form.lifecycle_data ?? null;
    return this.proxyToOrchestrator(
      form,
      `/api/v1/policies/${encodeURIComponent(form.policy_id)}/lifecycle`,
      data === null ? 'GET' : 'PUT',
      data,
      'Failed to access lifecycle on terminal server',
    );
  }

  refreshTerminals(form: TerminalServerRefreshForm): Promise<unknown> {
    const body: Values = { only_idle: form.only_idle ?? true, reset: form.reset ?? false };
    if (form.user_id) body.user_id = form.user_id;
    if (form.policy_id) body.policy_id = form.policy_id;
    return this.proxyToOrchestrator(form, '/api/v1/terminals/refresh', 'POST', body, 'Failed to refresh terminals');
  }

  /**
   * Fetches what a tool server offers: the OpenAPI document, an MCP server's tool
   * list, or an OAuth 2.1 server's discovery document. `sessionToken` is the
   * caller's credential, forwarded when the connection authenticates as the session.
   */
  async verifyToolServer(form: ToolServerConnection, sessionToken: string | null): Promise<unknown> {
    const headers: Record<string, string> = {};
    const token = form.auth_type === 'bearer' ? form.key : form.auth_type === 'session' ? sessionToken : null;
    if (token) headers.authorization = `Bearer ${token}`;
    if (form.headers && typeof form.headers === 'object') {
      for (const [name, value] of Object.entries(form.headers)) if (typeof value === 'string') headers[name] = value;
    }
    if (form.type === 'mcp' && OAUTH_AUTH_TYPES.has(form.auth_type ?? '')) {
      const info = (form.info ?? {}) as Values;
      const serverUrl = typeof info.oauth_server_url === 'string' && info.oauth_server_url ? info.oauth_server_url : form.url;
      let urls: string[];
      try {
        urls = wellKnownUrls(serverUrl);
      } catch {
        throw badRequest('Failed to connect to the tool server');
      }
      // Each candidate gets its own deadline, so one silent location does not hide the next.
      for (const url of urls) {
        let response: Response;
        try {
          response = await callRemote(url, { signal: this.deadline() });
        } catch {
          continue;
        }
        if (response.status !== 200) {
          await response.body?.cancel();
          continue;
        }
        const metadata = await bodyOf(response).catch(() => null);
        const valid =
          metadata !== null &&
          typeof metadata === 'object' &&
          ['issuer', 'authorization_endpoint', 'token_endpoint'].every((field) => typeof (metadata as Values)[field] === 'string') &&
          Array.isArray((metadata as Values).response_types_supported);
        if (!valid) throw badRequest(`Failed to parse OAuth 2.1 discovery document from ${url}`);
        return { status: true, oauth_server_metadata: metadata };
      }
      throw badRequest(`Failed to fetch OAuth 2.1 discovery document from ${pythonList(urls)}`);
    }

    if (form.type === 'mcp') {
      try {
        return { status: true, specs: await listMcpToolSpecs(form.url, headers, this.deadline()) };
      } catch (error) {
        this.core.log.debug({ err: error, url: form.url }, 'MCP verification failed');
        throw badRequest('Failed to create MCP client');
      }
    }

    const url = form.path.includes('://') ? form.path : `${form.url.replace(/\/+$/, '')}${form.path.startsWith('/') ? '' : '/'}${form.path}`;
    try {
      const response = await callRemote(url, { headers: { accept: 'application/json', ...headers }, signal: this.deadline() });
      if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
      const document = await bodyOf(response);
      if (document === null || typeof document !== 'object') throw new Error('not a JSON document');
      return document;
    } catch (error) {
      this.core.log.debug({ err: error, url }, 'tool server verification failed');
      throw badRequest('Failed to connect to the tool server');
    }
  }
}
