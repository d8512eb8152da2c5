import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import {
  EvaluationConfig,
  FeedbackForm,
  FeedbackIdResponse,
  FeedbackListQuery,
  FeedbackListResponse,
  FeedbackModel,
  FeedbackParams,
  LeaderboardQuery,
  LeaderboardResponse,
  ModelHistoryParams,
  ModelHistoryQuery,
  ModelHistoryResponse,
  ModelIdQuery,
  PageQuery,
  UpdateConfigForm,
} from './schemas.js';
import type { EvaluationsService } from './service.js';

/** `/api/v1/evaluations` (routers/evaluations.py): feedback on answers, the arena leaderboard and its config. */
async function evaluationsRoutes(app: App, ctx: AreaContext<{ evaluations: EvaluationsService }>): Promise<void> {
  const { evaluations } = ctx.services;
  const { auth } = ctx;
  const tags = ['evaluations'];

  app.get('/leaderboard', { onRequest: auth.admin, schema: { tags, querystring: LeaderboardQuery, response: { 200: LeaderboardResponse } } }, (request) =>
    evaluations.leaderboard(request.query.query),
  );

  app.get(
    '/leaderboard/:model_id/history',
    { onRequest: auth.admin, schema: { tags, params: ModelHistoryParams, querystring: ModelHistoryQuery, response: { 200: ModelHistoryResponse } } },
    (request) => evaluations.history(request.params.model_id, request.query.days),
  );

  app.get('/config', { onRequest: auth.admin, schema: { tags, response: { 200: EvaluationConfig } } }, () => evaluations.config());

  app.post('/config', { onRequest: auth.admin, schema: { tags, body: UpdateConfigForm, response: { 200: EvaluationConfig } } }, (request) =>
    evaluations.updateConfig(request.user!, request.body),
  );

  app.get('/feedbacks/models', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Array(Type.String()) } } }, () => evaluations.modelIds());

  app.get('/feedbacks/all/ids', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Array(FeedbackIdResponse) } } }, () => evaluations.ids());

  app.delete('/feedbacks/all', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => evaluations.deleteAll(request.user!, true));

  app.get('/feedbacks/all/export', { onRequest: auth.admin, schema: { tags, querystring: ModelIdQuery, response: { 200: Type.Array(FeedbackModel) } } }, (request) =>
    evaluations.export(request.query.model_id),
  );

  app.get('/feedbacks/user', { onRequest: auth.verified, schema: { tags, querystring: PageQuery, response: { 200: FeedbackListResponse } } }, (request) =>
    evaluations.ofUser(request.user!, request.query.page),
  );

  app.delete('/feedbacks', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => evaluations.deleteAll(request.user!, false));

  app.get('/feedbacks/list', { onRequest: auth.admin, schema: { tags, querystring: FeedbackListQuery, response: { 200: FeedbackListResponse } } }, (request) =>
    evaluations.list(request.query),
  );

  app.post('/feedback', { onRequest: auth.verified, schema: { tags, body: FeedbackForm, response: { 200: FeedbackModel } } }, (request) =>
    evaluations.create(request.user!, request.body),
  );

  app.get('/feedback/:id', { onRequest: auth.verified, schema: { tags, params: FeedbackParams, response: { 200: FeedbackModel } } }, (request) =>
    evaluations.get(request.user!, request.params.id),
  );

  app.post('/feedback/:id', { onRequest: auth.verified, schema: { tags, params: FeedbackParams, body: FeedbackForm, response: { 200: FeedbackModel } } }, (request) =>
    evaluations.update(request.user!, request.params.id, request.body),
  );

  app.delete('/feedback/:id', { onRequest: auth.verified, schema: { tags, params: FeedbackParams, response: { 200: Type.Boolean() } } }, (request) =>
    evaluations.delete(request.user!, request.params.id),
  );
}

export const evaluationsArea = defineArea('/api/v1/evaluations', evaluationsRoutes);
