import { describe, expect, it } from 'vitest';
import { RETRY_SCHEDULE_MS, retryAfterMs, retryDelayMs } from '../../../src/core/events/retry.js';

describe('retry schedule', () => {
  it('is immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then nothing', () => {
    const middle = () => 0.5;
    expect(RETRY_SCHEDULE_MS).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(n, middle))).toEqual(RETRY_SCHEDULE_MS.slice(1));
    expect(retryDelayMs(8, middle)).toBeNull();
  });

  it('spreads each delay by at most 10 % either way', () => {
    expect(retryDelayMs(1, () => 0)).toBe(4_500);
    expect(retryDelayMs(1, () => 1)).toBe(5_500);
    expect(retryDelayMs(2, () => 0.25)).toBe(285_000);
  });

  it('reads Retry-After in seconds or as an HTTP date, capped at a day', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs('Tue, 01 Jan 2030 00:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('Mon, 31 Dec 2029 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('999999', now)).toBe(86_400_000);
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs(undefined, now)).toBeNull();
  });
});
