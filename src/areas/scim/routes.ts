import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { HttpError } from '../../core/http/errors.js';
import { JsonObject } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import {
  SCIM,
  ScimGroup,
  ScimGroupCreate,
  ScimGroupReplace,
  ScimIdParams,
  ScimListQuery,
  ScimListResponse,
  ScimPatch,
  ScimUser,
  ScimUserCreate,
  ScimUserReplace,
} from './schemas.js';
import { ScimError, type ScimService } from './service.js';

const PREFIX = '/api/v1/scim/v2';

/** `/api/v1/scim/v2`: SCIM 2.0 for identity providers; mounted only with `ENABLE_SCIM`, as the reference. */
async function scimRoutes(app: App, ctx: AreaContext<{ scim: ScimService }>): Promise<void> {
  const { scim } = ctx.services;
  if (!scim.options.enabled) return;
  const tags = ['scim'];
  const base = (request: FastifyRequest) => `${request.protocol}://${request.host}${PREFIX}`;
  const onRequest = (request: FastifyRequest, _reply: FastifyReply, done: (error?: FastifyError) => void) => {
    try {
      scim.checkToken(request.headers.authorization);
      done();
    } catch (error) {
      done(error as FastifyError);
    }
  };

  // SCIM clients read errors in the SCIM format (RFC 7644 §3.12); `detail` is where FastAPI's clients look too.
  app.setErrorHandler((error: FastifyError & { details?: unknown }, _request, reply) => {
    let status: number;
    let scimType: string | undefined;
    let detail: string;
    if (error instanceof ScimError) ({ statusCode: status, scimType, message: detail } = error);
    else if (error instanceof HttpError && error.statusCode < 500) ({ statusCode: status, message: detail } = error);
    else if (error.validation) {
      status = 400;
      scimType = 'invalidValue';
      detail = `Invalid request: ${error.message}`;
    } else if (error.details) {
      status = 400;
      scimType = 'invalidSyntax';
      detail = 'The request body is not valid JSON';
    } else throw error; // refused bodies, failures: the server's own handling
    if (status === 401) reply.header('www-authenticate', 'Bearer');
    return reply
      .code(status)
      .type('application/scim+json')
      .send({ schemas: [SCIM.ERROR], status: String(status), ...(scimType ? { scimType } : {}), detail });
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (String(reply.getHeader('content-type') ?? '').startsWith('application/json')) reply.type('application/scim+json');
    return payload;
  });

  app.get('/ServiceProviderConfig', { onRequest, schema: { tags, response: { 200: JsonObject() } } }, async () => scim.serviceProviderConfig());
  app.get('/ResourceTypes', { onRequest, schema: { tags, response: { 200: Type.Array(JsonObject()) } } }, async (request) => scim.resourceTypes(base(request)));
  app.get('/Schemas', { onRequest, schema: { tags, response: { 200: Type.Array(JsonObject()) } } }, async () => scim.schemas());

  app.get('/Users', { onRequest, schema: { tags, querystring: ScimListQuery, response: { 200: ScimListResponse(ScimUser) } } }, async (request) => ({
    schemas: [SCIM.LIST],
    ...(await scim.listUsers(request.query, base(request))),
  }));
  app.get('/Users/:id', { onRequest, schema: { tags, params: ScimIdParams, response: { 200: ScimUser } } }, async (request) =>
    scim.getUser(request.params.id, base(request)),
  );
  app.post('/Users', { onRequest, schema: { tags, body: ScimUserCreate, response: { 201: ScimUser } } }, async (request, reply) => {
    reply.code(201);
    return scim.createUser(request.body, base(request));
  });
  app.put('/Users/:id', { onRequest, schema: { tags, params: ScimIdParams, body: ScimUserReplace, response: { 200: ScimUser } } }, async (request) =>
    scim.replaceUser(request.params.id, request.body, base(request)),
  );
  app.patch('/Users/:id', { onRequest, schema: { tags, params: ScimIdParams, body: ScimPatch, response: { 200: ScimUser } } }, async (request) =>
    scim.patchUser(request.params.id, request.body, base(request)),
  );
  app.delete('/Users/:id', { onRequest, schema: { tags, params: ScimIdParams } }, async (request, reply) => {
    await scim.deleteUser(request.params.id);
    return reply.code(204).send();
  });

  app.get('/Groups', { onRequest, schema: { tags, querystring: ScimListQuery, response: { 200: ScimListResponse(ScimGroup) } } }, async (request) => ({
    schemas: [SCIM.LIST],
    ...(await scim.listGroups(request.query, base(request))),
  }));
  app.get('/Groups/:id', { onRequest, schema: { tags, params: ScimIdParams, response: { 200: ScimGroup } } }, async (request) =>
    scim.getGroup(request.params.id, base(request)),
  );
  app.post('/Groups', { onRequest, schema: { tags, body: ScimGroupCreate, response: { 201: ScimGroup } } }, async (request, reply) => {
    reply.code(201);
    return scim.createGroup(request.body, base(request));
  });
  app.put('/Groups/:id', { onRequest, schema: { tags, params: ScimIdParams, body: ScimGroupReplace, response: { 200: ScimGroup } } }, async (request) =>
    scim.replaceGroup(request.params.id, request.body, base(request)),
  );
  app.patch('/Groups/:id', { onRequest, schema: { tags, params: ScimIdParams, body: ScimPatch, response: { 200: ScimGroup } } }, async (request) =>
    scim.patchGroup(request.params.id, request.body, base(request)),
  );
  app.delete('/Groups/:id', { onRequest, schema: { tags, params: ScimIdParams } }, async (request, reply) => {
    await scim.deleteGroup(request.params.id);
    return reply.code(204).send();
  });
}

export const scimArea = defineArea(PREFIX, scimRoutes);
