import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../../core/http/server.js';

/** TO BE COMPLETED: serves a built Open WebUI frontend from FRONTEND_BUILD_DIR. */
export function createFrontend(_dir: string | null):
  | { routes(app: App): Promise<void>; fallback(request: FastifyRequest, reply: FastifyReply): Promise<boolean> }
  | null {
  return null;
}
