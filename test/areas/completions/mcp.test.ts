import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultScript, fakeModel, isTaskPrompt } from '../../helpers/fake-model.js';
import { type FakeMcpServer, startFakeMcpServer } from '../../helpers/fake-mcp-server.js';
import { closedPortUrl } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, webRequest } from './setup.js';

/** MCP servers over streamable HTTP in native function calling (mcp.ts), against an SDK server. */
const world = useServer({
  fakes: fakeModel(),
  env: { AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER: '1' },
  admin: 'MCP Admin',
  users: { alice: ['user', 'Alice MCP'], bob: ['user', 'Bob MCP'] },
});
let mcp: FakeMcpServer;
let browser: Browser;

const callingScript = (calls: { name: string; arguments: Record<string, unknown> }[]) => (body: any) => {
  if (isTaskPrompt(body)) return defaultScript(body);
  const results = body.messages.filter((m: any) => m.role === 'tool');
  if (results.length === 0) return { toolCalls: calls };
  return { text: results.map((r: any) => r.content.replace(/\s+/g, ' ')).join(' | ') };
};

const ask = (token: string, toolIds: string[]) =>
  world.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'compute' }], tool_ids: toolIds }, { token });

beforeAll(async () => {
  mcp = await startFakeMcpServer();
  const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
  await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, { token: world.admin.token });
  const connection = (url: string, id: string, grants: unknown[]) => ({
    url,
    path: '',
    type: 'mcp',
    auth_type: 'bearer',
    key: 'mcp-key',
    config: { enable: true, access_grants: grants },
    info: { id, name: `MCP ${id}` },
  });
  const res = await world.api.post(
    '/api/v1/configs/tool_servers',
    { TOOL_SERVER_CONNECTIONS: [connection(mcp.url, 'calc', [{ principal_type: 'user', principal_id: world.alice.id, permission: 'read' }]), connection(await closedPortUrl(), 'down', everyone)] },
    { token: world.admin.token },
  );
  expect(res.status, res.text).toBe(200);
  browser = await openBrowser(world.server.url, world.alice.token);
});
afterAll(async () => {
  browser?.close();
  await mcp?.close();
});

describe('MCP servers', () => {
  it('verifies a server by listing its tools', async () => {
    const res = await world.api.post('/api/v1/configs/tool_servers/verify', { url: mcp.url, path: '', type: 'mcp', auth_type: 'none', key: null, config: null }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.specs.map((s: any) => s.name)).toEqual(['add', 'describe', 'hang']);
  });

  it('are listed with the tools as server:mcp:<id> for the users who may use them', async () => {
    const ids = async (token: string) => ((await world.api.get('/api/v1/tools/', { token })).body as any[]).map((t) => t.id);
    expect(await ids(world.alice.token)).toEqual(['server:mcp:calc', 'server:mcp:down']);
    expect(await ids(world.bob.token)).toEqual(['server:mcp:down']);
  });

  it('offers the listed tools as <server>_<tool> and calls them with the connection key', async () => {
    world.model.script = callingScript([
      { name: 'calc_add', arguments: { a: 2, b: 40 } },
      { name: 'calc_describe', arguments: { thing: 'cat' } },
    ]);
    mcp.headers.length = 0;
    const res = await ask(world.alice.token, ['server:mcp:calc']);
    expect(res.status, res.text).toBe(200);
    const [first, second] = world.model.chatRequests().slice(-2);
    expect(first.tools.map((t: any) => t.function.name)).toEqual(['calc_add', 'calc_describe', 'calc_hang']);
    expect(first.tools[0].function).toMatchObject({ description: 'Adds two numbers', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } });
    expect(mcp.calls.slice(-2)).toEqual([
      { name: 'add', args: { a: 2, b: 40 } },
      { name: 'describe', args: { thing: 'cat' } },
    ]);
    expect(mcp.headers.every((h) => h.authorization === 'Bearer mcp-key')).toBe(true);
    expect(res.body.choices[0].message.content).toBe('{ "sum": 42 } | A cat.');
    // The image goes back to the model as an image part.
    const describeResult = second.messages.filter((m: any) => m.role === 'tool')[1];
    expect(JSON.stringify(second.messages)).toContain('data:image/png;base64,iVBORw0KGgo=');
    expect(describeResult.content).toBe('A cat.');
  });

  it('gives a hanging call a deadline', async () => {
    world.model.script = callingScript([{ name: 'calc_hang', arguments: {} }]);
    const started = Date.now();
    const res = await ask(world.alice.token, ['server:mcp:calc']);
    expect(res.status, res.text).toBe(200);
    expect(res.body.choices[0].message.content).toBe('{ "error": "The MCP server did not answer within 1 s" }');
    expect(Date.now() - started).toBeLessThan(5000);
    await world.model.waitFor(() => mcp.cancelled > 0, 'the server to see the call cancelled');
  });

  it('stops a running call with the chat', async () => {
    world.model.script = callingScript([{ name: 'calc_hang', arguments: {} }]);
    const before = mcp.cancelled;
    const started = Date.now();
    const { body, assistantId } = webRequest(browser.socket, { content: 'hang', extra: { tool_ids: ['server:mcp:calc'], background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    await world.model.waitFor(() => mcp.calls.filter((c) => c.name === 'hang').length > 0 && mcp.headers.length > 0, 'the call');
    await new Promise((r) => setTimeout(r, 100));
    const stopped = await world.api.post(`/api/tasks/stop/${res.body.task_ids[0]}`, {}, { token: world.admin.token });
    expect(stopped.status, stopped.text).toBe(200);
    await browser.next((e) => e.message_id === assistantId && e.type === 'chat:tasks:cancel', 'the cancel', 10000);
    await world.model.waitFor(() => mcp.cancelled > before, 'the server to see the call cancelled');
    // Sooner than the 1 s call deadline: the stop ended it.
    expect(Date.now() - started).toBeLessThan(1000);
  }, 30000);

  it('skips an unreachable server with a status, and offers nothing to users without access', async () => {
    world.model.script = defaultScript;
    const { body, assistantId } = webRequest(browser.socket, { content: 'hello', extra: { tool_ids: ['server:mcp:down'], background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer', 20000);
    const status = await browser.next((e) => e.message_id === assistantId && e.type === 'status', 'the status');
    expect(status.data).toEqual({ description: "Failed to connect to MCP server 'down'", done: true });

    await ask(world.bob.token, ['server:mcp:calc']);
    expect(world.model.chatRequests().at(-1).tools).toBeUndefined();
  }, 30000);
});
