import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { WorkspaceListQuery } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import {
  HistoryQuery,
  PromptAccessGrantsForm,
  PromptAccessListResponse,
  PromptAccessResponse,
  PromptForm,
  PromptHistoryModel,
  PromptHistoryResponse,
  PromptMetadataForm,
  PromptModel,
  PromptParams,
  PromptVersionForm,
  PromptVersionParams,
} from './schemas.js';
import type { PromptsService } from './service.js';

/**
 * `/api/v1/prompts`: `/` commands, their grants and versions (routers/prompts.py).
 * `GET /id/{id}/history/diff` is answered by `/history/{history_id}` (a 404), as in
 * the reference, where that route shadows the diff route.
 */
async function promptsRoutes(app: App, ctx: AreaContext<{ prompts: PromptsService }>): Promise<void> {
  const { prompts } = ctx.services;
  const { auth } = ctx;
  const tags = ['prompts'];
  const byId = { tags, params: PromptParams };

  app.get('/', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(PromptModel) } } }, async (request, reply) =>
    // Already serialised (see PromptsService.listBody); a Buffer is sent as is.
    reply.type('application/json; charset=utf-8').send((await prompts.listBody(request.user!)) as never),
  );

  app.get('/tags', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(Type.String()) } } }, (request) =>
    prompts.tags(request.user!),
  );

  app.get('/list', { onRequest: auth.verified, schema: { tags, querystring: WorkspaceListQuery, response: { 200: PromptAccessListResponse } } }, (request) =>
    prompts.search(request.user!, request.query),
  );

  app.post('/create', { onRequest: auth.verified, schema: { tags, body: PromptForm, response: { 200: PromptModel } } }, (request) =>
    prompts.create(request.user!, request.body),
  );

  app.get('/id/:id', { onRequest: auth.verified, schema: { ...byId, response: { 200: PromptAccessResponse } } }, (request) =>
    prompts.get(request.user!, request.params.id),
  );

  app.post('/id/:id/update', { onRequest: auth.verified, schema: { ...byId, body: PromptForm, response: { 200: PromptModel } } }, (request) =>
    prompts.update(request.user!, request.params.id, request.body),
  );

  app.post('/id/:id/update/meta', { onRequest: auth.verified, schema: { ...byId, body: PromptMetadataForm, response: { 200: PromptModel } } }, (request) =>
    prompts.updateMeta(request.user!, request.params.id, request.body),
  );

  app.post('/id/:id/update/version', { onRequest: auth.verified, schema: { ...byId, body: PromptVersionForm, response: { 200: PromptModel } } }, (request) =>
    prompts.setVersion(request.user!, request.params.id, request.body.version_id),
  );

  app.post(
    '/id/:id/access/update',
    { onRequest: auth.verified, schema: { ...byId, body: PromptAccessGrantsForm, response: { 200: PromptModel } } },
    (request) => prompts.updateAccess(request.user!, request.params.id, request.body.access_grants),
  );

  app.post('/id/:id/toggle', { onRequest: auth.verified, schema: { ...byId, response: { 200: PromptModel } } }, (request) =>
    prompts.toggle(request.user!, request.params.id),
  );

  app.delete('/id/:id/delete', { onRequest: auth.verified, schema: { ...byId, response: { 200: Type.Boolean() } } }, (request) =>
    prompts.delete(request.user!, request.params.id),
  );

  app.get(
    '/id/:id/history',
    { onRequest: auth.verified, schema: { ...byId, querystring: HistoryQuery, response: { 200: Type.Array(PromptHistoryResponse) } } },
    (request) => prompts.history(request.user!, request.params.id, request.query.page ?? 0),
  );

  app.get(
    '/id/:id/history/:history_id',
    { onRequest: auth.verified, schema: { tags, params: PromptVersionParams, response: { 200: PromptHistoryModel } } },
    (request) => prompts.version(request.user!, request.params.id, request.params.history_id),
  );

  app.delete(
    '/id/:id/history/:history_id',
    { onRequest: auth.verified, schema: { tags, params: PromptVersionParams, response: { 200: Type.Boolean() } } },
    (request) => prompts.deleteVersion(request.user!, request.params.id, request.params.history_id),
  );
}

export const promptsArea = defineArea('/api/v1/prompts', promptsRoutes);
