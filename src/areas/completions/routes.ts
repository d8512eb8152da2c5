import type { FastifyReply, FastifyRequest } from 'fastify';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { type App, OPENAI_COMPATIBLE } from '../../core/http/server.js';
import { JsonObject } from '../../core/http/schema.js';
import { clientGone, sendAnswer } from '../../core/upstream/relay.js';
import type { Json } from '../chats/history.js';
import { ActionParams, ChatCompletionBody, TasksStarted } from './schemas.js';
import type { ChatPipeline, RequestInfo } from './service.js';

/** `/api/chat/*` and its `/api/v1` alias: chat completions, both modes (see docs/chat-pipeline.md). */
async function completionsRoutes(app: App, ctx: AreaContext<{ pipeline: ChatPipeline }>): Promise<void> {
  const { pipeline } = ctx.services;
  const { auth } = ctx;
  const tags = ['chat'];
  const info = (request: FastifyRequest, reply: FastifyReply): RequestInfo => ({
    token: request.token,
    cookie: request.headers.cookie ?? null,
    userAgent: request.headers['user-agent'] ?? null,
    signal: clientGone(reply),
  });

  for (const url of ['/api/chat/completions', '/api/v1/chat/completions']) {
    app.post(url, { onRequest: auth.verified, config: { bodyClass: 'large', ...OPENAI_COMPATIBLE }, schema: { tags, body: ChatCompletionBody, response: { 200: TasksStarted } } }, async (request, reply) => {
      const result = await pipeline.complete(request.user!, request.body as Json, info(request, reply));
      if (result.kind === 'tasks') {
        // The tasks may speak only once the browser has its chat id: after the reply is written.
        reply.raw.once('finish', result.start);
        reply.raw.once('close', result.start);
        return result.body;
      }
      if (result.kind === 'stream') return reply.type('text/event-stream').header('cache-control', 'no-cache').send(result.body as never);
      // Not the schema's serializer: this is the provider's own answer, whatever its fields.
      if (result.answer.kind === 'json') reply.type('application/json; charset=utf-8').serializer(JSON.stringify);
      return sendAnswer(reply, result.answer, result.answer.kind === 'stream' ? 'text/event-stream' : undefined);
    });
  }

  app.post('/api/chat/completed', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: ChatCompletionBody, response: { 200: JsonObject() } } }, (request, reply) =>
    pipeline.completed(request.user!, request.body as Json, info(request, reply)),
  );

  app.post('/api/chat/actions/:action_id', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, params: ActionParams, body: ChatCompletionBody } }, async (request, reply) => {
    // Whatever the action returned, as JSON (the reference's response has no model).
    reply.type('application/json; charset=utf-8').serializer(JSON.stringify);
    return (await pipeline.action(request.user!, request.params.action_id, request.body as Json, info(request, reply))) ?? null;
  });
}

export const completionsArea = defineArea(null, completionsRoutes);
