import { createServer, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type RawReplyDefaultExpression, type RawRequestDefaultExpression, type RawServerDefault } from 'fastify';
import fastJsonStringify from 'fast-json-stringify';
import findMyWay from 'find-my-way';
import { registerCookies } from './cookies.js';
import { corsHandler } from './cors.js';
import { registerDocs } from './docs.js';
import { HttpError, openAIError } from './errors.js';
import { BodyReader, BodyRefused, dropRestOfBody, nestsDeeperThan, readRequestLimits, type RequestLimits } from './limits.js';
import { lazyRequestLogger } from './request-logger.js';
import { REQUEST_ID_HEADER, requestIdOf, withRequestId } from '../observability/request-id.js';
import { clippedDetails, schemaCompiler, validationDetails, type ValidationDetail } from './validation.js';

declare module 'node:http' {
  interface IncomingMessage {
    /** The request's id (`X-Request-ID`), set before Fastify sees the request. */
    parleyRequestId?: string;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** A route's whole body as bytes, under its body class's limit (for content-type parsers of raw bodies). */
    readBody(request: FastifyRequest, payload: IncomingMessage): Promise<Buffer>;
  }
}

export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

/** Paths that belong to the API: unknown ones answer JSON 404, never the web page. */
export const API_PREFIXES = ['/api/', '/api', '/ollama', '/openai', '/oauth', '/ws/'];

export function isApiPath(url: string): boolean {
  const path = url.split('?')[0];
  return API_PREFIXES.some((prefix) => path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`));
}

export interface HttpServerOptions {
  logger: FastifyBaseLogger;
  corsAllowOrigin: string[];
  version: string;
  /** Body sizes, timeouts and the connection cap (`limits.ts`); the documented defaults when absent. */
  limits?: RequestLimits;
  /** FILE_MAX_SIZE in MB, read at each upload; null (the default): no limit. */
  uploadLimitMb?: () => number | null;
  /** Carries the request id into every log line written while a request is handled (`request-id.ts`); default true. */
  requestContext?: boolean;
  /** Serves the web frontend for GET (and so HEAD) requests no route matched; returns false when it has nothing. */
  fallback?: (request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;
}

/** Sockets whose first request has not arrived yet: closed by the idle timeout set at connection. */
const awaitingFirstRequest = new WeakSet<Socket>();

/**
 * Route `config` of the OpenAI-compatible routes: their errors also carry OpenAI's `error` object,
 * so the official SDKs show the reason (`detail` stays, as the reference sends it).
 */
export const OPENAI_COMPATIBLE = { openAICompatible: true };

declare module 'fastify' {
  interface FastifyContextConfig {
    openAICompatible?: boolean;
  }
}

function sendDetail(reply: FastifyReply, status: number, detail: unknown) {
  const shown = status === 422 ? clippedDetails(detail) : detail;
  const body = reply.request.routeOptions.config?.openAICompatible ? { detail: shown, error: openAIError(status, shown) } : { detail: shown };
  return reply.code(status).type('application/json').send(body);
}

/**
 * The Fastify instance with the interface's plumbing: FastAPI-shaped errors,
 * 405 for a known path with another method, JSON bodies parsed so that broken
 * JSON is a 422, and the OpenAPI document generated from the route schemas.
 */
export async function createHttpServer(options: HttpServerOptions): Promise<App> {
  const cors = corsHandler(options.corsAllowOrigin);
  const limits = options.limits ?? readRequestLimits({});
  const bodies = new BodyReader(limits, options.uploadLimitMb ?? (() => null));
  const requestContext = options.requestContext ?? true;
  const app = Fastify({
    // HEAD is answered by the GET route, as Starlette adds HEAD to every GET route: the request is
    // routed as GET and Node leaves the body out (the response was made for a HEAD request). One
    // route per GET instead of two halves the router's work at start-up.
    exposeHeadRoutes: false,
    // Timeouts of Node's server (Fastify applies its own options only to a server it makes). A
    // request is timed only while it arrives: a streamed answer (SSE) is never cut by them.
    serverFactory: (handler) => {
      const server = createServer(
        {
          headersTimeout: limits.headersTimeoutMs,
          requestTimeout: limits.requestTimeoutMs,
          keepAliveTimeout: limits.keepAliveTimeoutMs,
          connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
        },
        (request, response) => {
          const socket = request.socket;
          if (awaitingFirstRequest.delete(socket)) socket.setTimeout(0);
          // Every answer names its request (errors included), and every line logged while it is
          // handled carries the same id (`requestIdMixin`), services' lines too (LOG_REQUEST_CONTEXT).
          const id = requestIdOf(request.headers[REQUEST_ID_HEADER]);
          request.parleyRequestId = id;
          response.setHeader(REQUEST_ID_HEADER, id);
          if (cors(request, response)) return;
          if (request.method === 'HEAD') request.method = 'GET';
          if (requestContext) withRequestId(id, () => handler(request, response));
          else handler(request, response);
        },
      );
      server.maxConnections = limits.maxConnections;
      // Node times headers only from a request's first byte: a connection that sends nothing
      // would be held forever. Until its first request, an idle socket is closed (Node destroys
      // a socket whose timeout nobody handles); a websocket upgrade clears it (ws does).
      server.on('connection', (socket: Socket) => {
        awaitingFirstRequest.add(socket);
        socket.setTimeout(limits.headersTimeoutMs);
      });
      return server;
    },
    loggerInstance: options.logger,
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: (request) => request.parleyRequestId ?? requestIdOf(undefined),
    // With the request context, the id comes from the logger's mixin (`requestIdMixin`), not from a binding.
    childLoggerFactory: requestContext
      ? (parent, { reqId: _reqId, ...bindings }, childOptions) => lazyRequestLogger(parent, bindings, childOptions)
      : lazyRequestLogger,
    // Bodies are read by `BodyReader` under their route class's limit; this is only a backstop.
    bodyLimit: Math.max(...Object.values(limits.body)),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 1000 },
    ajv: { customOptions: {} },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(schemaCompiler);
  // Response serializers are built on first use too, for the same reason as validators (start-up time).
  // A frozen answer (a service's cached value, shared until it changes) is serialised once.
  app.setSerializerCompiler(({ schema }) => {
    let stringify: ((data: unknown) => string) | undefined;
    const serialised = new WeakMap<object, string>();
    return (data: unknown) => {
      stringify ??= fastJsonStringify(schema as object);
      if (data === null || typeof data !== 'object' || !Object.isFrozen(data)) return stringify(data);
      let json = serialised.get(data);
      if (json === undefined) serialised.set(data, (json = stringify(data)));
      return json;
    };
  });
  app.setSchemaErrorFormatter((errors, dataVar) => {
    const error = new Error('validation') as Error & { details: ValidationDetail[] };
    error.details = validationDetails(errors as never, dataVar);
    return error;
  });

  // Every path and method served, to tell "wrong method" (405) from "no such path" (404). The router
  // of them is built at the first unmatched request, not at start-up (a few hundred routes).
  const served: { method: string; url: string }[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) served.push({ method, url: route.url });
  });
  let known: ReturnType<typeof findMyWay> | undefined;
  const knownRoutes = () => {
    if (known) return known;
    known = findMyWay();
    for (const { method, url } of served) known.on(method as never, url, () => undefined);
    return known;
  };

  app.decorate('readBody', (request: FastifyRequest, payload: IncomingMessage) => bodies.read(request, payload));
  app.removeContentTypeParser(['application/json', 'text/plain']);
  // `application/scim+json`: what SCIM clients send (RFC 7644 §3.1).
  app.addContentTypeParser(['application/json', 'application/scim+json'], async (request: FastifyRequest, payload: IncomingMessage) => {
    const text = (await bodies.read(request, payload)).toString('utf8');
    if (!/\S/.test(text)) return undefined;
    const invalid = (error: string) => {
      const detail: ValidationDetail = { type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error } };
      return Object.assign(new Error('invalid json'), { statusCode: 422, details: [detail] });
    };
    if (nestsDeeperThan(text, limits.jsonMaxDepth)) throw invalid(`Nesting deeper than ${limits.jsonMaxDepth} levels`);
    try {
      return JSON.parse(text);
    } catch (error) {
      throw invalid((error as Error).message);
    }
  });
  app.addContentTypeParser('text/plain', async (request: FastifyRequest, payload: IncomingMessage) => (await bodies.read(request, payload)).toString('utf8'));
  // Only routes of class `upload` take multipart bodies, as a stream (415 elsewhere, as before).
  app.addContentTypeParser('multipart/form-data', async (request: FastifyRequest, payload: IncomingMessage) => {
    if (request.routeOptions.config?.bodyClass !== 'upload') throw new BodyRefused(415, 'Unsupported Media Type');
    return bodies.upload(request, payload);
  });

  app.setErrorHandler((error: FastifyError & { details?: ValidationDetail[] }, request, reply) => {
    if (error instanceof BodyRefused) {
      // Fastify asks to close at once after a parser's error; with the client still sending, that
      // resets the connection and the client never sees the answer. The rest is dropped instead.
      reply.removeHeader('connection');
      dropRestOfBody(request.raw, reply.raw);
    }
    if (error instanceof HttpError) return sendDetail(reply, error.statusCode, error.detail);
    if (error.details) return sendDetail(reply, 422, error.details);
    if (error.validation) return sendDetail(reply, 422, validationDetails(error.validation as never, error.validationContext ?? 'body'));
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return sendDetail(reply, 415, 'Unsupported Media Type');
    if (error.statusCode && error.statusCode < 500) return sendDetail(reply, error.statusCode, error.message);
    request.log.error({ err: error, url: request.url }, 'request failed');
    return sendDetail(reply, 500, 'Internal Server Error');
  });

  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0];
    const otherMethod = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].some(
      (method) => method !== request.method && knownRoutes().find(method as never, path) !== null,
    );
    if (otherMethod) return sendDetail(reply, 405, 'Method Not Allowed');
    if (options.fallback && request.method === 'GET' && !isApiPath(path)) {
      if (await options.fallback(request, reply)) return reply;
    }
    return sendDetail(reply, 404, 'Not Found');
  });

  registerCookies(app);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Parley', version: options.version, description: 'Open WebUI interface, release 0.11.0' },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      },
    },
  });
  registerDocs(app);
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  return app;
}
