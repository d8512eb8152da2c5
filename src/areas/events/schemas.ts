import { type Static, Type } from '@sinclair/typebox';
import { Maybe, Nullable } from '../../core/http/schema.js';

/**
 * Forms and responses of /api/events (the reference's main.py EventWebhookForm
 * and EventWebhookUpdateForm, interface §2.5 and §4.2), plus Parley's delivery
 * log, secret and test operations.
 */

/** `dict[str, str]` in the reference: any keys, string values; `type` and `id` are checked by the service. */
const TargetEntry = Type.Record(Type.String(), Type.String());

export const EventWebhookForm = Type.Object({
  /** Upsert key (interface §4.2); without it the server makes a UUID. */
  id: Maybe(Type.String()),
  name: Maybe(Type.String()),
  url: Type.String(),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  events: Maybe(Type.Array(Type.String())),
  targets: Maybe(Type.Array(TargetEntry)),
});
export type EventWebhookForm = Static<typeof EventWebhookForm>;

/** Every field optional; a null or missing field leaves the stored value unchanged (interface §2.5). */
export const EventWebhookUpdateForm = Type.Object({
  name: Maybe(Type.String()),
  url: Maybe(Type.String()),
  enabled: Maybe(Type.Boolean()),
  events: Maybe(Type.Array(Type.String())),
  targets: Maybe(Type.Array(TargetEntry)),
});
export type EventWebhookUpdateForm = Static<typeof EventWebhookUpdateForm>;

export const EventWebhookTarget = Type.Object({ type: Type.String(), id: Type.String() });

/** The eight keys of the reference's normalised webhook, in its order. */
export const EventWebhook = Type.Object({
  id: Type.String(),
  name: Type.String(),
  url: Type.String(),
  enabled: Type.Boolean(),
  events: Type.Array(Type.String()),
  targets: Nullable(Type.Array(EventWebhookTarget)),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
export type EventWebhook = Static<typeof EventWebhook>;

export const EventCatalog = Type.Object({
  schema: Type.String(),
  events: Type.Array(Type.Object({ event: Type.String(), description: Type.String(), message: Type.String() })),
});

export const WebhookIdParams = Type.Object({ webhook_id: Type.String() });
export const DeliveryIdParams = Type.Object({ webhook_id: Type.String(), delivery_id: Type.String() });

export const WebhookSecret = Type.Object({
  id: Type.String(),
  secret: Type.String(),
  /** Until when the previous secret still signs, after a rotation. */
  previous_secret_expires_at: Nullable(Type.Integer()),
});
export type WebhookSecret = Static<typeof WebhookSecret>;

export const DeliveryStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('delivering'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
]);

export const Delivery = Type.Object({
  id: Type.String(),
  webhook_id: Type.String(),
  event_id: Type.String(),
  event: Type.String(),
  status: DeliveryStatus,
  attempts: Type.Integer(),
  last_status_code: Nullable(Type.Integer()),
  last_latency_ms: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  last_attempt_at: Nullable(Type.Integer()),
  /** Epoch seconds of the next attempt; null once the delivery succeeded or failed for good. */
  next_attempt_at: Nullable(Type.Integer()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
export type Delivery = Static<typeof Delivery>;

export const DeliveryPage = Type.Object({
  items: Type.Array(Delivery),
  total: Type.Integer(),
  page: Type.Integer(),
  limit: Type.Integer(),
});
export type DeliveryPage = Static<typeof DeliveryPage>;

export const DeliveryQuery = Type.Object({
  page: Type.Integer({ minimum: 1, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 30 }),
});
