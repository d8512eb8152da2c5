import type { Redis } from 'ioredis';

interface Logger {
  warn(details: object, message: string): void;
}

/**
 * A Redis connection for the socket adapter and the task registry. Failures are
 * logged, not thrown: ioredis reconnects on its own, and a command issued while
 * Redis is away fails after a few retries instead of waiting forever. ioredis is
 * loaded with the first connection: a server without Redis never pays for it.
 */
export async function connectRedis(url: string, log: Logger, name: string): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, { maxRetriesPerRequest: 3, connectionName: `parley-${name}` });
  client.on('error', (error: Error) => log.warn({ err: error.message, connection: name }, 'Redis connection trouble'));
  return client;
}

/** Closes a connection, whatever state it is in. */
export async function disconnectRedis(client: Redis): Promise<void> {
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
