import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { WorkspaceListQuery } from '../../core/http/schema.js';
import { type App, OPENAI_COMPATIBLE } from '../../core/http/server.js';
import { callContext, sendAnswer } from '../../core/upstream/relay.js';
import {
  ModelAccessGrantsForm,
  ModelAccessListResponse,
  ModelAccessResponse,
  ModelForm,
  ModelIdForm,
  ModelIdQuery,
  ModelListResponse,
  ModelModel,
  ModelsImportForm,
  ModelsQuery,
  ModelUnloadForm,
  OpenBody,
  SyncModelsForm,
  TagQuery,
} from './schemas.js';
import type { GroupsService } from '../groups/service.js';
import type { CompletionsService } from './completions.js';
import type { ModelsService } from './service.js';

type Json = Record<string, unknown>;

/** `/api/v1/models`: workspace models (routers/models.py). */
async function modelsRoutes(app: App, ctx: AreaContext<{ models: ModelsService }>): Promise<void> {
  const { models } = ctx.services;
  const { auth } = ctx;
  const tags = ['models'];

  app.get('/list', { onRequest: auth.verified, schema: { tags, querystring: WorkspaceListQuery, response: { 200: ModelAccessListResponse } } }, (request) =>
    models.list(request.user!, request.query),
  );

  app.get('/base/tags', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Array(Type.String()) } } }, () => models.baseTags());

  app.get('/base', { onRequest: auth.admin, schema: { tags, querystring: TagQuery, response: { 200: Type.Array(ModelModel) } } }, (request) =>
    models.baseModels(request.query.tag),
  );

  app.get('/tags', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(Type.String()) } } }, (request) => models.tags(request.user!));

  app.post('/create', { onRequest: auth.verified, schema: { tags, body: ModelForm, response: { 200: ModelModel } } }, (request) =>
    models.create(request.user!, request.body),
  );

  app.get('/export', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(ModelModel) } } }, (request) => models.export(request.user!));

  app.post('/import', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: ModelsImportForm, response: { 200: Type.Boolean() } } }, (request) =>
    models.import(request.user!, request.body.models),
  );

  app.post('/sync', { onRequest: auth.admin, schema: { tags, body: SyncModelsForm, response: { 200: Type.Array(ModelModel) } } }, (request) =>
    models.sync(request.user!, request.body),
  );

  app.get('/model', { onRequest: auth.verified, schema: { tags, querystring: ModelIdQuery, response: { 200: ModelAccessResponse } } }, (request) =>
    models.get(request.user!, request.query.id),
  );

  app.get('/model/profile/image', { onRequest: auth.verified, schema: { tags, querystring: ModelIdQuery } }, async (request, reply) => {
    const image = await models.profileImage(request.query.id);
    if (image.kind === 'redirect') return reply.redirect(image.location, 302);
    reply.header('content-disposition', 'inline').header('x-content-type-options', 'nosniff');
    if (image.etag) reply.header('etag', image.etag);
    return reply.type(image.contentType).send(image.body);
  });

  app.post('/model/toggle', { onRequest: auth.verified, schema: { tags, querystring: ModelIdQuery, response: { 200: ModelModel } } }, (request) =>
    models.toggle(request.user!, request.query.id),
  );

  app.post('/model/update', { onRequest: auth.verified, schema: { tags, body: ModelForm, response: { 200: ModelModel } } }, (request) =>
    models.update(request.user!, request.body),
  );

  app.post('/model/access/update', { onRequest: auth.verified, schema: { tags, body: ModelAccessGrantsForm, response: { 200: ModelModel } } }, (request) =>
    models.updateAccess(request.user!, request.body),
  );

  app.post('/model/delete', { onRequest: auth.verified, schema: { tags, body: ModelIdForm, response: { 200: Type.Boolean() } } }, (request) =>
    models.delete(request.user!, request.body.id),
  );

  app.delete('/delete/all', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => models.deleteAll(request.user!));
}

/**
 * The app-level model routes of main.py: the merged list, provider models,
 * unloading, and the provider-independent embeddings and Anthropic-style messages.
 */
async function modelAppRoutes(app: App, ctx: AreaContext<{ models: ModelsService; completions: CompletionsService; groups: GroupsService }>): Promise<void> {
  const { models, completions, groups } = ctx.services;
  const { auth } = ctx;
  const tags = ['models'];
  const contextOf = (request: FastifyRequest, reply: FastifyReply) => callContext(request, reply, { groupNames: () => groups.groupsOf(request.user!.id) });

  for (const url of ['/api/models', '/api/v1/models']) {
    app.get(url, { onRequest: auth.verified, config: OPENAI_COMPATIBLE, schema: { tags, querystring: ModelsQuery, response: { 200: ModelListResponse } } }, async (request, reply) => {
      const body = await models.listBody(request.user!, contextOf(request, reply), request.query.refresh === true);
      // Already serialised (see ModelsService.listBody); a string with a JSON type is sent as is.
      return reply.type('application/json; charset=utf-8').send(body as never);
    });
  }

  app.get('/api/models/base', { onRequest: auth.admin, schema: { tags, response: { 200: ModelListResponse } } }, (request, reply) =>
    models.providerModels(contextOf(request, reply)),
  );

  app.post('/api/models/unload', { onRequest: auth.admin, schema: { tags, body: ModelUnloadForm, response: { 200: Type.Unknown() } } }, (request, reply) =>
    completions.unload(request.body.model, contextOf(request, reply)),
  );

  for (const url of ['/api/embeddings', '/api/v1/embeddings']) {
    app.post(url, { onRequest: auth.verified, config: OPENAI_COMPATIBLE, schema: { tags, body: OpenBody } }, async (request, reply) =>
      sendAnswer(reply, await completions.embeddings(request.user!, request.body as Json, contextOf(request, reply))),
    );
  }

  for (const url of ['/api/message', '/api/v1/messages']) {
    app.post(url, { onRequest: auth.verified, config: { bodyClass: 'large', ...OPENAI_COMPATIBLE }, schema: { tags, body: OpenBody } }, async (request, reply) => {
      const answer = await completions.messages(request.user!, request.body as Json, contextOf(request, reply));
      return sendAnswer(reply, answer, answer.kind === 'stream' ? 'text/event-stream' : undefined);
    });
  }
}

export const modelsArea = defineArea('/api/v1/models', modelsRoutes);
export const modelAppArea = defineArea(null, modelAppRoutes);
