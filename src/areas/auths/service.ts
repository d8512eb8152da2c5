import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { PermissionsTree } from '../../core/access/permissions.js';
import type { AccessService } from '../../core/access/service.js';
import { hashPassword, passwordTooLong, verifyPassword } from '../../core/auth/passwords.js';
import { parseDuration, type TokenClaims } from '../../core/auth/tokens.js';
import { isAdmin, type UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { type Db, isUniqueViolation } from '../../core/db/database.js';
import { badRequest, ERROR, forbidden, HttpError, notFound } from '../../core/http/errors.js';
import type { GroupsService } from '../groups/service.js';
import type { UsersService } from '../users/service.js';
import { authenticateWithLdap, type LdapDirectorySettings } from './ldap.js';
import { RateLimiter } from './rate-limit.js';
import type {
  AddUserForm,
  AdminConfig,
  LdapServerConfig,
  OAuthConfigForm,
  SessionUserInfoResponse,
  SessionUserResponse,
  SigninForm,
  SigninResponse,
  SignoutResponse,
  SignupForm,
  UpdatePasswordForm,
  UpdateProfileForm,
  UserProfileImageResponse,
} from './schemas.js';
import {
  ADMIN_CONFIG_KEYS,
  adminEmailSetting,
  apiKeyAllowedEndpointsSetting,
  apiKeyRestrictionsSetting,
  type AuthOptions,
  channelResponseModeSetting,
  defaultGroupIdSetting,
  defaultUserRoleSetting,
  enableApiKeysSetting,
  enableLoginFormSetting,
  enableSignupSetting,
  jwtExpirySetting,
  LDAP_SERVER_CONFIG_KEYS,
  ldapEnableSetting,
  ldapStartTlsSetting,
  OAUTH_COMMA_LIST_FIELDS,
  OAUTH_CONFIG_KEYS,
  readAuthOptions,
  showAdminDetailsSetting,
} from './settings.js';
import { AuthStore } from './store.js';

/** A session token with what the `token` cookie needs to carry it. */
export interface IssuedToken {
  token: string;
  /** Epoch seconds; null when the token never expires. */
  expiresAt: number | null;
  /** Seconds the cookie should live; null for a session cookie. */
  maxAge: number | null;
}

export interface Session<T> {
  body: T;
  /** Set as the `token` cookie when present. */
  cookie: IssuedToken | null;
}

/** Headers a sign-in may be answered from (trusted-header mode). */
export type RequestHeaders = Record<string, string | string[] | undefined>;

/** What sign-out needs of OAuth sign-in (the oauth area provides it; app.ts connects it). */
export interface OAuthSignout {
  /** Ends the OAuth session; the provider's logout address to send the browser to, or null. */
  signout(oauthSessionId: string, postLogoutRedirect: string | null): Promise<string | null>;
}

export interface NewAccount {
  email: string;
  password: string;
  name: string;
  profileImageUrl: string | null;
  /** The role when this is not the very first account (which always becomes admin). */
  role: string;
  source: string;
  /** Who created it; the new user itself when absent (null: a system, e.g. a SCIM client). */
  actor?: UserRecord | null;
  /** Identity providers' subjects bound to the account (`{provider: {sub}}`). */
  oauth?: Record<string, unknown>;
  /** Fields of the `user.created` event besides the role. */
  eventData?: Record<string, unknown>;
  /** Fields of the user record besides the above (a SCIM external id). */
  extra?: { scim?: Record<string, unknown> };
}

/** Python's `re.match(r'[^@]+@[^@]+\.[^@]+', email)`: anchored at the start only. */
const EMAIL_FORMAT = /^[^@]+@[^@]+\.[^@]+/;
/** Serialises account creation on PostgreSQL so two first sign-ups cannot both become admin. */
const ACCOUNT_CREATION_LOCK = 7_361_626_574_001;
const NO_AUTH_ADMIN = { email: 'admin@localhost', password: 'admin', name: 'User' };

const requiredFieldEmpty = (name: string) => `Required field ${name} is empty`;

/** Python's `re.match`: the pattern must match at the start of the text (not necessarily all of it). */
function matchesAtStart(pattern: RegExp, text: string): boolean {
  const sticky = new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, '') + 'y');
  return sticky.test(text);
}

/**
 * Accounts, credentials and sessions: sign-up, sign-in, sign-out, passwords,
 * API keys and the admin's authentication settings (routers/auths.py).
 */
export class AuthsService {
  private readonly options: AuthOptions;
  /** 15 sign-in attempts per e-mail address in 3 minutes, as the reference; shared by the instances through Redis. */
  private readonly signinLimiter: RateLimiter;
  /** Verified against when there is no credential, so timing does not reveal which accounts exist. */
  private placeholderHash: Promise<string> | null = null;
  /**
   * Session-check answers per user record and credential, frozen so that each is serialised
   * once. The user record and the permission tree are cached objects replaced on any change,
   * so an answer lives only as long as both are the ones it was made from.
   */
  private readonly sessionAnswers = new WeakMap<UserRecord, Map<string, Session<SessionUserInfoResponse>>>();
  private oauthSignout: OAuthSignout | null = null;

  constructor(
    readonly core: Core,
    readonly users: UsersService,
    readonly access: AccessService,
    private readonly groups: GroupsService,
    redis: { redisUrl: string | null; keyPrefix: string },
  ) {
    this.options = readAuthOptions(core.env.raw);
    this.signinLimiter = new RateLimiter({
      limit: 15,
      windowSeconds: 180,
      now: () => core.clock.now(),
      redis: redis.redisUrl ? { url: redis.redisUrl, keyPrefix: redis.keyPrefix } : null,
      log: core.log,
    });
  }

  connectOAuth(signout: OAuthSignout): void {
    this.oauthSignout = signout;
  }

  /** Closes the limiter's Redis connection. */
  close(): Promise<void> {
    return this.signinLimiter.close();
  }

  private store(db: Db = this.core.db): AuthStore {
    return new AuthStore(db);
  }

  private setting<T>(definition: { key: string }): T {
    return this.core.settings.get<T>(definition.key);
  }

  // ---- sessions -------------------------------------------------------------

  /** The configured session length in seconds (null: tokens never expire). */
  private jwtExpirySeconds(): number | null {
    return parseDuration(this.setting<string>(jwtExpirySetting));
  }

  private async issueToken(userId: string): Promise<IssuedToken> {
    const seconds = this.jwtExpirySeconds();
    const { token, expiresAt } = await this.core.tokens.issue(userId, seconds, this.core.clock.now());
    return { token, expiresAt, maxAge: seconds === null ? null : Math.floor(seconds) };
  }

  /** A new session for a user who just proved who they are (`create_session_response`). */
  async startSession(user: UserRecord, source: string): Promise<Session<SessionUserResponse>> {
    const issued = await this.issueToken(user.id);
    const permissions = await this.access.permissionsOf(user);
    await this.core.events.publish({
      event: 'auth.login',
      actor: user,
      subjectId: user.id,
      subjectType: 'user',
      source,
      data: { auth_method: source },
    });
    return {
      body: {
        token: issued.token,
        token_type: 'Bearer',
        expires_at: issued.expiresAt,
        id: user.id,
        email: user.email,
        name: user.name,
        role: user.role,
        profile_image_url: `/api/v1/users/${user.id}/profile/image`,
        permissions,
      },
      cookie: issued,
    };
  }

  /**
   * `GET /auths/`: the signed-in user, echoing the credential and re-setting the cookie for a session
   * token. `claims` are that token's, as the guard verified them (null for an API key).
   */
  async sessionInfo(user: UserRecord, credential: string | null, claims: TokenClaims | null): Promise<Session<SessionUserInfoResponse>> {
    const now = this.core.clock.now();
    const expiresAt = claims?.exp ?? null;
    const permissions = await this.access.permissionsOf(user);
    const key = credential ?? '';
    let answers = this.sessionAnswers.get(user);
    if (!answers) this.sessionAnswers.set(user, (answers = new Map()));
    let answer = answers.get(key);
    if (answer?.body.permissions !== permissions) {
      answer = { body: Object.freeze(this.sessionBody(user, key, expiresAt, permissions)), cookie: null };
      answers.set(key, answer);
    }
    // The cookie's Max-Age counts down, so its object changes once a second.
    if (claims && credential && answer.cookie?.maxAge !== (expiresAt === null ? null : expiresAt - now)) {
      answer.cookie = Object.freeze({ token: credential, expiresAt, maxAge: expiresAt === null ? null : expiresAt - now });
    }
    return answer;
  }

  private sessionBody(user: UserRecord, token: string, expiresAt: number | null, permissions: PermissionsTree): SessionUserInfoResponse {
    return {
      token,
      token_type: 'Bearer',
      expires_at: expiresAt,
      id: user.id,
      email: user.email,
      name: user.name,
      role: user.role,
      profile_image_url: user.profile_image_url,
      bio: user.bio,
      gender: user.gender,
      date_of_birth: user.date_of_birth,
      status_emoji: user.status_emoji,
      status_message: user.status_message,
      status_expires_at: user.status_expires_at,
      permissions,
    };
  }

  // ---- validation -------------------------------------------------------------

  /** The forms' `profile_image_url` validator (the users area's rule): a 422 like any other field error. */
  private checkProfileImage(url: string | null | undefined): void {
    if (url !== null && url !== undefined) this.users.assertProfileImageUrl(url);
  }

  private checkEmailFormat(email: string): void {
    if (!email.endsWith('@localhost') && !EMAIL_FORMAT.test(email)) throw badRequest(ERROR.INVALID_EMAIL_FORMAT);
  }

  private checkNewPassword(password: string): void {
    if (passwordTooLong(password)) throw badRequest(ERROR.PASSWORD_TOO_LONG);
    const { enablePasswordValidation, passwordValidationPattern, passwordValidationHint } = this.core.env;
    if (enablePasswordValidation && !matchesAtStart(passwordValidationPattern, password)) {
      throw badRequest(ERROR.INVALID_PASSWORD(passwordValidationHint));
    }
  }

  private async checkEmailFree(email: string): Promise<void> {
    if (await this.users.byEmail(email)) throw badRequest(ERROR.EMAIL_TAKEN);
  }

  // ---- accounts -------------------------------------------------------------

  /**
   * Creates the user and its password credential in one transaction. The very
   * first account becomes admin and closes sign-up. On PostgreSQL an advisory
   * lock makes concurrent creations take turns, so the user count read under it
   * is exact; SQLite runs one transaction at a time anyway.
   */
  async createAccount(account: NewAccount): Promise<UserRecord> {
    const hash = await hashPassword(account.password);
    const now = this.core.clock.now();
    try {
      return await this.core.db.transaction().execute(async (trx) => {
        if (this.core.database.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${ACCOUNT_CREATION_LOCK})`.execute(trx);
        const first = (await this.users.count(trx)) === 0;
        let user = await this.users.create(
          { email: account.email, name: account.name, role: first ? 'admin' : account.role, profile_image_url: account.profileImageUrl, oauth: account.oauth ?? null },
          trx,
        );
        if (account.extra) user = (await this.users.update(user.id, account.extra, trx)) ?? user;
        await this.store(trx).insertCredential({ id: user.id, email: user.email, password: hash, active: true });
        await this.joinDefaultGroup(user.id, trx);
        await this.core.events.publish(
          {
            event: 'user.created',
            actor: account.actor === undefined ? user : account.actor,
            subjectId: user.id,
            source: account.source,
            data: { ...account.eventData, role: user.role },
          },
          trx,
        );
        // Last, so the settings cache changes only once every row is written.
        if (first) await this.core.settings.set({ [enableSignupSetting.key]: false }, now, trx);
        return user;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw badRequest(ERROR.EMAIL_TAKEN);
      throw error;
    }
  }

  /** New accounts join the configured default group; a group id that no longer exists is ignored, as the reference. */
  private async joinDefaultGroup(userId: string, trx: Db): Promise<void> {
    const groupId = this.setting<string>(defaultGroupIdSetting);
    if (!groupId) return;
    if (await this.groups.byId(groupId, trx)) await this.groups.addMembers(null, groupId, [userId], trx);
    else this.core.log.warn({ groupId }, 'default group not found; new user not added');
  }

  private signupAllowed(hasUsers: boolean): boolean {
    const loginForm = this.setting<boolean>(enableLoginFormSetting);
    if (!this.core.env.webuiAuth) return !hasUsers;
    // The first admin is not gated on ENABLE_SIGNUP: it is switched off after the first sign-up and may be stale.
    if (hasUsers) return this.setting<boolean>(enableSignupSetting) && loginForm;
    return loginForm || this.options.enableInitialAdminSignup;
  }

  async signup(form: SignupForm): Promise<Session<SessionUserResponse>> {
    this.checkProfileImage(form.profile_image_url);
    if (!this.signupAllowed((await this.users.count()) > 0)) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const email = await this.checkNewCredentials(form);
    const user = await this.createAccount({
      email,
      password: form.password,
      name: form.name,
      profileImageUrl: form.profile_image_url ?? null,
      role: this.setting<string>(defaultUserRoleSetting),
      source: 'api',
    });
    await this.core.events.publish({ event: 'auth.signup', actor: user, subjectId: user.id, subjectType: 'user', data: { email: user.email } });
    return this.startSession(user, 'api');
  }

  /** The e-mail (lower-cased) of a new account, once its format, uniqueness and password pass the rules. */
  private async checkNewCredentials(form: { email: string; password: string }): Promise<string> {
    const email = form.email.toLowerCase();
    this.checkEmailFormat(email);
    await this.checkEmailFree(email);
    this.checkNewPassword(form.password);
    return email;
  }

  /** `POST /auths/add`: an admin creates an account and receives a token for it (no cookie). */
  async addUser(admin: UserRecord, form: AddUserForm): Promise<SigninResponse> {
    this.checkProfileImage(form.profile_image_url);
    const email = await this.checkNewCredentials(form);
    const user = await this.createAccount({
      email,
      password: form.password,
      name: form.name,
      profileImageUrl: form.profile_image_url ?? null,
      role: form.role ?? 'pending',
      source: 'admin',
      actor: admin,
    });
    const { token } = await this.issueToken(user.id);
    return {
      token,
      token_type: 'Bearer',
      id: user.id,
      email: user.email,
      name: user.name,
      role: user.role,
      profile_image_url: `/api/v1/users/${user.id}/profile/image`,
    };
  }

  private placeholder(): Promise<string> {
    this.placeholderHash ??= hashPassword('placeholder');
    return this.placeholderHash;
  }

  /**
   * An account an identity system provisions (SCIM): its password is random and never told, so it
   * signs in through that system's sign-in (OAuth, LDAP, trusted header). The e-mail must be free.
   */
  async provisionAccount(input: {
    email: string;
    name: string;
    profileImageUrl: string | null;
    role: string;
    source: string;
    eventData?: Record<string, unknown>;
    scim?: Record<string, unknown>;
  }): Promise<UserRecord> {
    const email = input.email.toLowerCase();
    this.checkEmailFormat(email);
    await this.checkEmailFree(email);
    return this.createAccount({
      email,
      password: randomBytes(16).toString('hex'),
      name: input.name,
      profileImageUrl: input.profileImageUrl,
      role: input.role,
      source: input.source,
      actor: null,
      eventData: input.eventData,
      ...(input.scim ? { extra: { scim: input.scim } } : {}),
    });
  }

  /** The user whose active credential matches, or null (`Auths.authenticate_user`). */
  private async authenticate(email: string, password: string): Promise<UserRecord | null> {
    const user = await this.users.byEmail(email);
    const credential = user ? await this.store().credentialOf(user.id) : null;
    if (!user || !credential?.active) {
      await verifyPassword(password, await this.placeholder());
      return null;
    }
    return (await verifyPassword(password, credential.password)) ? user : null;
  }

  /** The user by e-mail when their credential is active, without a password (trusted header). */
  private async activeUserByEmail(email: string): Promise<UserRecord | null> {
    const user = await this.users.byEmail(email);
    const credential = user ? await this.store().credentialOf(user.id) : null;
    return user && credential?.active ? user : null;
  }

  async signin(form: SigninForm, headers: RequestHeaders): Promise<Session<SessionUserResponse>> {
    if (!this.options.enablePasswordAuth) throw forbidden(ERROR.ACTION_PROHIBITED);
    let user: UserRecord | null;
    let source = 'password';
    if (this.options.trustedEmailHeader) {
      source = 'trusted_header';
      user = await this.signinFromTrustedHeaders(headers);
    } else if (!this.core.env.webuiAuth) {
      source = 'system';
      user = await this.signinWithoutAuth();
    } else {
      const email = form.email.toLowerCase();
      if (await this.signinLimiter.isLimited(email)) throw new HttpError(429, ERROR.RATE_LIMIT_EXCEEDED);
      user = await this.authenticate(email, form.password);
    }
    if (!user) throw badRequest(ERROR.INVALID_CRED);
    return this.startSession(user, source);
  }

  /** Trusted-header mode: the proxy vouches for the e-mail address; unknown addresses get an account. */
  private async signinFromTrustedHeaders(headers: RequestHeaders): Promise<UserRecord | null> {
    const header = (name: string) => {
      const value = headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const rawEmail = header(this.options.trustedEmailHeader!);
    if (!rawEmail) throw badRequest('Your provider has not provided a trusted header. Please contact your administrator for assistance.');
    const email = rawEmail.toLowerCase();
    let name = email;
    const rawName = this.options.trustedNameHeader ? header(this.options.trustedNameHeader) : undefined;
    if (rawName) {
      try {
        name = decodeURIComponent(rawName);
      } catch {
        name = rawName;
      }
    }
    if (!(await this.users.byEmail(email))) {
      try {
        await this.createAccount({
          email,
          password: randomBytes(16).toString('hex'),
          name,
          profileImageUrl: '/user.png',
          role: this.setting<string>(defaultUserRoleSetting),
          source: 'trusted_header',
        });
      } catch (error) {
        // Another request created the same account first: sign in to that one.
        if (!(error instanceof HttpError && error.detail === ERROR.EMAIL_TAKEN)) throw error;
      }
    }
    let user = await this.activeUserByEmail(email);
    // The proxy's comma-separated group names: the user is a member of exactly those that exist.
    const groupNames = (this.options.trustedGroupsHeader ? (header(this.options.trustedGroupsHeader) ?? '') : '')
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean);
    if (user && groupNames.length > 0) await this.groups.syncMembershipsByName(user.id, groupNames);
    const trustedRole = this.options.trustedRoleHeader ? header(this.options.trustedRoleHeader)?.trim().toLowerCase() : undefined;
    if (user && trustedRole && ['admin', 'user', 'pending'].includes(trustedRole) && user.role !== trustedRole) {
      user = await this.users.update(user.id, { role: trustedRole });
    }
    return user;
  }

  /** WEBUI_AUTH=false: everyone is the single admin account admin@localhost, created on first use. */
  private async signinWithoutAuth(): Promise<UserRecord | null> {
    if (!(await this.users.byEmail(NO_AUTH_ADMIN.email))) {
      if ((await this.users.count()) > 0) throw badRequest(ERROR.EXISTING_USERS);
      await this.createAccount({
        email: NO_AUTH_ADMIN.email,
        password: NO_AUTH_ADMIN.password,
        name: NO_AUTH_ADMIN.name,
        profileImageUrl: '/user.png',
        role: this.setting<string>(defaultUserRoleSetting),
        source: 'system',
      });
    }
    return this.authenticate(NO_AUTH_ADMIN.email, NO_AUTH_ADMIN.password);
  }

  /** The directory settings as stored (Admin Settings > General, LDAP). */
  private ldapDirectory(): LdapDirectorySettings {
    const server = this.ldapServerConfig();
    return {
      host: server.host,
      port: server.port ?? null,
      useTls: server.use_tls !== false,
      startTls: this.setting<boolean>(ldapStartTlsSetting),
      caCertFile: server.certificate_path || null,
      validateCert: server.validate_cert !== false,
      ciphers: server.ciphers ?? null,
      appDn: server.app_dn,
      appPassword: server.app_dn_password,
      searchBase: server.search_base,
      searchFilters: server.search_filters ?? '',
      attributeForUsername: server.attribute_for_username || 'uid',
      attributeForMail: server.attribute_for_mail || 'mail',
      attributeForGroups: server.enable_group_management ? server.attribute_for_groups || null : null,
    };
  }

  /**
   * `POST /auths/ldap`: the directory vouches for the user (ldap.ts); the account with the entry's
   * e-mail is created on first sign-in (name from `cn`), its name kept in step after, and with group
   * management on, its groups made those the entry lists (created first when group creation is on).
   */
  async ldapSignin(form: { user: string; password: string }): Promise<Session<SessionUserResponse>> {
    if (!this.setting<boolean>(ldapEnableSetting)) throw badRequest('LDAP authentication is not enabled. An admin switches it on in Admin Settings > General (LDAP).');
    if (!this.options.enablePasswordAuth) throw forbidden(ERROR.ACTION_PROHIBITED);
    // An empty password is an unauthenticated bind, which many servers accept (RFC 4513 §5.1.2).
    if (!form.password.trim() || !form.user.trim()) throw badRequest(ERROR.INVALID_CRED);
    if (await this.signinLimiter.isLimited(`ldap:${form.user}`)) throw new HttpError(429, ERROR.RATE_LIMIT_EXCEEDED);
    const directory = this.ldapDirectory();
    const identity = await authenticateWithLdap(directory, form.user, form.password);
    if (!(await this.users.byEmail(identity.email))) {
      try {
        await this.createAccount({
          email: identity.email,
          password: randomBytes(16).toString('hex'),
          name: identity.name,
          profileImageUrl: '/user.png',
          role: this.setting<string>(defaultUserRoleSetting),
          source: 'ldap',
        });
      } catch (error) {
        // Another request created the same account first: sign in to that one.
        if (!(error instanceof HttpError && error.detail === ERROR.EMAIL_TAKEN)) throw error;
      }
    }
    let user = await this.activeUserByEmail(identity.email);
    if (!user) throw badRequest(ERROR.INVALID_CRED);
    if (user.name !== identity.name) user = (await this.users.update(user.id, { name: identity.name })) ?? user;
    if (directory.attributeForGroups && identity.groups.length > 0) {
      const create = this.setting<boolean>({ key: LDAP_SERVER_CONFIG_KEYS.enable_group_creation });
      await this.groups.syncMembershipsByName(user.id, identity.groups, { creatorId: create ? user.id : null, announce: { actor: user, source: 'ldap' } });
    }
    return this.startSession(user, 'ldap');
  }

  /**
   * Ends the session the credential belongs to (reported as `auth.logout`).
   * Tokens are not revoked server-side: like the reference without Redis, a
   * copied token stays valid until it expires.
   */
  async signout(credential: string | null, oauthSessionId: string | null): Promise<SignoutResponse> {
    if (credential) {
      const claims = await this.core.tokens.verify(credential);
      // The reference revokes only with Redis; here a signed-out token is refused everywhere, always.
      if (claims?.jti) await this.core.revokedTokens.revoke(claims.jti, claims.exp ?? null);
      const actor = claims ? await this.users.byId(claims.id) : null;
      await this.core.events.publish({
        event: 'auth.logout',
        actor,
        ...(actor ? { subjectId: actor.id, subjectType: 'user' } : {}),
      });
    }
    if (oauthSessionId && this.oauthSignout) {
      const logoutUrl = await this.oauthSignout.signout(oauthSessionId, this.options.signoutRedirectUrl);
      if (logoutUrl) return { status: true, redirect_url: logoutUrl };
    }
    if (this.options.signoutRedirectUrl) return { status: true, redirect_url: this.options.signoutRedirectUrl };
    return { status: true };
  }

  // ---- the signed-in user's own account ---------------------------------------

  async updateProfile(user: UserRecord, form: UpdateProfileForm): Promise<UserProfileImageResponse> {
    this.checkProfileImage(form.profile_image_url);
    const fields = {
      profile_image_url: form.profile_image_url,
      name: form.name,
      bio: form.bio ?? null,
      gender: form.gender ?? null,
      date_of_birth: form.date_of_birth ?? null,
    };
    const updated = await this.core.db.transaction().execute(async (trx) => {
      const result = await this.users.update(user.id, fields, trx);
      if (!result) throw badRequest(ERROR.DEFAULT());
      await this.core.events.publish(
        { event: 'user.profile_updated', actor: user, subjectId: user.id, data: { updated_fields: Object.keys(fields) } },
        trx,
      );
      return result;
    });
    return { id: updated.id, name: updated.name, role: updated.role, email: updated.email, profile_image_url: updated.profile_image_url };
  }

  async updateTimezone(user: UserRecord, timezone: string): Promise<{ status: boolean }> {
    await this.core.db.transaction().execute(async (trx) => {
      await this.users.update(user.id, { timezone }, trx);
      await this.core.events.publish({ event: 'user.updated', actor: user, subjectId: user.id, data: { updated_fields: ['timezone'] } }, trx);
    });
    return { status: true };
  }

  async updatePassword(user: UserRecord, form: UpdatePasswordForm): Promise<boolean> {
    // With a trusted header the proxy owns passwords.
    if (this.options.trustedEmailHeader) throw badRequest(ERROR.ACTION_PROHIBITED);
    const verified = await this.authenticate(user.email, form.password);
    if (!verified) throw badRequest(ERROR.INCORRECT_PASSWORD);
    this.checkNewPassword(form.new_password);
    const hash = await hashPassword(form.new_password);
    return this.core.db.transaction().execute(async (trx) => {
      const changed = await this.store(trx).updatePassword(verified.id, hash);
      if (changed) {
        await this.core.events.publish({ event: 'auth.password_changed', actor: verified, subjectId: verified.id, subjectType: 'user' }, trx);
      }
      return changed;
    });
  }

  /** Replaces a user's password (the admin's user editing); 400 when the new one is not acceptable. */
  async setPassword(userId: string, password: string, db: Db = this.core.db): Promise<boolean> {
    this.checkNewPassword(password);
    return this.store(db).updatePassword(userId, await hashPassword(password));
  }

  /** Keeps the credential's login address in step with the user's e-mail (the admin's user editing). */
  async setEmail(userId: string, email: string, db: Db = this.core.db): Promise<void> {
    await this.store(db).updateEmail(userId, email.toLowerCase());
  }

  // ---- API keys ---------------------------------------------------------------

  /**
   * Null when the user may use API keys, else why not and who can change it, after the reference's
   * words (`refusal`), which clients may match.
   */
  private async apiKeyRefusal(user: UserRecord, refusal: string): Promise<string | null> {
    if (!this.setting<boolean>(enableApiKeysSetting)) {
      return `${refusal} API keys are switched off: an admin switches them on in Admin Settings > General (or POST /api/v1/configs/import with auth.enable_api_keys: true).`;
    }
    if (isAdmin(user) || (await this.access.hasPermission(user, 'features.api_keys'))) return null;
    return `${refusal} Your account lacks the features.api_keys permission: an admin grants it in the default permissions or a group's.`;
  }

  private async checkApiKeyManagement(user: UserRecord): Promise<void> {
    const refusal = await this.apiKeyRefusal(user, ERROR.API_KEY_CREATION_NOT_ALLOWED);
    if (refusal) throw forbidden(refusal);
  }

  async createApiKey(user: UserRecord): Promise<{ api_key: string }> {
    await this.checkApiKeyManagement(user);
    const key = `sk-${randomBytes(16).toString('hex')}`;
    const now = this.core.clock.now();
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).replaceApiKey(user.id, key, now);
      await this.core.events.publish({ event: 'auth.api_key.created', actor: user, subjectId: user.id, subjectType: 'user' }, trx);
    });
    return { api_key: key };
  }

  async apiKey(user: UserRecord): Promise<{ api_key: string }> {
    await this.checkApiKeyManagement(user);
    const key = await this.store().apiKeyOf(user.id);
    if (!key) throw notFound(ERROR.API_KEY_NOT_FOUND);
    return { api_key: key };
  }

  async deleteApiKey(user: UserRecord): Promise<boolean> {
    await this.checkApiKeyManagement(user);
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).deleteApiKey(user.id);
      await this.core.events.publish({ event: 'auth.api_key.deleted', actor: user, subjectId: user.id, subjectType: 'user' }, trx);
    });
    return true;
  }

  /** Refuses an `sk-` key where API keys are off, not permitted, or restricted to other paths (403). */
  async checkApiKeyUse(user: UserRecord, path: string): Promise<void> {
    const refusal = await this.apiKeyRefusal(user, ERROR.API_KEY_NOT_ALLOWED);
    if (refusal) throw forbidden(refusal);
    if (!this.setting<boolean>(apiKeyRestrictionsSetting)) return;
    const allowed = String(this.setting<string>(apiKeyAllowedEndpointsSetting) ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    if (!allowed.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  // ---- OAuth ----------------------------------------------------------------------

  /** A user's OAuth sessions, without their tokens. */
  oauthSessionsOf(userId: string) {
    return this.store().oauthSessionsOf(userId);
  }

  async deleteOAuthSession(user: UserRecord, provider: string): Promise<boolean> {
    await this.core.db.transaction().execute(async (trx) => {
      const deleted = await this.store(trx).deleteOAuthSessions(user.id, provider);
      if (deleted === 0) throw notFound('No OAuth session found for this provider');
      await this.core.events.publish(
        { event: 'auth.oauth_session.deleted', actor: user, subjectId: user.id, subjectType: 'user', data: { provider } },
        trx,
      );
    });
    return true;
  }

  // ---- admin settings -------------------------------------------------------------

  async adminDetails(): Promise<{ name: string | null; email: string | null }> {
    if (!this.setting<boolean>(showAdminDetailsSetting)) throw badRequest(ERROR.ACTION_PROHIBITED);
    const configured = this.setting<string | null>(adminEmailSetting);
    if (configured) return { name: (await this.users.byEmail(configured))?.name ?? null, email: configured };
    const firstId = await this.users.store().firstUserId();
    const admin = firstId ? await this.users.byId(firstId) : null;
    return { name: admin?.name ?? null, email: admin?.email ?? null };
  }

  private valuesOf(keys: Record<string, string>): Record<string, unknown> {
    return Object.fromEntries(Object.entries(keys).map(([field, key]) => [field, this.core.settings.get(key)]));
  }

  private updatesFor(form: Record<string, unknown>, keys: Record<string, string>): Record<string, unknown> {
    return Object.fromEntries(Object.entries(form).filter(([field]) => field in keys).map(([field, value]) => [keys[field], value]));
  }

  adminConfig(): Record<string, unknown> {
    return this.valuesOf(ADMIN_CONFIG_KEYS);
  }

  async updateAdminConfig(form: AdminConfig): Promise<Record<string, unknown>> {
    const updates = this.updatesFor(form, ADMIN_CONFIG_KEYS);
    const optionalCount = (field: 'FOLDER_MAX_FILE_COUNT' | 'AUTOMATION_MAX_COUNT' | 'AUTOMATION_MIN_INTERVAL') => {
      const value = form[field];
      if (!value) return '';
      const n = typeof value === 'number' ? value : Number(value.trim());
      if (!Number.isInteger(n)) throw badRequest(ERROR.INCORRECT_FORMAT(`: ${field} must be an integer`));
      return n;
    };
    updates[ADMIN_CONFIG_KEYS.FOLDER_MAX_FILE_COUNT] = optionalCount('FOLDER_MAX_FILE_COUNT');
    updates[ADMIN_CONFIG_KEYS.AUTOMATION_MAX_COUNT] = optionalCount('AUTOMATION_MAX_COUNT');
    updates[ADMIN_CONFIG_KEYS.AUTOMATION_MIN_INTERVAL] = optionalCount('AUTOMATION_MIN_INTERVAL');
    // Values the settings' checks refuse are left unchanged, as the reference does (an import refuses them).
    for (const setting of [defaultUserRoleSetting, channelResponseModeSetting, jwtExpirySetting]) {
      if (await setting.check?.(updates[setting.key], this.core.env.raw)) delete updates[setting.key];
    }
    await this.core.settings.set(updates, this.core.clock.now());
    return this.adminConfig();
  }

  ldapServerConfig(): LdapServerConfig {
    return this.valuesOf(LDAP_SERVER_CONFIG_KEYS) as LdapServerConfig;
  }

  async updateLdapServerConfig(form: LdapServerConfig): Promise<LdapServerConfig> {
    for (const field of ['label', 'host', 'attribute_for_mail', 'attribute_for_username', 'search_base'] as const) {
      if (!form[field]) throw badRequest(requiredFieldEmpty(field));
    }
    // Group sync reads this attribute; empty, it would silently do nothing.
    if (form.enable_group_management && !(form.attribute_for_groups ?? '').trim()) throw badRequest(requiredFieldEmpty('attribute_for_groups'));
    await this.core.settings.set(this.updatesFor(form, LDAP_SERVER_CONFIG_KEYS), this.core.clock.now());
    return this.ldapServerConfig();
  }

  ldapConfig(): { ENABLE_LDAP: boolean | null } {
    return { ENABLE_LDAP: this.setting<boolean | null>(ldapEnableSetting) };
  }

  async updateLdapConfig(enable: boolean | null | undefined): Promise<{ ENABLE_LDAP: boolean | null }> {
    await this.core.settings.set({ [ldapEnableSetting.key]: enable ?? null }, this.core.clock.now());
    return this.ldapConfig();
  }

  oauthConfig(): Record<string, unknown> {
    const values = this.valuesOf(OAUTH_CONFIG_KEYS);
    for (const field of OAUTH_COMMA_LIST_FIELDS) {
      if (Array.isArray(values[field])) values[field] = (values[field] as unknown[]).map(String).join(',');
    }
    return values;
  }

  /** Only the fields sent (and not null) change; comma-separated lists are stored as lists. */
  async updateOAuthConfig(form: OAuthConfigForm): Promise<Record<string, unknown>> {
    const sent = Object.fromEntries(
      Object.entries(form)
        .filter(([, value]) => value !== null && value !== undefined)
        .map(([field, value]) => [
          field,
          OAUTH_COMMA_LIST_FIELDS.has(field) && typeof value === 'string'
            ? value
                .split(',')
                .map((item) => item.trim())
                .filter(Boolean)
            : value,
        ]),
    );
    await this.core.settings.set(this.updatesFor(sent, OAUTH_CONFIG_KEYS), this.core.clock.now());
    return this.oauthConfig();
  }
}
