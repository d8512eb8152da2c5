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

/** What an observer does with one request. */
export interface RequestObservation {
  end(finished: FinishedRequest): void;
  /** Runs the request's handling (its hooks and route) in the observer's context: its span (tracing.ts). */
  within?: (handle: () => void) => void;
}

/** Told when a request begins; answers what to do when it ends. */
export type RequestObserver = (request: FastifyRequest) => RequestObservation;

/**
 * Times every request for the observers (Prometheus, OpenTelemetry). Installed only when one is
 * enabled: without them, no hook runs on each request (docs/architecture.md § Request path).
 */
export function observeRequests(app: App, observers: RequestObserver[]): void {
  if (observers.length === 0) return;
  app.addHook('onRequest', (request, reply, done) => {
    const started = process.hrtime.bigint();
    const observations = observers.map((observe) => observe(request));
    // `close` comes once the answer is sent or the connection is gone, streamed answers included.
    reply.raw.once('close', () => {
      const finished: FinishedRequest = {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.raw.headersSent ? reply.raw.statusCode : 499,
        seconds: Number(process.hrtime.bigint() - started) / 1e9,
      };
      for (const observation of observations) observation.end(finished);
    });
    const within = observations.find((observation) => observation.within)?.within;
    if (within) within(done);
    else done();
  });
}
