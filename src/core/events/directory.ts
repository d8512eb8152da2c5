import type { Db } from '../db/database.js';
import type { EventsStore, StoredWebhook } from './store.js';

/**
 * The webhooks in memory, so that matching an event costs no query on the
 * request path. Local writes update it at once (before their event is
 * published, so a "created" event reaches the new webhook, as in the
 * reference); changes made by other instances arrive with the periodic refresh.
 */
export class WebhookDirectory {
  private list: StoredWebhook[] = [];
  private byId = new Map<string, StoredWebhook>();
  /** Bumped by every local change, so a refresh that raced one is discarded rather than undoing it. */
  private version = 0;
  /** Receivers inside the server (event functions): routed and delivered like webhooks, never stored as ones. */
  private local: () => readonly StoredWebhook[] = () => [];

  constructor(private readonly store: EventsStore) {}

  setLocalReceivers(list: () => readonly StoredWebhook[]): void {
    this.local = list;
  }

  all(): readonly StoredWebhook[] {
    const local = this.local();
    return local.length === 0 ? this.list : [...this.list, ...local];
  }

  get(id: string): StoredWebhook | undefined {
    return this.byId.get(id) ?? this.local().find((receiver) => receiver.id === id);
  }

  /** Re-reads every webhook; `db` is a transaction when called inside one. */
  async refresh(db?: Db): Promise<void> {
    const started = this.version;
    const rows = await this.store.webhooks(db);
    if (this.version === started) this.replace(rows);
  }

  replace(rows: StoredWebhook[]): void {
    this.version += 1;
    this.list = [...rows].sort((a, b) => a.position - b.position || a.id.localeCompare(b.id));
    this.byId = new Map(this.list.map((w) => [w.id, w]));
  }

  put(webhook: StoredWebhook): void {
    this.replace([...this.list.filter((w) => w.id !== webhook.id), webhook]);
  }

  remove(id: string): void {
    this.replace(this.list.filter((w) => w.id !== id));
  }
}
