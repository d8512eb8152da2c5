import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { connectRedis, disconnectRedis } from '../../core/realtime/redis.js';

/**
 * The running generations (the reference's tasks.py): each has an id and the
 * item it works for (a chat id), and can be stopped, which aborts its signal and
 * so cancels its provider request. Kept in this process; with Redis the ids are
 * also listed in Redis and a stop is published to every instance, so any
 * instance lists and stops any instance's tasks.
 */
export interface StopResult {
  status: boolean;
  message: string;
}

/** What a task's body receives: its signal, and `release` to deregister before its last words (`chat:active` false). */
export interface TaskHandle {
  id: string;
  signal: AbortSignal;
  release(): Promise<void>;
}

interface LocalTask {
  itemId: string | null;
  controller: AbortController;
  done: Promise<void>;
  released: boolean;
}

interface Log {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export class TaskRegistry {
  private readonly tasks = new Map<string, LocalTask>();
  private readonly items = new Map<string, Set<string>>();
  private redis: { client: Redis; sub: Redis } | null = null;
  private readonly tasksKey: string;
  private readonly itemKey: (itemId: string) => string;
  private readonly channel: string;

  constructor(
    private readonly options: { redisUrl: string | null; keyPrefix: string },
    private readonly log: Log,
  ) {
    this.tasksKey = `${options.keyPrefix}:tasks`;
    this.itemKey = (itemId) => `${options.keyPrefix}:tasks:item:${itemId}`;
    this.channel = `${options.keyPrefix}:tasks:commands`;
  }

  /** Tasks running in this instance (for the metrics). */
  get running(): number {
    return this.tasks.size;
  }

  /** Connects to Redis and listens for stop commands from other instances. */
  async start(): Promise<void> {
    if (!this.options.redisUrl) return;
    const client = await connectRedis(this.options.redisUrl, this.log, 'tasks');
    const sub = await connectRedis(this.options.redisUrl, this.log, 'tasks-commands');
    sub.on('message', (_channel: string, message: string) => {
      try {
        const command = JSON.parse(message) as { action?: string; task_id?: string };
        if (command.action === 'stop' && command.task_id) this.tasks.get(command.task_id)?.controller.abort();
      } catch (error) {
        this.log.warn({ err: String(error) }, 'Bad task command');
      }
    });
    await sub.subscribe(this.channel);
    this.redis = { client, sub };
  }

  /**
   * Registers a task and runs `body` on the next turn of the event loop, so the
   * caller can answer with the id first. The task is deregistered when `body`
   * settles (or earlier, through `release`).
   */
  async create(itemId: string | null, body: (task: TaskHandle) => Promise<void>, taskId: string = randomUUID()): Promise<string> {
    const controller = new AbortController();
    let finish!: () => void;
    const task: LocalTask = { itemId, controller, done: new Promise<void>((resolve) => (finish = resolve)), released: false };
    this.tasks.set(taskId, task);
    if (itemId) this.items.set(itemId, (this.items.get(itemId) ?? new Set()).add(taskId));
    if (this.redis) {
      const pipeline = this.redis.client.pipeline().hset(this.tasksKey, taskId, itemId ?? '');
      if (itemId) pipeline.sadd(this.itemKey(itemId), taskId);
      await pipeline.exec();
    }
    const release = () => this.release(taskId, task);
    setImmediate(() => {
      body({ id: taskId, signal: controller.signal, release })
        .catch((error: unknown) => this.log.error({ err: error instanceof Error ? error.stack : String(error), taskId }, 'Task failed'))
        .then(release)
        .catch((error: unknown) => this.log.warn({ err: String(error), taskId }, 'Task cleanup failed'))
        .finally(finish);
    });
    return taskId;
  }

  private async release(taskId: string, task: LocalTask): Promise<void> {
    if (task.released) return;
    task.released = true;
    this.forget(taskId, task.itemId);
    if (this.redis) await this.cleanRedis(taskId, task.itemId);
  }

  private forget(taskId: string, itemId: string | null): void {
    this.tasks.delete(taskId);
    if (!itemId) return;
    const ids = this.items.get(itemId);
    ids?.delete(taskId);
    if (ids?.size === 0) this.items.delete(itemId);
  }

  private async cleanRedis(taskId: string, itemId: string | null): Promise<void> {
    const redis = this.redis!.client;
    const pipeline = redis.pipeline().hdel(this.tasksKey, taskId);
    if (itemId) pipeline.srem(this.itemKey(itemId), taskId);
    await pipeline.exec();
  }

  /** Every running task's id (on every instance, with Redis). */
  async list(): Promise<string[]> {
    if (this.redis) return this.redis.client.hkeys(this.tasksKey);
    return [...this.tasks.keys()];
  }

  /** The tasks working for an item. */
  async listByItem(itemId: string): Promise<string[]> {
    if (this.redis) return this.redis.client.smembers(this.itemKey(itemId));
    return [...(this.items.get(itemId) ?? [])];
  }

  async hasActive(itemId: string): Promise<boolean> {
    return (await this.listByItem(itemId)).length > 0;
  }

  /** Which of the items have a task running (one round trip for the sidebar's list). */
  async activeItems(itemIds: string[]): Promise<Set<string>> {
    if (itemIds.length === 0) return new Set();
    if (!this.redis) return new Set(itemIds.filter((id) => this.items.has(id)));
    const pipeline = this.redis.client.pipeline();
    for (const id of itemIds) pipeline.scard(this.itemKey(id));
    const counts = (await pipeline.exec()) ?? [];
    return new Set(itemIds.filter((_, i) => Number(counts[i]?.[1] ?? 0) > 0));
  }

  /** Stops a task: here by aborting it and waiting for it to wind down; with Redis by telling every instance. */
  async stop(taskId: string): Promise<StopResult> {
    if (this.redis) {
      const itemId = await this.redis.client.hget(this.tasksKey, taskId);
      await this.redis.client.publish(this.channel, JSON.stringify({ action: 'stop', task_id: taskId }));
      await this.cleanRedis(taskId, itemId || null);
      return { status: true, message: `Task ${taskId} stopped.` };
    }
    const task = this.tasks.get(taskId);
    if (!task) return { status: false, message: `Task with ID ${taskId} not found.` };
    this.forget(taskId, task.itemId);
    task.controller.abort();
    await task.done;
    return { status: true, message: `Task ${taskId} successfully stopped.` };
  }

  async stopItem(itemId: string): Promise<StopResult> {
    const ids = await this.listByItem(itemId);
    if (ids.length === 0) return { status: true, message: `No tasks found for item ${itemId}.` };
    for (const id of ids) {
      const result = await this.stop(id);
      if (!result.status) return result;
    }
    return { status: true, message: `All tasks for item ${itemId} stopped.` };
  }

  /** Stops this instance's tasks and lets them finish their bookkeeping. */
  async close(): Promise<void> {
    const running = [...this.tasks.values()];
    for (const task of running) task.controller.abort();
    await Promise.all(running.map((t) => t.done));
    if (this.redis) {
      await Promise.all([disconnectRedis(this.redis.client), disconnectRedis(this.redis.sub)]);
      this.redis = null;
    }
  }
}
