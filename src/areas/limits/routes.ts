import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { LimitParams, LimitsResponse, ModelPrices, UsageLimit, UsageLimitForm } from './schemas.js';
import type { LimitsService } from './service.js';

/** `/api/v1/limits` (Parley's own): the usage budgets and model prices administrators set. */
async function limitsRoutes(app: App, ctx: AreaContext<{ limits: LimitsService }>): Promise<void> {
  const { limits } = ctx.services;
  const { auth } = ctx;
  const tags = ['limits'];

  app.get('/', { onRequest: auth.admin, schema: { tags, response: { 200: LimitsResponse } } }, () => limits.list());

  app.post('/create', { onRequest: auth.admin, schema: { tags, body: UsageLimitForm, response: { 200: UsageLimit } } }, (request) => limits.create(request.body));

  app.post('/prices', { onRequest: auth.admin, schema: { tags, body: ModelPrices, response: { 200: ModelPrices } } }, (request) => limits.setPrices(request.body));

  app.post('/:id/update', { onRequest: auth.admin, schema: { tags, params: LimitParams, body: UsageLimitForm, response: { 200: UsageLimit } } }, (request) =>
    limits.update(request.params.id, request.body),
  );

  app.delete('/:id', { onRequest: auth.admin, schema: { tags, params: LimitParams, response: { 200: Type.Boolean() } } }, (request) => limits.delete(request.params.id));
}

export const limitsArea = defineArea('/api/v1/limits', limitsRoutes);
