import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { WebhookDirectory } from './directory.js';
import { deliveryBody, type MessageContext, receiverKindOf } from './formats.js';
import type { DeliveryOptions } from './options.js';
import type { EventPayload } from './publish.js';
import { retryAfterMs, retryDelayMs } from './retry.js';
import { LOCAL_RECEIVER } from './local.js';
import { signedHeaders } from './signing.js';
import type { AttemptResult, ClaimedDelivery, EventsStore, StoredWebhook } from './store.js';
import { LazyAgent } from '../upstream/lazy-agent.js';
import type { UrlGuard } from '../http/url-guard.js';

export type DisableReason = 'gone' | 'failing';

export interface DispatcherDeps {
  store: EventsStore;
  directory: WebhookDirectory;
  clock: Clock;
  log: FastifyBaseLogger;
  options: DeliveryOptions;
  guard: UrlGuard;
  message: MessageContext;
  /** Switches a webhook off and says so with an event. */
  disable(webhookId: string, reason: DisableReason, detail: Record<string, unknown>): Promise<void>;
  /** Delivers to a receiver inside the server (`local:` URL, an event function); throws when it failed. */
  deliverLocally?(receiver: StoredWebhook, event: EventPayload, signal: AbortSignal): Promise<void>;
}


/** Claims taken per query; more are taken as soon as slots free up. */
const CLAIM_BATCH = 64;
/** How many deliveries, in slots, an instance holds claimed per webhook (in flight plus waiting), so claims come in batches. */
const HOLD_FACTOR = 4;
/** How much of an error response is kept in the delivery record. */
const ERROR_SNIPPET = 300;
/** A second look shortly after a wake-up, for events whose transaction had not committed at the first one. */
const WAKE_FOLLOW_UP_MS = 20;
const PRUNE_INTERVAL_MS = 3_600_000;

class ShutdownAbort extends Error {}

interface Held {
  delivery: ClaimedDelivery;
  payload: string;
  leaseUntilMs: number;
}

interface InFlight {
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Sends recorded deliveries: claims due ones (a lease, so that several instances
 * share the work and a crashed instance's claims are taken over when the lease
 * ends), posts them signed, and records the outcome with the next attempt time.
 * Slots are counted per webhook, so a slow or dead receiver only ever holds its
 * own share and never delays deliveries to the others.
 */
export class WebhookDispatcher {
  /** This run's claim owner; `<instance>/<run>` so a restart under a stable INSTANCE_ID can release its old claims. */
  readonly owner: string;
  readonly stats = { attempts: 0, succeeded: 0, failed: 0 };

  private readonly agent: LazyAgent;
  private readonly inFlight = new Map<string, InFlight>();
  /** Deliveries started here whose outcome is not written yet: never claimed again meanwhile, even if the lease ran out. */
  private readonly unsettled = new Set<string>();
  private readonly perWebhook = new Map<string, number>();
  private results: AttemptResult[] = [];
  private released: string[] = [];
  private flushing: Promise<void> | null = null;
  private pumping: Promise<void> | null = null;
  private pumpAgain = false;
  private pumpScheduled = false;
  /** Claimed here, waiting for a free slot of their webhook. */
  private readonly waiting = new Map<string, Held[]>();
  private running = false;
  private timers: NodeJS.Timeout[] = [];
  private followUp: NodeJS.Timeout | null = null;

  constructor(private readonly deps: DispatcherDeps) {
    this.owner = `${deps.options.stableInstanceId ?? randomUUID()}/${randomUUID()}`;
    this.agent = new LazyAgent({
      connect: { lookup: deps.guard.lookup, timeout: Math.min(deps.options.timeoutMs, 10_000) },
      connections: deps.options.concurrencyPerWebhook,
      keepAliveTimeout: 30_000,
    });
  }

  async start(): Promise<void> {
    const { options, store } = this.deps;
    if (options.stableInstanceId) await store.releaseEarlierRuns(`${options.stableInstanceId}/`, this.owner);
    this.running = true;
    const every = (ms: number, task: () => Promise<unknown>) => {
      const timer = setInterval(() => void task().catch((err) => this.deps.log.warn({ err }, 'event delivery task failed')), ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(options.pollIntervalMs, () => this.pump());
    every(options.refreshIntervalMs, () => this.deps.directory.refresh());
    every(PRUNE_INTERVAL_MS, () => this.prune());
    this.wake();
  }

  /** Looks for due deliveries now (and once more shortly after, for a transaction still committing). */
  wake(): void {
    if (!this.running) return;
    this.schedulePump();
    if (!this.followUp) {
      this.followUp = setTimeout(() => {
        this.followUp = null;
        void this.pump();
      }, WAKE_FOLLOW_UP_MS);
      this.followUp.unref();
    }
  }

  /** Claims due deliveries while there is room to hold them, and starts what the slots allow. Concurrent calls coalesce. */
  pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return this.pumping;
    }
    this.pumping = this.claimLoop()
      .catch((err) => this.deps.log.warn({ err }, 'claiming event deliveries failed'))
      .finally(() => {
        this.pumping = null;
      });
    return this.pumping;
  }

  /** One pump per turn of the event loop, however many attempts ended in it. */
  private schedulePump(): void {
    if (this.pumpScheduled || !this.running) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      void this.pump();
    });
  }

  /**
   * Claims while there is room. When no webhook is at its holding limit one query
   * claims across all of them; otherwise each webhook with room is claimed for on
   * its own, so a long backlog of a saturated webhook is never walked through.
   */
  private async claimLoop(): Promise<void> {
    const { options, directory } = this.deps;
    const holdPerWebhook = options.concurrencyPerWebhook * HOLD_FACTOR;
    this.giveBackStale();
    do {
      this.pumpAgain = false;
      const free = options.maxInFlight * HOLD_FACTOR - this.inFlight.size - this.waitingCount();
      if (!this.running || free <= 0) return;
      // A webhook needs claims when fewer are waiting than its slots could start; otherwise a claim would only queue more.
      const webhooks = directory
        .all()
        .filter((w) => w.enabled)
        .map((w) => ({ id: w.id, room: holdPerWebhook - this.heldBy(w.id), needs: (this.waiting.get(w.id)?.length ?? 0) < options.concurrencyPerWebhook }));
      if (!webhooks.some((w) => w.needs && w.room > 0)) return;
      let full = false;
      if (webhooks.every((w) => w.room > 0)) {
        const limit = Math.min(free, CLAIM_BATCH);
        full = (await this.claimInto(null, limit)) === limit;
      } else {
        for (const webhook of webhooks.filter((w) => w.needs && w.room > 0)) {
          const limit = Math.min(free, CLAIM_BATCH, webhook.room);
          if ((await this.claimInto(webhook.id, limit)) === limit) full = true;
        }
      }
      if (full) this.pumpAgain = true;
    } while (this.pumpAgain);
  }

  /** Claims up to `limit` deliveries (of one webhook, or any) into the waiting queues and starts what it can; returns how many. */
  private async claimInto(webhookId: string | null, limit: number): Promise<number> {
    const { options, store, clock, directory } = this.deps;
    const nowMs = clock.nowMs();
    const leaseUntilMs = nowMs + options.timeoutMs + options.leaseMarginMs;
    const claimed = await store.claim(this.owner, nowMs, leaseUntilMs, limit, { webhookId, skipDeliveryIds: [...this.unsettled] });
    if (claimed.length === 0) return 0;
    const payloads = await store.payloads([...new Set(claimed.map((c) => c.event_id))]);
    if (claimed.some((c) => !directory.get(c.webhook_id))) await directory.refresh();
    const unknown: string[] = [];
    const orphans: string[] = [];
    for (const delivery of claimed) {
      const payload = payloads.get(delivery.event_id);
      if (payload === undefined) orphans.push(delivery.id);
      // A webhook another instance created a moment ago may not be known here yet: left for the next pass.
      else if (!directory.get(delivery.webhook_id)) unknown.push(delivery.id);
      else {
        const queue = this.waiting.get(delivery.webhook_id) ?? [];
        queue.push({ delivery, payload, leaseUntilMs });
        this.waiting.set(delivery.webhook_id, queue);
      }
    }
    await store.release(this.owner, unknown);
    await store.deleteDeliveries(this.owner, orphans);
    this.drain();
    return claimed.length;
  }

  /** Deliveries this instance holds for a webhook: in flight plus claimed and waiting for a slot. */
  private heldBy(webhookId: string): number {
    return (this.perWebhook.get(webhookId) ?? 0) + (this.waiting.get(webhookId)?.length ?? 0);
  }

  private waitingCount(): number {
    let n = 0;
    for (const queue of this.waiting.values()) n += queue.length;
    return n;
  }

  /** Waiting deliveries whose claim could run out during an attempt go back, for any instance to take. */
  private giveBackStale(): void {
    const latestStart = this.deps.clock.nowMs() + this.deps.options.timeoutMs + this.deps.options.leaseMarginMs / 2;
    for (const [webhookId, queue] of this.waiting) {
      const fresh = queue.filter((held) => held.leaseUntilMs >= latestStart);
      if (fresh.length === queue.length) continue;
      for (const held of queue) if (held.leaseUntilMs < latestStart) this.released.push(held.delivery.id);
      if (fresh.length > 0) this.waiting.set(webhookId, fresh);
      else this.waiting.delete(webhookId);
      this.scheduleFlush();
    }
  }

  /**
   * Starts waiting deliveries where their webhook has a free slot. One whose claim
   * would run out before its attempt could end is given back instead, so no other
   * instance can take it over while it is still being attempted here; so is one
   * whose webhook was switched off meanwhile.
   */
  private drain(): void {
    const { options, clock } = this.deps;
    const latestStart = clock.nowMs() + options.timeoutMs + options.leaseMarginMs / 2;
    for (const [webhookId, queue] of this.waiting) {
      while (queue.length > 0 && this.running && (this.perWebhook.get(webhookId) ?? 0) < options.concurrencyPerWebhook && this.inFlight.size < options.maxInFlight) {
        const held = queue.shift() as Held;
        const webhook = this.deps.directory.get(webhookId);
        if (held.leaseUntilMs < latestStart || !webhook?.enabled) {
          this.released.push(held.delivery.id);
          this.scheduleFlush();
          continue;
        }
        this.launch(held, webhook);
      }
      if (queue.length === 0) this.waiting.delete(webhookId);
    }
  }

  private launch({ delivery, payload }: Held, webhook: StoredWebhook): void {
    this.perWebhook.set(webhook.id, (this.perWebhook.get(webhook.id) ?? 0) + 1);
    this.unsettled.add(delivery.id);
    const controller = new AbortController();
    const entry: InFlight = { controller, done: Promise.resolve() };
    this.inFlight.set(delivery.id, entry);
    entry.done = this.attempt(delivery, webhook, payload, controller)
      .catch((err) => {
        this.deps.log.error({ err, delivery: delivery.id }, 'event delivery attempt failed unexpectedly');
        this.released.push(delivery.id);
      })
      .finally(() => {
        this.inFlight.delete(delivery.id);
        const left = (this.perWebhook.get(webhook.id) ?? 1) - 1;
        if (left > 0) this.perWebhook.set(webhook.id, left);
        else this.perWebhook.delete(webhook.id);
        this.scheduleFlush();
        this.drain();
        if ((this.waiting.get(webhook.id)?.length ?? 0) < this.deps.options.concurrencyPerWebhook) this.schedulePump();
      });
  }

  private async attempt(delivery: ClaimedDelivery, webhook: StoredWebhook, payloadText: string, controller: AbortController): Promise<void> {
    const { clock, options } = this.deps;
    const event = JSON.parse(payloadText) as EventPayload;
    const kind = receiverKindOf(webhook.url);
    const body = kind === 'generic' ? payloadText : deliveryBody(kind, event, this.deps.message);
    const timestamp = clock.now();
    const secrets = [webhook.secret];
    if (webhook.previous_secret && (webhook.previous_secret_expires_at ?? 0) > timestamp) secrets.push(webhook.previous_secret);
    const headers = {
      'content-type': 'application/json',
      'user-agent': `Parley-Webhooks/${this.deps.message.version}`,
      ...signedHeaders(secrets, event.id, timestamp, body),
    };

    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, options.timeoutMs);
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let retryAfter: string | null = null;
    this.stats.attempts += 1;
    try {
      if (webhook.url.startsWith(LOCAL_RECEIVER)) {
        if (!this.deps.deliverLocally) throw new Error('no local receiver is connected');
        await this.deps.deliverLocally(webhook, event, controller.signal);
        statusCode = 200;
      } else {
        this.deps.guard.checkSyntax(webhook.url);
        const response = await this.agent.request(webhook.url, { method: 'POST', headers, body, signal: controller.signal });
        statusCode = response.statusCode;
        if (statusCode >= 200 && statusCode < 300) await response.body.dump();
        else {
          const header = response.headers['retry-after'];
          retryAfter = Array.isArray(header) ? header[0] : (header ?? null);
          const snippet = await readSnippet(response.body, ERROR_SNIPPET);
          error = `HTTP ${statusCode}${snippet ? `: ${snippet}` : ''}`;
        }
      }
    } catch (err) {
      if (controller.signal.reason instanceof ShutdownAbort) {
        this.released.push(delivery.id);
        return;
      }
      error = timedOut ? `timed out after ${options.timeoutMs / 1000} s` : describeError(err);
    } finally {
      clearTimeout(timer);
    }
    const latencyMs = Math.round(performance.now() - started);
    await this.settle(delivery, webhook, { statusCode, error, retryAfter, latencyMs });
  }

  /**
   * Records the outcome; a failure schedules the next attempt, and may switch the
   * webhook off. The webhook's failure streak is written before the attempt is, so
   * whoever sees the attempt recorded also sees its effect on the webhook.
   */
  private async settle(
    delivery: ClaimedDelivery,
    webhook: StoredWebhook,
    outcome: { statusCode: number | null; error: string | null; retryAfter: string | null; latencyMs: number },
  ): Promise<void> {
    const { clock, store, options, directory } = this.deps;
    const now = clock.now();
    const attempts = delivery.attempts + 1;
    const base = { id: delivery.id, attempts, attemptedAt: now, statusCode: outcome.statusCode, latencyMs: outcome.latencyMs };
    const streak = (failingSince: number | null) => {
      const current = directory.get(webhook.id);
      if (current) directory.put({ ...current, failing_since: failingSince });
    };
    if (outcome.error === null) {
      this.stats.succeeded += 1;
      if (webhook.failing_since !== null) {
        await store.clearFailing(webhook.id);
        streak(null);
      }
      this.results.push({ ...base, status: 'succeeded', nextAttemptMs: null, error: null });
      return;
    }

    this.stats.failed += 1;
    const gone = outcome.statusCode === 410;
    let delay = gone ? null : retryDelayMs(attempts);
    const asked = retryAfterMs(outcome.retryAfter, clock.nowMs());
    if (delay !== null && asked !== null) delay = Math.max(delay, asked);
    if (gone) await this.deps.disable(webhook.id, 'gone', { status: 410 });
    else {
      const failingSince = await store.markFailing(webhook.id, now);
      streak(failingSince);
      if (failingSince !== null && (now - failingSince) * 1000 >= options.disableAfterMs) {
        await this.deps.disable(webhook.id, 'failing', { failing_since: failingSince, last_error: outcome.error });
      }
    }
    this.results.push({
      ...base,
      status: delay === null ? 'failed' : 'pending',
      nextAttemptMs: delay === null ? null : clock.nowMs() + delay,
      error: outcome.error,
    });
  }

  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.flush())
      .catch((err) => this.deps.log.error({ err }, 'recording event delivery attempts failed'))
      .finally(() => {
        this.flushing = null;
        if (this.results.length > 0 || this.released.length > 0) this.scheduleFlush();
      });
  }

  /** Writes buffered outcomes in one transaction (batched, for throughput). */
  private async flush(): Promise<void> {
    const results = this.results;
    const released = this.released;
    this.results = [];
    this.released = [];
    try {
      await this.deps.store.recordAttempts(this.owner, results);
      await this.deps.store.release(this.owner, released);
    } finally {
      // Written, or lost with the claim still held: either way the lease decides from here.
      for (const r of results) this.unsettled.delete(r.id);
      for (const id of released) this.unsettled.delete(id);
    }
  }

  /** Deletes finished delivery records older than the retention. */
  async prune(): Promise<number> {
    const before = this.deps.clock.now() - Math.floor(this.deps.options.retentionMs / 1000);
    return this.deps.store.prune(before);
  }

  /** Deliveries started here whose outcome is not recorded yet (in flight, or written shortly). */
  get unsettledCount(): number {
    return this.unsettled.size;
  }

  /**
   * Claims once more, stops claiming, gives attempts in flight a grace period,
   * then abandons the rest (their claims are released, so they are attempted
   * again at once by another instance or the next start) and records every outcome.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    if (this.followUp) clearTimeout(this.followUp);
    this.followUp = null;
    // One last claim, so that what was recorded just now (the shutdown events) is attempted within the grace period.
    await this.pump();
    this.running = false;
    for (const queue of this.waiting.values()) for (const held of queue) this.released.push(held.delivery.id);
    this.waiting.clear();
    const pending = () => Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
    let graceTimer: NodeJS.Timeout | undefined;
    await Promise.race([pending(), new Promise((resolve) => (graceTimer = setTimeout(resolve, this.deps.options.shutdownGraceMs)))]);
    clearTimeout(graceTimer);
    for (const flight of this.inFlight.values()) flight.controller.abort(new ShutdownAbort('shutting down'));
    await pending();
    await this.flushing;
    await this.flush().catch((err) => this.deps.log.error({ err }, 'recording event delivery attempts failed'));
    await this.agent.close().catch(() => undefined);
  }
}

async function readSnippet(body: AsyncIterable<Buffer> & { destroy(): unknown }, max: number): Promise<string> {
  let text = '';
  for await (const chunk of body) {
    text += chunk.toString('utf8');
    if (text.length >= max) {
      body.destroy();
      break;
    }
  }
  return text.slice(0, max).trim();
}

function describeError(error: unknown): string {
  const e = error as { message?: string; code?: string; cause?: { message?: string; code?: string } };
  const cause = e.cause?.message && e.cause.message !== e.message ? ` (${e.cause.message})` : '';
  return `${e.message ?? String(error)}${cause}`.slice(0, ERROR_SNIPPET);
}
