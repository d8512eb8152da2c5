import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultScript, fakeModel, isTaskPrompt } from '../../helpers/fake-model.js';
import { TOOL_SERVER_DOCUMENT, type FakeToolServer, startFakeToolServer } from '../../helpers/fake-tool-server.js';
import { openApiToolSpecs } from '../../../src/areas/completions/openapi.js';
import { closedPortUrl } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, outputText, webRequest } from './setup.js';

/**
 * OpenAPI tool servers in native function calling (tool-servers.ts): configured
 * servers selected as `server:<id>`, and the request's own `tool_servers`.
 */
const world = useServer({
  fakes: fakeModel(),
  env: { AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER: '1', ENABLE_LOCAL_WEB_FETCH: 'true' },
  admin: 'Servers Admin',
  users: { alice: ['user', 'Alice Servers'], bob: ['user', 'Bob Servers'] },
});
let toolServer: FakeToolServer;
let browser: Browser;

/** Calls each listed function once, then answers with what came back. */
const callingScript = (calls: { name: string; arguments: Record<string, unknown> }[]) => (body: any) => {
  if (isTaskPrompt(body)) return defaultScript(body);
  const results = body.messages.filter((m: any) => m.role === 'tool');
  if (results.length === 0) return { toolCalls: calls };
  return { text: results.map((r: any) => r.content).join('\n---\n') };
};

const words = (text: string) => text.replace(/\s+/g, ' ');

const ask = (token: string, extra: Record<string, unknown>) =>
  world.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'weather?' }], ...extra }, { token });

beforeAll(async () => {
  toolServer = await startFakeToolServer();
  const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
  await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, { token: world.admin.token });
  const connection = (url: string, id: string, extra: Record<string, unknown> = {}) => ({
    url,
    path: 'openapi.json',
    type: 'openapi',
    auth_type: 'bearer',
    key: 'server-key',
    config: { enable: true, access_grants: [{ principal_type: 'user', principal_id: world.alice.id, permission: 'read' }] },
    info: { id, name: `Server ${id}` },
    ...extra,
  });
  const res = await world.api.post(
    '/api/v1/configs/tool_servers',
    {
      TOOL_SERVER_CONNECTIONS: [
        connection(toolServer.url, 'weather'),
        connection(await closedPortUrl(), 'gone'),
        connection(toolServer.url, 'off', { config: { enable: false, access_grants: everyone } }),
        connection(toolServer.url, 'filtered', { config: { enable: true, access_grants: everyone, function_name_filter_list: '!write_note,!slow_call' } }),
      ],
    },
    { token: world.admin.token },
  );
  expect(res.status, res.text).toBe(200);
  browser = await openBrowser(world.server.url, world.alice.token);
});
afterAll(async () => {
  browser?.close();
  await toolServer?.close();
});

describe('configured OpenAPI tool servers', () => {
  it('verifies a server before it is saved', async () => {
    const res = await world.api.post('/api/v1/configs/tool_servers/verify', { url: toolServer.url, path: 'openapi.json', auth_type: 'none', key: null, config: null }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.info.title).toBe('Weather Server');
  });

  it('are listed with the tools for the users who may use them (enabled ones only)', async () => {
    const ids = async (token: string) => ((await world.api.get('/api/v1/tools/', { token })).body as any[]).map((t) => t.id);
    expect(await ids(world.alice.token)).toEqual(['server:weather', 'server:gone', 'server:filtered']);
    expect(await ids(world.bob.token)).toEqual(['server:filtered']);
    const entry = ((await world.api.get('/api/v1/tools/', { token: world.alice.token })).body as any[])[0];
    expect(entry).toMatchObject({ id: 'server:weather', user_id: 'server:weather', name: 'Server weather', meta: { description: '' }, user: null });
  });

  it("offers the server's operations and runs the calls against it with the connection's key", async () => {
    world.model.script = callingScript([
      { name: 'get_weather', arguments: { city: 'Paris & Co', unit: 'c' } },
      { name: 'write_note', arguments: { title: 'Hi', tags: ['a'] } },
    ]);
    const before = toolServer.calls.length;
    const res = await ask(world.alice.token, { tool_ids: ['server:weather', 'server:off'] });
    expect(res.status, res.text).toBe(200);
    const [first] = world.model.chatRequests().slice(-2);
    expect(first.tools.map((t: any) => t.function)).toEqual([
      {
        name: 'get_weather',
        description: 'Current weather of a city',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string', description: 'The city' }, unit: { type: 'string', description: '. Possible values: c, f' } },
          required: ['city'],
        },
      },
      {
        name: 'write_note',
        description: 'Stores a note',
        parameters: { type: 'object', properties: { title: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } }, required: ['title'] },
      },
      { name: 'slow_call', description: 'Never answers in time', parameters: { type: 'object', properties: {}, required: [] } },
    ]);
    const calls = toolServer.calls.slice(before);
    expect(calls.map((c) => [c.method, c.path, c.headers.authorization])).toEqual([
      ['GET', '/weather/Paris%20%26%20Co?unit=c', 'Bearer server-key'],
      ['POST', '/notes', 'Bearer server-key'],
    ]);
    expect(calls[1].body).toEqual({ title: 'Hi', tags: ['a'] });
    // The fake model streams words, so its echo keeps the words but not the indentation.
    expect(words(res.body.choices[0].message.content)).toBe(
      words(`${JSON.stringify({ city: 'Paris & Co', unit: 'c', temperature: 21 }, null, 2)}\n---\n${JSON.stringify({ results: [{ stored: { title: 'Hi', tags: ['a'] } }] }, null, 2)}`),
    );
  });

  it('turns a self-referencing schema into a finite spec', () => {
    const doc = {
      paths: { '/tree': { post: { operationId: 'plant', requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } } } } },
      components: { schemas: { Node: { type: 'object', properties: { name: { type: 'string' }, child: { $ref: '#/components/schemas/Node' }, kids: { type: 'array', items: { $ref: '#/components/schemas/Node' } } } } } },
    };
    const [spec] = openApiToolSpecs(doc);
    expect(spec.parameters).toEqual({ type: 'object', properties: { name: { type: 'string' }, child: {}, kids: { type: 'array', items: {} } }, required: [] });
  });

  it('applies the function filter, and offers nothing to a user without access', async () => {
    world.model.script = defaultScript;
    await ask(world.bob.token, { tool_ids: ['server:weather', 'server:filtered'] });
    expect(world.model.chatRequests().at(-1).tools.map((t: any) => t.function.name)).toEqual(['get_weather']);
    await ask(world.bob.token, { tool_ids: ['server:weather', 'server:nowhere'] });
    expect(world.model.chatRequests().at(-1).tools).toBeUndefined();
  });

  it('stops a call that takes too long, and the chat goes on', async () => {
    world.model.script = callingScript([{ name: 'slow_call', arguments: {} }]);
    const started = Date.now();
    const res = await ask(world.alice.token, { tool_ids: ['server:weather'] });
    expect(res.status, res.text).toBe(200);
    expect(JSON.parse(res.body.choices[0].message.content)).toEqual({ error: 'The tool server did not answer within 1 s' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('skips an unreachable server with a status, not a failed chat', async () => {
    world.model.script = callingScript([{ name: 'get_weather', arguments: { city: 'Oslo' } }]);
    const { body, assistantId } = webRequest(browser.socket, { content: 'weather in Oslo', extra: { tool_ids: ['server:gone', 'server:weather'], background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer', 20000);
    const status = await browser.next((e) => e.message_id === assistantId && e.type === 'status', 'the skipped server status');
    expect(status.data).toEqual({ description: 'Failed to connect to Server gone OpenAPI tool server', done: true });
    expect(outputText(done.data.output)).toContain('"city": "Oslo"');
  }, 30000);
});

describe("the request's own tool servers", () => {
  const direct = (url: string) => ({ url, openapi: TOOL_SERVER_DOCUMENT, info: { id: 'mine', name: 'Mine' }, auth_type: 'bearer', key: 'my-key', system_prompt: 'Use the weather tool.' });

  it('are called by Parley for an API client, through the web-fetch address rules', async () => {
    world.model.script = callingScript([{ name: 'get_weather', arguments: { city: 'Rome' } }]);
    const before = toolServer.calls.length;
    const res = await ask(world.bob.token, { tool_servers: [direct(toolServer.url)] });
    expect(res.status, res.text).toBe(200);
    const [first] = world.model.chatRequests().slice(-2);
    expect(first.messages[0]).toEqual({ role: 'system', content: 'Use the weather tool.' });
    expect(toolServer.calls.slice(before).map((c) => [c.path, c.headers.authorization])).toEqual([['/weather/Rome', 'Bearer my-key']]);
    expect(JSON.parse(res.body.choices[0].message.content)).toMatchObject({ city: 'Rome', temperature: 21 });

    const refused = await ask(world.bob.token, { tool_servers: [direct('http://169.254.169.254')] });
    expect(JSON.parse(refused.body.choices[0].message.content).error).toMatch(/cloud metadata/);
  });

  it("are run by the web client's browser (execute:tool)", async () => {
    world.model.script = callingScript([{ name: 'get_weather', arguments: { city: 'Lima' } }]);
    const asked: any[] = [];
    browser.socket.on('events', (payload: any, ack?: (reply: unknown) => void) => {
      if (payload.data?.type !== 'execute:tool') return;
      asked.push(payload.data.data);
      ack?.([{ from: 'browser', city: payload.data.data.params.city }, {}]);
    });
    const { body, assistantId } = webRequest(browser.socket, { content: 'weather in Lima', extra: { tool_servers: [direct('http://127.0.0.1:9')], background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer', 20000);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ name: 'get_weather', params: { city: 'Lima' }, server: { url: 'http://127.0.0.1:9', info: { id: 'mine' } }, session_id: browser.socket.id });
    expect(asked[0].server).not.toHaveProperty('specs');
    expect(words(outputText(done.data.output))).toBe(words(JSON.stringify({ from: 'browser', city: 'Lima' }, null, 2)));
  }, 30000);
});
