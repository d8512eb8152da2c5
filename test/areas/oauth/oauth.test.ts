import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { closedPortUrl, TestClock } from '../../helpers/server.js';
import { addUser } from '../../helpers/users.js';
import { type ServerWorld, useServer } from '../../helpers/world.js';
import { Browser, CLIENT_ID, CLIENT_SECRET, type OpenIdProvider, type SignIn, signInAt, startOpenIdProvider, type Tamper } from './openid-provider.js';

type World = ServerWorld<{ idp: OpenIdProvider }>;

const clock = new TestClock();
const world: World = useServer({
  clock,
  fakes: { start: async () => ({ idp: await startOpenIdProvider() }) },
  env: { ENABLE_OAUTH_BACKCHANNEL_LOGOUT: 'true', ENABLE_OAUTH_TOKEN_EXCHANGE: 'true' },
  admin: 'Admin',
});

/** The admin's OAuth form, as the admin panel sends it. */
async function configure(fields: Record<string, unknown>): Promise<void> {
  const res = await world.api.post('/api/v1/auths/admin/config/oauth', fields, { token: world.admin.token });
  expect(res.status, res.text).toBe(200);
}

const BASE_CONFIG = {
  ENABLE_OAUTH: true,
  ENABLE_OAUTH_SIGNUP: true,
  OAUTH_MERGE_ACCOUNTS_BY_EMAIL: false,
  ENABLE_OAUTH_ROLE_MANAGEMENT: false,
  ENABLE_OAUTH_GROUP_MANAGEMENT: false,
  ENABLE_OAUTH_GROUP_CREATION: false,
  OAUTH_ALLOWED_DOMAINS: '*',
  OAUTH_PROVIDER_NAME: 'Test IdP',
  OAUTH_SCOPES: 'openid email profile roles groups offline_access',
};

async function setUp(extra: Record<string, unknown> = {}): Promise<void> {
  await configure({ ...BASE_CONFIG, OAUTH_CLIENT_ID: CLIENT_ID, OAUTH_CLIENT_SECRET: CLIENT_SECRET, OPENID_PROVIDER_URL: world.idp.metadataUrl, ...extra });
}

/** The browser's way through a sign-in at the test provider (openid-provider.ts). */
const signInThroughProvider = (accountId: string, tamper: Tamper = {}) => signInAt(world.server.url, accountId, tamper);

async function userCount(): Promise<number> {
  return world.server.parley.services.users.count();
}

async function sessionRows() {
  return world.server.parley.core.db.selectFrom('oauth_session').selectAll().execute();
}

/** The page the browser lands on after a refused sign-in, with the reference's message. */
function refusedWith(signIn: SignIn, message: string): void {
  expect(signIn.location).toBe(`${world.server.url}/auth?error=${encodeURIComponent(message).replace(/%20/g, '+')}`);
  expect(signIn.token).toBeUndefined();
  expect(signIn.sessionId).toBeUndefined();
}

describe('OAuth / OpenID Connect sign-in', () => {
  it('lists no provider until one is configured, then the provider by its label', async () => {
    expect((await world.api.get('/api/config')).body.oauth.providers).toEqual({});
    expect((await world.api.get('/oauth/oidc/login')).status).toBe(404);
    await setUp();
    expect((await world.api.get('/api/config')).body.oauth.providers).toEqual({ oidc: 'Test IdP' });
    await configure({ ENABLE_OAUTH: false });
    expect((await world.api.get('/api/config')).body.oauth.providers).toEqual({});
    expect((await world.api.get('/oauth/oidc/login')).status).toBe(404);
    await configure({ ENABLE_OAUTH: true });
  });

  it('signs a new user up through the code flow with PKCE, state and nonce, and keeps the provider tokens sealed', async () => {
    await setUp();
    world.idp.accounts.set('alice', { sub: 'alice-sub', email: 'Alice@Example.com', name: 'Alice Liddell' });
    const before = await userCount();
    const signIn = await signInThroughProvider('alice');

    const params = signIn.authorization.searchParams;
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(params.get('state')).toBeTruthy();
    expect(params.get('nonce')).toBeTruthy();
    expect(params.get('redirect_uri')).toBe(`${world.server.url}/oauth/oidc/login/callback`);

    expect(signIn.location).toBe(`${world.server.url}/auth`);
    expect(signIn.token).toBeTruthy();
    const cookies = signIn.response.headers.getSetCookie().join('\n');
    expect(cookies).not.toMatch(/^token=[^\n]*HttpOnly/im);
    expect(cookies).toMatch(/^oauth_session_id=[^\n]*HttpOnly/im);

    // The frontend's /auth page reads the cookie and asks who it is.
    const me = await world.api.get('/api/v1/auths/', { cookie: `token=${signIn.token}` });
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({ email: 'alice@example.com', name: 'Alice Liddell', role: 'pending' });
    expect(await userCount()).toBe(before + 1);
    const user = await world.server.parley.services.users.byEmail('alice@example.com');
    expect(user?.oauth).toEqual({ oidc: { sub: 'alice-sub' } });

    const [row] = (await sessionRows()).filter((s) => s.id === signIn.sessionId);
    expect(row).toMatchObject({ user_id: user!.id, provider: 'oidc' });
    expect(row.token).not.toContain('access_token');
    const tokens = await world.server.parley.services.oauth.tokensFor(user!.id, signIn.sessionId!);
    expect(tokens).toMatchObject({ token_type: expect.stringMatching(/bearer/i), refresh_token: expect.any(String), id_token: expect.any(String) });

    // The same subject signs in to the same account.
    const again = await signInThroughProvider('alice');
    expect(again.location).toBe(`${world.server.url}/auth`);
    expect(await userCount()).toBe(before + 1);
  });

  it("refuses a new account while sign-up is off, with the reference's message", async () => {
    await setUp({ ENABLE_OAUTH_SIGNUP: false });
    world.idp.accounts.set('dora', { sub: 'dora-sub', email: 'dora@example.com', name: 'Dora' });
    const before = await userCount();
    refusedWith(await signInThroughProvider('dora'), ERROR.ACCESS_PROHIBITED);
    expect(await userCount()).toBe(before);
  });

  it('binds an existing account by e-mail only when merging is on', async () => {
    await setUp();
    const bob = await addUser(world.api, world.admin, 'user', 'Bob');
    world.idp.accounts.set('bob', { sub: 'bob-sub', email: bob.email, name: 'Bob at the IdP' });
    refusedWith(await signInThroughProvider('bob'), ERROR.EMAIL_TAKEN);

    await setUp({ OAUTH_MERGE_ACCOUNTS_BY_EMAIL: true });
    const merged = await signInThroughProvider('bob');
    expect(merged.location).toBe(`${world.server.url}/auth`);
    const me = await world.api.get('/api/v1/auths/', { cookie: `token=${merged.token}` });
    expect(me.body.id).toBe(bob.id);
    expect((await world.server.parley.services.users.byId(bob.id))?.oauth).toEqual({ oidc: { sub: 'bob-sub' } });
  });

  it('updates the name from the claim at each sign-in when asked to, and reports the sign-in', async () => {
    await setUp({ OAUTH_UPDATE_NAME_ON_LOGIN: true });
    world.idp.accounts.set('kim', { sub: 'kim-sub', email: 'kim@example.com', name: 'Kim' });
    await signInThroughProvider('kim');
    world.idp.accounts.set('kim', { sub: 'kim-sub', email: 'kim@example.com', name: 'Kim Renamed' });
    const mark = world.events.length;
    const again = await signInThroughProvider('kim');
    expect((await world.api.get('/api/v1/auths/', { token: again.token })).body.name).toBe('Kim Renamed');
    expect(world.events.slice(mark).find((e) => e.event === 'auth.login')).toMatchObject({ source: 'oauth', data: { auth_method: 'oauth' } });
    await setUp({ OAUTH_UPDATE_NAME_ON_LOGIN: false });
  });

  it('sends the browser back with the reason when the provider cannot be reached', async () => {
    const gone = await closedPortUrl();
    await setUp({ OPENID_PROVIDER_URL: `${gone}/.well-known/openid-configuration` });
    const res = await fetch(`${world.server.url}/oauth/oidc/login`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toMatch(new RegExp(`^${world.server.url}/auth\\?error=The\\+sign-in\\+provider\\+could\\+not\\+be\\+reached`));
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it('keeps addresses of other domains out when domains are restricted', async () => {
    await setUp({ OAUTH_ALLOWED_DOMAINS: 'corp.example' });
    world.idp.accounts.set('eve', { sub: 'eve-sub', email: 'eve@elsewhere.example', name: 'Eve' });
    const before = await userCount();
    refusedWith(await signInThroughProvider('eve'), ERROR.INVALID_CRED);
    expect(await userCount()).toBe(before);
  });

  it('maps roles from the roles claim and refuses accounts with none of the allowed roles', async () => {
    await setUp({ ENABLE_OAUTH_ROLE_MANAGEMENT: true, OAUTH_ROLES_CLAIM: 'roles', OAUTH_ALLOWED_ROLES: 'staff', OAUTH_ADMIN_ROLES: 'it-admin' });
    world.idp.accounts.set('ivan', { sub: 'ivan-sub', email: 'ivan@example.com', name: 'Ivan', roles: ['staff', 'it-admin'] });
    world.idp.accounts.set('sam', { sub: 'sam-sub', email: 'sam@example.com', name: 'Sam', roles: ['staff'] });
    world.idp.accounts.set('gus', { sub: 'gus-sub', email: 'gus@example.com', name: 'Gus', roles: ['guest'] });
    const ivan = await signInThroughProvider('ivan');
    expect((await world.api.get('/api/v1/auths/', { token: ivan.token })).body.role).toBe('admin');
    const sam = await signInThroughProvider('sam');
    expect((await world.api.get('/api/v1/auths/', { token: sam.token })).body.role).toBe('user');
    const before = await userCount();
    refusedWith(await signInThroughProvider('gus'), ERROR.ACCESS_PROHIBITED);
    expect(await userCount()).toBe(before);

    // The claim changes at the provider: the role follows at the next sign-in.
    world.idp.accounts.set('ivan', { sub: 'ivan-sub', email: 'ivan@example.com', name: 'Ivan', roles: ['staff'] });
    const demoted = await signInThroughProvider('ivan');
    expect((await world.api.get('/api/v1/auths/', { token: demoted.token })).body.role).toBe('user');
  });

  it('creates groups from the groups claim and keeps memberships in step, blocked groups untouched', async () => {
    const groupsOf = async (token: string | undefined) =>
      ((await world.api.get('/api/v1/groups/', { token: world.admin.token })).body as { name: string; id: string }[]).filter(Boolean) &&
      (await world.server.parley.services.groups.groupsOf((await world.api.get('/api/v1/auths/', { token })).body.id)).map((g) => g.name).sort();
    await setUp({ ENABLE_OAUTH_GROUP_MANAGEMENT: true, ENABLE_OAUTH_GROUP_CREATION: true, OAUTH_GROUP_CLAIM: 'groups', OAUTH_BLOCKED_GROUPS: '["local-*"]' });
    world.idp.accounts.set('gina', { sub: 'gina-sub', email: 'gina@example.com', name: 'Gina', groups: ['engineering', 'ops', 'local-admins'] });
    const first = await signInThroughProvider('gina');
    expect(await groupsOf(first.token)).toEqual(['engineering', 'ops']);
    const created = (await world.api.get('/api/v1/groups/', { token: world.admin.token })).body as { name: string; description: string; user_id: string }[];
    expect(created.find((g) => g.name === 'ops')).toMatchObject({ description: "Group 'ops' created automatically via OAuth.", user_id: world.admin.id });

    // A local group the admin manages, matching the blocked pattern, is left alone.
    const local = await world.api.post('/api/v1/groups/create', { name: 'local-team', description: '' }, { token: world.admin.token });
    const gina = (await world.api.get('/api/v1/auths/', { token: first.token })).body.id as string;
    await world.api.post(`/api/v1/groups/id/${local.body.id}/users/add`, { user_ids: [gina] }, { token: world.admin.token });

    world.idp.accounts.set('gina', { sub: 'gina-sub', email: 'gina@example.com', name: 'Gina', groups: ['engineering'] });
    const second = await signInThroughProvider('gina');
    expect(await groupsOf(second.token)).toEqual(['engineering', 'local-team']);
  });
});

describe('OAuth sign-in refusals: nothing is created', () => {
  async function expectRefused(signIn: SignIn, before: number): Promise<void> {
    refusedWith(signIn, ERROR.INVALID_CRED);
    expect(await userCount()).toBe(before);
    expect((await sessionRows()).filter((s) => s.id === signIn.sessionId)).toEqual([]);
  }

  it('a callback whose state is not the one sent', async () => {
    await setUp();
    world.idp.accounts.set('mallory', { sub: 'mallory-sub', email: 'mallory@example.com', name: 'Mallory' });
    const before = await userCount();
    await expectRefused(await signInThroughProvider('mallory', { callback: (url) => url.searchParams.set('state', 'forged-state') }), before);
  });

  it('a callback without the browser that started the flow', async () => {
    await setUp();
    const before = await userCount();
    const signIn = await signInThroughProvider('mallory');
    // Another browser (no flow cookie) replays the callback address.
    const replay = await new Browser().request(signIn.callback);
    expect(replay.headers.get('location')).toContain('/auth?error=');
    expect(await userCount()).toBe(before + 1);
  });

  it('a replayed code, even with the flow cookie', async () => {
    await setUp();
    world.idp.accounts.set('rita', { sub: 'rita-sub', email: 'rita@example.com', name: 'Rita' });
    const browser = new Browser();
    const start = await browser.request(`${world.server.url}/oauth/oidc/login`);
    const flow = browser.cookie(world.server.url, 'oauth_flow')!;
    const atLogin = await browser.follow(start.headers.get('location')!, (l) => l.includes('/interaction/'));
    const loggedIn = await browser.request(`${atLogin.url}/login`, { method: 'POST', form: { login: 'rita' } });
    const back = await browser.follow(new URL(loggedIn.headers.get('location')!, atLogin.url).href, (l) => l.startsWith(world.server.url));
    const first = await browser.request(back.url);
    expect(first.headers.get('location')).toBe(`${world.server.url}/auth`);
    const users = await userCount();
    const sessions = (await sessionRows()).length;
    // An attacker holding both the code and the flow cookie sends them again.
    const replay = await fetch(back.url, { headers: { cookie: `oauth_flow=${flow}` }, redirect: 'manual' });
    expect(replay.headers.get('location')).toContain('/auth?error=');
    expect(replay.headers.getSetCookie().some((c) => c.startsWith('token='))).toBe(false);
    expect(await userCount()).toBe(users);
    expect((await sessionRows()).length).toBe(sessions);
  });

  it('an ID token for another nonce', async () => {
    await setUp();
    world.idp.accounts.set('nina', { sub: 'nina-sub', email: 'nina@example.com', name: 'Nina' });
    const before = await userCount();
    await expectRefused(await signInThroughProvider('nina', { authorization: (url) => url.searchParams.set('nonce', 'attacker-nonce') }), before);
  });

  it('an ID token issued to another client', async () => {
    await setUp();
    world.idp.accounts.set('olga', { sub: 'olga-sub', email: 'olga@example.com', name: 'Olga' });
    world.idp.replaceNextIdToken((original) => world.idp.sign({ ...original, aud: 'another-client' }, { expiresIn: '1h' }));
    const before = await userCount();
    await expectRefused(await signInThroughProvider('olga'), before);
  });

  it('an expired ID token', async () => {
    await setUp();
    world.idp.accounts.set('paul', { sub: 'paul-sub', email: 'paul@example.com', name: 'Paul' });
    const now = clock.now();
    world.idp.replaceNextIdToken((original) => world.idp.sign({ ...original, exp: now - 600 }, { issuedAt: now - 4200 }));
    const before = await userCount();
    await expectRefused(await signInThroughProvider('paul'), before);
  });
});

describe('OAuth sessions, token exchange and logout', () => {
  it('refreshes the stored tokens before they expire, once for concurrent uses', async () => {
    await setUp();
    world.idp.accounts.set('rob', { sub: 'rob-sub', email: 'rob@example.com', name: 'Rob' });
    const signIn = await signInThroughProvider('rob');
    const user = (await world.server.parley.services.users.byEmail('rob@example.com'))!;
    const oauth = world.server.parley.services.oauth;
    const first = await oauth.accessTokenFor(user.id, signIn.sessionId!);
    expect(first).toBeTruthy();
    const refreshesBefore = world.idp.refreshes;
    expect(await oauth.accessTokenFor(user.id, signIn.sessionId!)).toBe(first);
    expect(world.idp.refreshes).toBe(refreshesBefore);

    // 58 minutes later the token expires within the five-minute margin.
    clock.advance(3480);
    const [a, b] = await Promise.all([oauth.accessTokenFor(user.id, signIn.sessionId!), oauth.accessTokenFor(user.id, null)]);
    expect(world.idp.refreshes).toBe(refreshesBefore + 1);
    expect(a).toBeTruthy();
    expect(a).not.toBe(first);
    expect(b).toBe(a);
    const [row] = (await sessionRows()).filter((s) => s.id === signIn.sessionId);
    expect(row.expires_at).toBeGreaterThan(clock.now() + 3000);
    expect(row.token).not.toContain(a!);
  });

  it('exchanges a provider access token for a session of the bound account only', async () => {
    await setUp();
    world.idp.accounts.set('tess', { sub: 'tess-sub', email: 'tess@example.com', name: 'Tess' });
    const signIn = await signInThroughProvider('tess');
    const user = (await world.server.parley.services.users.byEmail('tess@example.com'))!;
    const accessToken = await world.server.parley.services.oauth.accessTokenFor(user.id, signIn.sessionId!);
    const res = await world.api.post('/api/v1/auths/oauth/OIDC/token/exchange', { token: accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, email: 'tess@example.com', token_type: 'Bearer' });
    expect((await world.api.get('/api/v1/auths/', { token: res.body.token })).status).toBe(200);

    const bad = await world.api.post('/api/v1/auths/oauth/oidc/token/exchange', { token: 'not-a-token' });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toBe('Invalid token or unable to validate with provider');
  });

  it('signs out at the provider with the ID token as hint, and deletes the session', async () => {
    await setUp();
    world.idp.accounts.set('uma', { sub: 'uma-sub', email: 'uma@example.com', name: 'Uma' });
    const signIn = await signInThroughProvider('uma');
    const res = await world.api.post('/api/v1/auths/signout', undefined, { cookie: `token=${signIn.token}; oauth_session_id=${signIn.sessionId}` });
    expect(res.status, res.text).toBe(200);
    const redirect = new URL(res.body.redirect_url);
    expect(`${redirect.origin}${redirect.pathname}`).toBe(`${world.idp.issuer}/session/end`);
    expect(redirect.searchParams.get('id_token_hint')).toMatch(/^ey/);
    expect((await sessionRows()).filter((s) => s.id === signIn.sessionId)).toEqual([]);
    expect((await world.api.get('/api/v1/auths/', { token: signIn.token })).status).toBe(401);
  });

  it('signs the browser out when the provider loads the front-channel logout page', async () => {
    await setUp();
    world.idp.accounts.set('fay', { sub: 'fay-sub', email: 'fay@example.com', name: 'Fay' });
    const signIn = await signInThroughProvider('fay');
    const cookie = `token=${signIn.token}; oauth_session_id=${signIn.sessionId}`;
    const elsewhere = await world.api.get('/oauth/frontchannel-logout?iss=https%3A%2F%2Fother.example', { cookie });
    expect(elsewhere.status).toBe(200);
    expect((await world.api.get('/api/v1/auths/', { token: signIn.token })).status).toBe(200);

    const res = await world.api.get(`/oauth/frontchannel-logout?iss=${encodeURIComponent(world.idp.issuer)}&sid=s1`, { cookie });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toContain('no-store');
    expect(res.headers.getSetCookie().map((c) => c.split('=')[0])).toEqual(['token', 'oauth_session_id', 'oauth_id_token']);
    expect((await world.api.get('/api/v1/auths/', { token: signIn.token })).status).toBe(401);
    expect((await sessionRows()).filter((s) => s.id === signIn.sessionId)).toEqual([]);
  });

  it('ends every session of the account named by a valid back-channel logout token', async () => {
    await setUp();
    world.idp.accounts.set('vic', { sub: 'vic-sub', email: 'vic@example.com', name: 'Vic' });
    const first = await signInThroughProvider('vic');
    const second = await signInThroughProvider('vic');
    const user = (await world.server.parley.services.users.byEmail('vic@example.com'))!;
    const post = (form: Record<string, string>) =>
      fetch(`${world.server.url}/oauth/backchannel-logout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
    const events = { 'http://schemas.openid.net/event/backchannel-logout': {} };
    const soon = () => ({ issuedAt: clock.now(), expiresIn: clock.now() + 120 });
    const valid = { aud: CLIENT_ID, sub: 'vic-sub', events, jti: 'logout-1' };

    const refusals: [Record<string, string>, string][] = [
      [{}, 'Missing logout_token parameter'],
      [{ logout_token: 'garbage' }, 'Malformed logout_token'],
      [{ logout_token: await world.idp.sign({ ...valid, nonce: 'n' }, soon()) }, 'logout_token must not contain nonce'],
      [{ logout_token: await world.idp.sign({ ...valid, events: {} }, soon()) }, 'Missing backchannel-logout event claim'],
    ];
    for (const [form, description] of refusals) {
      const res = await post(form);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'invalid_request', error_description: description });
    }
    const otherClient = await post({ logout_token: await world.idp.sign({ ...valid, aud: 'another-client' }, soon()) });
    expect(otherClient.status).toBe(400);
    expect((await world.api.get('/api/v1/auths/', { token: first.token })).status).toBe(200);

    const ok = await post({ logout_token: await world.idp.sign(valid, soon()) });
    expect(ok.status).toBe(200);
    for (const signIn of [first, second]) expect((await world.api.get('/api/v1/auths/', { token: signIn.token })).status).toBe(401);
    expect((await sessionRows()).filter((s) => s.user_id === user.id)).toEqual([]);

    // Signing in again later works.
    clock.advance(2);
    const later = await signInThroughProvider('vic');
    expect((await world.api.get('/api/v1/auths/', { token: later.token })).status).toBe(200);
  });
});
