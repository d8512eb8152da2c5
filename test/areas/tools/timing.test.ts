import { describe, expect, it } from 'vitest';
import { toolSource } from '../../core/python/helpers.js';
import { useServer } from '../../helpers/world.js';
import { TOOLS_ENV } from './helpers.js';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.floor(values.length * p)];

// Issue 4's numbers through the server (the host-level figures are in test/core/python/timing.test.ts):
// warm tool-call round trip ≤ 2 ms median, extraction of a typical tool ≤ 150 ms. The asserted bounds
// are loose so that a loaded CI machine does not fail them; the figures are printed.
describe('timing through the tools service', () => {
  const world = useServer({ env: { ...TOOLS_ENV, PLUGIN_POOL_SIZE: '1' }, admin: 'Timing Admin' });

  it('creating a typical tool (extraction, storing, over HTTP)', async () => {
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      const res = await world.api.post(
        '/api/v1/tools/create',
        { id: `timed_${i}`, name: 'Timed', content: `${toolSource('example1_weather')}\n# revision ${i}\n`, meta: {} },
        { token: world.admin.token },
      );
      times.push(performance.now() - started);
      expect(res.status).toBe(200);
    }
    // The first create also starts the worker.
    const warm = times.slice(1);
    console.log(`create with extraction: median ${median(warm).toFixed(2)} ms, max ${Math.max(...warm).toFixed(2)} ms (first, cold worker: ${times[0].toFixed(0)} ms)`);
    expect(median(warm)).toBeLessThan(500);
  });

  it('warm tool-call round trip (stored valves and user valves applied)', async () => {
    await world.api.post('/api/v1/tools/id/timed_0/valves/update', { api_key: 'k' }, { token: world.admin.token });
    await world.api.post('/api/v1/tools/id/timed_0/valves/user/update', { units: 'imperial' }, { token: world.admin.token });
    const user = await world.record(world.admin);
    const tools = world.server.parley.services.tools;
    for (let i = 0; i < 50; i++) await tools.callTool('timed_0', 'get_weather', { city: 'Oslo' }, { user });
    const times: number[] = [];
    for (let i = 0; i < 500; i++) {
      const started = performance.now();
      const result = await tools.callTool('timed_0', 'get_weather', { city: 'Oslo', days: 2 }, { user });
      times.push(performance.now() - started);
      expect(result.value).toBe('Oslo: sunny for 2 day(s), imperial, key=k');
    }
    console.log(`warm call through the service: median ${median(times).toFixed(3)} ms, p95 ${percentile(times, 0.95).toFixed(3)} ms`);
    expect(median(times)).toBeLessThan(10);
  });
});
