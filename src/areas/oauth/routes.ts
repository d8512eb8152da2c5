import type { IncomingMessage } from 'node:http';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { clearCookie, cookieHeader } from '../../core/http/cookies.js';
import type { App } from '../../core/http/server.js';
import { ProviderParams, SessionUserResponse, TokenExchangeForm } from '../auths/schemas.js';
import type { OAuthService } from './service.js';

/** The sealed login flow (state, nonce, PKCE verifier) between /login and /callback. */
const FLOW_COOKIE = 'oauth_flow';
const tags = ['oauth'];

/**
 * `/oauth/*` (main.py): sign-in through a provider, its callback (also at the legacy path), the
 * OpenID back-channel logout, and the token exchange (`/api/v1/auths/oauth/{provider}/token/exchange`).
 */
async function oauthRoutes(app: App, ctx: AreaContext<{ oauth: OAuthService }>): Promise<void> {
  const oauth = ctx.services.oauth;
  const { env } = ctx.core;
  const cookie = { sameSite: env.cookieSameSite, secure: env.cookieSecure } as const;
  const requestBase = (request: FastifyRequest) => `${request.protocol}://${request.host}`;
  // Lax: the provider's redirect back is a top-level navigation from another site.
  const setFlowCookie = (reply: FastifyReply, flow: string) =>
    reply.header('set-cookie', cookieHeader(FLOW_COOKIE, flow, { path: '/oauth', httpOnly: true, sameSite: 'lax', secure: env.cookieSecure, maxAge: 600 }));

  app.get('/oauth/:provider/login', { schema: { tags, params: ProviderParams } }, async (request, reply) => {
    const { location, flow } = await oauth.login(request.params.provider, requestBase(request));
    if (flow) setFlowCookie(reply, flow);
    return reply.redirect(location, 302);
  });

  const callback = async (request: FastifyRequest<{ Params: { provider: string } }>, reply: FastifyReply) => {
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
    const result = await oauth.callback(request.params.provider, query, request.cookies[FLOW_COOKIE], requestBase(request));
    clearCookie(reply, FLOW_COOKIE, { path: '/oauth' });
    if (result.session) {
      const { token, oauthSessionId, idToken } = result.session;
      const lifetime = token.maxAge === null ? {} : { maxAge: token.maxAge };
      // Not HttpOnly: the frontend's /auth page reads it (the reference sets it so).
      reply.header('set-cookie', cookieHeader('token', token.token, { path: '/', ...cookie, ...lifetime }));
      if (oauthSessionId) reply.header('set-cookie', cookieHeader('oauth_session_id', oauthSessionId, { path: '/', httpOnly: true, ...cookie, ...lifetime }));
      if (idToken && oauth.options.idTokenCookie) reply.header('set-cookie', cookieHeader('oauth_id_token', idToken, { path: '/', httpOnly: true, ...cookie, ...lifetime }));
    }
    return reply.redirect(result.location, 302);
  };
  app.get('/oauth/:provider/login/callback', { schema: { tags, params: ProviderParams } }, callback);
  app.get('/oauth/:provider/callback', { schema: { tags, params: ProviderParams } }, callback);

  // A tool server's own OAuth 2.1 authorization (MCP): the signed-in user grants Parley access there.
  const ClientParams = Type.Object({ client_id: Type.String() });
  app.get('/oauth/clients/:client_id/authorize', { onRequest: ctx.auth.verified, schema: { tags, params: ClientParams } }, async (request, reply) => {
    const { location, flow } = await oauth.clientAuthorize(request.params.client_id, requestBase(request));
    setFlowCookie(reply, flow);
    return reply.redirect(location, 302);
  });
  app.get('/oauth/clients/:client_id/callback', { onRequest: ctx.auth.verified, schema: { tags, params: ClientParams } }, async (request, reply) => {
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
    const location = await oauth.clientCallback(request.params.client_id, request.user!, query, request.cookies[FLOW_COOKIE], requestBase(request));
    clearCookie(reply, FLOW_COOKIE, { path: '/oauth' });
    return reply.redirect(location, 302);
  });

  // Loaded by the provider in a hidden frame of the browser, with the browser's cookies.
  app.get(
    '/oauth/frontchannel-logout',
    { schema: { tags, querystring: Type.Object({ iss: Type.Optional(Type.String()), sid: Type.Optional(Type.String()) }) } },
    async (request, reply) => {
      const sessionId = request.cookies.oauth_session_id ?? null;
      if (await oauth.frontchannelLogout(request.query.iss, request.cookies.token ?? null, sessionId)) {
        for (const name of ['token', 'oauth_session_id', 'oauth_id_token']) clearCookie(reply, name);
      }
      return reply.header('cache-control', 'no-cache, no-store').type('text/html; charset=utf-8').send('<!doctype html><title>Signed out</title>');
    },
  );

  await app.register(async (scope: App) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', async (request: FastifyRequest, payload: IncomingMessage) =>
      Object.fromEntries(new URLSearchParams((await scope.readBody(request, payload)).toString('utf8'))),
    );
    scope.post(
      '/oauth/backchannel-logout',
      { config: { bodyClass: 'unauthenticated' }, schema: { tags, body: Type.Optional(Type.Record(Type.String(), Type.String())) } },
      async (request, reply) => {
        const answer = await oauth.backchannelLogout(request.body?.logout_token);
        reply.header('cache-control', 'no-store');
        return reply.code(answer.status).send(answer.body);
      },
    );
  });

  app.post(
    '/api/v1/auths/oauth/:provider/token/exchange',
    { config: { bodyClass: 'unauthenticated' }, schema: { tags: ['auths'], params: ProviderParams, body: TokenExchangeForm, response: { 200: SessionUserResponse } } },
    async (request) => (await oauth.exchangeToken(request.params.provider, request.body.token)).body,
  );
}

export const oauthArea = defineArea(null, oauthRoutes);
