import { performance } from 'node:perf_hooks';

/**
 * Values read from the database on hot paths (the signed-in user, their groups),
 * kept until `invalidate()` (a change notice) or for `ttlMs` at most, the bound
 * on staleness should a notice be missed. A load that began before an
 * invalidation is not kept: it may have read the old state.
 */
export class InvalidatedCache<V> {
  private generation = 0;
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  /** Loads under way that began at the current generation. */
  private readonly loading = new Map<string, Promise<V>>();

  constructor(private readonly options: { ttlMs: number; maxEntries: number }) {}

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const now = performance.now();
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > now) return hit.value;
    // Requests missing the same key together share one load (a large value would otherwise be read once per request).
    const pending = this.loading.get(key);
    if (pending) return pending;
    const generation = this.generation;
    const loaded = load().then((value) => {
      if (generation === this.generation) {
        if (this.entries.size >= this.options.maxEntries) this.entries.clear();
        this.entries.set(key, { value, expiresAt: now + this.options.ttlMs });
      }
      return value;
    });
    this.loading.set(key, loaded);
    const forget = () => {
      if (this.loading.get(key) === loaded) this.loading.delete(key);
    };
    loaded.then(forget, forget);
    return loaded;
  }

  /** The value while it is kept, without loading it (undefined otherwise). */
  peek(key: string): V | undefined {
    const hit = this.entries.get(key);
    return hit && hit.expiresAt > performance.now() ? hit.value : undefined;
  }

  invalidate(): void {
    this.generation += 1;
    this.entries.clear();
    this.loading.clear();
  }
}

/**
 * For caches dropped on change notices (users, memberships, chat lists): the
 * time limit only bounds staleness should a notice between instances be lost.
 */
export const NOTICED_CACHE = { ttlMs: 2_000, maxEntries: 10_000 };

/** Freezes a cached value and everything in it, so no request can change what others share. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
