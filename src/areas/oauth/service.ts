import { randomUUID } from 'node:crypto';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import type { AccessService } from '../../core/access/service.js';
import type { AuthsService, IssuedToken, Session } from '../auths/service.js';
import type { SessionUserResponse } from '../auths/schemas.js';
import { OAUTH_CONFIG_KEYS, defaultUserRoleSetting } from '../auths/settings.js';
import type { GroupsService } from '../groups/service.js';
import { ValvesCipher } from '../tools/valves-crypto.js';
import type { UsersService } from '../users/service.js';
import { ProviderClients, type ProviderTokens } from './client.js';
import { configuredProviders, type OAuthProvider } from './providers.js';
import { readOAuthOptions, type OAuthOptions } from './settings.js';
import { type OAuthSessionRow, OAuthSessionStore } from './store.js';

/** The reference raises a bare `HTTPException(404)` on these routes: FastAPI's own words. */
const fastApiNotFound = () => new HttpError(404, 'Not Found');

type Claims = Record<string, unknown>;

/** What the browser keeps between /login and /callback, sealed (state, nonce, PKCE verifier). */
interface LoginFlow {
  provider: string;
  state: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
  expiresAt: number;
}

/** The answer of a callback: where the browser goes and the cookies it gets. */
export interface CallbackResult {
  location: string;
  /** Null when sign-in failed (the location carries `?error=`). */
  session: { token: IssuedToken; oauthSessionId: string | null; idToken: string | null } | null;
}

/** A login flow lasts ten minutes: time to sign in at the provider. */
const FLOW_SECONDS = 600;
/** Tokens are refreshed this long before they expire (the reference's five minutes). */
const REFRESH_MARGIN_SECONDS = 300;
/** When the provider gives no lifetime (the reference's conservative default). */
const DEFAULT_TOKEN_SECONDS = 3600;
const BACKCHANNEL_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** Why a sign-in failed, for the log; the browser is told only the reference's words. */
class SignInRefused extends Error {}

const setting = <T>(core: Core, key: string): T => core.settings.get<T>(key);

/** `a.b.c` in nested claims. */
function claimAt(data: Claims, path: string): unknown {
  let value: unknown = data;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Claims)[part];
  }
  return value;
}

/** A claim's values as a list of strings: a list as is, a string split at `separator`. */
function claimList(value: unknown, separator: string): string[] {
  if (Array.isArray(value)) return value.map(String);
  if (typeof value === 'string') return separator && value.includes(separator) ? value.split(separator) : [value];
  if (typeof value === 'number') return [String(value)];
  return [];
}

/** OAUTH_BLOCKED_GROUPS entries: exact names, shell wildcards (`*`, `?`) or regular expressions. */
function isBlockedGroup(name: string, blocked: unknown[]): boolean {
  return blocked.some((entry) => {
    if (typeof entry !== 'string' || !entry) return false;
    if (entry === name) return true;
    if (/[*?]/.test(entry) && !/[\\^$+()[\]{}|]/.test(entry)) {
      const glob = entry.replace(/[.]/g, '\\.').replace(/\*/g, '.*').replace(/\?/g, '.');
      return new RegExp(`^${glob}$`).test(name);
    }
    try {
      return new RegExp(`^(?:${entry})$`).test(name);
    } catch {
      return false;
    }
  });
}

/**
 * Sign-in through OAuth 2 / OpenID Connect providers (utils/oauth.py OAuthManager): the login
 * redirect with state, nonce and PKCE, the callback that finds, merges or creates the account and
 * maps roles and groups from the claims, the provider's tokens kept per session (sealed at rest,
 * refreshed before they expire) for tools that forward them, token exchange, and logout both ways.
 */
export class OAuthService {
  readonly options: OAuthOptions;
  private readonly clients: ProviderClients;
  /** Seals the login flow cookie and the stored tokens (Fernet, as the reference stores them). */
  private readonly cipher: ValvesCipher;
  /** Opens the client information tool servers registered (OAUTH_CLIENT_INFO_ENCRYPTION_KEY). */
  private readonly clientInfoCipher: ValvesCipher;
  /** One refresh at a time per session: concurrent tool calls share it. */
  private readonly refreshing = new Map<string, Promise<ProviderTokens | null>>();

  constructor(
    private readonly core: Core,
    private readonly auths: AuthsService,
    private readonly users: UsersService,
    private readonly groups: GroupsService,
    private readonly access: AccessService,
  ) {
    this.options = readOAuthOptions(core.env.raw, core.env.secretKey);
    this.cipher = new ValvesCipher(this.options.sessionTokenKey, true);
    this.clientInfoCipher = new ValvesCipher(core.env.raw.OAUTH_CLIENT_INFO_ENCRYPTION_KEY || core.env.secretKey, true);
    this.clients = new ProviderClients(core.clock, () => {
      const timeout = Number(setting<number | string>(core, OAUTH_CONFIG_KEYS.OAUTH_CLIENT_TIMEOUT) || setting<number | string>(core, OAUTH_CONFIG_KEYS.OAUTH_TIMEOUT));
      return Number.isFinite(timeout) && timeout > 0 ? timeout : null;
    });
  }

  private store(): OAuthSessionStore {
    return new OAuthSessionStore(this.core.db);
  }

  private get<T>(field: keyof typeof OAUTH_CONFIG_KEYS): T {
    return setting<T>(this.core, OAUTH_CONFIG_KEYS[field]);
  }

  // ---- providers ----------------------------------------------------------------

  /** The configured providers; none while ENABLE_OAUTH is off. */
  providers(): OAuthProvider[] {
    if (!this.get<boolean>('ENABLE_OAUTH')) return [];
    return configuredProviders(this.options, {
      clientId: this.get('OAUTH_CLIENT_ID'),
      clientSecret: this.get('OAUTH_CLIENT_SECRET'),
      providerUrl: this.get('OPENID_PROVIDER_URL'),
      redirectUri: this.get('OPENID_REDIRECT_URI'),
      scopes: this.get('OAUTH_SCOPES'),
      providerName: this.get('OAUTH_PROVIDER_NAME'),
      codeChallengeMethod: this.get('OAUTH_CODE_CHALLENGE_METHOD'),
      tokenEndpointAuthMethod: this.get('OAUTH_TOKEN_ENDPOINT_AUTH_METHOD'),
    });
  }

  /** `/api/config` oauth.providers: name → button label. */
  providerLabels(): Record<string, string> {
    return Object.fromEntries(this.providers().map((p) => [p.name, p.label]));
  }

  private provider(name: string): OAuthProvider {
    const provider = this.providers().find((p) => p.name === name);
    if (!provider) throw fastApiNotFound();
    return provider;
  }

  // ---- login ------------------------------------------------------------------------

  /**
   * `/oauth/{provider}/login`: the provider's authorization address and the sealed flow for the
   * cookie; when the provider cannot be reached, back to the sign-in page with the reason.
   */
  async login(name: string, requestBase: string): Promise<{ location: string; flow: string | null }> {
    const provider = this.provider(name);
    try {
      return await this.authorize(provider, `${requestBase}/oauth/${name}/login/callback`);
    } catch (error) {
      this.core.log.warn({ provider: name, reason: error instanceof Error ? error.message : String(error) }, 'OAuth provider unreachable');
      const base = (setting<string>(this.core, 'webui.url') || requestBase).replace(/\/+$/, '');
      const message = `The sign-in provider could not be reached (${provider.metadataUrl ?? name}). Try again later, or ask an administrator to check its address.`;
      return { location: `${base}/auth?error=${encodeURIComponent(message).replace(/%20/g, '+')}`, flow: null };
    }
  }

  /** The authorization address for `provider` (state, nonce for OpenID, PKCE) and its sealed flow. */
  private async authorize(provider: OAuthProvider, defaultRedirect: string): Promise<{ location: string; flow: string }> {
    const name = provider.name;
    const { lib, config } = await this.clients.configuration(provider);
    const flow: LoginFlow = {
      provider: name,
      state: lib.randomState(),
      nonce: lib.randomNonce(),
      verifier: lib.randomPKCECodeVerifier(),
      redirectUri: provider.redirectUri || defaultRedirect,
      expiresAt: this.core.clock.now() + FLOW_SECONDS,
    };
    const params: Record<string, string> = {
      ...provider.authorizeParams,
      redirect_uri: flow.redirectUri,
      scope: provider.scope,
      state: flow.state,
    };
    if (provider.metadataUrl) params.nonce = flow.nonce;
    if (provider.pkce) {
      params.code_challenge = await lib.calculatePKCECodeChallenge(flow.verifier);
      params.code_challenge_method = 'S256';
    }
    const audience = this.get<string>('OAUTH_AUDIENCE');
    if (audience && !provider.serverMetadata) params.audience = audience;
    return { location: lib.buildAuthorizationUrl(config, params).href, flow: this.cipher.seal(flow as unknown as Claims) as string };
  }

  private openFlow(sealed: string | undefined, name: string): LoginFlow {
    const flow = sealed ? (this.cipher.open(sealed) as Partial<LoginFlow> | null) : null;
    if (!flow?.state || flow.provider !== name) throw new SignInRefused('Missing state parameter in callback (session may have expired)');
    if ((flow.expiresAt ?? 0) < this.core.clock.now()) throw new SignInRefused('The sign-in took too long (over ten minutes)');
    return flow as LoginFlow;
  }

  // ---- callback -----------------------------------------------------------------------

  /**
   * `/oauth/{provider}/login/callback`. Every failure sends the browser to `/auth?error=...` with
   * the reference's message and changes nothing (no account, no session).
   */
  async callback(name: string, query: string, sealedFlow: string | undefined, requestBase: string): Promise<CallbackResult> {
    const base = (setting<string>(this.core, 'webui.url') || requestBase).replace(/\/+$/, '');
    const provider = this.provider(name);
    try {
      const flow = this.openFlow(sealedFlow, name);
      const tokens = await this.exchangeCode(provider, flow, query);
      const claims = await this.userClaims(provider, tokens);
      const user = await this.signIn(provider, claims, tokens);
      const session = await this.auths.startSession(user, 'oauth');
      const oauthSessionId = await this.keepSession(user.id, provider.name, tokens);
      return {
        location: `${base}/auth`,
        session: { token: session.cookie!, oauthSessionId, idToken: typeof tokens.id_token === 'string' ? tokens.id_token : null },
      };
    } catch (error) {
      let message: string;
      if (error instanceof HttpError) message = typeof error.detail === 'string' ? error.detail : ERROR.DEFAULT('Error during OAuth process');
      else if (error instanceof SignInRefused) message = ERROR.INVALID_CRED;
      else message = ERROR.DEFAULT('Error during OAuth process');
      this.core.log.warn({ provider: name, reason: error instanceof Error ? error.message : String(error) }, 'OAuth sign-in refused');
      return { location: `${base}/auth?error=${encodeURIComponent(message).replace(/%20/g, '+')}`, session: null };
    }
  }

  /** The code exchange with every check openid-client makes; any failure is a refused sign-in. */
  private async exchangeCode(provider: OAuthProvider, flow: LoginFlow, query: string): Promise<ProviderTokens> {
    const { lib, config } = await this.clients.configuration(provider);
    const currentUrl = new URL(flow.redirectUri);
    currentUrl.search = query;
    const extra: Record<string, string> = this.options.tokenRequestIncludesClientId ? { client_id: provider.clientId } : {};
    if (provider.authorizeParams.resource) extra.resource = provider.authorizeParams.resource;
    try {
      const response = await lib.authorizationCodeGrant(
        config,
        currentUrl,
        {
          expectedState: flow.state,
          pkceCodeVerifier: provider.pkce ? flow.verifier : undefined,
          ...(provider.metadataUrl ? { expectedNonce: flow.nonce, idTokenExpected: true } : {}),
        },
        extra,
      );
      this.clients.rememberKeys(provider, lib, config);
      const claims = response.claims();
      return { ...response, ...(claims ? { userinfo: { ...claims } } : {}), expires_at: this.expiryOf(response) };
    } catch (error) {
      // A key the provider rotated: forget its keys so the next attempt fetches them.
      this.clients.forget(provider);
      throw new SignInRefused(`OAuth callback failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private expiryOf(tokens: { expires_in?: unknown; expires_at?: unknown }): number {
    if (typeof tokens.expires_at === 'number') return Math.floor(tokens.expires_at);
    const lifetime = typeof tokens.expires_in === 'number' ? tokens.expires_in : DEFAULT_TOKEN_SECONDS;
    return Math.floor(this.core.clock.now() + lifetime);
  }

  /** The ID token's claims, completed from the user-info endpoint when the e-mail or name claim is missing. */
  private async userClaims(provider: OAuthProvider, tokens: ProviderTokens): Promise<Claims> {
    const fromIdToken = (tokens.userinfo as Claims | undefined) ?? {};
    const emailClaim = this.get<string>('OAUTH_EMAIL_CLAIM');
    const nameClaim = this.get<string>('OAUTH_USERNAME_CLAIM');
    if (Object.keys(fromIdToken).length > 0 && emailClaim in fromIdToken && nameClaim in fromIdToken) return fromIdToken;
    const fetched = await this.userInfo(provider, String(tokens.access_token ?? ''), typeof fromIdToken.sub === 'string' ? fromIdToken.sub : null);
    return { ...fromIdToken, ...fetched };
  }

  /** The provider's user-info answer for an access token (GitHub's `/user` is plain OAuth 2). */
  private async userInfo(provider: OAuthProvider, accessToken: string, expectedSub: string | null): Promise<Claims> {
    try {
      if (provider.endpoints) return await this.githubJson(provider.endpoints.userinfo, accessToken);
      const { lib, config } = await this.clients.configuration(provider);
      return { ...(await lib.fetchUserInfo(config, accessToken, expectedSub ?? lib.skipSubjectCheck)) };
    } catch (error) {
      throw new SignInRefused(`User info request failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private async githubJson<T = Claims>(url: string, accessToken: string): Promise<T> {
    const response = await fetch(url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
    if (!response.ok) throw new Error(`status ${response.status}`);
    return (await response.json()) as T;
  }

  /** The account a provider's claims belong to, created or updated as the settings say (handle_callback). */
  private async signIn(provider: OAuthProvider, claims: Claims, tokens: ProviderTokens): Promise<UserRecord> {
    const subClaim = this.get<string | null>('OAUTH_SUB_CLAIM') || provider.subClaim;
    const rawSub = claims[subClaim];
    if (rawSub === undefined || rawSub === null || rawSub === '') throw new SignInRefused('The provider gave no subject claim');
    const sub = String(rawSub);
    const email = (await this.emailOf(provider, claims, sub, String(tokens.access_token ?? ''))).toLowerCase();
    const domains = this.get<string[]>('OAUTH_ALLOWED_DOMAINS');
    if (!domains.includes('*') && !domains.includes(email.split('@').pop()!)) throw new SignInRefused('E-mail domain not allowed');

    let user = await this.users.byOAuthSub(provider.name, sub);
    if (!user && this.get<boolean>('OAUTH_MERGE_ACCOUNTS_BY_EMAIL')) {
      const byEmail = await this.users.byEmail(email);
      if (byEmail) user = await this.users.update(byEmail.id, { oauth: { ...(byEmail.oauth ?? {}), [provider.name]: { sub } } });
    }
    if (user) user = await this.updateOnLogin(user, claims, provider);
    else user = await this.signUp(provider, claims, sub, email);
    if (this.get<boolean>('ENABLE_OAUTH_GROUP_MANAGEMENT')) await this.syncGroups(user, claims);
    return user;
  }

  private async emailOf(provider: OAuthProvider, claims: Claims, sub: string, accessToken: string): Promise<string> {
    const email = claims[this.get<string>('OAUTH_EMAIL_CLAIM')];
    if (typeof email === 'string' && email) return email;
    if (provider.endpoints) {
      // GitHub keeps a private address out of /user: the primary one from /user/emails.
      const emails = await this.githubJson<{ email?: string; primary?: boolean }[]>(provider.endpoints.emails, accessToken).catch(() => []);
      const primary = Array.isArray(emails) ? emails.find((e) => e.primary)?.email : undefined;
      if (primary) return primary;
      throw new SignInRefused('No primary e-mail address at GitHub');
    }
    if (this.options.emailFallback) return `${provider.name}@${sub}.local`;
    throw new SignInRefused('The provider gave no e-mail address');
  }

  /** get_user_role: the only user is admin; with role management the claim decides, else the role stays. */
  private async roleFor(user: UserRecord | null, claims: Claims): Promise<string> {
    const count = await this.users.count();
    if (user && count === 1) return 'admin';
    const defaultRole = setting<string>(this.core, defaultUserRoleSetting.key);
    if (!user && count === 0) return defaultRole;
    if (!this.get<boolean>('ENABLE_OAUTH_ROLE_MANAGEMENT')) return user ? user.role : defaultRole;
    const claim = this.get<string>('OAUTH_ROLES_CLAIM');
    const allowed = this.get<string[]>('OAUTH_ALLOWED_ROLES');
    const admins = this.get<string[]>('OAUTH_ADMIN_ROLES');
    if (!claim || allowed.length === 0 || admins.length === 0) return defaultRole;
    const value = claimAt(claims, claim) ?? claims[claim];
    const roles = claimList(value, this.options.rolesSeparator);
    if (roles.length === 0) return defaultRole;
    if (admins.some((r) => roles.includes(r))) return 'admin';
    if (allowed.some((r) => r === '*' || roles.includes(r))) return 'user';
    throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  private async updateOnLogin(user: UserRecord, claims: Claims, provider: OAuthProvider): Promise<UserRecord> {
    const patch: Record<string, unknown> = {};
    const role = await this.roleFor(user, claims);
    if (role !== user.role) patch.role = role;
    const name = claims[this.get<string>('OAUTH_USERNAME_CLAIM')];
    if (this.get<boolean>('OAUTH_UPDATE_NAME_ON_LOGIN') && typeof name === 'string' && name && name !== user.name) patch.name = name;
    const picture = this.pictureOf(claims, provider);
    if (this.get<boolean>('OAUTH_UPDATE_PICTURE_ON_LOGIN') && picture && picture !== user.profile_image_url && !this.users.profileImageUrlProblem(picture)) {
      patch.profile_image_url = picture;
    }
    const email = claims[this.get<string>('OAUTH_EMAIL_CLAIM')];
    let updated = user;
    if (Object.keys(patch).length > 0) updated = (await this.users.update(user.id, patch)) ?? user;
    if (this.get<boolean>('OAUTH_UPDATE_EMAIL_ON_LOGIN') && typeof email === 'string' && email && email.toLowerCase() !== user.email) {
      if (await this.users.byEmail(email.toLowerCase())) {
        this.core.log.warn({ userId: user.id }, 'OAuth e-mail update skipped: the address belongs to another account');
      } else {
        await this.core.db.transaction().execute(async (trx) => {
          await this.users.update(user.id, { email: email.toLowerCase() }, trx);
          await this.auths.setEmail(user.id, email, trx);
        });
        updated = (await this.users.byId(user.id)) ?? updated;
      }
    }
    return updated;
  }

  private pictureOf(claims: Claims, provider: OAuthProvider): string | null {
    const claim = this.get<string>('OAUTH_PICTURE_CLAIM');
    if (!claim) return null;
    const value = claims[claim] ?? provider.pictureUrl;
    return typeof value === 'string' && value ? value : null;
  }

  private async signUp(provider: OAuthProvider, claims: Claims, sub: string, email: string): Promise<UserRecord> {
    if (!this.get<boolean>('ENABLE_OAUTH_SIGNUP')) throw forbidden(ERROR.ACCESS_PROHIBITED);
    if (await this.users.byEmail(email)) throw badRequest(ERROR.EMAIL_TAKEN);
    const name = claims[this.get<string>('OAUTH_USERNAME_CLAIM')];
    const user = await this.auths.createAccount({
      email,
      password: randomUUID(),
      name: typeof name === 'string' && name ? name : email,
      profileImageUrl: this.pictureOf(claims, provider) ?? '/user.png',
      role: await this.roleFor(null, claims),
      source: 'oauth',
      oauth: { [provider.name]: { sub } },
    });
    return user;
  }

  /** update_user_groups: memberships follow the groups claim (blocked groups untouched); missing groups created when allowed. */
  private async syncGroups(user: UserRecord, claims: Claims): Promise<void> {
    const claim = this.get<string>('OAUTH_GROUP_CLAIM');
    const names = claim ? claimList(claimAt(claims, claim), this.options.groupsSeparator) : [];
    // No groups in the claim: memberships are left as they are, as the reference does.
    if (names.length === 0) return;
    let blocked: unknown[] = [];
    try {
      const parsed: unknown = JSON.parse(this.get<string>('OAUTH_BLOCKED_GROUPS') || '[]');
      if (Array.isArray(parsed)) blocked = parsed;
    } catch {
      this.core.log.warn('OAUTH_BLOCKED_GROUPS is not a JSON list; no group is blocked');
    }
    const create = this.get<boolean>('ENABLE_OAUTH_GROUP_CREATION');
    const creatorId = create ? ((await this.users.store().firstUserId()) ?? user.id) : null;
    const permissions = create ? this.access.defaultPermissions() : null;
    await this.groups.syncMembershipsByName(user.id, names, {
      creatorId,
      keep: (name) => isBlockedGroup(name, blocked),
      newGroup: (name) => ({
        description: `Group '${name}' created automatically via OAuth.`,
        permissions,
        data: { config: { share: this.get<boolean | string>('OAUTH_GROUP_DEFAULT_SHARE') } },
      }),
    });
  }

  // ---- OAuth sessions -------------------------------------------------------------------

  /** Keeps the provider's tokens for this sign-in, sealed, pruning the user's oldest beyond the limit. */
  private async keepSession(userId: string, provider: string, tokens: ProviderTokens, keep = this.options.maxSessionsPerUser - 1): Promise<string | null> {
    try {
      const now = this.core.clock.now();
      const stored: ProviderTokens = { ...tokens, issued_at: now };
      const existing = await this.store().ofUser(userId, provider);
      await this.store().delete(existing.slice(keep).map((s) => s.id));
      const id = randomUUID();
      await this.store().insert({ id, user_id: userId, provider, token: this.seal(stored), expires_at: stored.expires_at ?? now + DEFAULT_TOKEN_SECONDS, created_at: now, updated_at: now });
      return id;
    } catch (error) {
      this.core.log.error({ err: error }, 'Failed to store the OAuth session');
      return null;
    }
  }

  private seal(tokens: ProviderTokens): string {
    return this.cipher.seal(tokens) as string;
  }

  /** The stored tokens; null when unreadable (another key, damaged). */
  private unseal(sealed: string): ProviderTokens | null {
    const opened = this.cipher.open(sealed);
    return opened && Object.keys(opened).length > 0 ? (opened as ProviderTokens) : null;
  }

  /**
   * The user's provider tokens for a session (the `oauth_session_id` cookie), else their newest
   * sign-in session; refreshed first when they expire within five minutes. A session whose refresh
   * fails is deleted (the user signs in again), as the reference does.
   */
  async tokensFor(userId: string, sessionId: string | null): Promise<ProviderTokens | null> {
    const known = new Set(this.providers().map((p) => p.name));
    const candidates = sessionId ? [await this.store().byId(sessionId)] : await this.store().ofUser(userId);
    const session = candidates.find((s) => s && s.user_id === userId && known.has(s.provider)) ?? null;
    if (!session && sessionId) return this.tokensFor(userId, null);
    if (!session) return null;
    return this.fresh(session);
  }

  /** A session's tokens, refreshed first when they expire within five minutes. */
  private async fresh(session: OAuthSessionRow): Promise<ProviderTokens | null> {
    const tokens = this.unseal(session.token);
    if (!tokens) return null;
    if (session.expires_at - REFRESH_MARGIN_SECONDS > this.core.clock.now()) return tokens;
    let pending = this.refreshing.get(session.id);
    if (!pending) {
      pending = this.refresh(session.id, session.provider, tokens).finally(() => this.refreshing.delete(session.id));
      this.refreshing.set(session.id, pending);
    }
    return pending;
  }

  /** The access token a tool server with `system_oauth` auth receives. */
  async accessTokenFor(userId: string, sessionId: string | null): Promise<string | null> {
    const tokens = await this.tokensFor(userId, sessionId);
    return typeof tokens?.access_token === 'string' ? tokens.access_token : null;
  }

  private async refresh(sessionId: string, providerName: string, tokens: ProviderTokens): Promise<ProviderTokens | null> {
    const provider = this.providers().find((p) => p.name === providerName) ?? this.toolServerClient(providerName);
    try {
      if (!provider || typeof tokens.refresh_token !== 'string') throw new Error('no refresh token');
      const { lib, config } = await this.clients.configuration(provider);
      const params: Record<string, string> = this.get<boolean>('OAUTH_REFRESH_TOKEN_INCLUDE_SCOPE') ? { scope: provider.scope } : {};
      if (provider.authorizeParams.resource) params.resource = provider.authorizeParams.resource;
      const response = await lib.refreshTokenGrant(config, tokens.refresh_token, params);
      const refreshed: ProviderTokens = {
        ...response,
        refresh_token: response.refresh_token ?? tokens.refresh_token,
        id_token: response.id_token ?? tokens.id_token,
        expires_at: this.expiryOf(response),
        issued_at: this.core.clock.now(),
      };
      await new OAuthSessionStore(this.core.db).replaceToken(sessionId, this.seal(refreshed), refreshed.expires_at!, this.core.clock.now());
      return refreshed;
    } catch (error) {
      this.core.log.warn({ provider: providerName, reason: error instanceof Error ? error.message : String(error) }, 'OAuth token refresh failed; session deleted');
      await this.store().delete([sessionId]);
      return null;
    }
  }

  // ---- tool servers' own OAuth 2.1 clients (MCP) ---------------------------------------

  /**
   * The client a tool-server connection registered (`info.oauth_client_info`, sealed by
   * `POST /api/v1/configs/oauth/clients/register`), keyed `<type>:<server id>` as the reference
   * names its sessions; null when no such OAuth connection exists or its client cannot be read.
   */
  private toolServerClient(key: string): OAuthProvider | null {
    const connections = setting<unknown>(this.core, 'tool_server.connections');
    if (!Array.isArray(connections)) return null;
    const connection = connections.find((c): c is Claims => {
      if (c === null || typeof c !== 'object') return false;
      const { type, info, auth_type: authType } = c as Claims;
      const id = info && typeof info === 'object' ? (info as Claims).id : undefined;
      return (authType === 'oauth_2.1' || authType === 'oauth_2.1_static') && `${type ?? 'openapi'}:${id}` === key;
    });
    const sealed = connection && typeof connection.info === 'object' ? (connection.info as Claims).oauth_client_info : undefined;
    const info = typeof sealed === 'string' ? this.clientInfoCipher.open(sealed) : null;
    const metadata = info?.server_metadata as Claims | null | undefined;
    if (!info || typeof info.client_id !== 'string' || !metadata || typeof metadata.authorization_endpoint !== 'string' || typeof metadata.token_endpoint !== 'string') return null;
    const redirects = Array.isArray(info.redirect_uris) ? info.redirect_uris.map(String) : [];
    return {
      name: key,
      label: key,
      clientId: info.client_id,
      clientSecret: typeof info.client_secret === 'string' ? info.client_secret : '',
      scope: typeof info.scope === 'string' ? info.scope : '',
      redirectUri: redirects[0] ?? '',
      metadataUrl: null,
      serverMetadata: metadata,
      subClaim: 'sub',
      pictureUrl: null,
      pkce: true,
      tokenEndpointAuthMethod: typeof info.token_endpoint_auth_method === 'string' ? info.token_endpoint_auth_method : null,
      authorizeParams: typeof info.resource === 'string' && info.resource ? { resource: info.resource } : {},
    };
  }

  private requireToolServerClient(key: string): OAuthProvider {
    const client = this.toolServerClient(key);
    if (!client) throw fastApiNotFound();
    return client;
  }

  /** `/oauth/clients/{client_id}/authorize`: the signed-in user authorizes Parley at a tool server's authorization server. */
  clientAuthorize(key: string, requestBase: string): Promise<{ location: string; flow: string }> {
    return this.authorize(this.requireToolServerClient(key), `${requestBase}/oauth/clients/${key}/callback`);
  }

  /**
   * `/oauth/clients/{client_id}/callback`: the tokens become the user's one session of that client;
   * the browser goes back to the app (`/?error=` on failure), as the reference.
   */
  async clientCallback(key: string, user: UserRecord, query: string, sealedFlow: string | undefined, requestBase: string): Promise<string> {
    const base = (setting<string>(this.core, 'webui.url') || requestBase).replace(/\/+$/, '');
    const client = this.requireToolServerClient(key);
    try {
      const tokens = await this.exchangeCode(client, this.openFlow(sealedFlow, key), query);
      if (!tokens.access_token) throw new SignInRefused('Failed to obtain OAuth token');
      if (!(await this.keepSession(user.id, key, tokens, 0))) throw new SignInRefused('Failed to store OAuth session server-side');
      return `${base}/`;
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      this.core.log.warn({ client: key, userId: user.id, reason: detail }, 'Tool server OAuth authorization failed');
      return `${base}/?error=${encodeURIComponent(detail.slice(0, 200)).replace(/%20/g, '+')}`;
    }
  }

  /** The user's access token at a tool server's authorization server (`oauth_2.1` connections), refreshed when due. */
  async clientAccessTokenFor(userId: string, key: string): Promise<string | null> {
    const [session] = await this.store().ofUser(userId, key);
    const tokens = session ? await this.fresh(session) : null;
    return typeof tokens?.access_token === 'string' ? tokens.access_token : null;
  }

  // ---- token exchange -------------------------------------------------------------------

  /** `POST /api/v1/auths/oauth/{provider}/token/exchange`: a provider's access token for a Parley session. */
  async exchangeToken(providerName: string, accessToken: string): Promise<Session<SessionUserResponse>> {
    if (!this.options.enableTokenExchange) throw forbidden('Token exchange is disabled. The server allows it when started with ENABLE_OAUTH_TOKEN_EXCHANGE=true.');
    const name = providerName.toLowerCase();
    const provider = this.providers().find((p) => p.name === name);
    if (!provider) throw notFound(`Provider '${name}' is not configured`);
    let claims: Claims;
    try {
      claims = await this.userInfo(provider, accessToken, null);
    } catch {
      throw badRequest('Invalid token or unable to validate with provider');
    }
    const sub = claims[this.get<string | null>('OAUTH_SUB_CLAIM') || provider.subClaim];
    if (sub === undefined || sub === null || sub === '') throw badRequest("Token missing required 'sub' claim");
    const rawEmail = claims[this.get<string>('OAUTH_EMAIL_CLAIM')];
    if (typeof rawEmail !== 'string' || !rawEmail) throw badRequest('Token missing required email claim');
    const email = rawEmail.toLowerCase();
    const domains = this.get<string[]>('OAUTH_ALLOWED_DOMAINS');
    if (!domains.includes('*') && !domains.includes(email.split('@').pop()!)) throw forbidden(ERROR.ACCESS_PROHIBITED);
    let user = await this.users.byOAuthSub(name, String(sub));
    if (!user && this.get<boolean>('OAUTH_MERGE_ACCOUNTS_BY_EMAIL')) {
      const byEmail = await this.users.byEmail(email);
      if (byEmail) user = await this.users.update(byEmail.id, { oauth: { ...(byEmail.oauth ?? {}), [name]: { sub: String(sub) } } });
    }
    if (!user) throw forbidden('User not found. Please sign in via the web interface first.');
    return this.auths.startSession(user, 'oauth');
  }

  // ---- logout ---------------------------------------------------------------------------

  /**
   * Sign-out of an OAuth session (RP-initiated logout): the session is deleted and the browser sent
   * to OPENID_END_SESSION_ENDPOINT when set, else to the provider's end-session address with the
   * session's ID token as hint; null when there is none.
   */
  async signout(oauthSessionId: string, postLogoutRedirect: string | null): Promise<string | null> {
    const endSession = this.get<string>('OPENID_END_SESSION_ENDPOINT');
    const session = await this.store().byId(oauthSessionId);
    if (session) await this.store().delete([session.id]);
    if (endSession) return endSession;
    if (!session) return null;
    const provider = this.providers().find((p) => p.name === session.provider);
    const metadataUrl = provider?.metadataUrl ?? (this.get<string>('OPENID_PROVIDER_URL') || null);
    if (!metadataUrl) return null;
    let endpoint: unknown;
    try {
      const response = await fetch(metadataUrl, { signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new Error(`status ${response.status}`);
      endpoint = ((await response.json()) as { end_session_endpoint?: unknown }).end_session_endpoint;
    } catch (error) {
      this.core.log.error({ err: error }, 'OpenID signout error');
      throw new HttpError(500, 'Failed to sign out from the OpenID provider.');
    }
    if (typeof endpoint !== 'string' || !endpoint) return null;
    const url = new URL(endpoint);
    const idToken = this.unseal(session.token)?.id_token;
    url.searchParams.set('id_token_hint', typeof idToken === 'string' ? idToken : '');
    if (postLogoutRedirect) url.searchParams.set('post_logout_redirect_uri', postLogoutRedirect);
    return url.href;
  }

  /**
   * `GET /oauth/frontchannel-logout` (OpenID Front-Channel Logout 1.0): the provider loads it in
   * the browser when the user signs out there; the browser's Parley session (its `token` cookie) is
   * signed out and its OAuth session deleted. A request naming another issuer changes nothing (false).
   */
  async frontchannelLogout(issuer: string | undefined, credential: string | null, oauthSessionId: string | null): Promise<boolean> {
    if (issuer) {
      const issuers = await Promise.all(
        this.providers()
          .filter((p) => p.metadataUrl)
          .map((p) => this.clients.configuration(p).then(({ config }) => config.serverMetadata().issuer, () => null)),
      );
      if (!issuers.includes(issuer)) return false;
    }
    if (oauthSessionId) await this.store().delete([oauthSessionId]);
    if (credential) await this.auths.signout(credential, null);
    return true;
  }

  /**
   * `POST /oauth/backchannel-logout` (OpenID Back-Channel Logout 1.0): the provider's signed
   * logout token ends every session of the account it names: the OAuth sessions are deleted and
   * every Parley token issued to the user before now is refused.
   */
  async backchannelLogout(logoutToken: string | undefined): Promise<{ status: number; body: Record<string, string> }> {
    const refuse = (description: string) => ({ status: 400, body: { error: 'invalid_request', error_description: description } });
    if (!this.options.enableBackchannelLogout) throw fastApiNotFound();
    if (!logoutToken) return refuse('Missing logout_token parameter');
    const { decodeJwt, createRemoteJWKSet, jwtVerify } = await import('jose');
    let issuer: unknown;
    try {
      issuer = decodeJwt(logoutToken).iss;
    } catch {
      return refuse('Malformed logout_token');
    }
    if (typeof issuer !== 'string' || !issuer) return refuse('logout_token missing iss claim');
    let matched: { provider: OAuthProvider; jwksUri: string } | null = null;
    for (const provider of this.providers().filter((p) => p.metadataUrl)) {
      try {
        const { config } = await this.clients.configuration(provider);
        const metadata = config.serverMetadata();
        if (metadata.issuer === issuer && metadata.jwks_uri) matched = { provider, jwksUri: metadata.jwks_uri };
      } catch {
        // an unreachable provider cannot be the issuer
      }
      if (matched) break;
    }
    if (!matched) return refuse('No configured provider matches token issuer');
    let claims: Claims;
    try {
      const verified = await jwtVerify(logoutToken, createRemoteJWKSet(new URL(matched.jwksUri)), {
        issuer,
        audience: matched.provider.clientId,
        algorithms: ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'EdDSA'],
        requiredClaims: ['iat', 'events'],
        currentDate: new Date(this.core.clock.nowMs()),
      });
      claims = verified.payload as Claims;
    } catch (error) {
      return refuse(`Invalid logout_token: ${error instanceof Error ? error.message : String(error)}`);
    }
    const events = claims.events;
    if (!events || typeof events !== 'object' || !(BACKCHANNEL_EVENT in events)) return refuse('Missing backchannel-logout event claim');
    if ('nonce' in claims) return refuse('logout_token must not contain nonce');
    if (!claims.sub && !claims.sid) return refuse('logout_token must contain sub or sid');
    const user = typeof claims.sub === 'string' ? await this.users.byOAuthSub(matched.provider.name, claims.sub) : null;
    if (user) {
      const sessions = await this.store().ofUser(user.id);
      await this.store().delete(sessions.map((s) => s.id));
      await this.core.revokedTokens.revokeUserSessions(user.id);
      this.core.log.info({ userId: user.id, provider: matched.provider.name, sessions: sessions.length }, 'Back-channel logout');
    }
    return { status: 200, body: {} };
  }
}
