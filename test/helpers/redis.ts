import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './child-server.js';

export interface TestRedis {
  url: string;
  stop(): void;
}

/**
 * A redis-server of the test's own on a free port, without persistence.
 * scripts/test.sh installs redis-server; a missing one fails the test that asks.
 * `port`: start again where a stopped one was.
 */
export async function startRedis(port?: number): Promise<TestRedis> {
  port ??= await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const spawnFailure = new Promise<never>((_, reject) => child.once('error', (error) => reject(new Error(`redis-server could not start (apt-get install -y redis-server): ${error.message}`))));
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  for (let attempt = 0; ; attempt++) {
    try {
      await Promise.race([client.connect().then(() => client.ping()), spawnFailure]);
      client.disconnect();
      return { url, stop: () => child.kill() };
    } catch (error) {
      if ((error as Error).message.startsWith('redis-server could not start') || attempt > 100) {
        child.kill();
        throw error;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
