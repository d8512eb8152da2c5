import type { ObservabilityOptions } from './options.js';
import type { RequestObserver } from './requests.js';
import { Tracing } from './tracing.js';

interface Logger {
  warn(details: object, message: string): void;
}

export interface Telemetry {
  observer: RequestObserver;
  /** The child spans of requests (queries, provider and plugin calls); null without traces. */
  tracing: Tracing | null;
  /** Sends what is still buffered, then stops. */
  close(): Promise<void>;
}

/**
 * OpenTelemetry export (OTLP over HTTP) of a span and a duration per request (its children are
 * made by `Tracing`, tracing.ts), with the reference's variables: `ENABLE_OTEL` with
 * `ENABLE_OTEL_TRACES` and/or `ENABLE_OTEL_METRICS`. The SDK is loaded only then (idle memory),
 * and its providers are this instance's own, not registered globally, so nothing else in the
 * process is traced behind Parley's back.
 */
export async function startTelemetry(options: ObservabilityOptions['otel'], version: string, log: Logger): Promise<Telemetry | null> {
  if (!options.traces && !options.metrics) return null;
  if (options.grpcAsked) log.warn({ endpoint: options.endpoint }, 'OTEL_OTLP_SPAN_EXPORTER=grpc: Parley sends OTLP over HTTP (JSON), to <endpoint>/v1/traces and /v1/metrics');
  const sdk = await import('@opentelemetry/sdk-node');
  const { SpanKind, SpanStatusCode, ROOT_CONTEXT, defaultTextMapGetter } = sdk.api;
  const resource = sdk.resources.resourceFromAttributes({
    ...options.resourceAttributes,
    'service.name': options.serviceName,
    'service.version': version,
  });
  const headers = (authorization: string | null): Record<string, string> => (authorization ? { Authorization: authorization } : {});

  let tracing: { provider: InstanceType<typeof sdk.tracing.BasicTracerProvider>; tracer: ReturnType<InstanceType<typeof sdk.tracing.BasicTracerProvider>['getTracer']> } | null = null;
  if (options.traces) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    const exporter = new OTLPTraceExporter({ url: `${options.endpoint}/v1/traces`, headers: headers(options.authorization) });
    const provider = new sdk.tracing.BasicTracerProvider({
      resource,
      sampler: sampler(sdk.tracing, options.sampler, options.samplerRatio),
      spanProcessors: [new sdk.tracing.BatchSpanProcessor(exporter as never)],
    });
    tracing = { provider, tracer: provider.getTracer('parley', version) };
  }
  const childSpans = tracing ? new Tracing(sdk.api, tracing.tracer) : null;

  let metering: { provider: InstanceType<typeof sdk.metrics.MeterProvider>; record: (finished: { method: string; route: string; status: number; seconds: number }) => void; active: (delta: number, method: string) => void } | null = null;
  if (options.metrics) {
    const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
    const exporter = new OTLPMetricExporter({ url: `${options.metricsEndpoint}/v1/metrics`, headers: headers(options.metricsAuthorization) });
    const provider = new sdk.metrics.MeterProvider({
      resource,
      readers: [new sdk.metrics.PeriodicExportingMetricReader({ exporter: exporter as never, exportIntervalMillis: options.metricsIntervalMs })],
    });
    const meter = provider.getMeter('parley', version);
    const duration = meter.createHistogram('http.server.request.duration', { unit: 's', description: 'Time to answer an HTTP request, by route pattern' });
    const active = meter.createUpDownCounter('http.server.active_requests', { unit: '{request}', description: 'HTTP requests being answered' });
    metering = {
      provider,
      record: ({ method, route, status, seconds }) =>
        duration.record(seconds, { 'http.request.method': method, 'http.route': route, 'http.response.status_code': status }),
      active: (delta, method) => active.add(delta, { 'http.request.method': method }),
    };
  }

  // A proxy's or a caller's `traceparent` makes the request's span a child of theirs.
  const propagator = new sdk.core.W3CTraceContextPropagator();
  const observer: RequestObserver = (request) => {
    const parent = tracing ? propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter) : null;
    const span = tracing?.tracer.startSpan(
      request.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'url.path': request.url.split('?')[0], 'parley.request_id': request.id } },
      parent ?? undefined,
    );
    metering?.active(1, request.method);
    return {
      end: (finished) => {
        metering?.active(-1, finished.method);
        metering?.record(finished);
        if (!span) return;
        span.updateName(`${finished.method} ${finished.route}`);
        span.setAttributes({ 'http.route': finished.route, 'http.response.status_code': finished.status });
        if (finished.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
      within: span && childSpans ? (handle) => childSpans.within(span, handle) : undefined,
    };
  };

  return {
    observer,
    tracing: childSpans,
    async close() {
      await Promise.all([tracing?.provider.shutdown(), metering?.provider.shutdown()]).catch((err: Error) =>
        log.warn({ err: err.message }, 'OpenTelemetry export at shutdown failed'),
      );
    },
  };
}

type TraceSdk = typeof import('@opentelemetry/sdk-node')['tracing'];

function sampler(tracing: TraceSdk, name: string, ratio: number) {
  const root = name.endsWith('always_off') ? new tracing.AlwaysOffSampler() : name.endsWith('traceidratio') ? new tracing.TraceIdRatioBasedSampler(ratio) : new tracing.AlwaysOnSampler();
  return name.startsWith('parentbased_') ? new tracing.ParentBasedSampler({ root }) : root;
}
