import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenLocally } from '../../helpers/server.js';

/** One request a receiver got. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  json: any;
  at: number;
}

/** What the receiver answers: a status (with headers), after a delay, or never. */
export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  hang?: boolean;
}

export type Behaviour = (request: Received, index: number) => Reply;

/**
 * A webhook receiver on a free local port: records every request, answers as the
 * test says, and counts requests in flight per `webhook-id` (to catch one
 * delivery being attempted twice at once).
 */
export class Receiver {
  readonly received: Received[] = [];
  /** Highest number of requests in flight at once for any one webhook-id. */
  maxConcurrentPerId = 0;
  /** Highest number of requests in flight at once. */
  maxConcurrent = 0;
  private readonly inFlight = new Map<string, number>();
  private open = 0;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: http.Server,
    public behaviour: Behaviour,
  ) {}

  static async start(behaviour: Behaviour = () => ({ status: 200 })): Promise<Receiver> {
    let receiver: Receiver | null = null;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => void receiver?.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    server.keepAliveTimeout = 60_000;
    receiver = new Receiver(server, behaviour);
    await listenLocally(server);
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse, body: string) {
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]));
    let json: unknown = null;
    try {
      json = JSON.parse(body);
    } catch {
      json = null;
    }
    const request: Received = { path: req.url ?? '/', headers, body, json, at: Date.now() };
    const index = this.received.length;
    this.received.push(request);
    const id = headers['webhook-id'] ?? '';
    const now = (this.inFlight.get(id) ?? 0) + 1;
    this.inFlight.set(id, now);
    this.maxConcurrentPerId = Math.max(this.maxConcurrentPerId, now);
    this.maxConcurrent = Math.max(this.maxConcurrent, ++this.open);
    // Over when answered, or when the sender gives up (a hung request is aborted by its timeout).
    res.once('close', () => {
      this.open -= 1;
      this.inFlight.set(id, (this.inFlight.get(id) ?? 1) - 1);
    });
    this.notify();
    const reply = this.behaviour(request, index);
    if (reply.hang) return;
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    res.writeHead(reply.status ?? 200, reply.headers ?? {});
    res.end(reply.body ?? '');
  }

  private notify() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves once `predicate` holds for the requests received, or fails after `timeoutMs`. */
  async waitFor(predicate: (received: Received[]) => boolean, timeoutMs = 10_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.received)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`receiver: condition not met within ${timeoutMs} ms (${this.received.length} requests received)`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.received;
  }

  /** Ids of the events received (the `webhook-id` header), once each. */
  eventIds(): Set<string> {
    return new Set(this.received.map((r) => r.headers['webhook-id']));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
