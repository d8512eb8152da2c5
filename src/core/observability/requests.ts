import type { FastifyRequest } from 'fastify';
import type { App } from '../http/server.js';

export interface FinishedRequest {
  method: string;
  /** The route's pattern (`/api/v1/chats/:id`), never the raw URL; `unmatched` for a 404. */
  route: string;
  /** The status sent; 499 when the client left before an answer began (as nginx logs it). */
  status: number;
  seconds: number;
}

/** Told when a request begins; answers what to do when it ends. */
export type RequestObserver = (request: FastifyRequest) => (finished: FinishedRequest) => void;

/**
 * Times every request for the observers (Prometheus, OpenTelemetry). Installed only when one is
 * enabled: without them, no hook runs on each request (docs/architecture.md § Request path).
 */
export function observeRequests(app: App, observers: RequestObserver[]): void {
  if (observers.length === 0) return;
  app.addHook('onRequest', (request, reply, done) => {
    const started = process.hrtime.bigint();
    const ends = observers.map((observe) => observe(request));
    // `close` comes once the answer is sent or the connection is gone, streamed answers included.
    reply.raw.once('close', () => {
      const finished: FinishedRequest = {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.raw.headersSent ? reply.raw.statusCode : 499,
        seconds: Number(process.hrtime.bigint() - started) / 1e9,
      };
      for (const end of ends) end(finished);
    });
    done();
  });
}
