import { beforeAll, describe, expect, it } from 'vitest';
import { sendJson } from '../../helpers/fake-upstreams.js';
import { closedPortUrl } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';
import { type FakeHandler, fakeServer, silentServer } from './remote-servers.js';

const OPENAPI = { openapi: '3.1.0', info: { title: 'Weather', version: '1' }, paths: {} };
const OAUTH_METADATA = {
  issuer: 'http://auth.local',
  authorization_endpoint: 'http://auth.local/authorize',
  token_endpoint: 'http://auth.local/token',
  response_types_supported: ['code'],
};

/** Answers MCP over streamable HTTP: JSON for initialize, SSE for tools/list. */
function mcpHandler(request: { method: string; body: string }, res: import('node:http').ServerResponse) {
  if (request.method === 'DELETE') return void res.writeHead(200).end();
  const message = JSON.parse(request.body) as { id?: number; method: string };
  if (message.method === 'initialize') {
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' });
    return void res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-03-26', capabilities: { tools: {} }, serverInfo: { name: 'fake', version: '1' } } }));
  }
  if (message.id === undefined) return void res.writeHead(202).end();
  if (message.method === 'tools/list') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const result = { tools: [{ name: 'get_weather', description: 'Weather by city', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } }] };
    return void res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n\n`);
  }
  sendJson(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'unknown method' } });
}

/** The tool server, terminal orchestrator and MCP server the configs point at. */
const remoteHandler: FakeHandler = (request, res) => {
  if (request.path.startsWith('/mcp') && request.method !== 'GET') return mcpHandler(request, res);
  if (request.path === '/openapi.json') return sendJson(res, 200, OPENAPI);
  if (request.path === '/.well-known/oauth-authorization-server') return sendJson(res, 200, OAUTH_METADATA);
  if (request.path === '/orchestrator/api/v1/policies') return sendJson(res, 200, []);
  if (request.path === '/terminal/api/config') return sendJson(res, 200, {});
  if (request.path === '/orchestrator/api/v1/policies/p1') return sendJson(res, 200, { id: 'p1', data: request.body ? JSON.parse(request.body) : null });
  if (request.path === '/orchestrator/api/v1/policies/p1/lifecycle') return sendJson(res, 200, { lifecycle: true });
  if (request.path === '/orchestrator/api/v1/terminals/refresh') return sendJson(res, 200, { refreshed: JSON.parse(request.body) });
  res.writeHead(404, { 'content-type': 'text/plain' }).end('no such policy');
};

describe('configs calls to configured servers', () => {
  const world = useServer({
    fakes: { start: async () => ({ remote: await fakeServer(remoteHandler), hanging: await silentServer() }) },
    // A one-second deadline keeps the "server never answers" cases short.
    env: { AIOHTTP_CLIENT_TIMEOUT_TOOL_SERVER_DATA: '1' },
    admin: 'Remote Admin',
  });
  let closed: string;

  beforeAll(async () => {
    closed = await closedPortUrl();
  });

  const post = (path: string, body: unknown) => world.api.post(`/api/v1/configs${path}`, body, { token: world.admin.token });
  const toolServer = (url: string, extra: Record<string, unknown> = {}) => ({ url, path: '/openapi.json', auth_type: 'bearer', key: 'secret', config: null, ...extra });

  it('fetches a tool server OpenAPI document, sending the bearer key', async () => {
    const res = await post('/tool_servers/verify', toolServer(world.remote.url));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(OPENAPI);
    expect(world.remote.requests.at(-1)!.headers.authorization).toBe('Bearer secret');
  });

  it('answers 400 for an unreachable, failing or silent tool server', async () => {
    for (const url of [closed, `${world.remote.url}/missing`, world.hanging.url]) {
      const started = Date.now();
      const res = await post('/tool_servers/verify', toolServer(url));
      expect(res.status, url).toBe(400);
      expect(res.body).toEqual({ detail: 'Failed to connect to the tool server' });
      expect(Date.now() - started).toBeLessThan(5000);
    }
  });

  it('lists the tools of an MCP server', async () => {
    const res = await post('/tool_servers/verify', toolServer(`${world.remote.url}/mcp`, { type: 'mcp', auth_type: 'none', key: null }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      status: true,
      specs: [{ name: 'get_weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
    });
    const toolsList = world.remote.requests.find((r) => r.body.includes('tools/list'))!;
    expect(toolsList.headers['mcp-session-id']).toBe('session-1');
  });

  it('answers the reference failure when an MCP server cannot be reached or hangs', async () => {
    for (const url of [closed, world.hanging.url]) {
      const res = await post('/tool_servers/verify', toolServer(url, { type: 'mcp', auth_type: 'none' }));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'Failed to create MCP client' });
    }
  });

  it('fetches the OAuth 2.1 discovery document of an MCP server', async () => {
    const res = await post('/tool_servers/verify', toolServer(`${world.remote.url}/mcp`, { type: 'mcp', auth_type: 'oauth_2.1' }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ status: true, oauth_server_metadata: OAUTH_METADATA });

    const unreachable = await post('/tool_servers/verify', toolServer(`${closed}/mcp`, { type: 'mcp', auth_type: 'oauth_2.1' }));
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.detail).toBe(
      `Failed to fetch OAuth 2.1 discovery document from ['${closed}/.well-known/oauth-authorization-server/mcp', '${closed}/.well-known/openid-configuration/mcp', '${closed}/mcp/.well-known/openid-configuration', '${closed}/.well-known/oauth-authorization-server', '${closed}/.well-known/openid-configuration']`,
    );
  });

  it('tells an orchestrator from a plain terminal server', async () => {
    expect((await post('/terminal_servers/verify', { url: `${world.remote.url}/orchestrator/` })).body).toEqual({ status: true, type: 'orchestrator' });
    expect((await post('/terminal_servers/verify', { url: `${world.remote.url}/terminal` })).body).toEqual({ status: true, type: 'terminal' });
    for (const url of [closed, world.hanging.url]) {
      const res = await post('/terminal_servers/verify', { url });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'Failed to connect to the terminal server' });
    }
    const empty = await post('/terminal_servers/verify', { url: '' });
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({ detail: 'Terminal server URL is required' });
  });

  it('reads and writes an orchestrator policy, passing its errors through', async () => {
    const read = await post('/terminal_servers/policy', { url: `${world.remote.url}/orchestrator`, policy_id: 'p1' });
    expect(read.status, read.text).toBe(200);
    expect(read.body).toEqual({ id: 'p1', data: null });
    expect(world.remote.requests.at(-1)!.method).toBe('GET');

    const write = await post('/terminal_servers/policy', { url: `${world.remote.url}/orchestrator`, key: 'k', policy_id: 'p1', policy_data: { cpu: 2 } });
    expect(write.body).toEqual({ id: 'p1', data: { cpu: 2 } });
    expect(world.remote.requests.at(-1)!.method).toBe('PUT');
    expect(world.remote.requests.at(-1)!.headers.authorization).toBe('Bearer k');

    const missing = await post('/terminal_servers/policy', { url: `${world.remote.url}/orchestrator`, policy_id: 'p2' });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'no such policy' });

    const unreachable = await post('/terminal_servers/policy', { url: world.hanging.url, policy_id: 'p1' });
    expect(unreachable.status).toBe(400);
    expect(unreachable.body).toEqual({ detail: 'Failed to access policy on terminal server' });
    expect((await post('/terminal_servers/policy', { url: world.remote.url })).status).toBe(422);
  });

  it('proxies lifecycle and refresh to an orchestrator', async () => {
    const lifecycle = await post('/terminal_servers/lifecycle', { url: `${world.remote.url}/orchestrator`, policy_id: 'p1' });
    expect(lifecycle.body).toEqual({ lifecycle: true });
    const lifecycleDown = await post('/terminal_servers/lifecycle', { url: closed, policy_id: 'p1', lifecycle_data: { idle: 1 } });
    expect(lifecycleDown.status).toBe(400);
    expect(lifecycleDown.body).toEqual({ detail: 'Failed to access lifecycle on terminal server' });

    const refresh = await post('/terminal_servers/refresh', { url: `${world.remote.url}/orchestrator`, user_id: 'u1' });
    expect(refresh.status, refresh.text).toBe(200);
    expect(refresh.body).toEqual({ refreshed: { only_idle: true, reset: false, user_id: 'u1' } });
    const refreshDown = await post('/terminal_servers/refresh', { url: closed });
    expect(refreshDown.status).toBe(400);
    expect(refreshDown.body).toEqual({ detail: 'Failed to refresh terminals' });
  });
});
