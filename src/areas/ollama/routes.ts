import { Readable } from 'node:stream';
import type { TSchema } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { type App, OPENAI_COMPATIBLE } from '../../core/http/server.js';
import { StatusResponse } from '../../core/http/schema.js';
import { HttpError } from '../../core/http/errors.js';
import { readMultipart } from '../../core/http/multipart.js';
import type { BodyClass } from '../../core/http/limits.js';
import { callContext, sendAnswer } from '../../core/upstream/relay.js';
import type { OllamaCompatPath, OllamaService } from './service.js';
import {
  AnthropicMessagesForm,
  CopyModelForm,
  CreateModelForm,
  GenerateChatCompletionForm,
  GenerateCompletionForm,
  GenerateEmbedForm,
  GenerateEmbeddingsForm,
  ModelNameForm,
  OllamaConfigForm,
  OllamaConfigResponse,
  OllamaVerifyForm,
  OpenAIChatCompletionForm,
  OpenAICompletionForm,
  OpenAIEmbeddingsForm,
  PushModelForm,
  ResponsesForm,
  UrlForm,
  UrlIdxParams,
} from './schemas.js';
import type { GroupsService } from '../groups/service.js';
import type { LimitsService } from '../limits/service.js';

type Json = Record<string, unknown>;
type Request = FastifyRequest<{ Params: { url_idx?: number }; Body: unknown }>;

/** `/ollama`: Ollama connections, model management and the generation proxies (routers/ollama.py). */
async function ollamaRoutes(app: App, ctx: AreaContext<{ ollama: OllamaService; groups: GroupsService; limits: LimitsService }>): Promise<void> {
  const { ollama, groups, limits } = ctx.services;
  const { auth } = ctx;
  const tags = ['ollama'];
  const contextOf = (request: FastifyRequest, reply: FastifyReply) =>
    callContext(request, reply, { groupNames: () => (request.user ? groups.groupsOf(request.user.id) : Promise.resolve([])) });

  /** Registers a route at `path` and at `path/{url_idx}` (a connection index). */
  const withIndex = (
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    onRequest: onRequestHookHandler,
    body: TSchema | null,
    handler: (request: Request, reply: FastifyReply, urlIdx: number | undefined) => Promise<unknown>,
    bodyClass?: BodyClass,
  ) => {
    for (const url of [path, `${path}/:url_idx`]) {
      app.route({
        method,
        url,
        onRequest,
        // `/v1/*` speaks OpenAI's (and Anthropic's) dialect: errors carry their `error` object too.
        config: { ...(bodyClass ? { bodyClass } : {}), ...(path.startsWith('/v1/') ? OPENAI_COMPATIBLE : {}) },
        schema: { tags, ...(body ? { body } : {}), ...(url.endsWith(':url_idx') ? { params: UrlIdxParams } : {}) },
        handler: (request, reply) => handler(request as Request, reply, (request as Request).params.url_idx),
      });
    }
  };

  app.get('/', { schema: { tags, response: { 200: StatusResponse } } }, async () => ({ status: true }));

  app.post('/verify', { onRequest: auth.admin, schema: { tags, body: OllamaVerifyForm } }, (request, reply) => ollama.verify(request.body, contextOf(request, reply)));

  app.get('/config', { onRequest: auth.admin, schema: { tags, response: { 200: OllamaConfigResponse } } }, async () => ollama.config());

  app.post('/config/update', { onRequest: auth.admin, schema: { tags, body: OllamaConfigForm, response: { 200: OllamaConfigResponse } } }, (request) =>
    ollama.updateConfig(request.user!, { ...request.body, ENABLE_OLLAMA_API: request.body.ENABLE_OLLAMA_API ?? null }),
  );

  withIndex('GET', '/api/tags', auth.verified, null, (request, reply, idx) => ollama.tags(request.user!, idx, contextOf(request, reply)));

  app.get('/api/ps', { onRequest: auth.admin, schema: { tags } }, (request, reply) => ollama.loaded(contextOf(request, reply)));

  withIndex('GET', '/api/version', auth.optional, null, (request, reply, idx) => ollama.version(idx, contextOf(request, reply)));

  app.post('/api/unload', { onRequest: auth.admin, schema: { tags, body: ModelNameForm } }, (request, reply) => ollama.unload(request.body, contextOf(request, reply)));

  withIndex('POST', '/api/pull', auth.admin, ModelNameForm, async (request, reply, idx) =>
    sendAnswer(reply, await ollama.manage('pull', request.body as Json, idx, contextOf(request, reply))),
  );
  // The reference serves push on DELETE; kept so its clients keep working.
  withIndex('DELETE', '/api/push', auth.admin, PushModelForm, async (request, reply, idx) =>
    sendAnswer(reply, await ollama.manage('push', request.body as Json, idx, contextOf(request, reply))),
  );
  withIndex('POST', '/api/create', auth.admin, CreateModelForm, async (request, reply, idx) =>
    sendAnswer(reply, await ollama.manage('create', request.body as Json, idx, contextOf(request, reply))),
  );
  withIndex('POST', '/api/copy', auth.admin, CopyModelForm, (request, reply, idx) =>
    ollama.copy(request.user!, request.body as { source: string; destination: string }, idx, contextOf(request, reply)),
  );
  withIndex('DELETE', '/api/delete', auth.admin, ModelNameForm, (request, reply, idx) =>
    ollama.deleteModel(request.user!, request.body as Json, idx, contextOf(request, reply)),
  );

  app.post('/api/show', { onRequest: auth.verified, schema: { tags, body: ModelNameForm } }, (request, reply) =>
    ollama.show(request.user!, request.body, contextOf(request, reply)),
  );

  withIndex('POST', '/api/embed', auth.verified, GenerateEmbedForm, async (request, reply, idx) =>
    sendAnswer(reply, await ollama.embed(request.user!, '/api/embed', request.body as Json, idx, contextOf(request, reply))),
  );
  withIndex('POST', '/api/embeddings', auth.verified, GenerateEmbeddingsForm, async (request, reply, idx) =>
    sendAnswer(reply, await ollama.embed(request.user!, '/api/embeddings', request.body as Json, idx, contextOf(request, reply))),
  );
  // Generations spend the user's usage budget (a 429 once it is spent).
  const admitted =
    (handler: (request: Request, reply: FastifyReply, urlIdx: number | undefined) => Promise<unknown>) =>
    async (request: Request, reply: FastifyReply, urlIdx: number | undefined) => {
      await limits.admit(request.user!);
      return handler(request, reply, urlIdx);
    };

  withIndex('POST', '/api/generate', auth.verified, GenerateCompletionForm, admitted(async (request, reply, idx) =>
    sendAnswer(reply, await ollama.generate(request.user!, request.body as Json, idx, contextOf(request, reply)), 'application/x-ndjson')), 'large',
  );
  withIndex('POST', '/api/chat', auth.verified, GenerateChatCompletionForm, admitted(async (request, reply, idx) =>
    sendAnswer(reply, await ollama.chat(request.user!, request.body as Json, idx, contextOf(request, reply)), 'application/x-ndjson')), 'large',
  );

  const compat: [string, OllamaCompatPath, TSchema, string | undefined][] = [
    ['/v1/completions', '/v1/completions', OpenAICompletionForm, undefined],
    ['/v1/chat/completions', '/v1/chat/completions', OpenAIChatCompletionForm, undefined],
    ['/v1/embeddings', '/v1/embeddings', OpenAIEmbeddingsForm, undefined],
    ['/v1/messages', '/v1/messages', AnthropicMessagesForm, 'text/event-stream'],
    ['/v1/responses', '/v1/responses', ResponsesForm, 'text/event-stream'],
  ];
  for (const [path, upstreamPath, body, streamType] of compat) {
    const handler = async (request: Request, reply: FastifyReply, idx: number | undefined) => {
      const answer = await ollama.compat(request.user!, upstreamPath, request.body as Json, idx, contextOf(request, reply));
      return sendAnswer(reply, answer, answer.kind === 'stream' ? streamType : undefined);
    };
    withIndex('POST', path, auth.verified, body, path === '/v1/embeddings' ? handler : admitted(handler), 'large');
  }

  withIndex('GET', '/v1/models', auth.verified, null, (request, reply, idx) => ollama.openaiModels(request.user!, idx, contextOf(request, reply)));

  withIndex('POST', '/models/download', auth.admin, UrlForm, async (request, reply, idx) => {
    const events = await ollama.download((request.body as { url: string }).url, idx, contextOf(request, reply));
    return events ? reply.type('text/event-stream').send(Readable.from(events)) : null;
  });

  // Uploads are read from the request as they arrive (model files can be large), under FILE_MAX_SIZE.
  for (const url of ['/models/upload', '/models/upload/:url_idx']) {
    const params = url.endsWith(':url_idx') ? { params: UrlIdxParams } : {};
    app.post(url, { onRequest: auth.admin, config: { bodyClass: 'upload' }, schema: { tags, ...params } }, async (request, reply) => {
      const body = request.body instanceof Readable ? request.body : null;
      const idx = (request.params as { url_idx?: number }).url_idx;
      const form = body && (await readMultipart(body, request.headers['content-type'] ?? '', 'file', (file) => ollama.upload(file.filename, file.content, idx, contextOf(request, reply))));
      if (!form?.file) throw new HttpError(422, [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required', input: null }]);
      return reply.type('text/event-stream').send(Readable.from(form.file));
    });
  }

}

export const ollamaArea = defineArea('/ollama', ollamaRoutes);
