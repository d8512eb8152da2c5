import { createServer } from 'node:http';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type RawReplyDefaultExpression, type RawRequestDefaultExpression, type RawServerDefault } from 'fastify';
import fastJsonStringify from 'fast-json-stringify';
import findMyWay from 'find-my-way';
import { registerCookies } from './cookies.js';
import { corsHandler } from './cors.js';
import { registerDocs } from './docs.js';
import { HttpError, openAIError } from './errors.js';
import { lazyRequestLogger } from './request-logger.js';
import { schemaCompiler, validationDetails, type ValidationDetail } from './validation.js';

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
  /** Serves the web frontend for GET (and so HEAD) requests no route matched; returns false when it has nothing. */
  fallback?: (request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;
}

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
  const body = reply.request.routeOptions.config?.openAICompatible ? { detail, error: openAIError(status, detail) } : { detail };
  return reply.code(status).type('application/json').send(body);
}

/**
 * The Fastify instance with the interface's plumbing: FastAPI-shaped errors,
 * 405 for a known path with another method, JSON bodies parsed so that broken
 * JSON is a 422, and the OpenAPI document generated from the route schemas.
 */
export async function createHttpServer(options: HttpServerOptions): Promise<App> {
  const cors = corsHandler(options.corsAllowOrigin);
  const app = Fastify({
    // HEAD is answered by the GET route, as Starlette adds HEAD to every GET route: the request is
    // routed as GET and Node leaves the body out (the response was made for a HEAD request). One
    // route per GET instead of two halves the router's work at start-up.
    exposeHeadRoutes: false,
    serverFactory: (handler) =>
      createServer((request, response) => {
        if (cors(request, response)) return;
        if (request.method === 'HEAD') request.method = 'GET';
        handler(request, response);
      }),
    loggerInstance: options.logger,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: 64 * 1024 * 1024,
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

  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (error) {
      const detail: ValidationDetail = {
        type: 'json_invalid',
        loc: ['body', 0],
        msg: 'JSON decode error',
        input: {},
        ctx: { error: (error as Error).message },
      };
      done(Object.assign(new Error('invalid json'), { statusCode: 422, details: [detail] }), undefined);
    }
  });

  app.setErrorHandler((error: FastifyError & { details?: ValidationDetail[] }, request, reply) => {
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
