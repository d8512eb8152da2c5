import type { Redis } from 'ioredis';
import { connectRedis, disconnectRedis } from '../../core/realtime/redis.js';

/**
 * A rolling-window limiter counted in fixed buckets (the reference's
 * utils/rate_limit.py RateLimiter): every attempt counts, and a key is limited
 * once it has made more than `limit` attempts in the current bucket and the
 * `window / bucket` before it. With Redis the buckets are shared by every
 * instance, under the reference's key names (`<prefix>:ratelimit:<key>:<bucket>`);
 * when Redis fails the attempt is counted in memory, as the reference does.
 */
export interface RateLimiterOptions {
  limit: number;
  windowSeconds: number;
  bucketSeconds?: number;
  /** Epoch seconds (the injected clock). */
  now: () => number;
  /** Shares the counts through Redis; null: this process alone. */
  redis: { url: string; keyPrefix: string } | null;
  log: { warn(details: object, message: string): void };
}

/** Above this many tracked keys, keys without recent attempts are forgotten. */
const SWEEP_THRESHOLD = 10_000;

/** Counts an attempt in the current bucket (KEYS[1]) and sums every bucket of the window, in one step. */
const COUNT_ATTEMPT = `
local attempts = redis.call('INCR', KEYS[1])
if attempts == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local total = 0
for _, key in ipairs(KEYS) do
  local count = redis.call('GET', key)
  if count then total = total + tonumber(count) end
end
return total`;

export class RateLimiter {
  private readonly buckets = new Map<string, Map<number, number>>();
  private readonly bucketSeconds: number;
  /** Buckets before the current one that are still in the window. */
  private readonly pastBuckets: number;
  private redis: Promise<Redis> | null = null;
  /** Set while Redis fails, so an outage is logged once rather than per attempt. */
  private redisFailing = false;

  constructor(private readonly options: RateLimiterOptions) {
    this.bucketSeconds = options.bucketSeconds ?? 60;
    this.pastBuckets = Math.floor(options.windowSeconds / this.bucketSeconds);
  }

  /** Records an attempt for the key and tells whether it is over the limit. */
  async isLimited(key: string): Promise<boolean> {
    const id = key.toLowerCase();
    const current = Math.floor(this.options.now() / this.bucketSeconds);
    if (!this.options.redis) return this.countInMemory(id, current) > this.options.limit;
    try {
      const total = await this.countInRedis(id, current);
      if (this.redisFailing) this.options.log.warn({}, 'rate limit: Redis answers again');
      this.redisFailing = false;
      return total > this.options.limit;
    } catch (error) {
      if (!this.redisFailing) this.options.log.warn({ err: (error as Error).message }, 'rate limit: Redis failed, counting in memory');
      this.redisFailing = true;
      return this.countInMemory(id, current) > this.options.limit;
    }
  }

  async close(): Promise<void> {
    const redis = this.redis;
    this.redis = null;
    if (redis) await disconnectRedis(await redis);
  }

  private async countInRedis(id: string, current: number): Promise<number> {
    const { url, keyPrefix } = this.options.redis!;
    this.redis ??= connectRedis(url, this.options.log, 'ratelimit');
    const client = await this.redis;
    // While an outage lasts, attempts go to memory at once instead of each waiting out ioredis' retries.
    if (this.redisFailing && client.status !== 'ready') throw new Error(`Redis connection ${client.status}`);
    const keys = Array.from({ length: this.pastBuckets + 1 }, (_, i) => `${keyPrefix}:ratelimit:${id}:${current - i}`);
    const ttl = this.options.windowSeconds + this.bucketSeconds;
    return Number(await client.eval(COUNT_ATTEMPT, keys.length, ...keys, ttl));
  }

  private countInMemory(id: string, current: number): number {
    const oldest = current - this.pastBuckets;
    if (this.buckets.size > SWEEP_THRESHOLD) this.sweep(oldest);
    const counts = this.buckets.get(id) ?? new Map<number, number>();
    this.buckets.set(id, counts);
    counts.set(current, (counts.get(current) ?? 0) + 1);
    let total = 0;
    for (const [bucket, count] of counts) {
      if (bucket < oldest) counts.delete(bucket);
      else total += count;
    }
    return total;
  }

  private sweep(oldest: number): void {
    for (const [key, counts] of this.buckets) {
      if (Math.max(...counts.keys()) < oldest) this.buckets.delete(key);
    }
  }
}
