import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { IdParams } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import { LoadUrlForm, LoadUrlResponse, ValvesForm, ValvesResponse } from '../tools/schemas.js';
import { ExportQuery, FunctionForm, FunctionModel, FunctionResponse, FunctionUserResponse, SyncFunctionsForm } from './schemas.js';
import type { FunctionsService } from './service.js';

/**
 * `/api/v1/functions` (routers/functions.py): every write and every admin view is
 * admins'; the plain list and the user valves are every verified user's. The web
 * frontend reads `GET /` whenever a chat opens, so it answers `[]` with none.
 */
async function functionsRoutes(app: App, ctx: AreaContext<{ functions: FunctionsService }>): Promise<void> {
  const { functions } = ctx.services;
  const { auth } = ctx;
  const tags = ['functions'];
  const byId = { tags, params: IdParams };

  app.get('/', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(FunctionResponse) } } }, () => functions.list());
  app.get('/list', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Array(FunctionUserResponse) } } }, () => functions.listWithUsers());
  app.get('/export', { onRequest: auth.admin, schema: { tags, querystring: ExportQuery, response: { 200: Type.Array(FunctionModel) } } }, (request) =>
    functions.export(request.query.include_valves === true),
  );
  app.post('/load/url', { onRequest: auth.admin, schema: { tags, body: LoadUrlForm, response: { 200: LoadUrlResponse } } }, (request) =>
    functions.loadUrl(request.body.url),
  );
  app.post('/sync', { onRequest: auth.admin, config: { bodyClass: 'large' }, schema: { tags, body: SyncFunctionsForm, response: { 200: Type.Array(FunctionModel) } } }, (request) =>
    functions.sync(request.user!, request.body.functions),
  );
  app.post('/create', { onRequest: auth.admin, schema: { tags, body: FunctionForm, response: { 200: FunctionResponse } } }, (request) =>
    functions.create(request.user!, request.body),
  );
  app.get('/id/:id', { onRequest: auth.admin, schema: { ...byId, response: { 200: FunctionModel } } }, (request) => functions.get(request.params.id));
  app.post('/id/:id/toggle', { onRequest: auth.admin, schema: { ...byId, response: { 200: FunctionModel } } }, (request) =>
    functions.toggle(request.user!, request.params.id, 'is_active'),
  );
  app.post('/id/:id/toggle/global', { onRequest: auth.admin, schema: { ...byId, response: { 200: FunctionModel } } }, (request) =>
    functions.toggle(request.user!, request.params.id, 'is_global'),
  );
  app.post('/id/:id/update', { onRequest: auth.admin, schema: { ...byId, body: FunctionForm, response: { 200: FunctionModel } } }, (request) =>
    functions.update(request.user!, request.params.id, request.body),
  );
  app.delete('/id/:id/delete', { onRequest: auth.admin, schema: { ...byId, response: { 200: Type.Boolean() } } }, (request) =>
    functions.delete(request.user!, request.params.id),
  );
  app.get('/id/:id/valves', { onRequest: auth.admin, schema: { ...byId, response: { 200: ValvesResponse } } }, (request) => functions.valves(request.params.id));
  app.get('/id/:id/valves/spec', { onRequest: auth.admin, schema: { ...byId, response: { 200: ValvesResponse } } }, (request) =>
    functions.valvesSpec(request.user!, request.params.id, 'valves'),
  );
  app.post('/id/:id/valves/update', { onRequest: auth.admin, schema: { ...byId, body: ValvesForm, response: { 200: ValvesResponse } } }, (request) =>
    functions.updateValves(request.user!, request.params.id, request.body),
  );
  app.get('/id/:id/valves/user', { onRequest: auth.verified, schema: { ...byId, response: { 200: ValvesResponse } } }, (request) =>
    functions.userValves(request.user!, request.params.id),
  );
  app.get('/id/:id/valves/user/spec', { onRequest: auth.verified, schema: { ...byId, response: { 200: ValvesResponse } } }, (request) =>
    functions.valvesSpec(request.user!, request.params.id, 'user'),
  );
  app.post('/id/:id/valves/user/update', { onRequest: auth.verified, schema: { ...byId, body: ValvesForm, response: { 200: ValvesResponse } } }, (request) =>
    functions.updateUserValves(request.user!, request.params.id, request.body),
  );
}

export const functionsArea = defineArea('/api/v1/functions', functionsRoutes);
