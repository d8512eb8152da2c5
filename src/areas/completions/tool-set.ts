import type { SettingsStore } from '../../config/settings.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { FastifyBaseLogger } from 'fastify';
import { type Json, isObject } from '../chats/history.js';
import type { SkillRecord } from '../skills/store.js';
import type { ToolsService } from '../tools/service.js';
import { type BuiltinDeps, builtinFunctions } from './builtin-tools.js';
import type { McpServers } from './mcp.js';
import type { ToolServers } from './tool-servers.js';
import { ChatTools } from './tools.js';

/**
 * The functions a chat answer may call (tools.ts): the selected tools, tool servers
 * (tool-servers.ts) and MCP servers (mcp.ts), and the built-in tools
 * (builtin-tools.ts) when `builtins` (the skills of the manifest) is given.
 */
export interface ChatToolSet {
  tools: ChatTools | null;
  /** Status descriptions for servers that were skipped, shown when the answer starts. */
  notices: string[];
  /** The request's tool servers' `system_prompt`s. */
  systemPrompts: string[];
  /** The model has the built-in web search tools, so `features.web_search` runs no search step (middleware.py: `legacy` only). */
  searchTools: boolean;
}

export interface ToolSetDeps extends Omit<BuiltinDeps, 'settings'> {
  tools: ToolsService;
  toolServers: ToolServers;
  mcpServers: McpServers;
}

export async function chatToolSet(
  deps: ToolSetDeps,
  settings: SettingsStore,
  log: FastifyBaseLogger,
  request: { user: UserRecord; form: Json; model: Json; token: string | null; cookie: string | null; builtins: SkillRecord[] | null },
): Promise<ChatToolSet> {
  const { user, form, model, builtins } = request;
  const servers = await deps.toolServers.select({ user, toolIds: form.tool_ids, directServers: form.tool_servers, token: request.token, cookie: request.cookie, browserCalls: typeof form.session_id === 'string' && form.session_id !== '' });
  const mcp = await deps.mcpServers.select(user, form.tool_ids, request.token, request.cookie);
  const features = isObject(form.features) ? form.features : {};
  const builtin = builtins ? await builtinFunctions({ ...deps, settings }, { user, model, features, viewableSkills: builtins }) : [];
  const plugins = await ChatTools.pluginFunctions(deps.tools, user, form.tool_ids, (details, message) => log.warn(details, message));
  return {
    tools: ChatTools.of([...plugins, ...servers.functions, ...mcp.functions, ...builtin]),
    notices: [...servers.notices, ...mcp.notices],
    systemPrompts: servers.systemPrompts,
    searchTools: builtin.some((f) => f.spec.name === 'search_web'),
  };
}
