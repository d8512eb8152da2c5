import { type UrlPolicy, urlPolicyFromEnv } from '../http/url-guard.js';

/** Delivery settings, read once from the environment (docs/webhooks.md lists them). */
export interface DeliveryOptions {
  /** A 2xx must arrive within this time, or the attempt failed. */
  timeoutMs: number;
  /** A webhook whose attempts have all failed for this long is disabled. */
  disableAfterMs: number;
  /** Finished delivery records older than this are pruned. */
  retentionMs: number;
  /** Attempts in flight at once per webhook, so one slow receiver cannot hold every slot. */
  concurrencyPerWebhook: number;
  /** Attempts in flight at once per instance. */
  maxInFlight: number;
  /** How often an idle dispatcher looks for due deliveries written by other instances. */
  pollIntervalMs: number;
  /** How often the webhook list is re-read (other instances may have changed it). */
  refreshIntervalMs: number;
  /** How long a claim lasts beyond the timeout before another instance may take the delivery over. */
  leaseMarginMs: number;
  /** How long the previous secret still signs after a rotation. */
  secretGraceSeconds: number;
  /** How long shutdown waits for attempts in flight before abandoning them (they are retried later). */
  shutdownGraceMs: number;
  urlPolicy: UrlPolicy;
  /** The instance id (`INSTANCE_ID`) when the operator set one: claims of an earlier run under that id are released at start. */
  stableInstanceId: string | null;
}

function seconds(value: string | undefined, fallback: number): number {
  const n = value === undefined || value === '' ? Number.NaN : Number(value);
  return (Number.isFinite(n) && n > 0 ? n : fallback) * 1000;
}

function count(value: string | undefined, fallback: number): number {
  const n = value === undefined || value === '' ? Number.NaN : Number.parseInt(value, 10);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

export function deliveryOptionsFromEnv(raw: Record<string, string | undefined>): DeliveryOptions {
  return {
    timeoutMs: seconds(raw.EVENT_WEBHOOK_TIMEOUT, 15),
    disableAfterMs: seconds(raw.EVENT_WEBHOOK_DISABLE_AFTER, 5 * 86_400),
    retentionMs: seconds(raw.EVENT_WEBHOOK_RETENTION, 7 * 86_400),
    concurrencyPerWebhook: count(raw.EVENT_WEBHOOK_CONCURRENCY, 16),
    maxInFlight: count(raw.EVENT_WEBHOOK_MAX_IN_FLIGHT, 256),
    pollIntervalMs: seconds(raw.EVENT_WEBHOOK_POLL_INTERVAL, 0.25),
    refreshIntervalMs: seconds(raw.EVENT_WEBHOOK_REFRESH_INTERVAL, 1),
    leaseMarginMs: seconds(raw.EVENT_WEBHOOK_LEASE_MARGIN, 5),
    secretGraceSeconds: seconds(raw.EVENT_WEBHOOK_SECRET_GRACE, 86_400) / 1000,
    shutdownGraceMs: seconds(raw.EVENT_WEBHOOK_SHUTDOWN_GRACE, 2),
    urlPolicy: urlPolicyFromEnv(raw),
    stableInstanceId: raw.INSTANCE_ID || null,
  };
}
