import { AsyncLocalStorage } from 'node:async_hooks';
import type { Readable } from 'node:stream';
import type { Attributes, Span, Tracer } from '@opentelemetry/api';
import type { LogEvent } from 'kysely';

/** The parts of `@opentelemetry/api` used here, loaded with the SDK (telemetry.ts), never at start-up. */
type Api = typeof import('@opentelemetry/api');

/** Statements Kysely builds, by their node; raw SQL is named by its first word. */
const OPERATIONS: Record<string, string> = {
  SelectQueryNode: 'SELECT',
  InsertQueryNode: 'INSERT',
  UpdateQueryNode: 'UPDATE',
  DeleteQueryNode: 'DELETE',
  MergeQueryNode: 'MERGE',
};

/**
 * Child spans of the request being answered: its database queries, provider calls and plugin
 * calls. Made only with ENABLE_OTEL_TRACES; without it the hooks hold null and nothing is traced.
 * Provider and plugin calls outside a request (the scheduler's, the queues') make root spans;
 * queries outside one are not recorded (migrations at start, the scheduler's polls every few
 * seconds: a trace of one query each, nobody's request).
 */
export class Tracing {
  /** The request's span, set where it starts (telemetry.ts) for the rest of its handling; a plugin call's within it. */
  private readonly parentSpan = new AsyncLocalStorage<Span>();

  constructor(
    private readonly api: Api,
    private readonly tracer: Tracer,
  ) {}

  /** Runs `handle` (a request's hooks and route) with `span` as the parent of what it calls. */
  within<T>(span: Span, handle: () => T): T {
    return this.parentSpan.run(span, handle);
  }

  /** A client span, child of the request's span (or the call's it is made in); the caller ends it. */
  private start(name: string, attributes: Attributes, startTime?: number): Span {
    const parent = this.parentSpan.getStore();
    const context = parent ? this.api.trace.setSpan(this.api.ROOT_CONTEXT, parent) : this.api.ROOT_CONTEXT;
    return this.tracer.startSpan(name, { kind: this.api.SpanKind.CLIENT, attributes, startTime }, context);
  }

  /**
   * Marks a span failed with the error's kind (a code, never the message: messages can quote
   * user data, as a tool's exception or a constraint's values do).
   */
  private fail(span: Span, errorType: string): void {
    span.setAttribute('error.type', errorType);
    span.setStatus({ code: this.api.SpanStatusCode.ERROR });
  }

  /** A span around `call`, parent of what `call` does, failed when it throws. */
  async child<T>(name: string, attributes: Attributes, call: () => Promise<T>): Promise<T> {
    const span = this.start(name, attributes);
    try {
      return await this.parentSpan.run(span, call);
    } catch (error) {
      this.fail(span, errorTypeOf(error));
      throw error;
    } finally {
      span.end();
    }
  }

  /**
   * A call to a provider (or another upstream): its URL without credentials nor query string,
   * where API keys ride.
   */
  startHttp(method: string, url: string): HttpCallSpan {
    const attributes: Attributes = { 'http.request.method': method };
    try {
      const parsed = new URL(url);
      attributes['server.address'] = parsed.hostname;
      attributes['server.port'] = parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
      attributes['url.full'] = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
    } catch {
      // Not a URL: the call fails on its own, and the span says so.
    }
    const span = this.start(method, attributes);
    return {
      answered: (status, body) => {
        span.setAttribute('http.response.status_code', status);
        if (status >= 400) this.fail(span, String(status));
        body.once('close', () => {
          if (body.errored && status < 400) this.fail(span, errorTypeOf(body.errored));
          span.end();
        });
      },
      failed: (errorType) => {
        this.fail(span, errorType);
        span.end();
      },
    };
  }

  /**
   * Kysely's `log` callback: a span per query, dated back by its duration. Its text is the SQL with
   * placeholders; the parameters (user data, secrets) are never recorded.
   */
  recordQuery(system: 'sqlite' | 'postgresql', event: LogEvent): void {
    if (!this.parentSpan.getStore()) return;
    const { query } = event;
    const operation = OPERATIONS[query.query.kind] ?? /^\s*([A-Za-z]+)/.exec(query.sql)?.[1]?.toUpperCase() ?? 'QUERY';
    const end = performance.timeOrigin + performance.now();
    const span = this.start(
      `db ${operation.toLowerCase()}`,
      { 'db.system.name': system, 'db.operation.name': operation, 'db.query.text': query.sql },
      end - event.queryDurationMillis,
    );
    if (event.level === 'error') {
      const code = (event.error as { code?: unknown } | null)?.code;
      if (typeof code === 'string') span.setAttribute('db.response.status_code', code);
      this.fail(span, errorTypeOf(event.error));
    }
    span.end(end);
  }
}

/** The span of an upstream call, told how it went. */
export interface HttpCallSpan {
  /**
   * The answer's headers came: the span ends when its body closes (read to the end, dropped by the
   * caller, or cut by the call's deadline), so a streamed answer's span lasts the whole stream and
   * none is left open. A 4xx or 5xx answer, or a body that failed, marks it failed.
   */
  answered(status: number, body: Readable): void;
  /** No answer: unreachable, timed out, or cancelled. */
  failed(errorType: string): void;
}

/** An error's code (a driver's, a PluginError's), its kind (an UpstreamFailure's) or its class name. */
function errorTypeOf(error: unknown): string {
  const { code, kind } = (error ?? {}) as { code?: unknown; kind?: unknown };
  if (typeof code === 'string' || typeof code === 'number') return String(code);
  if (typeof kind === 'string') return kind;
  return error instanceof Error ? error.name : 'error';
}
