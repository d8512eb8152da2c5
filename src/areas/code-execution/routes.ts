import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { clientGone } from '../../core/upstream/relay.js';
import { CodeExecutionService } from './service.js';

const CodeForm = Type.Object({ code: Type.String() });
const CodeResult = Type.Object({ stdout: Type.String(), stderr: Type.String(), result: Type.String() });

/** `/api/v1/utils/code/execute` (the other `/api/v1/utils` routes belong to other areas). */
async function codeExecutionRoutes(app: App, ctx: AreaContext): Promise<void> {
  const service = new CodeExecutionService(ctx.core);
  app.post('/code/execute', { onRequest: ctx.auth.verified, schema: { tags: ['utils'], body: CodeForm, response: { 200: CodeResult } } }, (request, reply) =>
    service.execute(request.user!, request.body.code, clientGone(reply)),
  );
}

export const codeExecutionArea = defineArea('/api/v1/utils', codeExecutionRoutes);
