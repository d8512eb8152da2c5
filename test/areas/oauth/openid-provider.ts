import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import Provider, { type Configuration } from 'oidc-provider';

/** An account at the test provider: `sub` and the claims it releases. */
export interface ProviderAccount {
  sub: string;
  email?: string;
  name?: string;
  roles?: string[];
  groups?: string[];
}

export const CLIENT_ID = 'parley';
export const CLIENT_SECRET = 'parley-client-secret-0123456789abcdef';
export const TOOL_CLIENT_ID = 'parley-tools';
export const TOOL_CLIENT_SECRET = 'parley-tools-secret-0123456789abcdef';

/**
 * A real OpenID provider (`oidc-provider`) on a free port, signing with a key the test also holds
 * (to forge tokens a misbehaving provider would send, and back-channel logout tokens). Sign-in
 * runs through its interaction endpoints: the "browser" posts the account id to
 * /interaction/{uid}/login; consent is granted without asking.
 */
export interface OpenIdProvider {
  issuer: string;
  metadataUrl: string;
  accounts: Map<string, ProviderAccount>;
  /** Replaces the next token answer's `id_token` (a provider sending a token it should not). */
  replaceNextIdToken(make: (original: Record<string, unknown>) => Promise<string>): void;
  /** A JWT signed with the provider's key. */
  sign(claims: Record<string, unknown>, options?: { expiresIn?: string | number; issuedAt?: number }): Promise<string>;
  /** Refresh-token grants answered so far. */
  refreshes: number;
  close(): Promise<void>;
}

export async function startOpenIdProvider(): Promise<OpenIdProvider> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const accounts = new Map<string, ProviderAccount>();
  let replacement: ((original: Record<string, unknown>) => Promise<string>) | null = null;

  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const configuration: Configuration = {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: ['http://127.0.0.1/oauth/oidc/login/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
        backchannel_logout_uri: 'http://127.0.0.1/oauth/backchannel-logout',
      },
      // A tool server's own client (MCP OAuth 2.1), as a registration would make it.
      {
        client_id: TOOL_CLIENT_ID,
        client_secret: TOOL_CLIENT_SECRET,
        redirect_uris: ['http://127.0.0.1/oauth/clients/mcp:calc/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['test-cookie-key'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], roles: ['roles'], groups: ['groups'] },
    scopes: ['openid', 'offline_access', 'email', 'profile', 'roles', 'groups'],
    features: { devInteractions: { enabled: false }, backchannelLogout: { enabled: true } },
    pkce: { required: () => true },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx, id) {
      const account = accounts.get(id);
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ ...account, email_verified: true }) };
    },
    async loadExistingGrant(ctx) {
      const accountId = ctx.oidc.session?.accountId;
      if (!accountId || !ctx.oidc.client) return undefined;
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId });
      grant.addOIDCScope(String(ctx.oidc.params?.scope ?? 'openid'));
      await grant.save();
      return grant;
    },
    async issueRefreshToken(_ctx, client) {
      return client.grantTypeAllowed('refresh_token');
    },
    ttl: { AccessToken: 3600, IdToken: 3600, AuthorizationCode: 60, Interaction: 600, Session: 3600, Grant: 3600, RefreshToken: 86_400 },
  };
  const provider = new Provider(issuer, configuration);
  // Parley listens on a port chosen at start: any loopback callback is this client's.
  const clientPrototype = provider.Client.prototype as unknown as { redirectUriAllowed(uri: string): boolean };
  clientPrototype.redirectUriAllowed = (uri: string) => uri.startsWith('http://127.0.0.1:');

  const fixture: OpenIdProvider = {
    issuer,
    metadataUrl: `${issuer}/.well-known/openid-configuration`,
    accounts,
    refreshes: 0,
    replaceNextIdToken(make) {
      replacement = make;
    },
    async sign(claims, options = {}) {
      const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'test-key' }).setIssuer(issuer).setIssuedAt(options.issuedAt);
      if (options.expiresIn !== undefined) jwt.setExpirationTime(options.expiresIn);
      return jwt.sign(privateKey);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  provider.use(async (ctx, next) => {
    const refreshing = ctx.path === '/token' && ctx.method === 'POST';
    await next();
    if (!refreshing || ctx.status !== 200 || typeof ctx.body !== 'object' || ctx.body === null) return;
    const body = ctx.body as Record<string, unknown>;
    if (ctx.oidc?.params?.grant_type === 'refresh_token') fixture.refreshes += 1;
    if (replacement && typeof body.id_token === 'string') {
      const make = replacement;
      replacement = null;
      const [, payload] = body.id_token.split('.');
      body.id_token = await make(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>);
    }
  });

  const callback = provider.callback();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const match = /^\/interaction\/([^/?]+)\/login$/.exec(req.url ?? '');
    if (match && req.method === 'POST') {
      void (async () => {
        let body = '';
        for await (const chunk of req) body += chunk;
        const accountId = new URLSearchParams(body).get('login') ?? '';
        try {
          await provider.interactionFinished(req, res, accounts.has(accountId) ? { login: { accountId } } : { error: 'access_denied' }, { mergeWithLastSubmission: false });
        } catch (error) {
          res.statusCode = 400;
          res.end(String(error));
        }
      })();
      return;
    }
    const page = /^\/interaction\/([^/?]+)$/.exec(req.url ?? '');
    if (page) {
      res.setHeader('content-type', 'text/html');
      res.end(`<form method="post" action="/interaction/${page[1]}/login"><input name="login"></form>`);
      return;
    }
    callback(req, res);
  });
  return fixture;
}

/**
 * A browser's part in a redirect flow: cookies kept per host, redirects followed by hand so each
 * step can be looked at (or tampered with).
 */
export class Browser {
  private readonly jars = new Map<string, Map<string, string>>();

  cookie(origin: string, name: string): string | undefined {
    return this.jars.get(new URL(origin).host)?.get(name);
  }

  setCookie(origin: string, name: string, value: string): void {
    const host = new URL(origin).host;
    if (!this.jars.has(host)) this.jars.set(host, new Map());
    this.jars.get(host)!.set(name, value);
  }

  private keep(url: URL, response: Response): void {
    let jar = this.jars.get(url.host);
    if (!jar) this.jars.set(url.host, (jar = new Map()));
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const name = pair.slice(0, pair.indexOf('=')).trim();
      const value = pair.slice(pair.indexOf('=') + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0$/i.test(a)) || value === '';
      if (expired) jar.delete(name);
      else jar.set(name, value);
    }
  }

  async request(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const target = new URL(url);
    const jar = this.jars.get(target.host);
    const headers: Record<string, string> = {};
    if (jar?.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(target, { method: init.method ?? 'GET', headers, body: init.form ? new URLSearchParams(init.form).toString() : undefined, redirect: 'manual' });
    this.keep(target, response);
    return response;
  }

  /** Follows redirects from `url` until `stop` says so (or a page that is not a redirect); the last answer and its address. */
  async follow(url: string, stop: (location: string) => boolean = () => false): Promise<{ url: string; response: Response }> {
    let current = url;
    for (let hop = 0; hop < 20; hop += 1) {
      const response = await this.request(current);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return { url: current, response };
      await response.body?.cancel();
      current = new URL(location, current).href;
      if (stop(current)) return { url: current, response };
    }
    throw new Error('too many redirects');
  }
}

export interface SignIn {
  browser: Browser;
  /** The authorization request Parley sent the browser to. */
  authorization: URL;
  callback: string;
  response: Response;
  location: string;
  token: string | undefined;
  sessionId: string | undefined;
}

/** Changes an attacker could make on the way: to the authorization request, or to the callback address. */
export interface Tamper {
  authorization?: (url: URL) => void;
  callback?: (url: URL) => void;
}

/**
 * A browser's way through a sign-in: Parley's /oauth/oidc/login, the provider's sign-in page
 * (posting the account), back to Parley's callback, whose answer is returned.
 */
export async function signInAt(serverUrl: string, accountId: string, tamper: Tamper = {}): Promise<SignIn> {
  const browser = new Browser();
  const start = await browser.request(`${serverUrl}/oauth/oidc/login`);
  expect(start.status).toBe(302);
  const authorization = new URL(start.headers.get('location')!);
  tamper.authorization?.(authorization);
  const atLogin = await browser.follow(authorization.href, (location) => location.includes('/interaction/'));
  const loggedIn = await browser.request(`${atLogin.url}/login`, { method: 'POST', form: { login: accountId } });
  const back = await browser.follow(new URL(loggedIn.headers.get('location')!, atLogin.url).href, (location) => location.startsWith(serverUrl));
  const callback = new URL(back.url);
  tamper.callback?.(callback);
  const response = await browser.request(callback.href);
  expect(response.status).toBe(302);
  return {
    browser,
    authorization,
    callback: callback.href,
    response,
    location: response.headers.get('location')!,
    token: browser.cookie(serverUrl, 'token'),
    sessionId: browser.cookie(serverUrl, 'oauth_session_id'),
  };
}
