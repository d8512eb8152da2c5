import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { LOCAL_RECEIVER } from './local.js';
import type { Db, DialectName } from '../db/database.js';
import { fromJson, toBool, toJson } from '../db/json.js';
import type { EventDeliveryRow, EventWebhookRow } from '../db/tables.js';
import type { WebhookTarget } from './filters.js';

/**
 * The queries of the three event tables (webhooks, outbox, deliveries) and
 * nothing else. The one dialect difference, how a delivery is claimed, is here.
 */
export interface StoredWebhook {
  id: string;
  name: string;
  url: string;
  enabled: boolean;
  events: string[];
  targets: WebhookTarget[] | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  position: number;
  failing_since: number | null;
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
}

export type WebhookFields = Pick<StoredWebhook, 'name' | 'url' | 'enabled' | 'events' | 'targets'>;

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface ClaimedDelivery {
  id: string;
  event_id: string;
  webhook_id: string;
  attempts: number;
}

export interface AttemptResult {
  id: string;
  /** Attempts made, this one included. */
  attempts: number;
  status: DeliveryStatus;
  nextAttemptMs: number | null;
  attemptedAt: number;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
}

export interface DeliveryRecord extends EventDeliveryRow {
  event: string;
}

/** Time-ordered ids (UUID version 7: 48 bits of milliseconds, then random), so the newest deliveries sort first by id. */
export function timeOrderedId(nowMs: number): string {
  const time = nowMs.toString(16).padStart(12, '0').slice(-12);
  const random = randomUUID();
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15, 18)}-${random.slice(19)}`;
}

function webhookOf(row: EventWebhookRow): StoredWebhook {
  return {
    ...row,
    enabled: toBool(row.enabled),
    events: fromJson<string[]>(row.events, ['*']),
    targets: fromJson<WebhookTarget[] | null>(row.targets, null),
  };
}

export class EventsStore {
  constructor(
    private readonly db: Db,
    readonly dialect: DialectName,
  ) {}

  // --- webhooks ---

  async webhooks(db: Db = this.db): Promise<StoredWebhook[]> {
    const rows = await db.selectFrom('event_webhook').selectAll().orderBy('position').orderBy('id').execute();
    return rows.map(webhookOf);
  }

  async webhook(id: string, db: Db = this.db): Promise<StoredWebhook | null> {
    const row = await db.selectFrom('event_webhook').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? webhookOf(row) : null;
  }

  /** The lowest and highest list positions, to put a webhook first (the migrated default) or last (a new one). */
  async positions(db: Db = this.db): Promise<{ first: number; last: number } | null> {
    const row = await db
      .selectFrom('event_webhook')
      .select((eb) => [eb.fn.min('position').as('first'), eb.fn.max('position').as('last')])
      .executeTakeFirst();
    if (row?.first === null || row?.first === undefined) return null;
    return { first: Number(row.first), last: Number(row.last) };
  }

  /** Inserts a webhook, or replaces the fields of the one with the same id (keeping its secret and creation time). */
  async upsertWebhook(webhook: StoredWebhook, db: Db = this.db): Promise<StoredWebhook> {
    const fields = {
      name: webhook.name,
      url: webhook.url,
      enabled: webhook.enabled,
      events: toJson(webhook.events) ?? '["*"]',
      targets: toJson(webhook.targets),
      position: webhook.position,
      failing_since: null,
      disabled_reason: null,
      updated_at: webhook.updated_at,
    };
    const row = await db
      .insertInto('event_webhook')
      .values({ ...fields, id: webhook.id, secret: webhook.secret, created_at: webhook.created_at })
      .onConflict((oc) => oc.column('id').doUpdateSet(fields))
      .returningAll()
      .executeTakeFirstOrThrow();
    return webhookOf(row);
  }

  /** Adds a webhook unless one with its id exists; true when added. */
  async insertWebhookIfAbsent(webhook: StoredWebhook, db: Db = this.db): Promise<boolean> {
    const result = await db
      .insertInto('event_webhook')
      .values({ ...webhook, events: toJson(webhook.events) ?? '["*"]', targets: toJson(webhook.targets) })
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** Writes only the given fields, so concurrent edits of different fields both survive. */
  async updateWebhook(id: string, patch: Partial<WebhookFields>, updatedAt: number, db: Db = this.db): Promise<StoredWebhook | null> {
    const set: Record<string, unknown> = { updated_at: updatedAt };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.url !== undefined) set.url = patch.url;
    if (patch.events !== undefined) set.events = toJson(patch.events);
    if (patch.targets !== undefined) set.targets = toJson(patch.targets);
    if (patch.enabled !== undefined) {
      set.enabled = patch.enabled;
      // Switching a webhook on by hand starts a fresh failure streak.
      if (patch.enabled) Object.assign(set, { failing_since: null, disabled_reason: null });
    }
    const row = await db.updateTable('event_webhook').set(set).where('id', '=', id).returningAll().executeTakeFirst();
    return row ? webhookOf(row) : null;
  }

  async setSecret(id: string, secret: string, previous: string | null, previousExpiresAt: number | null, updatedAt: number, db: Db = this.db) {
    const row = await db
      .updateTable('event_webhook')
      .set({ secret, previous_secret: previous, previous_secret_expires_at: previousExpiresAt, updated_at: updatedAt })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row ? webhookOf(row) : null;
  }

  /** Removes a webhook and every delivery to it; false when there was none. */
  async deleteWebhook(id: string, db: Db = this.db): Promise<boolean> {
    await db.deleteFrom('event_delivery').where('webhook_id', '=', id).execute();
    const result = await db.deleteFrom('event_webhook').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async deleteWebhooksExcept(ids: string[], db: Db = this.db): Promise<void> {
    const gone = db.selectFrom('event_webhook').select('id').$if(ids.length > 0, (qb) => qb.where('id', 'not in', ids));
    await db.deleteFrom('event_delivery').where('webhook_id', 'in', gone).execute();
    await db
      .deleteFrom('event_webhook')
      .$if(ids.length > 0, (qb) => qb.where('id', 'not in', ids))
      .execute();
  }

  /** Starts a failure streak if none is running; returns when the streak started. */
  async markFailing(id: string, now: number, db: Db = this.db): Promise<number | null> {
    const row = await db
      .updateTable('event_webhook')
      .set({ failing_since: sql`coalesce(failing_since, ${now})` })
      .where('id', '=', id)
      .returning('failing_since')
      .executeTakeFirst();
    return row?.failing_since ?? null;
  }

  async clearFailing(id: string, db: Db = this.db): Promise<void> {
    await db.updateTable('event_webhook').set({ failing_since: null }).where('id', '=', id).where('failing_since', 'is not', null).execute();
  }

  /** Switches a webhook off; true when it was on (so only one instance reports it). */
  async disableWebhook(id: string, reason: string, now: number, db: Db = this.db): Promise<boolean> {
    const result = await db
      .updateTable('event_webhook')
      .set({ enabled: false, disabled_reason: reason, updated_at: now })
      .where('id', '=', id)
      .where('enabled', '=', true)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  // --- outbox and deliveries ---

  /** Records one event and its deliveries, due at once, in the caller's transaction. */
  async recordEvent(
    event: { id: string; event: string; payload: string },
    webhookIds: string[],
    now: { seconds: number; ms: number },
    db: Db,
  ): Promise<string[]> {
    await db.insertInto('event_outbox').values({ id: event.id, event: event.event, payload: event.payload, created_at: now.seconds }).execute();
    const rows = webhookIds.map((webhookId) => ({
      id: timeOrderedId(now.ms),
      event_id: event.id,
      webhook_id: webhookId,
      status: 'pending',
      attempts: 0,
      next_attempt_ms: now.ms,
      created_at: now.seconds,
      updated_at: now.seconds,
    }));
    await db.insertInto('event_delivery').values(rows).execute();
    return rows.map((r) => r.id);
  }

  /**
   * Claims up to `limit` due deliveries of enabled webhooks (of one webhook, when
   * `webhookId` is given) for `owner` until `leaseUntilMs`, skipping deliveries the
   * caller still has under way. PostgreSQL skips rows another instance is claiming
   * right now (FOR UPDATE SKIP LOCKED); SQLite has a single writer, so the UPDATE
   * alone is atomic.
   */
  async claim(
    owner: string,
    nowMs: number,
    leaseUntilMs: number,
    limit: number,
    scope: { webhookId: string | null; skipDeliveryIds: string[] },
  ): Promise<ClaimedDelivery[]> {
    const due = this.db
      .selectFrom('event_delivery as d')
      .leftJoin('event_webhook as w', 'w.id', 'd.webhook_id')
      .select('d.id')
      .where('d.status', '=', 'pending')
      .where('d.next_attempt_ms', '<=', nowMs)
      .where((eb) => eb.or([eb('d.lease_expires_ms', 'is', null), eb('d.lease_expires_ms', '<=', nowMs)]))
      // Enabled webhooks, and receivers inside the server (event functions), which have no webhook row.
      .where((eb) => eb.or([eb('w.enabled', '=', true), eb('d.webhook_id', 'like', `${LOCAL_RECEIVER}%`)]))
      .$if(scope.webhookId !== null, (qb) => qb.where('d.webhook_id', '=', scope.webhookId as string))
      .$if(scope.skipDeliveryIds.length > 0, (qb) => qb.where('d.id', 'not in', scope.skipDeliveryIds))
      .orderBy('d.next_attempt_ms')
      .limit(limit)
      .$if(this.dialect === 'postgres', (qb) => qb.forUpdate('d').skipLocked());
    return this.db
      .updateTable('event_delivery')
      .set({ lease_owner: owner, lease_expires_ms: leaseUntilMs })
      .where('id', 'in', due)
      .returning(['id', 'event_id', 'webhook_id', 'attempts'])
      .execute();
  }

  async payloads(eventIds: string[]): Promise<Map<string, string>> {
    if (eventIds.length === 0) return new Map();
    const rows = await this.db.selectFrom('event_outbox').select(['id', 'payload']).where('id', 'in', eventIds).execute();
    return new Map(rows.map((r) => [r.id, r.payload]));
  }

  /** Writes attempt outcomes in one transaction; a claim another instance has taken over is left alone. */
  async recordAttempts(owner: string, results: AttemptResult[]): Promise<void> {
    if (results.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      for (const r of results) {
        await trx
          .updateTable('event_delivery')
          .set({
            status: r.status,
            attempts: r.attempts,
            next_attempt_ms: r.nextAttemptMs,
            lease_owner: null,
            lease_expires_ms: null,
            last_attempt_at: r.attemptedAt,
            last_status_code: r.statusCode,
            last_latency_ms: r.latencyMs,
            last_error: r.error,
            updated_at: r.attemptedAt,
          })
          .where('id', '=', r.id)
          .where('lease_owner', '=', owner)
          .execute();
      }
    });
  }

  /** Gives claims back without counting an attempt (shutdown, or more claimed than can start). */
  async release(owner: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db
      .updateTable('event_delivery')
      .set({ lease_owner: null, lease_expires_ms: null })
      .where('id', 'in', ids)
      .where('lease_owner', '=', owner)
      .execute();
  }

  /** Releases claims an earlier run of this instance held (its owner names start with `prefix`). */
  async releaseEarlierRuns(prefix: string, currentOwner: string): Promise<void> {
    await this.db
      .updateTable('event_delivery')
      .set({ lease_owner: null, lease_expires_ms: null })
      .where('lease_owner', 'like', `${prefix}%`)
      .where('lease_owner', '!=', currentOwner)
      .execute();
  }

  async deleteDeliveries(owner: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.deleteFrom('event_delivery').where('id', 'in', ids).where('lease_owner', '=', owner).execute();
  }

  /** Deliveries still to send and given up, over every webhook (for the metrics). */
  async deliveryCounts(): Promise<{ pending: number; failed: number }> {
    const rows = await this.db
      .selectFrom('event_delivery')
      .select(['status', (eb) => eb.fn.countAll().as('n')])
      .where('status', 'in', ['pending', 'failed'])
      .groupBy('status')
      .execute();
    const count = (status: string) => Number(rows.find((row) => row.status === status)?.n ?? 0);
    return { pending: count('pending'), failed: count('failed') };
  }

  async deliveries(webhookId: string, offset: number, limit: number): Promise<{ items: DeliveryRecord[]; total: number }> {
    const [items, total] = await Promise.all([
      this.db
        .selectFrom('event_delivery as d')
        .innerJoin('event_outbox as o', 'o.id', 'd.event_id')
        .selectAll('d')
        .select('o.event')
        .where('d.webhook_id', '=', webhookId)
        .orderBy('d.id', 'desc')
        .limit(limit)
        .offset(offset)
        .execute(),
      this.db
        .selectFrom('event_delivery')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('webhook_id', '=', webhookId)
        .executeTakeFirst(),
    ]);
    return { items, total: Number(total?.n ?? 0) };
  }

  async delivery(webhookId: string, id: string, db: Db = this.db): Promise<DeliveryRecord | null> {
    const row = await db
      .selectFrom('event_delivery as d')
      .innerJoin('event_outbox as o', 'o.id', 'd.event_id')
      .selectAll('d')
      .select('o.event')
      .where('d.webhook_id', '=', webhookId)
      .where('d.id', '=', id)
      .executeTakeFirst();
    return row ?? null;
  }

  /** Makes a delivery due now; its attempt count stays, so a delivery past its schedule gets exactly one more attempt. */
  async retryNow(webhookId: string, id: string, nowMs: number, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('event_delivery')
      .set({ status: 'pending', next_attempt_ms: nowMs, updated_at: now })
      .where('webhook_id', '=', webhookId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Deletes finished deliveries last touched before `before` (seconds), then events nothing refers to. */
  async prune(before: number): Promise<number> {
    const result = await this.db
      .deleteFrom('event_delivery')
      .where('status', 'in', ['succeeded', 'failed'])
      .where('updated_at', '<', before)
      .executeTakeFirst();
    await this.db
      .deleteFrom('event_outbox')
      .where('created_at', '<', before)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('event_delivery').select('event_delivery.id').whereRef('event_delivery.event_id', '=', 'event_outbox.id'))),
      )
      .execute();
    return Number(result.numDeletedRows);
  }
}
