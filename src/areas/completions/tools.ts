import type { UserRecord } from '../../core/auth/user.js';
import { HttpError } from '../../core/http/errors.js';
import type { ToolCallContext } from '../../core/python/host.js';
import { type Json, isObject } from '../chats/history.js';
import type { ToolsService } from '../tools/service.js';

/**
 * The functions a chat answer may call, offered to the model as native function
 * specs (utils/tools.get_tools, utils/middleware native function calling). They
 * come from several sources: the stored Python tools the request selected
 * (`tool_ids`), tool servers (tool-servers.ts) and built-in tools
 * (builtin-tools.ts); each source gives named functions with a spec and a runner.
 * Unlike the reference, a function whose name another already uses is offered
 * under `<source>_<name>`, so every function can be called.
 */
export interface ChatFunction {
  /** Where it comes from (a tool id, `server:<id>`, `builtin`): the prefix on a name clash. */
  source: string;
  /** OpenAI-style function spec (`name`, `description`, `parameters`). */
  spec: Json;
  run(args: Json, user: UserRecord, extras: ToolCallExtras): Promise<ToolCallOutcome>;
}

/** What the model is shown for one call, and what the frontend may display with it. */
export interface ToolCallOutcome {
  text: string;
  /** Images the tool returned as data URIs: shown to the model on the next round. */
  images: string[];
  files: Json[];
  embeds: string[];
}

export type ToolCallExtras = Pick<ToolCallContext, 'metadata' | 'eventEmitter' | 'eventCall' | 'extras' | 'request'> & { signal?: AbortSignal };

export const textOutcome = (text: string): ToolCallOutcome => ({ text, images: [], files: [], embeds: [] });

/** The id without the `|fn1,fn2` suffix the frontend may add. */
const baseId = (toolId: string) => toolId.split('|')[0];

export class ChatTools {
  private readonly functions = new Map<string, ChatFunction>();

  /** The sources' functions under unique names; null when there are none. */
  static of(functions: ChatFunction[]): ChatTools | null {
    if (functions.length === 0) return null;
    const tools = new ChatTools();
    for (const fn of functions) tools.add(fn);
    return tools;
  }

  private add(fn: ChatFunction): void {
    const functionName = typeof fn.spec.name === 'string' ? fn.spec.name : '';
    if (!functionName) return;
    let name = this.functions.has(functionName) ? `${fn.source}_${functionName}` : functionName;
    for (let n = 2; this.functions.has(name); n++) name = `${fn.source}_${functionName}_${n}`;
    this.functions.set(name, { ...fn, spec: { ...fn.spec, name } });
  }

  /**
   * The functions of the user's readable tools among `toolIds` (others, and
   * tool server ids, are skipped) with their stored specs.
   */
  static async pluginFunctions(tools: ToolsService, user: UserRecord, toolIds: unknown, warn: (details: object, message: string) => void): Promise<ChatFunction[]> {
    if (!Array.isArray(toolIds)) return [];
    const functions: ChatFunction[] = [];
    for (const raw of new Set(toolIds.filter((id): id is string => typeof id === 'string').map(baseId))) {
      if (!raw || raw.startsWith('server:')) continue;
      let specs: Json[];
      try {
        specs = ((await tools.get(user, raw)).specs ?? []).filter(isObject);
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        warn({ toolId: raw, status: error.statusCode }, 'Selected tool is missing or not readable; skipped');
        continue;
      }
      for (const spec of specs) {
        const functionName = typeof spec.name === 'string' ? spec.name : '';
        if (functionName) functions.push({ source: raw, spec, run: (args, caller, extras) => runPluginTool(tools, raw, functionName, args, caller, extras) });
      }
    }
    return functions;
  }

  /** The functions' own specs (name, description, parameters), as the legacy tool-choosing prompt lists them. */
  functionSpecs(): Json[] {
    return [...this.functions.values()].map((f) => f.spec);
  }

  /** Where a function comes from (a tool id, `server:<id>`, `builtin`), when there is one of that name. */
  sourceOf(name: string): string | null {
    return this.functions.get(name)?.source ?? null;
  }

  /** The arguments a function's spec names, others left out (as the reference before any call). */
  allowedArguments(name: string, args: Json): Json {
    const spec = this.functions.get(name)?.spec;
    const parameters = isObject(spec?.parameters) && isObject(spec.parameters.properties) ? spec.parameters.properties : {};
    return Object.fromEntries(Object.entries(args).filter(([key]) => key in parameters));
  }

  /** The `tools` of a Chat Completions request. */
  specs(): Json[] {
    return [...this.functions.values()].map((f) => ({ type: 'function', function: f.spec }));
  }

  /**
   * Runs one call the model made. Whatever goes wrong (bad arguments, unknown
   * function, the tool raising or timing out) becomes the text the model reads;
   * it never fails the request.
   */
  async call(user: UserRecord, name: string, rawArguments: string, extras: ToolCallExtras): Promise<ToolCallOutcome> {
    const target = this.functions.get(name);
    if (!target) return textOutcome(`Error: Tool "${name}" not found.`);
    const args = parseArguments(rawArguments);
    if (args === null) {
      return textOutcome(`Error: Tool call arguments could not be parsed. The model generated malformed or incomplete JSON for \`${name}\`. Please try again.`);
    }
    try {
      return await target.run(this.allowedArguments(name, args), user, extras);
    } catch (error) {
      return textOutcome(error instanceof Error ? error.message : String(error));
    }
  }
}

async function runPluginTool(tools: ToolsService, toolId: string, functionName: string, args: Json, user: UserRecord, extras: ToolCallExtras): Promise<ToolCallOutcome> {
  const { signal: _signal, ...context } = extras;
  const result = await tools.callTool(toolId, functionName, args, { user, ...context });
  const images = result.files.filter((f) => f.type === 'image' && typeof f.url === 'string' && f.url.startsWith('data:')).map((f) => String(f.url));
  return {
    text: result.text ?? '',
    images,
    files: result.files.filter((f) => !images.includes(String(f.url))),
    embeds: result.embeds,
  };
}

/** JSON object arguments; empty means none; anything else is unusable (null). */
function parseArguments(raw: string): Json | null {
  if (!raw.trim()) return {};
  try {
    const parsed = JSON.parse(raw) as unknown;
    return isObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}
