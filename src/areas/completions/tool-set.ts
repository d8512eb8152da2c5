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
import type { ChatTerminal, TerminalsService } from '../terminals/service.js';
import { HttpError } from '../../core/http/errors.js';

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
  /** The model has the built-in image tools, so `features.image_generation` runs no image step (middleware.py: `legacy` only). */
  imageTools: boolean;
}

export interface ToolSetDeps extends Omit<BuiltinDeps, 'settings'> {
  tools: ToolsService;
  toolServers: ToolServers;
  mcpServers: McpServers;
  terminals: TerminalsService;
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
  const terminal = await chatTerminal(deps, request);
  return {
    tools: ChatTools.of([...plugins, ...servers.functions, ...mcp.functions, ...builtin, ...(terminal ? deps.toolServers.terminalFunctions(terminal) : [])]),
    notices: [...servers.notices, ...mcp.notices],
    systemPrompts: [...servers.systemPrompts, ...(terminal?.systemPrompt ? [terminal.systemPrompt] : [])],
    searchTools: builtin.some((f) => f.spec.name === 'search_web'),
    imageTools: builtin.some((f) => f.spec.name === 'generate_image' || f.spec.name === 'edit_image'),
  };
}

/**
 * The request's `terminal_id` (0.11.0 middleware.py): the terminal's tools join the
 * answer unless the model's `terminal` capability is off; a terminal that cannot be
 * used refuses the request (503 `Terminal unavailable: ...`).
 */
async function chatTerminal(deps: ToolSetDeps, request: { user: UserRecord; form: Json; model: Json; token: string | null; cookie: string | null }): Promise<ChatTerminal | null> {
  const terminalId = request.form.terminal_id;
  if (typeof terminalId !== 'string' || !terminalId) return null;
  const meta = isObject(request.model.info) && isObject(request.model.info.meta) ? request.model.info.meta : {};
  if (isObject(meta.capabilities) && meta.capabilities.terminal === false) return null;
  const chatId = typeof request.form.chat_id === 'string' && request.form.chat_id ? request.form.chat_id : null;
  try {
    return await deps.terminals.chatTerminal(request.user, terminalId, { token: request.token, cookie: request.cookie, chatId });
  } catch (error) {
    throw new HttpError(503, `Terminal unavailable: ${error instanceof Error ? error.message : String(error)}`);
  }
}
