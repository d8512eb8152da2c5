import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ValvesCipher } from '../../../src/areas/tools/valves-crypto.js';
import { closedPortUrl, listenLocally } from '../../helpers/server.js';
import { useServer, withWorld } from '../../helpers/world.js';

const CODE_EXECUTION_FORM = {
  ENABLE_CODE_EXECUTION: false,
  CODE_EXECUTION_ENGINE: 'jupyter',
  CODE_EXECUTION_JUPYTER_URL: 'http://jupyter:8888',
  CODE_EXECUTION_JUPYTER_AUTH: 'token',
  CODE_EXECUTION_JUPYTER_AUTH_TOKEN: 'abc',
  CODE_EXECUTION_JUPYTER_AUTH_PASSWORD: null,
  CODE_EXECUTION_JUPYTER_TIMEOUT: 30,
  ENABLE_CODE_INTERPRETER: true,
  CODE_INTERPRETER_ENGINE: 'pyodide',
  CODE_INTERPRETER_PROMPT_TEMPLATE: null,
  CODE_INTERPRETER_JUPYTER_URL: null,
  CODE_INTERPRETER_JUPYTER_AUTH: null,
  CODE_INTERPRETER_JUPYTER_AUTH_TOKEN: null,
  CODE_INTERPRETER_JUPYTER_AUTH_PASSWORD: null,
  CODE_INTERPRETER_JUPYTER_TIMEOUT: null,
};

const SUBAGENTS_FORM = {
  ENABLE_SUBAGENTS: true,
  SUBAGENTS_BACKGROUND_ENABLED: false,
  SUBAGENTS_MAX_CONCURRENT: 4,
  SUBAGENTS_MAX_ASYNC: 2,
  SUBAGENTS_MAX_ITERATIONS: 10,
  SUBAGENTS_MAX_OUTPUT: 5000,
  SUBAGENTS_SYSTEM_PROMPT: 'Be brief.',
};

const BANNER = { id: 'b1', type: 'info', title: 'Hello', content: 'Maintenance tonight', dismissible: true, timestamp: 1700000000 };

describe('configs area', () => {
  const world = useServer({ admin: 'Config Admin', users: { member: 'user', pending: 'pending' }, env: { OAUTH_CLIENT_INFO_ENCRYPTION_KEY: 'oauth-test-key' } });

  const lastEvent = (name: string) => [...world.events].reverse().find((e) => e.event === name);

  it('keeps every admin route from members, pending accounts and anonymous callers with 401', async () => {
    const adminRoutes: [string, string][] = [
      ['POST', '/api/v1/configs/import'],
      ['GET', '/api/v1/configs/export'],
      ['GET', '/api/v1/configs/namespace/ui'],
      ['GET', '/api/v1/configs/connections'],
      ['POST', '/api/v1/configs/connections'],
      ['POST', '/api/v1/configs/oauth/clients/register'],
      ['GET', '/api/v1/configs/tool_servers'],
      ['POST', '/api/v1/configs/tool_servers'],
      ['POST', '/api/v1/configs/tool_servers/verify'],
      ['GET', '/api/v1/configs/terminal_servers'],
      ['POST', '/api/v1/configs/terminal_servers'],
      ['POST', '/api/v1/configs/terminal_servers/verify'],
      ['POST', '/api/v1/configs/terminal_servers/policy'],
      ['POST', '/api/v1/configs/terminal_servers/lifecycle'],
      ['POST', '/api/v1/configs/terminal_servers/refresh'],
      ['GET', '/api/v1/configs/code_execution'],
      ['POST', '/api/v1/configs/code_execution'],
      ['GET', '/api/v1/configs/models'],
      ['POST', '/api/v1/configs/models'],
      ['GET', '/api/v1/configs/subagents'],
      ['POST', '/api/v1/configs/subagents'],
      ['POST', '/api/v1/configs/suggestions'],
      ['POST', '/api/v1/configs/banners'],
    ];
    for (const [method, path] of adminRoutes) {
      for (const token of [null, world.member.token, world.pending.token]) {
        const res = await world.api.request(method, path, method === 'POST' ? {} : undefined, { token });
        expect(res.status, `${method} ${path} as ${token ? 'non-admin' : 'anonymous'}`).toBe(401);
      }
    }
    for (const path of ['/api/v1/configs/banners', '/api/v1/configs/models/defaults']) {
      expect((await world.api.get(path)).status, path).toBe(401);
      expect((await world.api.get(path, { token: world.pending.token })).status, path).toBe(401);
      expect((await world.api.get(path, { token: world.member.token })).status, path).toBe(200);
    }
  });

  it('exports every stored setting and one namespace of them', async () => {
    const res = await world.api.get('/api/v1/configs/export', { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ 'ui.banners': [], 'direct.enable': false, 'ui.enable_signup': false, 'subagents.max_output': 30000 });
    const ui = await world.api.get('/api/v1/configs/namespace/ui', { token: world.admin.token });
    expect(ui.status).toBe(200);
    expect(Object.keys(ui.body).length).toBeGreaterThan(3);
    expect(Object.keys(ui.body).every((key) => key.startsWith('ui.'))).toBe(true);
    expect((await world.api.get('/api/v1/configs/namespace/nothing-here', { token: world.admin.token })).body).toEqual({});
  });

  it('refuses a malformed import with 4xx and changes nothing', async () => {
    const before = (await world.api.get('/api/v1/configs/export', { token: world.admin.token })).body;
    const attempts: [unknown, number][] = [
      [{}, 422],
      [{ config: 'ui.enable_signup=true' }, 422],
      [{ config: [1, 2] }, 422],
      [{ config: null }, 422],
      // One bad value fails the whole import, the good key with it.
      [{ config: { 'ui.default_models': 'would-be-applied', 'ui.enable_signup': 'yes' } }, 400],
      [{ config: { 'ui.banners': [{ id: 'x' }] } }, 400],
      [{ config: { 'subagents.max_concurrent': 2.5 } }, 400],
    ];
    for (const [body, status] of attempts) {
      const res = await world.api.post('/api/v1/configs/import', body, { token: world.admin.token });
      expect(res.status, JSON.stringify(body)).toBe(status);
    }
    const broken = await world.api.post('/api/v1/configs/import', undefined, { token: world.admin.token, raw: '{"config": {' });
    expect(broken.status).toBe(422);
    const after = (await world.api.get('/api/v1/configs/export', { token: world.admin.token })).body;
    expect(after).toEqual(before);
    expect(lastEvent('config.imported')).toBeUndefined();
  });

  it('imports known and unknown keys in one go and reports them in an event', async () => {
    const config = { 'ui.default_models': 'gpt-x', 'ui.enable_community_sharing': false, 'custom.team.motto': { words: ['ship', 'it'] } };
    const res = await world.api.post('/api/v1/configs/import', { config }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject(config);
    expect(res.body['ui.enable_login_form']).toBe(true);
    const event = lastEvent('config.imported')!;
    expect(event.subject).toEqual({ type: 'config', id: 'import' });
    expect(event.actor).toMatchObject({ id: world.admin.id, role: 'admin' });
    expect(event.data).toEqual({ keys: Object.keys(config) });
    expect((await world.api.get('/api/config', { token: world.admin.token })).body.features.enable_community_sharing).toBe(false);
  });

  it('reads and writes the connections form, requiring every field', async () => {
    const current = await world.api.get('/api/v1/configs/connections', { token: world.admin.token });
    expect(current.body).toEqual({ ENABLE_DIRECT_CONNECTIONS: false, ENABLE_BASE_MODELS_CACHE: false });
    const missing = await world.api.post('/api/v1/configs/connections', { ENABLE_DIRECT_CONNECTIONS: true }, { token: world.admin.token });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'ENABLE_BASE_MODELS_CACHE'] });
    const wrongType = await world.api.post(
      '/api/v1/configs/connections',
      { ENABLE_DIRECT_CONNECTIONS: 'yes', ENABLE_BASE_MODELS_CACHE: false },
      { token: world.admin.token },
    );
    expect(wrongType.status).toBe(422);
    const form = { ENABLE_DIRECT_CONNECTIONS: true, ENABLE_BASE_MODELS_CACHE: true };
    const res = await world.api.post('/api/v1/configs/connections', form, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(form);
    expect((await world.api.get('/api/v1/configs/connections', { token: world.admin.token })).body).toEqual(form);
    const event = lastEvent('config.connections.updated')!;
    expect(event.subject).toEqual({ type: 'config', id: 'connections' });
    expect(event.data).toEqual(form);
  });

  it('reads and writes the code execution form; nullable fields must still be present', async () => {
    const current = await world.api.get('/api/v1/configs/code_execution', { token: world.admin.token });
    expect(current.body).toMatchObject({ ENABLE_CODE_EXECUTION: true, CODE_EXECUTION_ENGINE: 'pyodide', CODE_EXECUTION_JUPYTER_TIMEOUT: 60 });
    const { CODE_INTERPRETER_JUPYTER_TIMEOUT: _omitted, ...partial } = CODE_EXECUTION_FORM;
    const missing = await world.api.post('/api/v1/configs/code_execution', partial, { token: world.admin.token });
    expect(missing.status).toBe(422);
    const res = await world.api.post('/api/v1/configs/code_execution', CODE_EXECUTION_FORM, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(CODE_EXECUTION_FORM);
    expect(lastEvent('config.code_execution.updated')!.data).toEqual({
      code_execution_enabled: false,
      code_execution_engine: 'jupyter',
      code_interpreter_enabled: true,
      code_interpreter_engine: 'pyodide',
    });
    expect((await world.api.get('/api/config', { token: world.member.token })).body.features.enable_code_execution).toBe(false);
  });

  it('reads and writes the models form and its defaults', async () => {
    const form = { DEFAULT_MODELS: 'm1,m2', DEFAULT_PINNED_MODELS: null, MODEL_ORDER_LIST: ['m2', 'm1'], DEFAULT_MODEL_METADATA: { capabilities: { vision: true } } };
    const res = await world.api.post('/api/v1/configs/models', form, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    // A left-out dict is stored as null, as the reference does.
    expect(res.body).toEqual({ ...form, DEFAULT_MODEL_PARAMS: null });
    expect((await world.api.get('/api/v1/configs/models', { token: world.admin.token })).body).toEqual(res.body);
    expect((await world.api.get('/api/v1/configs/models/defaults', { token: world.member.token })).body).toEqual({
      DEFAULT_MODEL_METADATA: { capabilities: { vision: true } },
    });
    expect(lastEvent('config.models.updated')!.data).toEqual({ default_models: 'm1,m2', default_pinned_models: null, model_order_count: 2 });
    const missing = await world.api.post('/api/v1/configs/models', { DEFAULT_MODELS: 'x', MODEL_ORDER_LIST: [] }, { token: world.admin.token });
    expect(missing.status).toBe(422);
  });

  it('reads and writes the subagents form (0.11.0)', async () => {
    const current = await world.api.get('/api/v1/configs/subagents', { token: world.admin.token });
    expect(current.body).toEqual({
      ENABLE_SUBAGENTS: false,
      SUBAGENTS_BACKGROUND_ENABLED: false,
      SUBAGENTS_MAX_CONCURRENT: 20,
      SUBAGENTS_MAX_ASYNC: 20,
      SUBAGENTS_MAX_ITERATIONS: 30,
      SUBAGENTS_MAX_OUTPUT: 30000,
      SUBAGENTS_SYSTEM_PROMPT: '',
    });
    const res = await world.api.post('/api/v1/configs/subagents', SUBAGENTS_FORM, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(SUBAGENTS_FORM);
    const event = lastEvent('config.subagents.updated')!;
    expect(event.subject).toEqual({ type: 'config', id: 'subagents' });
    expect(event.data).toEqual({ enabled: true });
    const fraction = await world.api.post('/api/v1/configs/subagents', { ...SUBAGENTS_FORM, SUBAGENTS_MAX_ASYNC: 1.5 }, { token: world.admin.token });
    expect(fraction.status).toBe(422);
  });

  it('sets prompt suggestions and shows them in the config', async () => {
    const suggestions = [{ title: ['Plan', 'my week'], content: 'Help me plan my week.' }];
    const res = await world.api.post('/api/v1/configs/suggestions', { suggestions }, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(suggestions);
    expect((await world.api.get('/api/config', { token: world.member.token })).body.default_prompt_suggestions).toEqual(suggestions);
    expect(lastEvent('config.suggestions.updated')!.data).toEqual({ count: 1 });
    const bad = await world.api.post('/api/v1/configs/suggestions', { suggestions: [{ title: 'Plan', content: 'x' }] }, { token: world.admin.token });
    expect(bad.status).toBe(422);
  });

  it('sets banners for every member to read', async () => {
    const { title: _title, ...untitled } = { ...BANNER, id: 'b2' };
    const res = await world.api.post('/api/v1/configs/banners', { banners: [BANNER, untitled] }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([BANNER, { ...untitled, title: null }]);
    expect((await world.api.get('/api/v1/configs/banners', { token: world.member.token })).body).toEqual(res.body);
    const event = lastEvent('config.banners.updated')!;
    expect(event.subject).toEqual({ type: 'config', id: 'ui.banners' });
    expect(event.data).toEqual({ count: 2 });
    const bad = await world.api.post('/api/v1/configs/banners', { banners: [{ id: 'b3', type: 'info' }] }, { token: world.admin.token });
    expect(bad.status).toBe(422);
    expect((await world.api.get('/api/v1/configs/banners', { token: world.member.token })).body).toHaveLength(2);
  });

  it('stores tool server connections with their defaults and extra fields', async () => {
    const connection = { url: 'http://tools.local', path: 'openapi.json', auth_type: 'bearer', key: 'k', config: { enable: true }, note: 'kept' };
    const res = await world.api.post('/api/v1/configs/tool_servers', { TOOL_SERVER_CONNECTIONS: [connection, { ...connection, type: 'mcp' }] }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.TOOL_SERVER_CONNECTIONS[0]).toEqual({ ...connection, type: 'openapi', headers: null, info: null });
    expect((await world.api.get('/api/v1/configs/tool_servers', { token: world.admin.token })).body).toEqual(res.body);
    const event = lastEvent('config.tool_servers.updated')!;
    expect(event.subject).toEqual({ type: 'config', id: 'tool_server.connections' });
    expect(event.data).toEqual({ count: 2, types: ['openapi', 'mcp'] });
    const missing = await world.api.post('/api/v1/configs/tool_servers', { TOOL_SERVER_CONNECTIONS: [{ url: 'http://x', path: '/' }] }, { token: world.admin.token });
    expect(missing.status).toBe(422);
    const nullList = await world.api.post('/api/v1/configs/tool_servers', { TOOL_SERVER_CONNECTIONS: null }, { token: world.admin.token });
    expect(nullList.status).toBe(422);
  });

  it('stores terminal server connections without their policies', async () => {
    const res = await world.api.post(
      '/api/v1/configs/terminal_servers',
      { TERMINAL_SERVER_CONNECTIONS: [{ url: 'http://term.local', name: 'Term', policy: { cpu: 1 }, lifecycle: { idle: 5 } }] },
      { token: world.admin.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.TERMINAL_SERVER_CONNECTIONS).toEqual([
      {
        id: '',
        name: 'Term',
        enabled: true,
        url: 'http://term.local',
        path: '/openapi.json',
        key: '',
        auth_type: 'bearer',
        config: null,
        server_type: null,
        policy_id: null,
      },
    ]);
    expect((await world.api.get('/api/v1/configs/terminal_servers', { token: world.admin.token })).body).toEqual(res.body);
    expect(lastEvent('config.terminal_servers.updated')!.data).toEqual({ count: 1 });
  });

  it('registers an OAuth 2.1 client dynamically, or from static credentials, and answers the encrypted client information', async () => {
    const registered: any[] = [];
    const auth = createServer(async (req, res) => {
      const origin = `http://${req.headers.host}`;
      const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (req.url === '/mcp') return json(401, { error: 'unauthorized' }, { 'www-authenticate': `Bearer resource_metadata="${origin}/meta"` });
      if (req.url === '/meta') return json(200, { resource: `${origin}/mcp`, authorization_servers: [`${origin}/auth`], scopes_supported: ['tools:read'] });
      if (req.url === '/.well-known/oauth-authorization-server/auth') {
        return json(200, { issuer: origin, authorization_endpoint: `${origin}/authorize`, token_endpoint: `${origin}/token`, registration_endpoint: `${origin}/register`, response_types_supported: ['code'] });
      }
      if (req.url === '/register') {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        registered.push(JSON.parse(Buffer.concat(chunks).toString()));
        return json(201, { client_id: 'issued-id', client_secret: 'issued-secret', client_secret_expires_at: 0, redirect_uris: registered.at(-1).redirect_uris });
      }
      json(404, {});
    });
    const url = await listenLocally(auth);
    try {
      const cipher = new ValvesCipher('oauth-test-key', true);
      const dynamic = await world.api.post('/api/v1/configs/oauth/clients/register?type=mcp', { url: `${url}/mcp`, client_id: 'srv' }, { token: world.admin.token });
      expect(dynamic.status, dynamic.text).toBe(200);
      expect(dynamic.body.status).toBe(true);
      expect(registered).toHaveLength(1);
      expect(registered[0]).toMatchObject({ grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: 'tools:read' });
      expect(registered[0].redirect_uris[0]).toMatch(/\/oauth\/clients\/mcp:srv\/callback$/);
      expect(cipher.open(dynamic.body.oauth_client_info)).toMatchObject({
        client_id: 'issued-id',
        client_secret: 'issued-secret',
        issuer: `${url}/.well-known/oauth-authorization-server/auth`,
        resource: `${url}/mcp`,
        server_metadata: { token_endpoint: `${url}/token` },
      });

      const fixed = await world.api.post(
        '/api/v1/configs/oauth/clients/register',
        { url: `${url}/mcp`, client_id: 'mine', client_secret: 's3cret', oauth_scope: 'a,b' },
        { token: world.admin.token },
      );
      expect(fixed.status, fixed.text).toBe(200);
      expect(registered).toHaveLength(1);
      expect(cipher.open(fixed.body.oauth_client_info)).toMatchObject({ client_id: 'mine', client_secret: 's3cret', scope: 'a b', token_endpoint_auth_method: 'client_secret_post' });
    } finally {
      auth.close();
    }

    const failed = await world.api.post('/api/v1/configs/oauth/clients/register', { url: await closedPortUrl(), client_id: 'c1' }, { token: world.admin.token });
    expect(failed.status).toBe(400);
    expect(failed.body.detail).toBe('Failed to register OAuth client');
    const missing = await world.api.post('/api/v1/configs/oauth/clients/register', { url: 'http://mcp.local' }, { token: world.admin.token });
    expect(missing.status).toBe(422);
    expect((await world.api.post('/api/v1/configs/oauth/clients/register', { url: 'http://mcp.local', client_id: 'x' }, { token: world.member.token })).status).toBe(401);
  });
});

describe('configs survive a restart', () => {
  it('keeps imported and form-written values when another server starts on the same data', async () => {
    await withWorld({ admin: 'Restart Admin' }, async (world) => {
      const { admin } = world;
      const imported = await world.api.post('/api/v1/configs/import', { config: { 'ui.default_models': 'kept-model', 'custom.flag': true } }, { token: admin.token });
      expect(imported.status).toBe(200);
      const banners = await world.api.post('/api/v1/configs/banners', { banners: [BANNER] }, { token: admin.token });
      expect(banners.status).toBe(200);
      const subagents = await world.api.post('/api/v1/configs/subagents', SUBAGENTS_FORM, { token: admin.token });
      expect(subagents.status).toBe(200);

      // The environment seeds only keys the database lacks: the stored values win over it.
      await world.restart({ DEFAULT_MODELS: 'from-env' });
      const exported = (await world.api.get('/api/v1/configs/export', { token: admin.token })).body;
      expect(exported).toMatchObject({ 'ui.default_models': 'kept-model', 'custom.flag': true, 'ui.banners': [BANNER] });
      expect((await world.api.get('/api/v1/configs/banners', { token: admin.token })).body).toEqual([BANNER]);
      expect((await world.api.get('/api/v1/configs/subagents', { token: admin.token })).body).toEqual(SUBAGENTS_FORM);
      expect((await world.api.get('/api/config', { token: admin.token })).body.default_models).toBe('kept-model');
    });
  });
});
