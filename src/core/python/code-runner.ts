import type { UserRecord } from '../auth/user.js';
import type { PythonHost } from './host.js';

/**
 * Parley's own Python engine (code interpreter and code execution): the plugin
 * host runs this program as a tool, in a worker of the user's: the code's
 * printed text and errors, and the value of a last expression (as a notebook
 * cell shows it), in the shape of the other engines' results.
 */
const RUNNER = `"""
title: Parley code interpreter
"""
import ast
import contextlib
import io
import traceback


class Tools:
    def run(self, code: str) -> dict:
        """Runs Python code."""
        stdout, stderr, shown = io.StringIO(), io.StringIO(), ""
        scope = {"__name__": "__main__"}
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                tree = ast.parse(code, "<code_interpreter>")
                last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
                exec(compile(tree, "<code_interpreter>", "exec"), scope)
                if last is not None:
                    value = eval(compile(ast.Expression(last.value), "<code_interpreter>", "eval"), scope)
                    if value is not None:
                        shown = repr(value)
            except BaseException:
                traceback.print_exc()
        return {"stdout": stdout.getvalue().strip(), "stderr": stderr.getvalue().strip(), "result": shown}
`;

/** Runs code in the plugin host as the user, isolated as tools are, without access to Parley's API (no caller bridge). */
export async function runPythonCode(host: PythonHost, user: UserRecord, code: string): Promise<unknown> {
  const answer = await host.callTool({ id: 'parley_code_runner', content: RUNNER, owner: user.id }, 'run', { code });
  return answer.value;
}
