import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import {
  ChatMessageModel,
  DailyQuery,
  DailyStatsResponse,
  MessagesQuery,
  ModelAnalyticsResponse,
  ModelChatsQuery,
  ModelChatsResponse,
  ModelOverviewQuery,
  ModelOverviewResponse,
  ModelParams,
  ScopeQuery,
  SummaryResponse,
  TokenUsageResponse,
  UserAnalyticsResponse,
  UsersQuery,
} from './schemas.js';
import type { AnalyticsService } from './service.js';

/** `/api/v1/analytics` (routers/analytics.py, 0.11.0): eight read-only admin operations; absent when ENABLE_ADMIN_ANALYTICS is false. */
async function analyticsRoutes(app: App, ctx: AreaContext<{ analytics: AnalyticsService }>): Promise<void> {
  if (ctx.core.env.raw.ENABLE_ADMIN_ANALYTICS?.trim().toLowerCase() === 'false') return;
  const { analytics } = ctx.services;
  const { auth } = ctx;
  const tags = ['analytics'];

  app.get('/models', { onRequest: auth.admin, schema: { tags, querystring: ScopeQuery, response: { 200: ModelAnalyticsResponse } } }, (request) => analytics.models(request.query));

  app.get('/users', { onRequest: auth.admin, schema: { tags, querystring: UsersQuery, response: { 200: UserAnalyticsResponse } } }, (request) => analytics.users(request.query));

  app.get('/messages', { onRequest: auth.admin, schema: { tags, querystring: MessagesQuery, response: { 200: Type.Array(ChatMessageModel) } } }, (request) =>
    analytics.messages(request.query),
  );

  app.get('/summary', { onRequest: auth.admin, schema: { tags, querystring: ScopeQuery, response: { 200: SummaryResponse } } }, (request) => analytics.summary(request.query));

  app.get('/daily', { onRequest: auth.admin, schema: { tags, querystring: DailyQuery, response: { 200: DailyStatsResponse } } }, (request) => analytics.daily(request.query));

  app.get('/tokens', { onRequest: auth.admin, schema: { tags, querystring: ScopeQuery, response: { 200: TokenUsageResponse } } }, (request) => analytics.tokens(request.query));

  app.get(
    '/models/:model_id/chats',
    { onRequest: auth.admin, schema: { tags, params: ModelParams, querystring: ModelChatsQuery, response: { 200: ModelChatsResponse } } },
    (request) => analytics.chats(request.params.model_id, request.query),
  );

  app.get(
    '/models/:model_id/overview',
    { onRequest: auth.admin, schema: { tags, params: ModelParams, querystring: ModelOverviewQuery, response: { 200: ModelOverviewResponse } } },
    (request) => analytics.overview(request.params.model_id, request.query.days),
  );
}

export const analyticsArea = defineArea('/api/v1/analytics', analyticsRoutes);
