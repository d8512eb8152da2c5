import { parse, serialize, type SerializeOptions } from 'cookie';
import type { FastifyInstance, FastifyReply } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's cookies, parsed from the `Cookie` header at first use. */
    readonly cookies: Record<string, string | undefined>;
  }
}

export type CookieOptions = SerializeOptions;

const PARSED = Symbol('parsed cookies');
const NO_COOKIES: Record<string, string | undefined> = Object.freeze({});

/**
 * `request.cookies`, parsed only by the requests that read it: no hook runs on
 * the others (a hook per request costs more than the parsing it saves).
 */
export function registerCookies(app: FastifyInstance): void {
  app.decorateRequest('cookies', {
    getter(this: { headers: { cookie?: string }; [PARSED]?: Record<string, string | undefined> }) {
      return (this[PARSED] ??= this.headers.cookie ? parse(this.headers.cookie) : NO_COOKIES);
    },
  });
}

/** The value of a `Set-Cookie` header. */
export function cookieHeader(name: string, value: string, options: CookieOptions): string {
  return serialize(name, value, options);
}

/** Tells the browser to drop a cookie: empty and expired since 1970, as Starlette's `delete_cookie` (Max-Age=0). */
export function clearCookie(reply: FastifyReply, name: string, options: CookieOptions = {}): void {
  // Fastify adds a `set-cookie` header to those already set, so several cookies can go in one answer.
  reply.header('set-cookie', cookieHeader(name, '', { path: '/', ...options, expires: new Date(0), maxAge: 0 }));
}
