import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { int } from '../../config/env.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { type Json, isObject } from '../chats/history.js';
import { toolServerText } from './openapi.js';
import { type ToolServers, connectionHeaders, functionAllowed, toolServerCallTimeoutMs, toolServerIds } from './tool-servers.js';
import { type ChatFunction, type ToolCallOutcome, textOutcome } from './tools.js';

/**
 * MCP servers over streamable HTTP in a chat (middleware.py connect_mcp_server,
 * utils/mcp/client.py), through `@modelcontextprotocol/sdk`. A configured
 * connection of type `mcp` selected as `server:mcp:<info.id>` and usable by the
 * user (`config.access_grants`) is listed when the chat starts (deadline
 * MCP_INITIALIZE_TIMEOUT); its tools are offered as `<server id>_<tool name>`.
 * Each call opens its own session, so nothing outlives the call: it ends with
 * the answer, on the chat's stop, or after AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER
 * (a hanging call is one of the reference's open complaints). A server that
 * cannot be reached is skipped with a status.
 */
export interface McpSelection {
  functions: ChatFunction[];
  notices: string[];
}

/** The MCP answer as the model reads it (process_tool_result): text parts (JSON parsed), images and resources. */
function mcpOutcome(result: Json): ToolCallOutcome {
  const parts: unknown[] = [];
  const images: string[] = [];
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  };
  for (const item of Array.isArray(result.content) ? result.content.filter(isObject) : []) {
    if (item.type === 'text' && typeof item.text === 'string') parts.push(parse(item.text));
    else if ((item.type === 'image' || item.type === 'audio') && typeof item.data === 'string') {
      if (item.type === 'image') images.push(`data:${String(item.mimeType ?? 'image/png')};base64,${item.data}`);
    } else if (item.type === 'resource' && isObject(item.resource)) {
      const resource = item.resource;
      if (typeof resource.text === 'string' && resource.text) parts.push(parse(resource.text));
      else if (typeof resource.blob === 'string') {
        const mime = typeof resource.mimeType === 'string' && resource.mimeType ? resource.mimeType : 'application/octet-stream';
        if (mime.startsWith('image/')) images.push(`data:${mime};base64,${resource.blob}`);
        else parts.push(`[Resource: ${String(resource.uri ?? 'resource')}] (binary data, mimeType: ${mime})`);
      } else if (typeof resource.uri === 'string') parts.push(resource.uri);
    }
  }
  const value = parts.length === 1 ? parts[0] : parts;
  return { text: toolServerText(value), images, files: [], embeds: [] };
}

export class McpServers {
  private readonly initializeTimeoutMs: number;
  private readonly callTimeoutMs: number;

  constructor(
    private readonly core: Core,
    private readonly servers: ToolServers,
  ) {
    const raw = core.env.raw;
    this.initializeTimeoutMs = Math.max(1, int(raw.MCP_INITIALIZE_TIMEOUT, 10)) * 1000;
    this.callTimeoutMs = toolServerCallTimeoutMs(raw);
  }

  /** A connected client; closed by the caller. */
  private async connect(url: string, headers: Record<string, string>, signal: AbortSignal): Promise<Client> {
    // The MCP SDK is loaded at the first MCP server a chat reaches, not at start.
    const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    ]);
    const client = new Client({ name: 'Parley', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
    await client.connect(transport, { signal, timeout: this.initializeTimeoutMs });
    return client;
  }

  /** Runs `work` on a fresh session, closing it whatever happens. */
  private async session<T>(url: string, headers: Record<string, string>, signal: AbortSignal, work: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.connect(url, headers, signal);
    try {
      return await work(client);
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  async select(user: UserRecord, toolIds: unknown, token: string | null, cookie: string | null = null): Promise<McpSelection> {
    const selection: McpSelection = { functions: [], notices: [] };
    const wanted = toolServerIds(toolIds, 'mcp');
    if (wanted.length === 0) return selection;
    const configured = this.servers.connections('mcp');
    await Promise.all(
      wanted.map(async (id) => {
        const entry = configured.find((c) => c.id === id && isObject(c.connection.info) && c.connection.info.id === id);
        if (!entry || !(await this.servers.mayUse(user, entry.connection))) {
          this.core.log.warn({ serverId: id, userId: user.id }, 'Selected MCP server is missing or not usable; skipped');
          return;
        }
        const { connection } = entry;
        const url = typeof connection.url === 'string' ? connection.url : '';
        const headers = connectionHeaders({ auth_type: 'none', ...connection }, token, await this.servers.oauthTokenFor(connection, user, cookie));
        const config = isObject(connection.config) ? connection.config : {};
        let tools: Json[];
        try {
          tools = await this.session(url, headers, AbortSignal.timeout(this.initializeTimeoutMs), async (client) => {
            const listed: Json[] = [];
            let cursor: string | undefined;
            do {
              const page = await client.listTools(cursor ? { cursor } : {}, { timeout: this.initializeTimeoutMs });
              listed.push(...(page.tools as Json[]));
              cursor = page.nextCursor;
            } while (cursor);
            return listed;
          });
        } catch (error) {
          this.core.log.warn({ err: error, serverId: id, url }, 'MCP server could not be reached; skipped');
          selection.notices.push(`Failed to connect to MCP server '${id}'`);
          return;
        }
        for (const tool of tools) {
          const name = String(tool.name ?? '');
          if (!name || !functionAllowed(name, config.function_name_filter_list)) continue;
          selection.functions.push({
            source: id,
            spec: { name: `${id}_${name}`, description: typeof tool.description === 'string' ? tool.description : '', parameters: isObject(tool.inputSchema) ? tool.inputSchema : { type: 'object', properties: {} } },
            run: (args, _user, extras) => this.call(url, headers, name, args, extras.signal),
          });
        }
      }),
    );
    return selection;
  }

  private async call(url: string, headers: Record<string, string>, name: string, args: Json, stop: AbortSignal | undefined): Promise<ToolCallOutcome> {
    const signal = AbortSignal.any([AbortSignal.timeout(this.callTimeoutMs), ...(stop ? [stop] : [])]);
    try {
      const result = await this.session(url, headers, signal, (client) => client.callTool({ name, arguments: args }, undefined, { signal, timeout: this.callTimeoutMs }));
      return mcpOutcome(result as Json);
    } catch (error) {
      if (stop?.aborted) throw error;
      const message = signal.aborted ? `The MCP server did not answer within ${this.callTimeoutMs / 1000} s` : error instanceof Error ? error.message : String(error);
      return textOutcome(toolServerText({ error: message }));
    }
  }
}
