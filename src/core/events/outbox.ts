import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import type { WebhookDirectory } from './directory.js';
import { eventUserIds, groupTargetsMatch, routeDecision } from './filters.js';
import type { EventPayload, EventSink } from './publish.js';
import type { EventsStore, StoredWebhook } from './store.js';

/** Group ids per user; read in the caller's transaction when there is one. */
export type GroupLookup = (userIds: string[], db: Db | undefined) => Promise<Map<string, string[]>>;

/**
 * The durable sink: an event that matches at least one webhook is written to the
 * outbox, with one delivery per matching webhook, in the transaction of the
 * write that caused it, so the event commits (or not) with that write and a
 * crash afterwards loses nothing. Events that match no webhook cost no write.
 */
export class EventOutbox {
  constructor(
    private readonly db: Db,
    private readonly store: EventsStore,
    private readonly directory: WebhookDirectory,
    private readonly clock: Clock,
    private readonly groupIdsOfUsers: GroupLookup,
    /** Told after deliveries were recorded, so the dispatcher need not wait for its next poll. */
    private readonly onRecorded: () => void,
  ) {}

  readonly sink: EventSink = async (event, db) => {
    const webhookIds = await this.matchingWebhooks(event, db);
    if (webhookIds.length > 0) await this.record(event, webhookIds, db);
  };

  /** The webhooks an event goes to; group membership is read only when a group target can decide. */
  async matchingWebhooks(event: EventPayload, db: Db | null): Promise<string[]> {
    const userIds = eventUserIds(event);
    const matched: string[] = [];
    const byGroup: StoredWebhook[] = [];
    for (const webhook of this.directory.all()) {
      const decision = routeDecision(webhook, event, userIds);
      if (decision === 'yes') matched.push(webhook.id);
      else if (decision === 'groups') byGroup.push(webhook);
    }
    if (byGroup.length > 0) {
      const memberships = await this.groupIdsOfUsers([...userIds], db ?? undefined);
      const groupIds = [...memberships.values()].flat();
      for (const webhook of byGroup) if (groupTargetsMatch(webhook.targets, groupIds)) matched.push(webhook.id);
    }
    return matched;
  }

  /** Writes the event and its deliveries: in `db` when it is a transaction, otherwise in a transaction of its own. */
  async record(event: EventPayload, webhookIds: string[], db: Db | null): Promise<string[]> {
    const row = { id: event.id, event: event.event, payload: JSON.stringify(event) };
    const write = (trx: Db) => this.store.recordEvent(row, webhookIds, { seconds: this.clock.now(), ms: this.clock.nowMs() }, trx);
    const ids = db?.isTransaction ? await write(db) : await (db ?? this.db).transaction().execute(write);
    this.onRecorded();
    return ids;
  }
}
