import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { connectRedis } from './realtime/redis.js';

/**
 * What an instance keeps in memory and must re-read when another instance (or
 * this one) changes it: the persistent settings, users and group memberships,
 * revoked sessions, the `/` picker's prompts, the functions (pipe models, event receivers), the
 * merged model list (workspace models, provider connections), channels' pages of messages.
 */
export type ChangeTopic = 'settings' | 'identity' | 'chats' | 'revocations' | 'prompts' | 'functions' | 'models' | 'channels';

interface Logger {
  warn(details: object, message: string): void;
}

/**
 * Tells this instance's caches, and with Redis every other instance's, that
 * shared state changed. Announce after the change has committed (see
 * `afterCommit`), so a listener that re-reads sees it.
 */
export class ChangeFeed {
  private readonly listeners = new Map<ChangeTopic, Array<() => void>>();
  private readonly remoteListeners = new Map<ChangeTopic, Array<() => void>>();
  private readonly instanceId = randomUUID();
  private redis: { publisher: Redis; subscriber: Redis } | null = null;
  private readonly unsent = new Set<ChangeTopic>();
  /** False while the subscription to other instances' notices is down: their changes may be missed. */
  private listening = false;

  constructor(
    private readonly options: { redisUrl: string | null; keyPrefix: string },
    private readonly log: Logger,
  ) {}

  private get channel(): string {
    return `${this.options.keyPrefix}:changes`;
  }

  /** Hears every change: this instance's (at once) and the others'. */
  on(topic: ChangeTopic, listener: () => void): void {
    this.listeners.set(topic, [...(this.listeners.get(topic) ?? []), listener]);
  }

  /** Hears only other instances' changes: for state this instance updates itself as it writes. */
  onRemote(topic: ChangeTopic, listener: () => void): void {
    this.remoteListeners.set(topic, [...(this.remoteListeners.get(topic) ?? []), listener]);
  }

  announce(topic: ChangeTopic): void {
    this.notify(topic);
    if (!this.redis || this.unsent.has(topic)) return;
    this.unsent.add(topic);
    setImmediate(() => {
      this.unsent.delete(topic);
      this.redis?.publisher
        .publish(this.channel, JSON.stringify({ from: this.instanceId, topic }))
        .catch((err: Error) => this.log.warn({ err: err.message, topic }, 'could not tell other instances of a change'));
    });
  }

  private notify(topic: ChangeTopic): void {
    for (const listener of this.listeners.get(topic) ?? []) listener();
  }

  private notifyRemote(topic: ChangeTopic): void {
    this.notify(topic);
    for (const listener of this.remoteListeners.get(topic) ?? []) listener();
  }

  /** Listens to the other instances' announcements (with Redis; alone, there is nothing to hear). */
  async start(): Promise<void> {
    if (!this.options.redisUrl) return;
    const publisher = await connectRedis(this.options.redisUrl, this.log, 'changes');
    const subscriber = await connectRedis(this.options.redisUrl, this.log, 'changes-feed');
    subscriber.on('message', (_channel: string, message: string) => {
      try {
        const { from, topic } = JSON.parse(message) as { from: string; topic: ChangeTopic };
        if (from !== this.instanceId) this.notifyRemote(topic);
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'unreadable change notice');
      }
    });
    await subscriber.subscribe(this.channel);
    this.listening = true;
    subscriber.on('close', () => {
      this.listening = false;
    });
    // Notices sent while the connection was down are lost: after a reconnection, re-read everything.
    subscriber.on('ready', () => {
      this.listening = true;
      for (const topic of new Set([...this.listeners.keys(), ...this.remoteListeners.keys()])) this.notifyRemote(topic);
    });
    this.redis = { publisher, subscriber };
  }

  /**
   * True when other instances' changes may go unheard: Redis is configured but the subscription
   * is down. What must not be missed (sign-outs) is then read from the database instead.
   */
  get deaf(): boolean {
    return this.options.redisUrl !== null && !this.listening;
  }

  /** Why Redis is not usable (null when it is, or is not configured): for the readiness check. */
  async redisTrouble(timeoutMs: number): Promise<string | null> {
    if (!this.options.redisUrl) return null;
    if (!this.redis || !this.listening) return 'Redis not ready: the connection is down';
    const answer = this.redis.publisher.ping().then(
      () => null,
      (error: Error) => `Redis not ready: ${error.message}`,
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`Redis not ready: no answer to PING within ${timeoutMs} ms`), timeoutMs);
    });
    try {
      return await Promise.race([answer, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async stop(): Promise<void> {
    if (!this.redis) return;
    const { disconnectRedis } = await import('./realtime/redis.js');
    const { publisher, subscriber } = this.redis;
    this.redis = null;
    this.listening = false;
    await Promise.all([disconnectRedis(publisher), disconnectRedis(subscriber)]);
  }
}
