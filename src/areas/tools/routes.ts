import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { IdParams } from '../../core/http/schema.js';
import {
  LoadUrlForm,
  LoadUrlResponse,
  ToolAccessGrantsForm,
  ToolAccessResponse,
  ToolForm,
  ToolModel,
  ToolResponse,
  ToolUserResponse,
  ValvesForm,
  ValvesResponse,
} from './schemas.js';
import type { ToolsService } from './service.js';

/** `/api/v1/tools`: Python tools, their grants and valves (routers/tools.py). */
async function toolsRoutes(app: App, ctx: AreaContext<{ tools: ToolsService }>): Promise<void> {
  const { tools } = ctx.services;
  const { auth } = ctx;
  const tags = ['tools'];
  const byId = { tags, params: IdParams };

  app.get('/', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(ToolUserResponse) } } }, async (request, reply) =>
    // Already serialised (see ToolsService.listBody); a Buffer is sent as is.
    reply.type('application/json; charset=utf-8').send((await tools.listBody(request.user!)) as never),
  );

  app.get('/list', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(ToolAccessResponse) } } }, (request) =>
    tools.list(request.user!),
  );

  app.post('/load/url', { onRequest: auth.admin, schema: { tags, body: LoadUrlForm, response: { 200: LoadUrlResponse } } }, (request) =>
    tools.loadUrl(request.body.url),
  );

  app.get('/export', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(ToolModel) } } }, (request) =>
    tools.export(request.user!),
  );

  app.post('/create', { onRequest: auth.verified, schema: { tags, body: ToolForm, response: { 200: ToolResponse } } }, (request) =>
    tools.create(request.user!, request.body),
  );

  app.get('/id/:id', { onRequest: auth.verified, schema: { ...byId, response: { 200: ToolAccessResponse } } }, (request) =>
    tools.get(request.user!, request.params.id),
  );

  app.post('/id/:id/update', { onRequest: auth.verified, schema: { ...byId, body: ToolForm, response: { 200: ToolModel } } }, (request) =>
    tools.update(request.user!, request.params.id, request.body),
  );

  app.post(
    '/id/:id/access/update',
    { onRequest: auth.verified, schema: { ...byId, body: ToolAccessGrantsForm, response: { 200: ToolModel } } },
    (request) => tools.updateAccess(request.user!, request.params.id, request.body),
  );

  app.delete('/id/:id/delete', { onRequest: auth.verified, schema: { ...byId, response: { 200: Type.Boolean() } } }, (request) =>
    tools.delete(request.user!, request.params.id),
  );

  app.get('/id/:id/valves', { onRequest: auth.verified, schema: { ...byId, response: { 200: ValvesResponse } } }, (request) =>
    tools.valves(request.user!, request.params.id),
  );

  app.get('/id/:id/valves/spec', { onRequest: auth.verified, schema: { ...byId, response: { 200: ValvesResponse } } }, (request) =>
    tools.valvesSpec(request.user!, request.params.id, 'valves'),
  );

  app.post('/id/:id/valves/update', { onRequest: auth.verified, schema: { ...byId, body: ValvesForm, response: { 200: ValvesResponse } } }, (request) =>
    tools.updateValves(request.user!, request.params.id, request.body),
  );

  app.get('/id/:id/valves/user', { onRequest: auth.verified, schema: { ...byId, response: { 200: ValvesResponse } } }, (request) =>
    tools.userValves(request.user!, request.params.id),
  );

  app.get('/id/:id/valves/user/spec', { onRequest: auth.verified, schema: { ...byId, response: { 200: ValvesResponse } } }, (request) =>
    tools.valvesSpec(request.user!, request.params.id, 'user'),
  );

  app.post(
    '/id/:id/valves/user/update',
    { onRequest: auth.verified, schema: { ...byId, body: ValvesForm, response: { 200: ValvesResponse } } },
    (request) => tools.updateUserValves(request.user!, request.params.id, request.body),
  );
}

export const toolsArea = defineArea('/api/v1/tools', toolsRoutes);
