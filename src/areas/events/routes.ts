import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { App } from '../../core/http/server.js';
import {
  Delivery,
  DeliveryIdParams,
  DeliveryPage,
  DeliveryQuery,
  EventCatalog,
  EventWebhook,
  EventWebhookForm,
  EventWebhookUpdateForm,
  WebhookIdParams,
  WebhookSecret,
} from './schemas.js';
import type { EventsService } from './service.js';

/** /api/events: the catalog and webhook administration (interface §4.2), admin only; plus the delivery log. */
async function eventsRoutes(app: App, ctx: AreaContext<{ events: EventsService }>): Promise<void> {
  const events = ctx.services.events;
  const onRequest = ctx.auth.admin;
  const actor = (request: { user: UserRecord | null }) => request.user as UserRecord;

  app.get('', { onRequest, schema: { response: { 200: EventCatalog } } }, async () => events.catalog());

  app.get('/webhooks', { onRequest, schema: { response: { 200: Type.Array(EventWebhook) } } }, async () => events.list());

  app.post('/webhooks', { onRequest, schema: { body: EventWebhookForm, response: { 200: EventWebhook } } }, async (request) =>
    events.create(request.body, actor(request)),
  );

  app.put(
    '/webhooks/:webhook_id',
    { onRequest, schema: { params: WebhookIdParams, body: EventWebhookUpdateForm, response: { 200: EventWebhook } } },
    async (request) => events.update(request.params.webhook_id, request.body, actor(request)),
  );

  app.delete(
    '/webhooks/:webhook_id',
    { onRequest, schema: { params: WebhookIdParams, response: { 200: Type.Object({ status: Type.Literal(true) }) } } },
    async (request) => events.remove(request.params.webhook_id, actor(request)),
  );

  app.get('/webhooks/:webhook_id/secret', { onRequest, schema: { params: WebhookIdParams, response: { 200: WebhookSecret } } }, async (request) =>
    events.secret(request.params.webhook_id),
  );

  app.post(
    '/webhooks/:webhook_id/secret/rotate',
    { onRequest, schema: { params: WebhookIdParams, response: { 200: WebhookSecret } } },
    async (request) => events.rotateSecret(request.params.webhook_id, actor(request)),
  );

  app.get(
    '/webhooks/:webhook_id/deliveries',
    { onRequest, schema: { params: WebhookIdParams, querystring: DeliveryQuery, response: { 200: DeliveryPage } } },
    async (request) => events.deliveries(request.params.webhook_id, request.query.page, request.query.limit),
  );

  app.post(
    '/webhooks/:webhook_id/deliveries/:delivery_id/retry',
    { onRequest, schema: { params: DeliveryIdParams, response: { 200: Delivery } } },
    async (request) => events.retryDelivery(request.params.webhook_id, request.params.delivery_id),
  );

  app.post('/webhooks/:webhook_id/test', { onRequest, schema: { params: WebhookIdParams, response: { 200: Delivery } } }, async (request) =>
    events.test(request.params.webhook_id, actor(request)),
  );
}

export const eventsArea = defineArea('/api/events', eventsRoutes);
