import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { type App, OPENAI_COMPATIBLE } from '../../core/http/server.js';
import { callContext, sendAnswer } from '../../core/upstream/relay.js';
import { ChatCompletionForm, OpenAIConfigForm, OpenAIConfigResponse, OpenAIVerifyForm, PassthroughParams, ResponsesForm, UrlIdxParams } from './schemas.js';
import type { FastifyRequest } from 'fastify';
import type { GroupsService } from '../groups/service.js';
import type { LimitsService } from '../limits/service.js';
import type { OpenAIService } from './service.js';

/** `/openai`: OpenAI-compatible connections and their proxies (routers/openai.py). */
async function openaiRoutes(app: App, ctx: AreaContext<{ openai: OpenAIService; groups: GroupsService; limits: LimitsService }>): Promise<void> {
  const { openai, groups, limits } = ctx.services;
  const { auth } = ctx;
  const tags = ['openai'];
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, ...OPENAI_COMPATIBLE };
  });
  const contextOf = (request: Parameters<typeof callContext>[0], reply: Parameters<typeof callContext>[1]) =>
    callContext(request, reply, { groupNames: () => groups.groupsOf(request.user!.id) });

  app.get('/config', { onRequest: auth.admin, schema: { tags, response: { 200: OpenAIConfigResponse } } }, async () => openai.config());

  app.post('/config/update', { onRequest: auth.admin, schema: { tags, body: OpenAIConfigForm, response: { 200: OpenAIConfigResponse } } }, (request) =>
    openai.updateConfig(request.user!, { ...request.body, ENABLE_OPENAI_API: request.body.ENABLE_OPENAI_API ?? null }),
  );

  app.post('/verify', { onRequest: auth.admin, schema: { tags, body: OpenAIVerifyForm } }, async (request, reply) =>
    sendAnswer(reply, await openai.verify(request.body, contextOf(request, reply))),
  );

  app.get('/models', { onRequest: auth.verified, schema: { tags } }, async (request, reply) =>
    openai.listModels(request.user!, undefined, contextOf(request, reply)),
  );

  app.get('/models/:url_idx', { onRequest: auth.verified, schema: { tags, params: UrlIdxParams } }, async (request, reply) =>
    openai.listModels(request.user!, request.params.url_idx, contextOf(request, reply)),
  );

  // Generations spend the user's usage budget (a 429 once it is spent).
  const admitted = { onRequest: auth.verified, preHandler: async (request: FastifyRequest) => limits.admit(request.user!) };

  app.post('/chat/completions', { ...admitted, config: { bodyClass: 'large' }, schema: { tags, body: ChatCompletionForm } }, async (request, reply) =>
    sendAnswer(reply, await openai.chatCompletion(request.user!, request.body, contextOf(request, reply))),
  );

  app.post('/responses', { ...admitted, config: { bodyClass: 'large' }, schema: { tags, body: ResponsesForm } }, async (request, reply) =>
    sendAnswer(reply, await openai.responses(request.user!, request.body, contextOf(request, reply))),
  );

  // Speech and the pass-through read the body as sent (the speech cache is keyed by its bytes).
  await app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', raw.readBody);

    raw.post('/audio/speech', { onRequest: auth.verified, schema: { tags } }, async (request, reply) => {
      const { file } = await openai.speech(request.user!, (request.body as Buffer | undefined) ?? Buffer.alloc(0), contextOf(request, reply));
      return reply.type('audio/mpeg').send(await openai.readSpeech(file));
    });

    raw.route({
      method: ['GET', 'POST', 'PUT', 'DELETE'],
      url: '/*',
      onRequest: auth.verified,
      config: { bodyClass: 'large' },
      schema: { tags, params: PassthroughParams },
      handler: async (request, reply) => {
        const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
        const body = Buffer.isBuffer(request.body) ? request.body : undefined;
        return sendAnswer(reply, await openai.passthrough(request.method, (request.params as { '*': string })['*'], query, body, contextOf(request, reply)));
      },
    });
  });
}

export const openaiArea = defineArea('/openai', openaiRoutes);
