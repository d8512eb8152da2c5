import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import {
  AddMemoryForm,
  ListMemoryPathsForm,
  MemoryModel,
  MemoryOperationResult,
  MemoryParams,
  MemoryQueryResult,
  MemoryUpdateForm,
  PathGroups,
  PathRead,
  QueryMemoryForm,
  ReadMemoryPathForm,
  SearchMemoriesForm,
  UpdateMemoriesForm,
} from './schemas.js';
import type { MemoriesService } from './service.js';

/** `/api/v1/memories` (routers/memories.py): the signed-in user's own memories, nobody else's. */
async function memoriesRoutes(app: App, ctx: AreaContext<{ memories: MemoriesService }>): Promise<void> {
  const { memories } = ctx.services;
  const { auth } = ctx;
  const tags = ['memories'];

  app.get('/', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(MemoryModel) } } }, (request) => memories.list(request.user!));

  app.post('/add', { onRequest: auth.verified, schema: { tags, body: AddMemoryForm, response: { 200: MemoryModel } } }, (request) =>
    memories.add(request.user!, request.body),
  );

  app.post('/update', { onRequest: auth.verified, schema: { tags, body: UpdateMemoriesForm, response: { 200: Type.Array(MemoryOperationResult) } } }, (request) =>
    memories.applyOperations(request.user!, request.body),
  );

  app.post('/query', { onRequest: auth.verified, schema: { tags, body: QueryMemoryForm, response: { 200: MemoryQueryResult } } }, (request) =>
    memories.query(request.user!, request.body.content, request.body.k ?? 1),
  );

  app.post('/search', { onRequest: auth.verified, schema: { tags, body: SearchMemoriesForm, response: { 200: Type.Array(MemoryModel) } } }, (request) =>
    memories.search(request.user!, request.body),
  );

  app.post('/paths', { onRequest: auth.verified, schema: { tags, body: ListMemoryPathsForm, response: { 200: PathGroups } } }, (request) =>
    memories.paths(request.user!, request.body),
  );

  app.post('/path', { onRequest: auth.verified, schema: { tags, body: ReadMemoryPathForm, response: { 200: PathRead } } }, (request) =>
    memories.path(request.user!, request.body),
  );

  app.post('/reset', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => memories.reset(request.user!));

  app.delete('/delete/user', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => memories.deleteAll(request.user!));

  app.post('/:memory_id/update', { onRequest: auth.verified, schema: { tags, params: MemoryParams, body: MemoryUpdateForm, response: { 200: MemoryModel } } }, (request) =>
    memories.update(request.user!, request.params.memory_id, request.body),
  );

  app.delete('/:memory_id', { onRequest: auth.verified, schema: { tags, params: MemoryParams, response: { 200: Type.Boolean() } } }, (request) =>
    memories.delete(request.user!, request.params.memory_id),
  );
}

export const memoriesArea = defineArea('/api/v1/memories', memoriesRoutes);
