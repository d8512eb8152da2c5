import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * CORS as the reference answers it: Starlette's CORSMiddleware with `CORS_ALLOW_ORIGIN`,
 * credentials allowed, every method and every header.
 *
 * - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered
 *   here, before any route: 200 `OK`, or 400 `Disallowed CORS origin` for an origin not
 *   listed, with the requested headers mirrored back.
 * - Any other request with an `Origin` gets `Access-Control-Allow-Credentials: true` and,
 *   when its origin is allowed, that origin mirrored in `Access-Control-Allow-Origin`
 *   (never `*`: browsers refuse `*` with credentials).
 * - Every answer varies on `Origin`. A request without `Origin` (an SDK, curl) gets
 *   nothing else, which keeps the common path to one header.
 */
const ALL_METHODS = 'DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT';
const PREFLIGHT_VARY = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers, Access-Control-Request-Private-Network';

export function corsHook(allowOrigins: string[]) {
  const allowAll = allowOrigins.includes('*');
  const allowed = new Set(allowOrigins);
  const isAllowed = (origin: string) => allowAll || allowed.has(origin);

  return function cors(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const origin = request.headers.origin;
    if (origin === undefined) {
      reply.header('vary', 'Origin');
      return done();
    }
    const requestedMethod = request.headers['access-control-request-method'];
    if (request.method === 'OPTIONS' && requestedMethod !== undefined) {
      const failures: string[] = [];
      if (isAllowed(origin)) reply.header('access-control-allow-origin', origin);
      else failures.push('origin');
      if (!ALL_METHODS.split(', ').includes(String(requestedMethod))) failures.push('method');
      const requestedHeaders = request.headers['access-control-request-headers'];
      if (requestedHeaders !== undefined) reply.header('access-control-allow-headers', requestedHeaders);
      if (request.headers['access-control-request-private-network'] !== undefined) failures.push('private-network');
      reply
        .code(failures.length ? 400 : 200)
        .headers({
          vary: PREFLIGHT_VARY,
          'access-control-allow-methods': ALL_METHODS,
          'access-control-max-age': '600',
          'access-control-allow-credentials': 'true',
        })
        .type('text/plain; charset=utf-8')
        .send(failures.length ? `Disallowed CORS ${failures.join(', ')}` : 'OK');
      return;
    }
    reply.header('access-control-allow-credentials', 'true');
    if (isAllowed(origin)) reply.header('access-control-allow-origin', origin);
    reply.header('vary', 'Origin');
    done();
  };
}
