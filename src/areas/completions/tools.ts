import type { UserRecord } from '../../core/auth/user.js';
import { HttpError } from '../../core/http/errors.js';
import type { ToolCallContext } from '../../core/python/host.js';
import { type Json, isObject } from '../chats/history.js';
import type { ToolsService } from '../tools/service.js';

/**
 * The functions of the tools a chat request selected (`tool_ids`), offered to
 * the model as native function specs and run through the plugin host when it
 * calls them (utils/tools.get_tools, utils/middleware native function calling).
 * Unlike the reference, a function whose name another selected tool already
 * uses is offered under `<tool_id>_<name>`, so every function can be called.
 */
interface ToolFunction {
  toolId: string;
  functionName: string;
  spec: Json;
}

/** What the model is shown for one call, and what the frontend may display with it. */
export interface ToolCallOutcome {
  text: string;
  /** Images the tool returned as data URIs: shown to the model on the next round. */
  images: string[];
  files: Json[];
  embeds: string[];
}

export type ToolCallExtras = Pick<ToolCallContext, 'metadata' | 'eventEmitter' | 'eventCall' | 'extras' | 'request'>;

/** The id without the `|fn1,fn2` suffix the frontend may add. */
const baseId = (toolId: string) => toolId.split('|')[0];

export class ChatTools {
  private constructor(
    private readonly tools: ToolsService,
    private readonly functions: Map<string, ToolFunction>,
  ) {}

  /**
   * The user's readable tools among `toolIds` (others, tool servers and MCP ids
   * are skipped) with their stored specs. Null when none remains.
   */
  static async select(tools: ToolsService, user: UserRecord, toolIds: unknown, warn: (details: object, message: string) => void): Promise<ChatTools | null> {
    if (!Array.isArray(toolIds)) return null;
    const functions = new Map<string, ToolFunction>();
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
        if (!functionName) continue;
        let name = functions.has(functionName) ? `${raw}_${functionName}` : functionName;
        for (let n = 2; functions.has(name); n++) name = `${raw}_${functionName}_${n}`;
        functions.set(name, { toolId: raw, functionName, spec: { ...spec, name } });
      }
    }
    return functions.size > 0 ? new ChatTools(tools, functions) : null;
  }

  /** The `tools` of a Chat Completions request. */
  specs(): Json[] {
    return [...this.functions.values()].map((f) => ({ type: 'function', function: f.spec }));
  }

  /**
   * Runs one call the model made. Whatever goes wrong (bad arguments, unknown
   * function, the tool raising, the host timing out) becomes the text the model
   * reads; it never fails the request.
   */
  async call(user: UserRecord, name: string, rawArguments: string, extras: ToolCallExtras): Promise<ToolCallOutcome> {
    const outcome = (text: string): ToolCallOutcome => ({ text, images: [], files: [], embeds: [] });
    const target = this.functions.get(name);
    if (!target) return outcome(`Error: Tool "${name}" not found.`);
    const args = parseArguments(rawArguments);
    if (args === null) {
      return outcome(`Error: Tool call arguments could not be parsed. The model generated malformed or incomplete JSON for \`${name}\`. Please try again.`);
    }
    const parameters = isObject(target.spec.parameters) && isObject(target.spec.parameters.properties) ? target.spec.parameters.properties : {};
    const allowed = Object.fromEntries(Object.entries(args).filter(([key]) => key in parameters));
    try {
      const result = await this.tools.callTool(target.toolId, target.functionName, allowed, { user, ...extras });
      const images = result.files.filter((f) => f.type === 'image' && typeof f.url === 'string' && f.url.startsWith('data:')).map((f) => String(f.url));
      return {
        text: result.text ?? '',
        images,
        files: result.files.filter((f) => !images.includes(String(f.url))),
        embeds: result.embeds,
      };
    } catch (error) {
      return outcome(error instanceof Error ? error.message : String(error));
    }
  }
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
