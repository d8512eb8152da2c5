import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { clearCookie } from '../http/cookies.js';
import { ERROR, HttpError } from '../http/errors.js';
import type { TokenCheck, TokenClaims, TokenService } from './tokens.js';
import type { UserRecord } from './user.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in user, set by the auth hooks; null on public routes without credentials. */
    user: UserRecord | null;
    /** The credential the user presented, as the frontend needs it echoed back. */
    token: string | null;
    /** The session token's verified claims (null for an API key or no credential). */
    tokenClaims: TokenClaims | null;
  }
}

export interface AuthLookups {
  userById(id: string): Promise<UserRecord | null>;
  /** The user when the session cache holds it (null: no such user); undefined when it must be looked up. */
  cachedUserById(id: string): UserRecord | null | undefined;
  userByApiKey(key: string): Promise<UserRecord | null>;
  /** Whether API keys may be used by this user on this path (checked only for `sk-` credentials). */
  checkApiKeyUse(user: UserRecord, path: string): Promise<void>;
  touch(user: UserRecord): void;
}

/** Bearer header first, then the `token` cookie, then `x-api-key`, as the reference's middleware. */
export function credentialOf(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (header) {
    // `<scheme> <credentials>`, exactly one space (split by hand: this runs on every request).
    const space = header.indexOf(' ');
    if (space > 0 && space < header.length - 1 && header.indexOf(' ', space + 1) === -1 && header.slice(0, space).toLowerCase() === 'bearer') {
      return header.slice(space + 1);
    }
  }
  const cookie = request.cookies.token;
  if (cookie) return cookie;
  const apiKey = request.headers['x-api-key'];
  return typeof apiKey === 'string' && apiKey ? apiKey : null;
}

export const TOKEN_COOKIE = 'token';

/**
 * Hooks that resolve the request's user, one per level of the reference's auth
 * dependencies. Both role checks answer 401 (not 403), as the reference does.
 */
export interface GuardOptions {
  /** `WEBUI_AUTH_TRUSTED_EMAIL_HEADER`, lower-cased: a session must belong to the user the proxy vouches for. */
  trustedEmailHeader: string | null;
}

export function createAuthGuard(tokens: TokenService, lookups: AuthLookups, options: GuardOptions) {
  /** The checks on a session token's answer and its user, once both are known. */
  function admitSession(request: FastifyRequest, reply: FastifyReply, checked: TokenCheck, user: UserRecord | null): UserRecord {
    if ('refused' in checked) {
      if (request.cookies.token) clearCookie(reply, TOKEN_COOKIE);
      throw new HttpError(401, checked.refused === 'revoked' ? 'Invalid token' : ERROR.UNAUTHORIZED);
    }
    if (!user) {
      if (request.cookies.token) clearCookie(reply, TOKEN_COOKIE);
      throw new HttpError(401, ERROR.INVALID_TOKEN);
    }
    if (options.trustedEmailHeader) {
      const trusted = request.headers[options.trustedEmailHeader];
      if (typeof trusted === 'string' && trusted && trusted.toLowerCase() !== user.email) {
        throw new HttpError(401, 'User mismatch. Please sign in again.');
      }
    }
    request.tokenClaims = checked.claims;
    lookups.touch(user);
    return user;
  }

  async function resolve(request: FastifyRequest, reply: FastifyReply): Promise<UserRecord> {
    const credential = credentialOf(request);
    if (!credential) throw new HttpError(401, 'Not authenticated');
    request.token = credential;
    if (credential.startsWith('sk-')) {
      const user = await lookups.userByApiKey(credential);
      if (!user) throw new HttpError(401, ERROR.INVALID_TOKEN);
      await lookups.checkApiKeyUse(user, request.url.split('?')[0]);
      lookups.touch(user);
      return user;
    }
    const checked = await tokens.check(credential);
    const user = 'claims' in checked ? await lookups.userById(checked.claims.id) : null;
    return admitSession(request, reply, checked, user);
  }

  /**
   * `resolve` without waiting, when the token was verified before and its user is cached (most
   * requests); undefined when something must be looked up. Skipping the promises saves a few
   * microseconds on every signed-in request (docs/bench.md).
   */
  function resolveNow(request: FastifyRequest, reply: FastifyReply): UserRecord | undefined {
    const credential = credentialOf(request);
    if (!credential || credential.startsWith('sk-')) return undefined;
    const checked = tokens.checkKnown(credential);
    if (!checked) return undefined;
    const user = 'claims' in checked ? lookups.cachedUserById(checked.claims.id) : null;
    if (user === undefined) return undefined;
    request.token = credential;
    return admitSession(request, reply, checked, user);
  }

  function admit(request: FastifyRequest, user: UserRecord, roles: string[] | null): void {
    if (roles && !roles.includes(user.role)) throw new HttpError(401, ERROR.ACCESS_PROHIBITED);
    request.user = user;
  }

  const roleHook = (roles: string[] | null) => (request: FastifyRequest, reply: FastifyReply, done: (error?: FastifyError) => void) => {
    try {
      const user = resolveNow(request, reply);
      if (user) {
        admit(request, user, roles);
        return done();
      }
    } catch (error) {
      return done(error as FastifyError);
    }
    resolve(request, reply)
      .then((user) => admit(request, user, roles))
      .then(
        () => done(),
        (error: FastifyError) => done(error),
      );
  };

  return {
    /** Any signed-in user, including role `pending` (`get_current_user`). */
    current: roleHook(null),
    /** Role `user` or `admin` (`get_verified_user`). */
    verified: roleHook(['user', 'admin']),
    /** Role `admin` (`get_admin_user`). */
    admin: roleHook(['admin']),
    /** Public routes that look at credentials when present; a bad credential is simply ignored. */
    optional: async (request: FastifyRequest, reply: FastifyReply) => {
      if (!credentialOf(request)) return;
      try {
        request.user = await resolve(request, reply);
      } catch {
        request.user = null;
      }
    },
  };
}

export type AuthGuard = ReturnType<typeof createAuthGuard>;
