import { beforeAll, describe, expect, it } from 'vitest';
import type { ToolsService } from '../../../src/areas/tools/service.js';
import type { UserRecord } from '../../../src/core/auth/user.js';
import type { PluginError } from '../../../src/core/python/errors.js';
import { PROGRESS_OF_TWO, recordingCallbacks, toolSource } from '../../core/python/helpers.js';
import { withServer } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { createTool, simpleTool, toolBody, TOOLS_ENV } from './helpers.js';

/**
 * Tool calls through the tools service (the chat layer's entry) on a running
 * server, with real Python: stored valves and user valves applied, async and
 * event-emitting tools, and a misbehaving tool never stopping the server.
 */
describe('callTool through the tools service', () => {
  let tools: ToolsService;
  let aliceRecord: UserRecord;

  const world = useServer({ env: { ...TOOLS_ENV, PLUGIN_POOL_SIZE: '3', PLUGIN_CALL_TIMEOUT: '2' }, admin: 'Exec Admin', users: { alice: ['user', 'Alice Caller'] } });
  beforeAll(async () => {
    tools = world.server.parley.services.tools;
    await createTool(world.server, world.admin, 'runtime', { content: toolSource('runtime'), access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] });
    await world.api.post('/api/v1/tools/id/runtime/valves/update', { prefix: 'stored' }, { token: world.admin.token });
    await world.api.post('/api/v1/tools/id/runtime/valves/user/update', { nickname: 'ali' }, { token: world.alice.token });
    aliceRecord = await world.record(world.alice);
  });

  /** Polls the HTTP API until `done` settles; every answer must be a 200. */
  async function keepAsking(done: Promise<unknown>): Promise<number> {
    let settled = false;
    void done.finally(() => (settled = true)).catch(() => undefined);
    let answered = 0;
    while (!settled) {
      const [list, health] = await Promise.all([world.api.get('/api/v1/tools/', { token: world.admin.token }), world.api.get('/health')]);
      expect([list.status, health.status]).toEqual([200, 200]);
      answered++;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return answered;
  }

  it('round trip: the arguments, stored valves, user valves, __user__ and __id__', async () => {
    const result = await tools.callTool('runtime', 'echo', { text: 'ab', times: '2' }, { user: aliceRecord });
    expect(result).toEqual({ value: `stored:abab:ali:${world.alice.name}:runtime`, text: `stored:abab:ali:${world.alice.name}:runtime`, files: [], embeds: [], response: null });
    // Without a user: the user valves' defaults, no name in __user__.
    expect((await tools.callTool('runtime', 'echo', { text: 'x' })).value).toBe('stored:x:anon:None:runtime');
  });

  it('runs async functions', async () => {
    expect((await tools.callTool('runtime', 'slow', { seconds: 0.05, tag: 'async' })).value).toBe('slept async');
  });

  it('relays __event_emitter__ and __event_call__', async () => {
    const { emitted, asked, callbacks } = recordingCallbacks();
    const result = await tools.callTool('runtime', 'progress', { steps: 2 }, { user: aliceRecord, metadata: { chat_id: 'chat-1' }, ...callbacks });
    expect(result.value).toBe('answer=True chat=chat-1');
    expect(emitted).toEqual(PROGRESS_OF_TWO.events);
    expect(asked).toEqual(PROGRESS_OF_TWO.questions);
  });

  it('fails with the Python error for a raising tool, and names unknown tools and functions', async () => {
    await expect(tools.callTool('runtime', 'fail', { message: 'bad input' })).rejects.toMatchObject({ code: 'python_error', message: 'ValueError: bad input' });
    await expect(tools.callTool('runtime', 'no_such_function', {})).rejects.toMatchObject({ code: 'function_not_found' });
    await expect(tools.callTool('no_such_tool', 'echo', {})).rejects.toMatchObject({ code: 'tool_not_found' });
  });

  it('kills a tool that loops forever at the timeout while the server keeps answering', async () => {
    const started = Date.now();
    const looping = tools.callTool('runtime', 'forever', {}).catch((error: PluginError) => error);
    const answered = await keepAsking(looping);
    const error = (await looping) as PluginError;
    expect(error.code).toBe('timeout');
    expect(error.message).toBe('The tool did not finish within 2 s; its worker was stopped');
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(answered).toBeGreaterThanOrEqual(5);
    expect((await tools.callTool('runtime', 'echo', { text: 'after' })).value).toBe('stored:after:anon:None:runtime');
  });

  it('survives a tool that kills its own interpreter', async () => {
    await expect(tools.callTool('runtime', 'die', {})).rejects.toMatchObject({ code: 'worker_died' });
    expect((await world.api.get('/api/v1/tools/id/runtime', { token: world.admin.token })).status).toBe(200);
    expect((await tools.callTool('runtime', 'echo', { text: 'alive' })).value).toBe('stored:alive:anon:None:runtime');
  });

  it('runs concurrent calls on the pool (3 workers), queueing the rest', async () => {
    await Promise.all([0, 1, 2].map(() => tools.callTool('runtime', 'slow', { seconds: 0.01 })));
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => tools.callTool('runtime', 'slow', { seconds: 0.4, tag: String(i) })));
    const elapsed = Date.now() - started;
    expect(results.map((r) => r.value)).toEqual(Array.from({ length: 6 }, (_, i) => `slept ${i}`));
    expect(elapsed).toBeGreaterThanOrEqual(750);
    expect(elapsed).toBeLessThan(3000);
  });

  it('creates, calls and updates tools while HTTP requests keep being answered', async () => {
    const work = (async () => {
      const created = await world.api.post('/api/v1/tools/create', toolBody('busy_tool', { content: simpleTool('first') }), { token: world.admin.token });
      expect(created.status, created.text).toBe(200);
      const calls = await Promise.all([
        tools.callTool('busy_tool', 'marker', { text: 'a' }),
        tools.callTool('runtime', 'slow', { seconds: 0.3 }),
        tools.callTool('busy_tool', 'marker', { text: 'b' }),
      ]);
      expect(calls.map((c) => c.value)).toEqual(['first:a', 'slept ', 'first:b']);
      const updated = await world.api.post('/api/v1/tools/id/busy_tool/update', toolBody('busy_tool', { content: simpleTool('second') }), { token: world.admin.token });
      expect(updated.status, updated.text).toBe(200);
      // Every worker that had the old source loaded gets the new one.
      const after = await Promise.all([0, 1, 2, 3].map(() => tools.callTool('busy_tool', 'marker', {})));
      expect(after.map((c) => c.value)).toEqual(['second:', 'second:', 'second:', 'second:']);
    })();
    expect(await keepAsking(work)).toBeGreaterThanOrEqual(1);
    await work;
  });
});

describe('callTool with ENABLE_PLUGINS=false', () => {
  it('fails with disabled', async () => {
    await withServer({ env: { ...TOOLS_ENV, ENABLE_PLUGINS: 'false' } }, async (server) => {
      const admin = await signup(server.api, 'Off');
      const now = Math.floor(Date.now() / 1000);
      await server.parley.core.db
        .insertInto('tool')
        .values({ id: 'stored', user_id: admin.id, name: 's', content: simpleTool(), specs: '[]', meta: '{}', valves: null, version: 'v1', updated_at: now, created_at: now })
        .execute();
      await expect(server.parley.services.tools.callTool('stored', 'marker', {})).rejects.toMatchObject({ code: 'disabled' });
    });
  });
});
