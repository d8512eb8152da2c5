import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { TestClock } from '../../helpers/server.js';
import { withWorld } from '../../helpers/world.js';

/**
 * Sign-in throttling across instances (docs/auths.md § Sign-in throttling): with
 * REDIS_URL the 15 attempts per address in 3 minutes are counted in Redis, so
 * attempts spread over two instances reach the limit together; without Redis
 * (or when it fails) each instance counts on its own.
 */
/** Whether a Redis server answers at `url` (false once it is gone). */
async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

describe('sign-in throttling shared through Redis', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis();
  }, 30_000);

  afterAll(() => redis?.stop());

  it('reaches 429 with attempts split across two instances, until the window passes', async () => {
    const clock = new TestClock();
    const env = { REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'parley-throttle', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' };
    await withWorld({ clock, env, admin: 'Admin' }, async ({ api, admin, addInstance }) => {
      const second = await addInstance();
      for (let i = 0; i < 15; i++) {
        const res = await (i % 2 ? second.api : api).post('/api/v1/auths/signin', { email: admin.email, password: 'wrong' });
        expect(res.status, res.text).toBe(400);
      }
      for (const instance of [api, second.api]) {
        const limited = await instance.post('/api/v1/auths/signin', { email: admin.email.toUpperCase(), password: admin.password });
        expect(limited.status).toBe(429);
        expect(limited.body.detail).toBe('API rate limit exceeded');
      }
      // Other addresses are not affected.
      expect((await second.api.post('/api/v1/auths/signin', { email: 'someone@example.com', password: 'x' })).status).toBe(400);

      // The reference's key names, so its instances and Parley's could share one Redis.
      const client = new Redis(redis.url);
      try {
        const keys = await client.keys('parley-throttle:ratelimit:*');
        expect(keys).toContain(`parley-throttle:ratelimit:${admin.email.toLowerCase()}:${Math.floor(clock.now() / 60)}`);
      } finally {
        client.disconnect();
      }

      clock.advance(240);
      expect((await second.api.post('/api/v1/auths/signin', { email: admin.email, password: admin.password })).status).toBe(200);

      // Simultaneous attempts on both instances are counted exactly: 15 get through to the password check.
      const burst = await Promise.all(
        Array.from({ length: 30 }, (_, i) => (i % 2 ? second.api : api).post('/api/v1/auths/signin', { email: 'burst@example.com', password: 'x' })),
      );
      const statuses = burst.map((res) => res.status);
      expect(statuses.filter((status) => status === 400)).toHaveLength(15);
      expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    });
  }, 60_000);

  it('counts in memory while Redis is away, and in Redis again once it is back', async () => {
    let own = await startRedis();
    const clock = new TestClock();
    const env = { REDIS_URL: own.url, REDIS_KEY_PREFIX: 'parley-throttle-down', ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' };
    try {
      await withWorld({ clock, env, admin: 'Admin' }, async ({ api, admin }) => {
        expect((await api.post('/api/v1/auths/signin', { email: admin.email, password: 'wrong' })).status).toBe(400);
        own.stop();
        await expect.poll(() => redisAnswers(own.url), { timeout: 5_000 }).toBe(false);
        for (let i = 0; i < 15; i++) {
          const res = await api.post('/api/v1/auths/signin', { email: admin.email, password: 'wrong' });
          expect(res.status, res.text).toBe(400);
        }
        expect((await api.post('/api/v1/auths/signin', { email: admin.email, password: admin.password })).status).toBe(429);

        // Back on Redis (a fresh one, empty): only a count kept there lets the right password through.
        own = await startRedis(Number(new URL(own.url).port));
        await expect
          .poll(async () => (await api.post('/api/v1/auths/signin', { email: admin.email, password: admin.password })).status, { timeout: 10_000 })
          .toBe(200);
      });
    } finally {
      own.stop();
    }
  }, 60_000);
});
