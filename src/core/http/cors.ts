import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * CORS as the reference answers it: Starlette's CORSMiddleware with `CORS_ALLOW_ORIGIN`,
 * credentials allowed, every method and every header. It runs on the raw request, before
 * Fastify (no hook per request):
 *
 * - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered
 *   here, before any route: 200 `OK`, or 400 `Disallowed CORS origin` for an origin not
 *   listed, with the requested headers mirrored back.
 * - Any other request with an `Origin` gets `Access-Control-Allow-Credentials: true` and,
 *   when its origin is allowed, that origin mirrored in `Access-Control-Allow-Origin`
 *   (never `*`: browsers refuse `*` with credentials).
 * - Every answer varies on `Origin`. A request without `Origin` (an SDK, curl) gets
 *   nothing else.
 *
 * Returns a function that sets the headers and says whether it answered the request.
 */
const ALL_METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];
const ALLOW_METHODS = ALL_METHODS.join(', ');
const PREFLIGHT_VARY = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers, Access-Control-Request-Private-Network';

export function corsHandler(allowOrigins: string[]) {
  const allowAll = allowOrigins.includes('*');
  const allowed = new Set(allowOrigins);
  const isAllowed = (origin: string) => allowAll || allowed.has(origin);

  function preflight(request: IncomingMessage, response: ServerResponse, origin: string, method: string): void {
    const failures: string[] = [];
    const headers: Record<string, string> = {
      vary: PREFLIGHT_VARY,
      'access-control-allow-methods': ALLOW_METHODS,
      'access-control-max-age': '600',
      'access-control-allow-credentials': 'true',
      'content-type': 'text/plain; charset=utf-8',
    };
    if (isAllowed(origin)) headers['access-control-allow-origin'] = origin;
    else failures.push('origin');
    if (!ALL_METHODS.includes(method)) failures.push('method');
    const requestedHeaders = request.headers['access-control-request-headers'];
    if (requestedHeaders !== undefined) headers['access-control-allow-headers'] = requestedHeaders;
    if (request.headers['access-control-request-private-network'] !== undefined) failures.push('private-network');
    response.writeHead(failures.length ? 400 : 200, headers);
    response.end(failures.length ? `Disallowed CORS ${failures.join(', ')}` : 'OK');
  }

  return function cors(request: IncomingMessage, response: ServerResponse): boolean {
    const origin = request.headers.origin;
    if (origin === undefined) {
      response.setHeader('vary', 'Origin');
      return false;
    }
    const requestedMethod = request.headers['access-control-request-method'];
    if (request.method === 'OPTIONS' && typeof requestedMethod === 'string') {
      preflight(request, response, origin, requestedMethod);
      return true;
    }
    response.setHeader('access-control-allow-credentials', 'true');
    if (isAllowed(origin)) response.setHeader('access-control-allow-origin', origin);
    response.setHeader('vary', 'Origin');
    return false;
  };
}
