import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { WorkspaceListQuery } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import { SkillAccessGrantsForm, SkillAccessListResponse, SkillAccessResponse, SkillForm, SkillModel, SkillParams, SkillResponse, SkillUserResponse } from './schemas.js';
import type { SkillsService } from './service.js';

/**
 * `/api/v1/skills` (routers/skills.py). The web frontend reads `GET /` whenever a
 * chat is opened or started and treats a failure as "the chat could not be loaded".
 */
async function skillsRoutes(app: App, ctx: AreaContext<{ skills: SkillsService }>): Promise<void> {
  const { skills } = ctx.services;
  const { auth } = ctx;
  const tags = ['skills'];
  const byId = { tags, params: SkillParams };

  app.get('/', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(SkillUserResponse) } } }, (request) => skills.list(request.user!));

  app.get('/list', { onRequest: auth.verified, schema: { tags, querystring: WorkspaceListQuery, response: { 200: SkillAccessListResponse } } }, (request) =>
    skills.search(request.user!, request.query),
  );

  app.get('/export', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(SkillModel) } } }, (request) => skills.export(request.user!));

  app.post('/create', { onRequest: auth.verified, schema: { tags, body: SkillForm, response: { 200: SkillResponse } } }, (request) =>
    skills.create(request.user!, request.body),
  );

  app.get('/id/:id', { onRequest: auth.verified, schema: { ...byId, response: { 200: SkillAccessResponse } } }, (request) =>
    skills.get(request.user!, request.params.id),
  );

  app.post('/id/:id/update', { onRequest: auth.verified, schema: { ...byId, body: SkillForm, response: { 200: SkillModel } } }, (request) =>
    skills.update(request.user!, request.params.id, request.body),
  );

  app.post('/id/:id/access/update', { onRequest: auth.verified, schema: { ...byId, body: SkillAccessGrantsForm, response: { 200: SkillModel } } }, (request) =>
    skills.updateAccess(request.user!, request.params.id, request.body.access_grants),
  );

  app.post('/id/:id/toggle', { onRequest: auth.verified, schema: { ...byId, response: { 200: SkillModel } } }, (request) =>
    skills.toggle(request.user!, request.params.id),
  );

  app.delete('/id/:id/delete', { onRequest: auth.verified, schema: { ...byId, response: { 200: Type.Boolean() } } }, (request) =>
    skills.delete(request.user!, request.params.id),
  );
}

export const skillsArea = defineArea('/api/v1/skills', skillsRoutes);
