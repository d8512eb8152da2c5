import { bool, int } from '../../config/env.js';

/** Prometheus metrics (`ENABLE_METRICS`) and OpenTelemetry export (the reference's `ENABLE_OTEL*` variables), read once. */
export interface ObservabilityOptions {
  /**
   * LOG_REQUEST_CONTEXT: the request id on every line logged while a request is handled (services'
   * too, through an AsyncLocalStorage); false: on `request.log`'s lines only (no per-request cost).
   */
  requestContext: boolean;
  metrics: {
    enabled: boolean;
    /** METRICS_PATH: where the scrape is answered. */
    path: string;
    /** METRICS_TOKEN: a bearer token the scraper sends; null: an admin's credential is asked. */
    token: string | null;
  };
  otel: {
    traces: boolean;
    metrics: boolean;
    /** OTLP over HTTP: `<endpoint>/v1/traces` and `<metricsEndpoint>/v1/metrics`. */
    endpoint: string;
    metricsEndpoint: string;
    serviceName: string;
    /** OTEL_RESOURCE_ATTRIBUTES, `key1=val1,key2=val2`. */
    resourceAttributes: Record<string, string>;
    /** The `Authorization: Basic` header of OTEL_BASIC_AUTH_USERNAME/PASSWORD (and the metrics' own). */
    authorization: string | null;
    metricsAuthorization: string | null;
    metricsIntervalMs: number;
    /** OTEL_TRACES_SAMPLER: always_on, always_off, traceidratio, or parentbased_ of one of them. */
    sampler: string;
    samplerRatio: number;
    /** OTEL_OTLP_SPAN_EXPORTER asked for gRPC, which Parley does not send (it sends OTLP/HTTP). */
    grpcAsked: boolean;
  };
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];

function basic(username: string | undefined, password: string | undefined): string | null {
  return username ? `Basic ${Buffer.from(`${username}:${password ?? ''}`).toString('base64')}` : null;
}

function attributes(text: string | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) result[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return result;
}

/** Reads the settings; a malformed one stops the start with its name (a mistake here would go unseen). */
export function readObservabilityOptions(raw: Record<string, string | undefined>): ObservabilityOptions {
  const path = raw.METRICS_PATH || '/metrics';
  if (!/^\/[A-Za-z0-9._~\/-]*$/.test(path) || path === '/') throw new Error(`METRICS_PATH must be a path such as /metrics, not "${path}"`);
  const otel = bool(raw.ENABLE_OTEL, false);
  const endpoint = (raw.OTEL_EXPORTER_OTLP_ENDPOINT || 'http://localhost:4318').replace(/\/+$/, '');
  const metricsEndpoint = (raw.OTEL_METRICS_EXPORTER_OTLP_ENDPOINT || endpoint).replace(/\/+$/, '');
  for (const [name, url] of [['OTEL_EXPORTER_OTLP_ENDPOINT', endpoint], ['OTEL_METRICS_EXPORTER_OTLP_ENDPOINT', metricsEndpoint]]) {
    if (otel && !/^https?:\/\/[^\s]+$/.test(url)) throw new Error(`${name} must be an http(s) URL, not "${url}"`);
  }
  const sampler = (raw.OTEL_TRACES_SAMPLER || 'parentbased_always_on').toLowerCase();
  if (otel && !SAMPLERS.includes(sampler)) throw new Error(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, not "${sampler}"`);
  const ratio = Number(raw.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const authorization = basic(raw.OTEL_BASIC_AUTH_USERNAME, raw.OTEL_BASIC_AUTH_PASSWORD);
  return {
    requestContext: bool(raw.LOG_REQUEST_CONTEXT, true),
    metrics: { enabled: bool(raw.ENABLE_METRICS, false), path, token: raw.METRICS_TOKEN || null },
    otel: {
      // As the reference: ENABLE_OTEL turns export on, ENABLE_OTEL_TRACES / _METRICS choose what is sent.
      traces: otel && bool(raw.ENABLE_OTEL_TRACES, false),
      metrics: otel && bool(raw.ENABLE_OTEL_METRICS, false),
      endpoint,
      metricsEndpoint,
      serviceName: raw.OTEL_SERVICE_NAME || 'parley',
      resourceAttributes: attributes(raw.OTEL_RESOURCE_ATTRIBUTES),
      authorization,
      metricsAuthorization: basic(raw.OTEL_METRICS_BASIC_AUTH_USERNAME, raw.OTEL_METRICS_BASIC_AUTH_PASSWORD) ?? authorization,
      metricsIntervalMs: Math.max(100, int(raw.OTEL_METRICS_EXPORT_INTERVAL_MILLIS, 10_000)),
      sampler,
      samplerRatio: Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1,
      grpcAsked: (raw.OTEL_OTLP_SPAN_EXPORTER ?? '').toLowerCase() === 'grpc',
    },
  };
}
