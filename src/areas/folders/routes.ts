import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { IdParams } from '../../core/http/schema.js';
import {
  DeleteFolderQuery,
  FolderAccessGrantsForm,
  FolderForm,
  FolderIsExpandedForm,
  FolderModel,
  FolderNameIdResponse,
  FolderParentIdForm,
  FolderReadResponse,
  FolderUpdateForm,
  FolderWithGrants,
  SharedChatsQuery,
  SharedFolderChatsResponse,
  SharedFolderResponse,
} from './schemas.js';
import type { FoldersService } from './service.js';

/** `/api/v1/folders`: the user's chat folders, and folders shared with them. */
async function foldersRoutes(app: App, ctx: AreaContext<{ folders: FoldersService }>): Promise<void> {
  const { folders } = ctx.services;
  const { auth } = ctx;
  const tags = ['folders'];

  app.get('/', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(FolderNameIdResponse) } } }, (request) => folders.list(request.user!));

  app.post('/', { onRequest: auth.verified, schema: { tags, body: FolderForm, response: { 200: FolderModel } } }, (request) =>
    folders.create(request.user!, request.body),
  );

  app.get('/shared', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(SharedFolderResponse) } } }, (request) =>
    folders.shared(request.user!),
  );

  app.get('/:id', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: FolderWithGrants } } }, (request) =>
    folders.get(request.user!, request.params.id),
  );

  app.post('/:id/update', { onRequest: auth.verified, schema: { tags, params: IdParams, body: FolderUpdateForm, response: { 200: FolderModel } } }, (request) =>
    folders.update(request.user!, request.params.id, request.body),
  );

  app.post('/:id/update/parent', { onRequest: auth.verified, schema: { tags, params: IdParams, body: FolderParentIdForm, response: { 200: FolderModel } } }, (request) =>
    folders.setParent(request.user!, request.params.id, request.body.parent_id ?? null),
  );

  app.post(
    '/:id/update/expanded',
    { onRequest: auth.verified, schema: { tags, params: IdParams, body: FolderIsExpandedForm, response: { 200: FolderModel } } },
    (request) => folders.setExpanded(request.user!, request.params.id, request.body.is_expanded),
  );

  app.post(
    '/:id/access/update',
    { onRequest: auth.verified, schema: { tags, params: IdParams, body: FolderAccessGrantsForm, response: { 200: FolderWithGrants } } },
    (request) => folders.updateAccess(request.user!, request.params.id, request.body.access_grants),
  );

  app.get(
    '/:id/shared/chats',
    { onRequest: auth.verified, schema: { tags, params: IdParams, querystring: SharedChatsQuery, response: { 200: SharedFolderChatsResponse } } },
    (request) => folders.sharedChats(request.user!, request.params.id, request.query),
  );

  app.post('/:id/read', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: FolderReadResponse } } }, (request) =>
    folders.markRead(request.user!, request.params.id),
  );

  app.delete('/:id', { onRequest: auth.verified, schema: { tags, params: IdParams, querystring: DeleteFolderQuery, response: { 200: Type.Boolean() } } }, (request) =>
    folders.delete(request.user!, request.params.id, request.query.delete_contents ?? true),
  );
}

export const foldersArea = defineArea('/api/v1/folders', foldersRoutes);
