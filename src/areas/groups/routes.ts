import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { IdParams } from '../../core/http/schema.js';
import {
  GroupExportResponse,
  GroupForm,
  GroupInfoResponse,
  GroupListQuery,
  GroupMemberResponse,
  GroupPreviewResponse,
  GroupResponse,
  UserIdsForm,
} from './schemas.js';
import type { AccessService } from '../../core/access/service.js';
import type { GroupsService } from './service.js';

/** `/api/v1/groups`: user groups, their members and per-group permissions. */
async function groupsRoutes(app: App, ctx: AreaContext<{ groups: GroupsService; access: AccessService }>): Promise<void> {
  const { groups, access } = ctx.services;
  const { auth } = ctx;
  const tags = ['groups'];

  app.get('/', { onRequest: auth.verified, schema: { tags, querystring: GroupListQuery, response: { 200: Type.Array(GroupResponse) } } }, (request) =>
    groups.list(request.user!, request.query.share),
  );

  app.post('/create', { onRequest: auth.admin, schema: { tags, body: GroupForm, response: { 200: GroupResponse } } }, (request) =>
    groups.create(request.user!, request.body),
  );

  app.get('/id/:id', { onRequest: auth.admin, schema: { tags, params: IdParams, response: { 200: GroupResponse } } }, (request) =>
    groups.get(request.params.id),
  );

  app.get('/id/:id/info', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: GroupInfoResponse } } }, (request) =>
    groups.info(request.params.id),
  );

  app.get('/id/:id/export', { onRequest: auth.admin, schema: { tags, params: IdParams, response: { 200: GroupExportResponse } } }, (request) =>
    groups.export(request.params.id),
  );

  app.post('/id/:id/users', { onRequest: auth.admin, schema: { tags, params: IdParams, response: { 200: Type.Array(GroupMemberResponse) } } }, (request) =>
    groups.members(request.params.id),
  );

  app.post('/id/:id/update', { onRequest: auth.admin, schema: { tags, params: IdParams, body: GroupForm, response: { 200: GroupResponse } } }, (request) =>
    groups.update(request.user!, request.params.id, request.body),
  );

  app.post('/id/:id/users/add', { onRequest: auth.admin, schema: { tags, params: IdParams, body: UserIdsForm, response: { 200: GroupResponse } } }, (request) =>
    groups.addMembers(request.user!, request.params.id, request.body.user_ids),
  );

  app.post('/id/:id/users/remove', { onRequest: auth.admin, schema: { tags, params: IdParams, body: UserIdsForm, response: { 200: GroupResponse } } }, (request) =>
    groups.removeMembers(request.user!, request.params.id, request.body.user_ids),
  );

  app.delete('/id/:id/delete', { onRequest: auth.admin, schema: { tags, params: IdParams, response: { 200: Type.Boolean() } } }, (request) =>
    groups.delete(request.user!, request.params.id),
  );

  app.get('/id/:id/preview', { onRequest: auth.admin, schema: { tags, params: IdParams, response: { 200: GroupPreviewResponse } } }, (request) =>
    access.previewGroup(request.params.id),
  );
}

export const groupsArea = defineArea('/api/v1/groups', groupsRoutes);
