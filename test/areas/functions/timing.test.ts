import { describe, expect, it } from 'vitest';
import { useServer } from '../../helpers/world.js';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const FILTER = `
class Filter:
    def inlet(self, body: dict) -> dict:
        return body

    def outlet(self, body: dict) -> dict:
        return body
`;

// Issue 18's filter figure at the service (the HTTP figure is the bench's `functions` scenario): one
// warm inlet plus one outlet over a short chat, as the pipeline runs them. The bound is loose so that a
// loaded machine does not fail it; the figure is printed.
describe('timing of filter functions', () => {
  const world = useServer({ env: { ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS: 'false', PLUGIN_POOL_SIZE: '2' }, admin: 'Filter Timing Admin' });

  it('inlet + outlet of a pass-through filter', async () => {
    const res = await world.api.post('/api/v1/functions/create', { id: 'pass', name: 'pass', content: FILTER, meta: {} }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const { functions } = world.server.parley.services;
    const fn = (await functions.byId('pass'))!;
    const user = await world.record(world.admin);
    const body = { model: 'm', messages: [{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: 'Hello there, how are you?' }] };
    const once = async () => {
      await functions.run(fn, 'inlet', { user, body });
      await functions.run(fn, 'outlet', { user, body });
    };
    for (let i = 0; i < 30; i++) await once();
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      await once();
      times.push(performance.now() - started);
    }
    console.log(`filter inlet + outlet, warm: median ${median(times).toFixed(2)} ms`);
    expect(median(times)).toBeLessThan(50);
  }, 60000);
});
