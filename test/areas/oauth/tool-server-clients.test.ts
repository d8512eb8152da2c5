import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValvesCipher } from '../../../src/areas/tools/valves-crypto.js';
import { defaultScript, fakeModel } from '../../helpers/fake-model.js';
import { type FakeMcpServer, startFakeMcpServer } from '../../helpers/fake-mcp-server.js';
import { TestClock } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';
import { Browser, type OpenIdProvider, startOpenIdProvider, TOOL_CLIENT_ID, TOOL_CLIENT_SECRET } from './openid-provider.js';

/**
 * A tool server with its own authorization server (MCP OAuth 2.1, `auth_type: oauth_2.1`): the user
 * authorizes Parley there once (/oauth/clients/{id}/authorize), and the server is then called with
 * that token, refreshed when due.
 */
const models = fakeModel();
const clock = new TestClock();
const world = useServer({
  clock,
  fakes: { start: async () => ({ ...(await models.start()), idp: await startOpenIdProvider() }), env: (fakes) => models.env!(fakes) },
  admin: 'Admin',
  users: { alice: ['user', 'Alice'] },
});
const idp = () => (world as unknown as { idp: OpenIdProvider }).idp;
let mcp: FakeMcpServer;

beforeAll(async () => {
  mcp = await startFakeMcpServer();
  const metadata = (await (await fetch(idp().metadataUrl)).json()) as Record<string, unknown>;
  // What POST /api/v1/configs/oauth/clients/register stores, sealed with the same key.
  const clientInfo = new ValvesCipher('test-secret-key', true).seal({
    client_id: TOOL_CLIENT_ID,
    client_secret: TOOL_CLIENT_SECRET,
    redirect_uris: [`${world.server.url}/oauth/clients/mcp:calc/callback`],
    scope: 'openid offline_access',
    token_endpoint_auth_method: 'client_secret_post',
    issuer: idp().metadataUrl,
    server_metadata: metadata,
    resource: null,
  });
  const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
  await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, { token: world.admin.token });
  const res = await world.api.post(
    '/api/v1/configs/tool_servers',
    {
      TOOL_SERVER_CONNECTIONS: [
        { url: mcp.url, path: '', type: 'mcp', auth_type: 'oauth_2.1', key: '', config: { enable: true, access_grants: everyone }, info: { id: 'calc', name: 'Calc', oauth_client_info: clientInfo } },
      ],
    },
    { token: world.admin.token },
  );
  expect(res.status, res.text).toBe(200);
});
afterAll(async () => {
  await mcp?.close();
});

describe('tool servers with their own OAuth 2.1 authorization', () => {
  it("call the server with the token the user authorized, refreshed when due; others' sessions stay theirs", async () => {
    idp().accounts.set('alice-at-tools', { sub: 'alice-tools', email: 'alice@tools.example', name: 'Alice' });
    const ask = () => world.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'compute' }], tool_ids: ['server:mcp:calc'] }, { token: world.alice.token });
    world.model.script = defaultScript;

    // Not authorized yet: the server is asked without a token.
    await ask();
    expect(mcp.headers.at(-1)?.authorization).toBeUndefined();
    expect((await world.api.get('/oauth/clients/mcp:calc/authorize')).status).toBe(401);
    expect((await world.api.get('/oauth/clients/mcp:other/authorize', { token: world.alice.token })).status).toBe(404);

    const browser = new Browser();
    browser.setCookie(world.server.url, 'token', world.alice.token);
    const start = await browser.request(`${world.server.url}/oauth/clients/mcp:calc/authorize`);
    expect(start.status).toBe(302);
    const authorization = new URL(start.headers.get('location')!);
    expect(authorization.searchParams.get('client_id')).toBe(TOOL_CLIENT_ID);
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    const atLogin = await browser.follow(authorization.href, (l) => l.includes('/interaction/'));
    const loggedIn = await browser.request(`${atLogin.url}/login`, { method: 'POST', form: { login: 'alice-at-tools' } });
    const back = await browser.follow(new URL(loggedIn.headers.get('location')!, atLogin.url).href, (l) => l.startsWith(world.server.url));
    const done = await browser.request(back.url);
    expect(done.headers.get('location')).toBe(`${world.server.url}/`);

    const sessions = await world.api.get(`/api/v1/users/${world.alice.id}/oauth/sessions`, { token: world.admin.token });
    expect(sessions.body.map((s: { provider: string }) => s.provider)).toEqual(['mcp:calc']);
    const oauth = world.server.parley.services.oauth;
    const token = await oauth.clientAccessTokenFor(world.alice.id, 'mcp:calc');
    expect(token).toBeTruthy();
    await ask();
    expect(mcp.headers.at(-1)?.authorization).toBe(`Bearer ${token}`);
    expect(await oauth.clientAccessTokenFor(world.admin.id, 'mcp:calc')).toBeNull();

    clock.advance(3500);
    await ask();
    const refreshed = await oauth.clientAccessTokenFor(world.alice.id, 'mcp:calc');
    expect(refreshed).not.toBe(token);
    expect(mcp.headers.at(-1)?.authorization).toBe(`Bearer ${refreshed}`);

    // The user revokes it: the server is asked without a token again.
    expect((await world.api.delete('/api/v1/auths/oauth/sessions/mcp:calc', { token: world.alice.token })).status).toBe(200);
    await ask();
    expect(mcp.headers.at(-1)?.authorization).toBeUndefined();
  });
});
