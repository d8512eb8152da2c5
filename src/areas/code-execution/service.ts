import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, badRequest, forbidden } from '../../core/http/errors.js';
import { type JupyterResult, jupyterSettings, runOnJupyter } from '../../core/jupyter/client.js';

/**
 * `POST /api/v1/utils/code/execute` (routers/utils.py): the "Run" button of a
 * code block when the code execution engine is `jupyter` (the frontend runs
 * code with Pyodide itself otherwise).
 */
export class CodeExecutionService {
  constructor(private readonly core: Core) {}

  async execute(_user: UserRecord, code: string, signal: AbortSignal): Promise<JupyterResult> {
    const { settings } = this.core;
    if (!settings.get<boolean>('code_execution.enable')) throw forbidden(ERROR.FEATURE_DISABLED('Code execution'));
    if (settings.get<string>('code_execution.engine') !== 'jupyter') throw badRequest(ERROR.DEFAULT('Code execution engine not supported'));
    return runOnJupyter(code, { ...jupyterSettings(settings, 'code_execution'), signal });
  }
}
