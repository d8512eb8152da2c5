import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { credentialOf, TOKEN_COOKIE } from '../../core/auth/guard.js';
import { clearCookie, cookieHeader } from '../../core/http/cookies.js';
import type { App } from '../../core/http/server.js';
import { JsonObject, StatusResponse } from '../../core/http/schema.js';
import {
  AddUserForm,
  AdminConfig,
  AdminDetailsResponse,
  ApiKeyResponse,
  LdapConfigForm,
  LdapConfigResponse,
  LdapForm,
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
  UpdateTimezoneForm,
  UserProfileImageResponse,
} from './schemas.js';
import type { AuthsService, IssuedToken } from './service.js';

/** Cookies a sign-out removes (the session token and the OAuth leftovers). */
const SIGNOUT_COOKIES = [TOKEN_COOKIE, 'oui-session', 'oauth_id_token'];
const OAUTH_SESSION_COOKIE = 'oauth_session_id';

/** `/api/v1/auths`: sign-up, sign-in, sessions, own account, API keys and the admin's auth settings. */
async function authsRoutes(app: App, ctx: AreaContext<{ auths: AuthsService }>): Promise<void> {
  const auths = ctx.services.auths;
  const { env } = ctx.core;
  const tags = ['auths'];

  /**
   * The HttpOnly `token` cookie the frontend's cookie-only requests rely on, living as long as the
   * token. Serialised once per token object: the session check reuses one a second (docs/bench.md).
   */
  const tokenCookies = new WeakMap<IssuedToken, string>();
  const setTokenCookie = (reply: FastifyReply, issued: IssuedToken | null) => {
    if (!issued) return;
    let header = tokenCookies.get(issued);
    if (header === undefined) {
      header = cookieHeader(TOKEN_COOKIE, issued.token, {
        path: '/',
        httpOnly: true,
        sameSite: env.cookieSameSite,
        secure: env.cookieSecure,
        ...(issued.expiresAt === null ? {} : { expires: new Date(issued.expiresAt * 1000), maxAge: issued.maxAge ?? undefined }),
      });
      tokenCookies.set(issued, header);
    }
    reply.header('set-cookie', header);
  };

  app.get('/', { onRequest: ctx.auth.current, schema: { tags, response: { 200: SessionUserInfoResponse } } }, async (request, reply) => {
    const session = await auths.sessionInfo(request.user!, request.token, request.tokenClaims);
    setTokenCookie(reply, session.cookie);
    return session.body;
  });

  app.post('/signup', { config: { bodyClass: 'unauthenticated' }, schema: { tags, body: SignupForm, response: { 200: SessionUserResponse } } }, async (request, reply) => {
    const session = await auths.signup(request.body);
    setTokenCookie(reply, session.cookie);
    return session.body;
  });

  app.post('/signin', { config: { bodyClass: 'unauthenticated' }, schema: { tags, body: SigninForm, response: { 200: SessionUserResponse } } }, async (request, reply) => {
    const session = await auths.signin(request.body, request.headers);
    setTokenCookie(reply, session.cookie);
    return session.body;
  });

  app.post('/ldap', { config: { bodyClass: 'unauthenticated' }, schema: { tags, body: LdapForm, response: { 200: SessionUserResponse } } }, async (request, reply) => {
    const session = await auths.ldapSignin(request.body);
    setTokenCookie(reply, session.cookie);
    return session.body;
  });

  // The frontend sends this with the cookie only; it works without any valid credential.
  app.post('/signout', { schema: { tags, response: { 200: SignoutResponse } } }, async (request, reply) => {
    const oauthSessionId = request.cookies[OAUTH_SESSION_COOKIE] ?? null;
    for (const name of SIGNOUT_COOKIES) clearCookie(reply, name);
    if (oauthSessionId) clearCookie(reply, OAUTH_SESSION_COOKIE);
    return auths.signout(credentialOf(request), oauthSessionId);
  });

  app.post('/add', { onRequest: ctx.auth.admin, schema: { tags, body: AddUserForm, response: { 200: SigninResponse } } }, async (request) =>
    auths.addUser(request.user!, request.body),
  );

  app.post(
    '/update/profile',
    { onRequest: ctx.auth.verified, schema: { tags, body: UpdateProfileForm, response: { 200: UserProfileImageResponse } } },
    async (request) => auths.updateProfile(request.user!, request.body),
  );

  app.post(
    '/update/timezone',
    { onRequest: ctx.auth.current, schema: { tags, body: UpdateTimezoneForm, response: { 200: StatusResponse } } },
    async (request) => auths.updateTimezone(request.user!, request.body.timezone),
  );

  app.post(
    '/update/password',
    { onRequest: ctx.auth.current, schema: { tags, body: UpdatePasswordForm, response: { 200: Type.Boolean() } } },
    async (request) => auths.updatePassword(request.user!, request.body),
  );

  app.get('/admin/details', { onRequest: ctx.auth.current, schema: { tags, response: { 200: AdminDetailsResponse } } }, async () =>
    auths.adminDetails(),
  );

  app.get('/admin/config', { onRequest: ctx.auth.admin, schema: { tags, response: { 200: JsonObject() } } }, async () => auths.adminConfig());

  app.post('/admin/config', { onRequest: ctx.auth.admin, schema: { tags, body: AdminConfig, response: { 200: JsonObject() } } }, async (request) =>
    auths.updateAdminConfig(request.body),
  );

  app.get('/admin/config/ldap/server', { onRequest: ctx.auth.admin, schema: { tags, response: { 200: LdapServerConfig } } }, async () =>
    auths.ldapServerConfig(),
  );

  app.post(
    '/admin/config/ldap/server',
    { onRequest: ctx.auth.admin, schema: { tags, body: LdapServerConfig, response: { 200: JsonObject() } } },
    async (request) => auths.updateLdapServerConfig(request.body),
  );

  app.get('/admin/config/ldap', { onRequest: ctx.auth.admin, schema: { tags, response: { 200: LdapConfigResponse } } }, async () =>
    auths.ldapConfig(),
  );

  app.post(
    '/admin/config/ldap',
    { onRequest: ctx.auth.admin, schema: { tags, body: LdapConfigForm, response: { 200: LdapConfigResponse } } },
    async (request) => auths.updateLdapConfig(request.body.enable_ldap),
  );

  app.get('/admin/config/oauth', { onRequest: ctx.auth.admin, schema: { tags, response: { 200: OAuthConfigForm } } }, async () =>
    auths.oauthConfig(),
  );

  app.post(
    '/admin/config/oauth',
    { onRequest: ctx.auth.admin, schema: { tags, body: OAuthConfigForm, response: { 200: OAuthConfigForm } } },
    async (request) => auths.updateOAuthConfig(request.body),
  );

  app.post('/api_key', { onRequest: ctx.auth.current, schema: { tags, response: { 200: ApiKeyResponse } } }, async (request) =>
    auths.createApiKey(request.user!),
  );

  app.get('/api_key', { onRequest: ctx.auth.current, schema: { tags, response: { 200: ApiKeyResponse } } }, async (request) =>
    auths.apiKey(request.user!),
  );

  app.delete('/api_key', { onRequest: ctx.auth.current, schema: { tags, response: { 200: Type.Boolean() } } }, async (request) =>
    auths.deleteApiKey(request.user!),
  );

  // `{provider:path}`: provider names may contain slashes (e.g. MCP servers).
  app.delete(
    '/oauth/sessions/*',
    { onRequest: ctx.auth.verified, schema: { tags, params: Type.Object({ '*': Type.String() }), response: { 200: Type.Boolean() } } },
    async (request) => auths.deleteOAuthSession(request.user!, request.params['*']),
  );
}

export const authsArea = defineArea('/api/v1/auths', authsRoutes);
