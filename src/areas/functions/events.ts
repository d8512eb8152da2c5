import type { EventPayload } from '../../core/events/publish.js';
import type { StoredWebhook } from '../../core/events/store.js';
import { LOCAL_RECEIVER } from '../../core/events/local.js';
import type { LocalReceivers } from '../events/service.js';
import type { FunctionsService } from './service.js';
import type { FunctionRecord } from './store.js';

const PREFIX = `${LOCAL_RECEIVER}function:`;

/**
 * Event functions (0.10.0's second sink of the event bus): every active
 * function of type `event` is a receiver routed like a webhook (its `events`
 * names, or every event) and delivered through the durable outbox, with its
 * retries and per-receiver slots: a slow or failing handler never blocks the
 * request that published the event, nor the other receivers.
 */
export class EventFunctions implements LocalReceivers {
  private receivers: StoredWebhook[] = [];
  private readonly byId = new Map<string, FunctionRecord>();
  private loaded = -1;

  constructor(private readonly functions: FunctionsService) {
    functions.onChange(() => void this.refresh());
  }

  /** Reads the active event functions again (at start and after every change of a function). */
  async refresh(): Promise<void> {
    const version = this.functions.changes;
    const active = await this.functions.active('event');
    if (this.loaded > version) return;
    this.loaded = version;
    this.byId.clear();
    for (const fn of active) this.byId.set(`${PREFIX}${fn.id}`, fn);
    this.receivers = active.map((fn) => receiverOf(fn));
  }

  readonly list = (): readonly StoredWebhook[] => this.receivers;

  readonly deliver = async (receiver: StoredWebhook, event: EventPayload, signal: AbortSignal): Promise<void> => {
    const fn = this.byId.get(receiver.id);
    if (!fn) return; // deleted or switched off since the event was recorded
    await this.functions.run(fn, 'event', {
      body: event,
      functionExtras: { __id__: fn.id, __event__: event, __event_id__: event.id, __event_name__: event.event },
      signal,
    });
  };
}

function receiverOf(fn: FunctionRecord): StoredWebhook {
  const events = fn.traits?.events?.length ? fn.traits.events.map(String) : ['*'];
  return {
    id: `${PREFIX}${fn.id}`,
    name: fn.name,
    url: `${PREFIX}${fn.id}`,
    enabled: true,
    events,
    targets: null,
    secret: '',
    previous_secret: null,
    previous_secret_expires_at: null,
    position: Number.MAX_SAFE_INTEGER,
    failing_since: null,
    disabled_reason: null,
    created_at: fn.created_at,
    updated_at: fn.updated_at,
  };
}
