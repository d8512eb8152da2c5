import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { JsonObject, StatusResponse } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import { clientGone } from '../../core/upstream/relay.js';
import type { ExternalKnowledgeService } from './external.js';
import {
  DeleteDirectoryQuery,
  DirectoryParams,
  ExternalConnectionListResponse,
  ExternalKnowledgeConnectionForm,
  ExternalKnowledgeCreateForm,
  ExternalKnowledgeRetrieveTestForm,
  ExternalKnowledgeSourceCreateForm,
  ExternalKnowledgeSourceTestForm,
  ExternalTestResult,
  FileSearchQuery,
  KnowledgeAccessGrantsForm,
  KnowledgeAccessListResponse,
  KnowledgeDirectoryCreateForm,
  KnowledgeDirectoryModel,
  KnowledgeDirectoryUpdateForm,
  KnowledgeFileIdForm,
  KnowledgeFileListResponse,
  KnowledgeFileMoveForm,
  KnowledgeFilesQuery,
  KnowledgeFilesResponse,
  KnowledgeForm,
  KnowledgeParams,
  KnowledgeResponse,
  KnowledgeSearchQuery,
  PageQuery,
  PendingQuery,
  RemoveFileQuery,
  ResetQuery,
  SyncCleanupForm,
  SyncDiffForm,
  SyncDiffResponse,
} from './schemas.js';
import type { KnowledgeService } from './service.js';
import { zipOf } from './zip.js';

/** `/api/v1/knowledge` (routers/knowledge.py and the 0.11.0 additions). See docs/knowledge.md. */
async function knowledgeRoutes(app: App, ctx: AreaContext<{ knowledge: KnowledgeService; externalKnowledge: ExternalKnowledgeService }>): Promise<void> {
  const { knowledge, externalKnowledge: external } = ctx.services;
  const { auth } = ctx;
  const tags = ['knowledge'];
  const byId = { tags, params: KnowledgeParams };

  app.get('/', { onRequest: auth.verified, schema: { tags, querystring: PageQuery, response: { 200: KnowledgeAccessListResponse } } }, (request) =>
    knowledge.search(request.user!, { page: request.query.page }),
  );

  app.get('/search', { onRequest: auth.verified, schema: { tags, querystring: KnowledgeSearchQuery, response: { 200: KnowledgeAccessListResponse } } }, (request) =>
    knowledge.search(request.user!, request.query),
  );

  app.get('/search/files', { onRequest: auth.verified, schema: { tags, querystring: FileSearchQuery, response: { 200: KnowledgeFileListResponse } } }, (request) =>
    knowledge.searchFiles(request.user!, request.query),
  );

  app.post('/create', { onRequest: auth.verified, schema: { tags, body: KnowledgeForm, response: { 200: KnowledgeResponse } } }, (request) =>
    knowledge.create(request.user!, request.body),
  );

  app.post('/reindex', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => knowledge.reindexAll(request.user!));

  app.post('/metadata/reindex', { onRequest: auth.admin, schema: { tags, response: { 200: JsonObject() } } }, () => knowledge.reindexMetadata());

  // ---- external knowledge (admins) ----

  app.get('/external/connections', { onRequest: auth.admin, schema: { tags, response: { 200: ExternalConnectionListResponse } } }, () => external.list());

  app.post('/external/connections', { onRequest: auth.admin, schema: { tags, body: ExternalKnowledgeConnectionForm, response: { 200: JsonObject() } } }, (request) =>
    external.create(request.user!, request.body),
  );

  app.get('/external/connections/:id', { onRequest: auth.admin, schema: { ...byId, response: { 200: JsonObject() } } }, (request) => external.get(request.params.id));

  app.patch(
    '/external/connections/:id',
    { onRequest: auth.admin, schema: { ...byId, body: ExternalKnowledgeConnectionForm, response: { 200: JsonObject() } } },
    (request) => external.update(request.user!, request.params.id, request.body),
  );

  app.delete('/external/connections/:id', { onRequest: auth.admin, schema: { ...byId, response: { 200: Type.Boolean() } } }, (request) =>
    external.delete(request.user!, request.params.id),
  );

  app.post('/external/connections/:id/test', { onRequest: auth.admin, schema: { ...byId, response: { 200: JsonObject() } } }, (request) => external.test(request.params.id));

  app.post('/external/source/test', { onRequest: auth.admin, schema: { tags, body: ExternalKnowledgeSourceTestForm, response: { 200: ExternalTestResult } } }, (request) =>
    external.testSource(request.user!, request.body),
  );

  app.post(
    '/external/connections/:id/retrieve-test',
    { onRequest: auth.admin, schema: { ...byId, body: ExternalKnowledgeRetrieveTestForm, response: { 200: ExternalTestResult } } },
    (request) => external.retrieveTestOf(request.params.id, request.body),
  );

  app.post('/external/knowledge/create', { onRequest: auth.admin, schema: { tags, body: ExternalKnowledgeCreateForm, response: { 200: KnowledgeResponse } } }, (request) =>
    external.createKnowledge(request.user!, request.body),
  );

  app.post('/external/source/create', { onRequest: auth.admin, schema: { tags, body: ExternalKnowledgeSourceCreateForm, response: { 200: KnowledgeResponse } } }, (request) =>
    external.createSource(request.user!, request.body),
  );

  app.patch(
    '/external/source/:id',
    { onRequest: auth.admin, schema: { ...byId, body: ExternalKnowledgeSourceCreateForm, response: { 200: KnowledgeResponse } } },
    (request) => external.updateSource(request.user!, request.params.id, request.body),
  );

  // ---- one knowledge base ----

  app.get('/:id', { onRequest: auth.verified, schema: { ...byId, response: { 200: KnowledgeFilesResponse } } }, (request) => knowledge.get(request.user!, request.params.id));

  app.post('/:id/update', { onRequest: auth.verified, schema: { ...byId, body: KnowledgeForm, response: { 200: KnowledgeFilesResponse } } }, (request) =>
    knowledge.update(request.user!, request.params.id, request.body),
  );

  app.post(
    '/:id/access/update',
    { onRequest: auth.verified, schema: { ...byId, body: KnowledgeAccessGrantsForm, response: { 200: KnowledgeFilesResponse } } },
    (request) => knowledge.updateAccess(request.user!, request.params.id, request.body.access_grants),
  );

  app.get('/:id/files/pending', { onRequest: auth.verified, schema: { ...byId, querystring: PendingQuery } }, async (request, reply) => {
    if (!request.query.stream) return knowledge.pendingFiles(request.user!, request.params.id);
    const events = knowledge.pendingEvents(request.user!, request.params.id, clientGone(reply));
    // The first step runs the access check, so a refusal is an ordinary error answer.
    const first = await events.next();
    async function* all() {
      if (!first.done) yield first.value;
      yield* events;
    }
    return reply.type('text/event-stream').header('cache-control', 'no-cache').send(Readable.from(all()));
  });

  app.get('/:id/files', { onRequest: auth.verified, schema: { ...byId, querystring: KnowledgeFilesQuery, response: { 200: KnowledgeFileListResponse } } }, (request) =>
    knowledge.listFiles(request.user!, request.params.id, request.query),
  );

  app.post('/:id/file/add', { onRequest: auth.verified, schema: { ...byId, body: KnowledgeFileIdForm, response: { 200: KnowledgeFilesResponse } } }, (request) =>
    knowledge.addFile(request.user!, request.params.id, request.body),
  );

  app.post('/:id/file/update', { onRequest: auth.verified, schema: { ...byId, body: KnowledgeFileIdForm, response: { 200: KnowledgeFilesResponse } } }, (request) =>
    knowledge.updateFile(request.user!, request.params.id, request.body),
  );

  app.post(
    '/:id/file/remove',
    { onRequest: auth.verified, schema: { ...byId, querystring: RemoveFileQuery, body: KnowledgeFileIdForm, response: { 200: KnowledgeFilesResponse } } },
    (request) => knowledge.removeFile(request.user!, request.params.id, request.body.file_id, request.query.delete_file ?? true),
  );

  app.delete('/:id/delete', { onRequest: auth.verified, schema: { ...byId, response: { 200: Type.Boolean() } } }, (request) =>
    knowledge.delete(request.user!, request.params.id),
  );

  app.post('/:id/reset', { onRequest: auth.verified, schema: { ...byId, querystring: ResetQuery, response: { 200: KnowledgeResponse } } }, (request) =>
    knowledge.reset(request.user!, request.params.id, request.query.include_directories ?? true),
  );

  app.post('/:id/sync/diff', { onRequest: auth.verified, schema: { ...byId, body: SyncDiffForm, response: { 200: SyncDiffResponse } } }, (request) =>
    knowledge.syncDiff(request.user!, request.params.id, request.body),
  );

  app.post('/:id/sync/cleanup', { onRequest: auth.verified, schema: { ...byId, body: SyncCleanupForm, response: { 200: StatusResponse } } }, (request) =>
    knowledge.syncCleanup(request.user!, request.params.id, request.body),
  );

  app.post(
    '/:id/files/batch/add',
    { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { ...byId, body: Type.Array(KnowledgeFileIdForm), response: { 200: KnowledgeFilesResponse } } },
    (request) => knowledge.addFiles(request.user!, request.params.id, request.body),
  );

  app.get('/:id/export', { onRequest: auth.admin, schema: byId }, async (request, reply) => {
    const exported = await knowledge.export(request.user!, request.params.id);
    return reply
      .type('application/zip')
      .header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(exported.filename)}`)
      .send(await zipOf(exported.entries));
  });

  app.post(
    '/:id/dirs/create',
    { onRequest: auth.verified, schema: { ...byId, body: KnowledgeDirectoryCreateForm, response: { 200: KnowledgeDirectoryModel } } },
    (request) => knowledge.createDirectory(request.user!, request.params.id, request.body),
  );

  app.post(
    '/:id/dirs/:dir_id/update',
    { onRequest: auth.verified, schema: { tags, params: DirectoryParams, body: KnowledgeDirectoryUpdateForm, response: { 200: KnowledgeDirectoryModel } } },
    (request) => knowledge.updateDirectory(request.user!, request.params.id, request.params.dir_id, request.body),
  );

  app.delete(
    '/:id/dirs/:dir_id/delete',
    { onRequest: auth.verified, schema: { tags, params: DirectoryParams, querystring: DeleteDirectoryQuery, response: { 200: StatusResponse } } },
    (request) => knowledge.deleteDirectory(request.user!, request.params.id, request.params.dir_id, request.query.move_files ?? true),
  );

  app.post('/:id/file/move', { onRequest: auth.verified, schema: { ...byId, body: KnowledgeFileMoveForm, response: { 200: StatusResponse } } }, (request) =>
    knowledge.moveFile(request.user!, request.params.id, request.body),
  );
}

export const knowledgeArea = defineArea('/api/v1/knowledge', knowledgeRoutes);
