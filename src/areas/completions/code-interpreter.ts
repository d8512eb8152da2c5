import { randomUUID } from 'node:crypto';
import type { SettingsStore } from '../../config/settings.js';
import type { AccessService } from '../../core/access/service.js';
import type { UserRecord } from '../../core/auth/user.js';
import { jupyterSettings, runOnJupyter } from '../../core/jupyter/client.js';
import { runPythonCode } from '../../core/python/code-runner.js';
import type { PythonHost } from '../../core/python/host.js';
import { type Json, isObject } from '../chats/history.js';
import type { FilesService } from '../files/service.js';

/**
 * `features.code_interpreter` (middleware.py, config.py): the model is told to
 * write Python in `<code_interpreter type="code" lang="python">` blocks; each
 * block it closes is run by the configured engine (CODE_INTERPRETER_ENGINE)
 * and the model asked again with the code and its output (generation.ts).
 *
 * - `pyodide`: the browser runs it: an `execute:python` call to the chat's tab
 *   (`__event_call__`), answered with `{stdout, stderr, result}`.
 * - `jupyter`: a Jupyter server (CODE_INTERPRETER_JUPYTER_URL, _AUTH, _TIMEOUT).
 * - `parley` (Parley's own): the plugin host runs it in a worker of the user's,
 *   isolated as tools are (sandbox, no DATA_DIR, memory and time limits), without
 *   access to Parley's API.
 */
export interface CodeInterpreter {
  run(code: string): Promise<unknown>;
}

/** The reference's DEFAULT_CODE_INTERPRETER_PROMPT. */
export const DEFAULT_CODE_INTERPRETER_PROMPT = `
#### Code Interpreter

You have access to a Python code interpreter via: \`<code_interpreter type="code" lang="python"></code_interpreter>\`

- The Python shell runs directly in the user's browser for fast execution of analysis, calculations, or problem-solving. Use it in this response.
- You can use a wide array of libraries for data manipulation, visualization, API calls, or any computational task. Think outside the box and harness Python's full potential.
- **You must enclose your code within \`<code_interpreter type="code" lang="python">\` XML tags** and stop right away. If you don't, the code won't execute.
- Do NOT use triple backticks (\`\`\`py ... \`\`\`) inside the XML tags — that is markdown formatting, not executable Python code.
- **Always print meaningful outputs** (results, tables, summaries, visuals). Avoid implicit outputs; use explicit print statements.
- After obtaining output, **provide a concise analysis, interpretation, or next steps** to help the user understand the findings.
- If results are unclear or unexpected, refine the code and re-execute. Iterate until you deliver meaningful insights.
- **If a link to an image, audio, or any file appears in the output, display it exactly as-is** in your response so the user can access it. Do not modify the link.
- Respond in the chat's primary language. Default to English if multilingual.

Ensure the code interpreter is effectively utilized to achieve the highest-quality analysis for the user.`;

/** The reference's CODE_INTERPRETER_PYODIDE_PROMPT, added for the browser engine. */
export const PYODIDE_PROMPT = `

##### Pyodide Environment

- This Python environment runs via Pyodide in the browser. **Do not install packages** — \`pip install\`, \`subprocess\`, and \`micropip.install()\` are not available.
- If a required library is unavailable, use an alternative approach with available modules. Do not attempt to install anything.

##### Persistent File System

- User-uploaded files are available at \`/mnt/uploads/\`. When the user asks you to work with their files, read from this directory.
- You can also write output files to \`/mnt/uploads/\` so the user can access and download them from the file browser.
- The file system persists across code executions within the same session.
- Use \`import os; os.listdir('/mnt/uploads')\` to discover available files.`;

/** What the interpreter needs from the rest of Parley. */
export interface CodeInterpreterDeps {
  settings: SettingsStore;
  access: AccessService;
  python: PythonHost;
  files: FilesService;
  /** CODE_INTERPRETER_BLOCKED_MODULES. */
  blockedModules: string[];
}

/** One answer's request. */
export interface CodeInterpreterRequest {
  user: UserRecord;
  form: Json;
  model: Json;
  chatId: string;
  messageId: string | null;
  /** A call to the chat's browser tab (web mode only). */
  eventCall: ((event: unknown) => Promise<unknown>) | null;
  sessionId: string | null;
  signal: AbortSignal;
}

/**
 * The interpreter for this answer and the prompt that goes with it, or null: the
 * request must ask for it, and the setting, the model (capability and builtin
 * tools) and the user's `features.code_interpreter` permission (admins: always)
 * allow it, as the reference's five gates.
 */
export async function codeInterpreterFor(deps: CodeInterpreterDeps, request: CodeInterpreterRequest): Promise<{ interpreter: CodeInterpreter; prompt: string } | null> {
  const { form, model } = request;
  const { settings } = deps;
  if (!isObject(form.features) || !form.features.code_interpreter || !settings.get<boolean>('code_interpreter.enable')) return null;
  const meta = isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {};
  if (isObject(meta.capabilities) && meta.capabilities.code_interpreter === false) return null;
  if (isObject(meta.builtinTools) && meta.builtinTools.code_interpreter === false) return null;
  if (!(await deps.access.hasPermission(request.user, 'features.code_interpreter'))) return null;
  const engine = settings.get<string>('code_interpreter.engine') || 'pyodide';
  const template = settings.get<string | null>('code_interpreter.prompt_template');
  const prompt = (template || DEFAULT_CODE_INTERPRETER_PROMPT) + (engine === 'pyodide' ? PYODIDE_PROMPT : '');
  const prelude = blockingPrelude(deps.blockedModules);
  return { interpreter: { run: (code) => runCode(deps, engine, prelude + sanitizeCode(code), request) }, prompt };
}

async function runCode(deps: CodeInterpreterDeps, engine: string, code: string, request: CodeInterpreterRequest): Promise<unknown> {
  let output: unknown;
  if (engine === 'pyodide') {
    if (!request.eventCall) return { stderr: 'The code interpreter runs in the browser: no browser session is connected.' };
    const files = Array.isArray(request.form.files) ? request.form.files : [];
    output = await request.eventCall({ type: 'execute:python', data: { id: randomUUID(), code, session_id: request.sessionId, files } });
  } else if (engine === 'jupyter') {
    const options = jupyterSettings(deps.settings, 'code_interpreter');
    if (!options.url) return { stderr: 'The Jupyter code interpreter has no URL configured.' };
    output = await runOnJupyter(code, { ...options, signal: request.signal });
  } else if (engine === 'parley') {
    output = await runPythonCode(deps.python, request.user, code);
  } else return { stdout: 'Code interpreter engine not configured.' };
  // A failed browser call (no tab, timeout) answers `{error}`.
  if (isObject(output) && output.error) return { stderr: String(output.error) };
  return isObject(output) ? withStoredImages(output, (bytes, type) => saveImage(deps.files, request, bytes, type)) : output;
}

/** Larger images than this stay out of the chat. */
const MAX_IMAGE_BYTES = 32 * 1024 * 1024;

/**
 * Image lines (`data:image/png;base64,…`, what plots print) of the output become
 * stored files shown as `![Output Image](url)`, so the answer and the model's
 * next turn carry a link instead of megabytes of base64.
 */
async function withStoredImages(output: Json, save: (bytes: Buffer, contentType: string) => Promise<string>): Promise<Json> {
  const copy: Json = { ...output };
  for (const key of ['stdout', 'result']) {
    const value = copy[key];
    if (typeof value !== 'string' || !value.includes('data:image/')) continue;
    const lines = value.split('\n');
    for (const [i, line] of lines.entries()) {
      const match = /^data:(image\/\w+);base64,([A-Za-z0-9+/=\s]+)$/i.exec(line.trim());
      if (!match) continue;
      const bytes = Buffer.from(match[2], 'base64');
      const url = bytes.length > 0 && bytes.length <= MAX_IMAGE_BYTES ? await save(bytes, match[1].toLowerCase()).catch(() => null) : null;
      if (url) lines[i] = `![Output Image](${url})`;
    }
    copy[key] = lines.join('\n');
  }
  return copy;
}

/**
 * Code put before the model's when modules are blocked: an import of one of
 * them made directly by the code (not by a library it uses) raises ImportError,
 * as the reference's prelude intends. A guard, not a sandbox: the engines' own
 * isolation is what holds.
 */
function blockingPrelude(modules: string[]): string {
  if (modules.length === 0) return '';
  return `import builtins as _parley_builtins

_parley_blocked = ${JSON.stringify(modules)}
_parley_import = _parley_builtins.__import__


def _parley_restricted_import(name, globals=None, locals=None, fromlist=(), level=0):
    if name.split(".")[0] in _parley_blocked and (globals or {}).get("__name__") == "__main__":
        raise ImportError(f"Direct import of module {name} is restricted.")
    return _parley_import(name, globals, locals, fromlist, level)


_parley_builtins.__import__ = _parley_restricted_import
`;
}

/** An image as a file of the user's (upload_image: not processed, named by the chat and message); its content URL. */
async function saveImage(files: FilesService, request: CodeInterpreterRequest, bytes: Buffer, contentType: string): Promise<string> {
  const metadata = { chat_id: request.chatId, message_id: request.messageId };
  const file = await files.upload(request.user, { filename: `generated-image.${contentType.split('/')[1]}`, content: bytes, contentType, metadata, process: false });
  return `/api/v1/files/${file.id}/content`;
}

/** Terminal colour codes and Markdown fences a model may put around its code (utils/sanitize.py). */
export function sanitizeCode(code: string): string {
  return code
    .replace(/\x1b\[[0-9;]*[A-Za-z]|\x1b\([AB]|\x1b[PX^_].*?\x1b\\|\x1b\].*?(?:\x07|\x1b\\)/g, '')
    .trim()
    .replace(/^```\w*\n?/, '')
    .replace(/\n?```\s*$/, '')
    .trim();
}

/** The prompt as the reference adds it (add_or_update_user_message): after the text of a last user message, else as one. */
export function withCodeInterpreterPrompt<M extends Json>(messages: M[], prompt: string): M[] {
  const last = messages.at(-1);
  if (last?.role !== 'user') return [...messages, { role: 'user', content: prompt } as unknown as M];
  let content: unknown = last.content;
  if (typeof content === 'string') content = `${content}\n${prompt}`;
  else if (Array.isArray(content)) {
    const at = content.findIndex((p) => isObject(p) && p.type === 'text');
    content = at < 0 ? [...content, { type: 'text', text: prompt }] : content.map((p, i) => (i === at ? { ...p, text: `${String(p.text ?? '')}\n${prompt}` } : p));
  }
  return [...messages.slice(0, -1), { ...last, content }];
}
