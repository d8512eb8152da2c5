import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { IdParams } from '../../core/http/schema.js';
import { AutomationForm, AutomationListQuery, AutomationListResponse, AutomationResponse, AutomationRunModel, AutomationRunsQuery } from './schemas.js';
import type { AutomationsService } from './service.js';

/** `/api/v1/automations` (routers/automations.py): the 8 operations. */
async function automationsRoutes(app: App, ctx: AreaContext<{ automations: AutomationsService }>): Promise<void> {
  const { automations } = ctx.services;
  const { auth } = ctx;
  const tags = ['automations'];

  app.get('/list', { onRequest: auth.verified, schema: { tags, querystring: AutomationListQuery, response: { 200: AutomationListResponse } } }, (request) =>
    automations.list(request.user!, request.query),
  );

  app.post('/create', { onRequest: auth.verified, schema: { tags, body: AutomationForm, response: { 200: AutomationResponse } } }, (request) =>
    automations.create(request.user!, request.body),
  );

  app.get('/:id', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: AutomationResponse } } }, (request) => automations.get(request.user!, request.params.id));

  app.post('/:id/update', { onRequest: auth.verified, schema: { tags, params: IdParams, body: AutomationForm, response: { 200: AutomationResponse } } }, (request) =>
    automations.update(request.user!, request.params.id, request.body),
  );

  app.post('/:id/toggle', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: AutomationResponse } } }, (request) =>
    automations.toggle(request.user!, request.params.id),
  );

  app.post('/:id/run', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: AutomationResponse } } }, (request) =>
    automations.runNow(request.user!, request.params.id),
  );

  app.delete('/:id/delete', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: Type.Boolean() } } }, (request) =>
    automations.delete(request.user!, request.params.id),
  );

  app.get('/:id/runs', { onRequest: auth.verified, schema: { tags, params: IdParams, querystring: AutomationRunsQuery, response: { 200: Type.Array(AutomationRunModel) } } }, (request) =>
    automations.runs(request.user!, request.params.id, request.query),
  );
}

export const automationsArea = defineArea('/api/v1/automations', automationsRoutes);
