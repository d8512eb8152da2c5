/**
 * Everything the plugin host can fail with. Callers branch on `code`; the
 * message is meant for people (an admin reading a 400, a model reading a tool
 * result) and names the cause.
 */
export type PluginErrorCode =
  /** The tool's own Python raised: at load (syntax, import, no Tools class) or in the call. */
  | 'python_error'
  | 'timeout'
  /** The caller stopped the call (a chat's task stop): its worker was ended. */
  | 'cancelled'
  | 'memory'
  /** The worker process died under the request (killed, crashed, exited). */
  | 'worker_died'
  /** No usable interpreter: Python or pydantic 2 missing. */
  | 'unavailable'
  | 'disabled'
  /** `pip install` of the frontmatter requirements failed. */
  | 'requirements'
  | 'tool_not_found'
  | 'function_not_found'
  /** valves routes: the tool defines no such Valves/UserValves class. */
  | 'no_valves'
  /** valves routes: the values do not validate against the class. */
  | 'invalid_valves'
  | 'closed'
  | 'protocol';

export interface PythonErrorDetails {
  /** Exception class name, e.g. `SyntaxError`. */
  pythonType?: string;
  /** `str(exception)`: what the reference shows a model when a tool call raises. */
  pythonMessage?: string;
  traceback?: string;
  /** The host's own code for a reply that is not the tool's exception (e.g. `not_loaded`). */
  hostCode?: string;
  /** For a ModuleNotFoundError: the module the tool imports that is not installed. */
  missingModule?: string;
}

export class PluginError extends Error {
  override readonly name = 'PluginError';

  constructor(
    readonly code: PluginErrorCode,
    message: string,
    readonly details: PythonErrorDetails = {},
  ) {
    super(message);
  }
}

/** The error of a worker's error reply: `{code, type, message, traceback}`. */
export interface WireError {
  code: string;
  type: string;
  message: string;
  traceback?: string;
  module?: string;
}

const HOST_CODES = new Set<string>(['function_not_found', 'no_valves', 'invalid_valves']);

export function fromWire(error: WireError, memoryLimitMb: number): PluginError {
  const details = { pythonType: error.type, pythonMessage: error.message, traceback: error.traceback };
  if (error.code === 'memory') {
    return new PluginError('memory', `The tool exceeded the memory limit of ${memoryLimitMb} MiB; its worker was replaced`, details);
  }
  if (HOST_CODES.has(error.code)) return new PluginError(error.code as PluginErrorCode, error.message, details);
  if (error.code !== 'python_error') return new PluginError('protocol', error.message, { ...details, hostCode: error.code });
  if (error.module) return new PluginError('python_error', missingModuleMessage(error.module), { ...details, missingModule: error.module });
  // A bare `Exception("...")` reads best as its message alone, as the reference raises its own errors.
  const message = error.type === 'Exception' ? error.message : `${error.type}: ${error.message}`;
  return new PluginError('python_error', message, details);
}

/** Names the module and says where it can come from (docs/plugin-compat.md). */
function missingModuleMessage(module: string): string {
  if (module === 'open_webui' || module.startsWith('open_webui.')) {
    return `ModuleNotFoundError: No module named '${module}': Parley's open_webui compatibility package does not provide it (docs/plugin-compat.md lists what it does)`;
  }
  // The package that provides a module may be named otherwise (`git` comes with GitPython): the example uses the top name.
  const top = module.split('.')[0];
  return (
    `ModuleNotFoundError: No module named '${module}': it is not installed in the plugin environment. ` +
    `Name the package that provides it in the frontmatter at the top of the tool, e.g. the line "requirements: ${top}" ` +
    `(installed from the configured package index; off when OFFLINE_MODE=true or ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS=false), ` +
    `or have an operator add it to plugin-host/requirements.txt (docs/plugin-compat.md)`
  );
}
