import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CallContext } from './headers.js';
import type { Answer } from './service.js';

/**
 * Sending a provider's answer to the client. Streams are piped as they arrive
 * (the reply pulls, so a slow client slows the provider down instead of
 * filling memory) and a client that goes away cancels the provider's request.
 */

/** Headers that describe the connection or the encoding of the upstream hop, not the answer. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade', 'proxy-connection', 'set-cookie', 'date', 'server']);

/** A signal that fires once the client's connection closes (the answer finished or the client left). */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const raw = reply.raw;
  if (raw.destroyed) controller.abort();
  else raw.once('close', () => controller.abort());
  return controller.signal;
}

/** Sends an Answer: relays a stream with the provider's headers, or sends the JSON with its status. */
export function sendAnswer(reply: FastifyReply, answer: Answer, contentType?: string): FastifyReply {
  reply.code(answer.status);
  if (answer.kind === 'json') {
    if (typeof answer.body === 'string') return reply.type('application/json').send(JSON.stringify(answer.body));
    return reply.send(answer.body ?? null);
  }
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined && !HOP_HEADERS.has(name)) reply.header(name, value);
  }
  if (contentType) reply.header('content-type', contentType);
  reply.header('cache-control', 'no-cache');
  return reply.send(answer.body);
}

/** Who a proxied call is for, taken from the request: user, credential, cookie, agent, and the client's presence. */
export function callContext(
  request: FastifyRequest,
  reply: FastifyReply,
  extra: Pick<CallContext, 'groupNames' | 'metadata'> = {},
): CallContext {
  return {
    user: request.user,
    token: request.token,
    cookie: request.headers.cookie ?? null,
    userAgent: request.headers['user-agent'] ?? null,
    signal: clientGone(reply),
    ...extra,
  };
}
