/**
 * When a failed delivery is tried again (issue 5; Svix's schedule, events.md §9b):
 * attempt 1 immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after
 * each failure, each delay spread by ±10 % so that receivers coming back are not
 * hit by every retry at once. After the eighth failure the delivery has failed.
 */
export const RETRY_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;

const JITTER = 0.1;
/** A Retry-After longer than this is treated as this, so a receiver cannot park a delivery forever. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** The delay before the next attempt once `attemptsMade` attempts have failed; null when no attempt is left. */
export function retryDelayMs(attemptsMade: number, random: () => number = Math.random): number | null {
  if (attemptsMade >= RETRY_SCHEDULE_MS.length) return null;
  const base = RETRY_SCHEDULE_MS[attemptsMade];
  return Math.round(base * (1 + JITTER * (2 * random() - 1)));
}

/** A Retry-After header (seconds or an HTTP date) as milliseconds from now; null when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, nowMs: number): number | null {
  if (!header) return null;
  const value = header.trim();
  let ms: number;
  if (/^\d+$/.test(value)) ms = Number(value) * 1000;
  else {
    const date = Date.parse(value);
    if (Number.isNaN(date)) return null;
    ms = date - nowMs;
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}
