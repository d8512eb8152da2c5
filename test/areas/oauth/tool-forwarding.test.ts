import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultScript, fakeModel, isTaskPrompt } from '../../helpers/fake-model.js';
import { type FakeToolServer, startFakeToolServer } from '../../helpers/fake-tool-server.js';
import { TestClock } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';
import { CLIENT_ID, CLIENT_SECRET, type OpenIdProvider, signInAt, startOpenIdProvider } from './openid-provider.js';

/** A tool server whose connection says `system_oauth` receives the signed-in user's provider token. */
const models = fakeModel();
const clock = new TestClock();
const world = useServer({
  clock,
  fakes: {
    start: async () => ({ ...(await models.start()), idp: await startOpenIdProvider() }),
    env: (fakes) => ({
      ...models.env!(fakes),
      OAUTH_CLIENT_ID: CLIENT_ID,
      OAUTH_CLIENT_SECRET: CLIENT_SECRET,
      OPENID_PROVIDER_URL: (fakes as unknown as { idp: OpenIdProvider }).idp.metadataUrl,
      ENABLE_OAUTH_SIGNUP: 'true',
      DEFAULT_USER_ROLE: 'user',
    }),
  },
  admin: 'Admin',
});
let toolServer: FakeToolServer;

beforeAll(async () => {
  toolServer = await startFakeToolServer();
  const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
  await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, { token: world.admin.token });
  const res = await world.api.post(
    '/api/v1/configs/tool_servers',
    {
      TOOL_SERVER_CONNECTIONS: [
        { url: toolServer.url, path: 'openapi.json', type: 'openapi', auth_type: 'system_oauth', key: '', config: { enable: true, access_grants: everyone }, info: { id: 'sso', name: 'SSO server' } },
      ],
    },
    { token: world.admin.token },
  );
  expect(res.status, res.text).toBe(200);
});
afterAll(async () => {
  await toolServer?.close();
});

describe('tool servers with system_oauth auth', () => {
  it("call the server with the user's provider access token, refreshed when it is due", async () => {
    (world as unknown as { idp: OpenIdProvider }).idp.accounts.set('wes', { sub: 'wes-sub', email: 'wes@example.com', name: 'Wes' });
    const signIn = await signInAt(world.server.url, 'wes');
    expect(signIn.token).toBeTruthy();
    world.model.script = (body: any) => {
      if (isTaskPrompt(body)) return defaultScript(body);
      return body.messages.some((m: any) => m.role === 'tool') ? { text: 'done' } : { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] };
    };
    const ask = () =>
      world.api.post(
        '/api/chat/completions',
        { model: 'fake-model', messages: [{ role: 'user', content: 'weather?' }], tool_ids: ['server:sso'] },
        { cookie: `token=${signIn.token}; oauth_session_id=${signIn.sessionId}` },
      );
    const user = (await world.server.parley.services.users.byEmail('wes@example.com'))!;
    const oauth = world.server.parley.services.oauth;

    const res = await ask();
    expect(res.status, res.text).toBe(200);
    const expected = await oauth.accessTokenFor(user.id, signIn.sessionId!);
    expect(toolServer.calls.at(-1)).toMatchObject({ path: '/weather/Oslo', headers: { authorization: `Bearer ${expected}` } });

    clock.advance(3500);
    expect((await ask()).status).toBe(200);
    const refreshed = await oauth.accessTokenFor(user.id, signIn.sessionId!);
    expect(refreshed).not.toBe(expected);
    expect(toolServer.calls.at(-1)?.headers.authorization).toBe(`Bearer ${refreshed}`);
  });
});
