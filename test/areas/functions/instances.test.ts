import { describe, expect, it } from 'vitest';
import { startRedis } from '../../helpers/redis.js';
import { useServer } from '../../helpers/world.js';
import { eventually } from '../../helpers/eventually.js';

const PIPE = `"""
title: Shared pipe
"""
class Pipe:
    def pipe(self, body: dict):
        return "from the pipe"
`;

/** Functions are read into each instance's model list and event receivers: a change on one instance reaches the others (with Redis). */
describe('functions across instances sharing Redis', () => {
  const world = useServer({
    fakes: {
      start: async () => {
        const redis = await startRedis();
        return { redis: { url: redis.url, close: async () => redis.stop() } };
      },
      env: ({ redis }) => ({ REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'parley-functions-test' }),
    },
    admin: 'Fn Instances Admin',
  });

  it('lists a pipe created on one instance in the other instance’s models, and drops it when it is switched off', async () => {
    const second = await world.addInstance();
    const admin = { token: world.admin.token };
    const modelsThere = async () => ((await second.api.get('/api/models', admin)).body.data as { id: string }[]).map((m) => m.id);
    expect(await modelsThere()).not.toContain('shared');

    expect((await world.api.post('/api/v1/functions/create', { id: 'shared', name: 'Shared', content: PIPE, meta: { description: 'x' } }, admin)).status).toBe(200);
    expect((await world.api.post('/api/v1/functions/id/shared/toggle', {}, admin)).body.is_active).toBe(true);
    await eventually(async () => (await modelsThere()).includes('shared'));

    expect((await world.api.post('/api/v1/functions/id/shared/toggle', {}, admin)).body.is_active).toBe(false);
    await eventually(async () => !(await modelsThere()).includes('shared'));
  }, 30000);
});
