import { randomUUID } from 'node:crypto';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { WebhookDirectory } from '../../core/events/directory.js';
import { type DisableReason, WebhookDispatcher } from '../../core/events/dispatcher.js';
import { normalizeEventFilters, normalizeTargets, WebhookRuleError } from '../../core/events/filters.js';
import { messageContextOf } from '../../core/events/formats.js';
import { type DeliveryOptions, deliveryOptionsFromEnv } from '../../core/events/options.js';
import { EventOutbox } from '../../core/events/outbox.js';
import { EVENT_CATALOG, type EventPayload, type EventSink } from '../../core/events/publish.js';
import { newSigningSecret } from '../../core/events/signing.js';
import { type DeliveryRecord, EventsStore, type StoredWebhook, type WebhookFields } from '../../core/events/store.js';
import { UrlGuard, UrlRefusedError } from '../../core/http/url-guard.js';
import { badRequest, ERROR, notFound } from '../../core/http/errors.js';
import type { GroupsService } from '../groups/service.js';
import type { Delivery, DeliveryPage, EventWebhook, EventWebhookForm, EventWebhookUpdateForm, WebhookSecret } from './schemas.js';
import { EVENT_WEBHOOKS, LEGACY_WEBHOOK_URL } from './settings.js';

const DEFAULT_WEBHOOK_ID = 'default';
const WEBHOOK_NOT_FOUND = 'Webhook not found';
const DELIVERY_NOT_FOUND = 'Delivery not found';

const defaultName = (id: string) => (id === DEFAULT_WEBHOOK_ID ? 'Default webhook' : 'Webhook');

/** The record as the interface shows it: the reference's eight keys, never the secret. */
function viewOf(webhook: StoredWebhook): EventWebhook {
  const { id, name, url, enabled, events, targets, created_at, updated_at } = webhook;
  return { id, name, url, enabled, events, targets, created_at, updated_at };
}

/** Runs a webhook rule; its violation is the reference's 400 with the rule's message. */
function rule<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof WebhookRuleError) throw badRequest(error.message);
    throw error;
  }
}

/** Receivers inside the server: their routes (ids and URLs `local:…`) and how an event reaches one. */
export interface LocalReceivers {
  list(): readonly StoredWebhook[];
  deliver(receiver: StoredWebhook, event: EventPayload, signal: AbortSignal): Promise<void>;
}

/**
 * Event webhooks: administration (interface §4.2, with the reference's statuses
 * and messages), the legacy-webhook migration, signing secrets, the delivery log,
 * and the wiring of the durable outbox and the dispatcher (docs/webhooks.md).
 */
export class EventsService {
  readonly options: DeliveryOptions;
  readonly guard: UrlGuard;
  readonly store: EventsStore;
  readonly directory: WebhookDirectory;
  readonly outbox: EventOutbox;
  readonly dispatcher: WebhookDispatcher;
  private unsubscribe: (() => void)[] = [];
  private localDelivery: LocalReceivers['deliver'] | null = null;

  constructor(
    private readonly core: Core,
    groups: GroupsService,
  ) {
    this.options = deliveryOptionsFromEnv(core.env.raw);
    this.guard = new UrlGuard(this.options.urlPolicy);
    this.store = new EventsStore(core.db, core.database.dialect);
    this.directory = new WebhookDirectory(this.store);
    this.dispatcher = new WebhookDispatcher({
      store: this.store,
      directory: this.directory,
      clock: core.clock,
      log: core.log,
      options: this.options,
      guard: this.guard,
      message: messageContextOf(core.env),
      disable: (id, reason, detail) => this.disable(id, reason, detail),
      deliverLocally: async (receiver, event, signal) => {
        if (!this.localDelivery) throw new Error('no local receiver is connected');
        await this.localDelivery(receiver, event, signal);
      },
    });
    this.outbox = new EventOutbox(
      core.db,
      this.store,
      this.directory,
      core.clock,
      (userIds, db) => groups.groupIdsOfUsers(userIds, db),
      () => this.dispatcher.wake(),
    );
  }

  /**
   * Receivers inside the server (event functions, the reference's second sink):
   * routed by the same rules and delivered through the same outbox, retries and
   * slots as webhooks, so a slow or failing one never holds up the emitter.
   */
  connectLocalReceivers(receivers: LocalReceivers): void {
    this.directory.setLocalReceivers(receivers.list);
    this.localDelivery = receivers.deliver;
  }

  /** Migrates the legacy webhook, loads the webhooks, starts recording events and delivering them. */
  async start(): Promise<void> {
    await this.migrateLegacyWebhook();
    await this.directory.refresh();
    // The import sink runs first, so an imported list already routes the `config.imported` event itself.
    this.unsubscribe = [this.core.events.subscribe(this.importSink), this.core.events.subscribe(this.outbox.sink)];
    await this.dispatcher.start();
  }

  async stop(): Promise<void> {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    this.unsubscribe = [];
    await this.dispatcher.stop();
  }

  catalog() {
    return { schema: this.core.env.version, events: EVENT_CATALOG.events };
  }

  async list(): Promise<EventWebhook[]> {
    return (await this.store.webhooks()).map(viewOf);
  }

  /** Creates a webhook, or replaces every field of the one with the form's id (its secret stays). */
  async create(form: EventWebhookForm, actor: UserRecord): Promise<EventWebhook> {
    const url = form.url.trim();
    if (url) await this.checkUrl(url);
    const events = rule(() => normalizeEventFilters(form.events));
    const targets = rule(() => normalizeTargets(form.targets));
    const id = form.id || randomUUID();
    const now = this.core.clock.now();
    return this.write(async (trx) => {
      const existing = await this.store.webhook(id, trx);
      const position = existing?.position ?? ((await this.store.positions(trx))?.last ?? 0) + 1;
      const stored = await this.store.upsertWebhook(
        {
          id,
          name: form.name || defaultName(id),
          url,
          enabled: form.enabled ?? true,
          events,
          targets,
          secret: newSigningSecret(),
          previous_secret: null,
          previous_secret_expires_at: null,
          position,
          failing_since: null,
          disabled_reason: null,
          created_at: now,
          updated_at: now,
        },
        trx,
      );
      this.directory.put(stored);
      await this.publishChange(existing ? 'updated' : 'created', stored, actor, trx);
      return viewOf(stored);
    });
  }

  /** Writes only the fields given non-null; the URL is checked only when it is one of them. */
  async update(id: string, form: EventWebhookUpdateForm, actor: UserRecord): Promise<EventWebhook> {
    if (!(await this.store.webhook(id))) throw notFound(WEBHOOK_NOT_FOUND);
    const patch: Partial<WebhookFields> = {};
    if (form.url !== undefined && form.url !== null) {
      patch.url = form.url.trim();
      if (patch.url) await this.checkUrl(patch.url);
    }
    if (form.events !== undefined && form.events !== null) patch.events = rule(() => normalizeEventFilters(form.events));
    if (form.targets !== undefined && form.targets !== null) patch.targets = rule(() => normalizeTargets(form.targets));
    if (form.name !== undefined && form.name !== null) patch.name = form.name || defaultName(id);
    if (form.enabled !== undefined && form.enabled !== null) patch.enabled = form.enabled;
    return this.write(async (trx) => {
      const stored = await this.store.updateWebhook(id, patch, this.core.clock.now(), trx);
      if (!stored) throw notFound(WEBHOOK_NOT_FOUND);
      this.directory.put(stored);
      await this.publishChange('updated', stored, actor, trx);
      return viewOf(stored);
    });
  }

  /** Deletes a webhook and its deliveries; deleting 'default' also clears the legacy URL so it is not migrated again. */
  async remove(id: string, actor: UserRecord): Promise<{ status: true }> {
    await this.write(async (trx) => {
      if (!(await this.store.deleteWebhook(id, trx))) throw notFound(WEBHOOK_NOT_FOUND);
      if (id === DEFAULT_WEBHOOK_ID) await this.core.settings.set({ [LEGACY_WEBHOOK_URL.key]: '' }, this.core.clock.now(), trx);
      this.directory.remove(id);
      await this.core.events.publish(
        { event: 'config.webhook.updated', actor, subjectId: id, subjectType: 'config', data: { action: 'deleted' } },
        trx,
      );
    });
    return { status: true };
  }

  async secret(id: string): Promise<WebhookSecret> {
    const webhook = await this.store.webhook(id);
    if (!webhook) throw notFound(WEBHOOK_NOT_FOUND);
    return this.secretView(webhook);
  }

  /** A new secret signs from now on; the previous one signs too until the grace period ends. */
  async rotateSecret(id: string, actor: UserRecord): Promise<WebhookSecret> {
    const now = this.core.clock.now();
    return this.write(async (trx) => {
      const current = await this.store.webhook(id, trx);
      if (!current) throw notFound(WEBHOOK_NOT_FOUND);
      const stored = await this.store.setSecret(id, newSigningSecret(), current.secret, now + this.options.secretGraceSeconds, now, trx);
      if (!stored) throw notFound(WEBHOOK_NOT_FOUND);
      this.directory.put(stored);
      await this.core.events.publish(
        { event: 'config.webhook.updated', actor, subjectId: id, subjectType: 'config', data: { action: 'secret_rotated' } },
        trx,
      );
      return this.secretView(stored);
    });
  }

  async deliveries(id: string, page: number, limit: number): Promise<DeliveryPage> {
    if (!(await this.store.webhook(id))) throw notFound(WEBHOOK_NOT_FOUND);
    const { items, total } = await this.store.deliveries(id, (page - 1) * limit, limit);
    return { items: items.map((d) => this.deliveryView(d)), total, page, limit };
  }

  /** Makes a delivery due now, whatever its state (a failed one gets one more attempt). */
  async retryDelivery(id: string, deliveryId: string): Promise<Delivery> {
    if (!(await this.store.webhook(id))) throw notFound(WEBHOOK_NOT_FOUND);
    const { clock } = this.core;
    if (!(await this.store.retryNow(id, deliveryId, clock.nowMs(), clock.now()))) throw notFound(DELIVERY_NOT_FOUND);
    this.dispatcher.wake();
    return this.deliveryOf(id, deliveryId);
  }

  /** Sends a `config.webhook.tested` event to this webhook only, through the same outbox as every event. */
  async test(id: string, actor: UserRecord): Promise<Delivery> {
    const webhook = await this.store.webhook(id);
    if (!webhook) throw notFound(WEBHOOK_NOT_FOUND);
    if (!webhook.enabled) throw badRequest('Webhook is disabled: switch it on (enabled: true) to test it');
    if (!webhook.url) throw badRequest(`${ERROR.INVALID_URL} The webhook has no URL: set one to test it.`);
    const event = this.core.events.build({
      event: 'config.webhook.tested',
      actor,
      subjectId: id,
      subjectType: 'config',
      data: { name: webhook.name },
    });
    const [deliveryId] = await this.outbox.record(event, [id], null);
    return this.deliveryOf(id, deliveryId);
  }

  private async deliveryOf(webhookId: string, deliveryId: string): Promise<Delivery> {
    const record = await this.store.delivery(webhookId, deliveryId);
    if (!record) throw notFound(DELIVERY_NOT_FOUND);
    return this.deliveryView(record);
  }

  private deliveryView(row: DeliveryRecord): Delivery {
    const pending = row.status === 'pending';
    const delivering = pending && row.lease_expires_ms !== null && row.lease_expires_ms > this.core.clock.nowMs();
    return {
      id: row.id,
      webhook_id: row.webhook_id,
      event_id: row.event_id,
      event: row.event,
      status: delivering ? 'delivering' : (row.status as Delivery['status']),
      attempts: row.attempts,
      last_status_code: row.last_status_code,
      last_latency_ms: row.last_latency_ms,
      last_error: row.last_error,
      last_attempt_at: row.last_attempt_at,
      next_attempt_at: pending && row.next_attempt_ms !== null ? Math.ceil(row.next_attempt_ms / 1000) : null,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  private secretView(webhook: StoredWebhook): WebhookSecret {
    const graceRunning = webhook.previous_secret_expires_at !== null && webhook.previous_secret_expires_at > this.core.clock.now();
    return { id: webhook.id, secret: webhook.secret, previous_secret_expires_at: graceRunning ? webhook.previous_secret_expires_at : null };
  }

  private async checkUrl(url: string): Promise<void> {
    try {
      await this.guard.check(url);
    } catch (error) {
      // The reference's words first (clients may match them), then why and what allows it.
      if (error instanceof UrlRefusedError) throw badRequest(`${ERROR.INVALID_URL} ${error.message}`);
      throw error;
    }
  }

  private publishChange(action: 'created' | 'updated', webhook: StoredWebhook, actor: UserRecord, trx: Db) {
    return this.core.events.publish(
      {
        event: 'config.webhook.updated',
        actor,
        subjectId: webhook.id,
        subjectType: 'config',
        data: { action, enabled: webhook.enabled, events: webhook.events, targets: webhook.targets },
      },
      trx,
    );
  }

  /** Called by the dispatcher on a 410 or a failure streak longer than allowed. */
  private async disable(id: string, reason: DisableReason, detail: Record<string, unknown>): Promise<void> {
    await this.write(async (trx) => {
      if (!(await this.store.disableWebhook(id, reason, this.core.clock.now(), trx))) return;
      const stored = await this.store.webhook(id, trx);
      if (stored) this.directory.put(stored);
      await this.core.events.publish(
        { event: 'config.webhook.disabled', subjectId: id, subjectType: 'config', source: 'system', data: { reason, ...detail } },
        trx,
      );
      this.core.log.warn({ webhook: id, reason }, 'event webhook disabled');
    });
  }

  /**
   * The reference's start-up migration: a legacy `webhook_url` becomes the webhook 'default', once
   * (events.md §5). Also run by `parley import-openwebui` after it carries the setting over.
   */
  async migrateLegacyWebhook(): Promise<void> {
    const url = (this.core.settings.get(LEGACY_WEBHOOK_URL) ?? '').trim();
    if (!url || (await this.store.webhook(DEFAULT_WEBHOOK_ID))) return;
    const now = this.core.clock.now();
    await this.write(async (trx) => {
      const first = (await this.store.positions(trx))?.first ?? 1;
      await this.store.insertWebhookIfAbsent(
        {
          id: DEFAULT_WEBHOOK_ID,
          name: defaultName(DEFAULT_WEBHOOK_ID),
          url,
          enabled: true,
          events: ['*'],
          targets: null,
          secret: newSigningSecret(),
          previous_secret: null,
          previous_secret_expires_at: null,
          position: first - 1,
          failing_since: null,
          disabled_reason: null,
          created_at: now,
          updated_at: now,
        },
        trx,
      );
    });
  }

  /** Applies an imported `events.webhooks` list to the table, in the import's transaction. */
  private readonly importSink: EventSink = async (event, db) => {
    const keys = event.data.keys;
    if (event.event !== 'config.imported' || !Array.isArray(keys) || !keys.includes(EVENT_WEBHOOKS.key)) return;
    await this.applyImported(this.core.settings.get(EVENT_WEBHOOKS), db);
  };

  /**
   * Replaces the webhooks with an imported list, which passed the webhook routes'
   * checks (EVENT_WEBHOOKS); kept ids keep their secrets.
   */
  private async applyImported(value: unknown, db: Db | null): Promise<void> {
    const entries = (Array.isArray(value) ? value : []) as (EventWebhookForm & { created_at?: unknown })[];
    const now = this.core.clock.now();
    const int = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : null);
    await this.write(async (trx) => {
      const current = new Map((await this.store.webhooks(trx)).map((w) => [w.id, w]));
      const kept: string[] = [];
      for (const [index, entry] of entries.entries()) {
        const events = normalizeEventFilters(entry.events);
        const targets = normalizeTargets(entry.targets);
        const id = entry.id || randomUUID();
        const existing = current.get(id);
        await this.store.upsertWebhook(
          {
            id,
            name: entry.name || defaultName(id),
            url: entry.url.trim(),
            enabled: entry.enabled ?? true,
            events,
            targets,
            secret: existing?.secret ?? newSigningSecret(),
            previous_secret: null,
            previous_secret_expires_at: null,
            position: index + 1,
            failing_since: null,
            disabled_reason: null,
            created_at: int(entry.created_at) ?? now,
            updated_at: now,
          },
          trx,
        );
        kept.push(id);
      }
      await this.store.deleteWebhooksExcept(kept, trx);
      await this.directory.refresh(trx);
    }, db);
  }

  /**
   * Runs a change of the webhook table in a transaction (the caller's, when given)
   * and rewrites the `events.webhooks` mirror in it. On PostgreSQL the mirror's row
   * is locked first, so concurrent changes take turns and the mirror never loses
   * one. A failed change re-reads the webhooks, undoing early in-memory updates.
   */
  private async write<T>(work: (trx: Db) => Promise<T>, db: Db | null = null): Promise<T> {
    const run = async (trx: Db) => {
      if (this.core.database.dialect === 'postgres') {
        await trx.selectFrom('config').select('key').where('key', '=', EVENT_WEBHOOKS.key).forUpdate().execute();
      }
      const result = await work(trx);
      const mirror = (await this.store.webhooks(trx)).map(viewOf);
      await this.core.settings.set({ [EVENT_WEBHOOKS.key]: mirror }, this.core.clock.now(), trx);
      return result;
    };
    if (db?.isTransaction) return run(db);
    try {
      return await this.core.db.transaction().execute(run);
    } catch (error) {
      await this.directory.refresh().catch(() => undefined);
      throw error;
    }
  }
}
