import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { HttpError } from '../../core/http/errors.js';
import { JsonObject, StatusResponse } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import {
  BatchProcessFilesForm,
  BatchProcessFilesResponse,
  DeleteForm,
  EmbeddingConfigForm,
  EmbeddingConfigResponse,
  LIST_FIELDS,
  ProcessFileForm,
  ProcessResponse,
  ProcessTextForm,
  QueryCollectionsForm,
  QueryDocForm,
  QueryResult,
  RetrievalConfigForm,
  RetrievalConfigResponse,
} from './schemas.js';
import type { CollectionsService } from './service.js';

/** A null where the form requires a list is a 422, as pydantic answers (and nothing is stored). */
function refuseNullLists(body: Record<string, unknown>): void {
  const nulls = LIST_FIELDS.filter((field) => field in body && body[field] === null);
  if (nulls.length > 0) throw new HttpError(422, nulls.map((field) => ({ type: 'list_type', loc: ['body', field], msg: 'Input should be a valid list', input: null })));
}

/** `/api/v1/retrieval` (routers/retrieval.py; web and YouTube processing are core/web's). See docs/retrieval.md. */
async function retrievalRoutes(app: App, ctx: AreaContext<{ collections: CollectionsService }>): Promise<void> {
  const { collections } = ctx.services;
  const { auth } = ctx;
  const tags = ['retrieval'];

  app.get('/', { onRequest: auth.verified, schema: { tags, response: { 200: JsonObject() } } }, () => collections.status());

  app.get('/embedding', { onRequest: auth.admin, schema: { tags, response: { 200: EmbeddingConfigResponse } } }, () => collections.embeddingConfig());
  app.post('/embedding/update', { onRequest: auth.admin, schema: { tags, body: EmbeddingConfigForm, response: { 200: EmbeddingConfigResponse } } }, (request) =>
    collections.updateEmbeddingConfig(request.body),
  );

  app.get('/config', { onRequest: auth.admin, schema: { tags, response: { 200: RetrievalConfigResponse } } }, () => collections.config());
  app.post('/config/update', { onRequest: auth.admin, schema: { tags, body: RetrievalConfigForm, response: { 200: RetrievalConfigResponse } } }, (request) => {
    refuseNullLists(request.body);
    return collections.updateConfig(request.body);
  });

  // Texts and files can be long: large bodies, as chat bodies.
  app.post('/process/text', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: ProcessTextForm, response: { 200: ProcessResponse } } }, (request) =>
    collections.processText(request.user!, request.body),
  );
  app.post('/process/file', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: ProcessFileForm, response: { 200: ProcessResponse } } }, (request) =>
    collections.processFile(request.user!, request.body),
  );
  app.post(
    '/process/files/batch',
    { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: BatchProcessFilesForm, response: { 200: BatchProcessFilesResponse } } },
    (request) => collections.processFilesBatch(request.user!, request.body),
  );

  app.post('/query/doc', { onRequest: auth.verified, schema: { tags, body: QueryDocForm, response: { 200: QueryResult } } }, (request) =>
    collections.queryDoc(request.user!, request.body),
  );
  app.post('/query/collection', { onRequest: auth.verified, schema: { tags, body: QueryCollectionsForm, response: { 200: QueryResult } } }, (request) =>
    collections.queryCollection(request.user!, request.body),
  );

  app.post('/delete', { onRequest: auth.admin, schema: { tags, body: DeleteForm, response: { 200: StatusResponse } } }, (request) =>
    collections.deleteFromCollection(request.user!, request.body),
  );
  app.post('/reset/db', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Null() } } }, (request) => collections.resetStore(request.user!));
  app.post('/reset/uploads', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => collections.resetUploads(request.user!));
}

export const retrievalArea = defineArea('/api/v1/retrieval', retrievalRoutes);
