/**
 * A rolling-window limiter counted in fixed buckets, in memory (the reference's
 * RateLimiter without Redis): every attempt counts, and a key is limited once it
 * has made more than `limit` attempts within the last `window` seconds.
 */
/** Above this many tracked keys, keys without recent attempts are forgotten. */
const SWEEP_THRESHOLD = 10_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Map<number, number>>();

  constructor(
    private readonly limit: number,
    private readonly windowSeconds: number,
    private readonly now: () => number,
    private readonly bucketSeconds = 60,
  ) {}

  /** Records an attempt for the key and tells whether it is over the limit. */
  isLimited(key: string): boolean {
    const current = Math.floor(this.now() / this.bucketSeconds);
    const oldest = current - Math.floor(this.windowSeconds / this.bucketSeconds);
    if (this.buckets.size > SWEEP_THRESHOLD) this.sweep(oldest);
    const counts = this.buckets.get(key) ?? new Map<number, number>();
    this.buckets.set(key, counts);
    counts.set(current, (counts.get(current) ?? 0) + 1);
    let total = 0;
    for (const [bucket, count] of counts) {
      if (bucket < oldest) counts.delete(bucket);
      else total += count;
    }
    return total > this.limit;
  }

  private sweep(oldest: number): void {
    for (const [key, counts] of this.buckets) {
      if (Math.max(...counts.keys()) < oldest) this.buckets.delete(key);
    }
  }
}
