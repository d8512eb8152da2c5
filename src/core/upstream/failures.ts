import type { EventActor, EventBus } from '../events/publish.js';

/**
 * `model.provider_request.failed`: published for every non-2xx answer of a model
 * provider, classified as the reference does (events.publish_model_provider_request_failed),
 * and logged, since the event is the only other place an admin would see it.
 */
export interface ProviderFailure {
  actor: EventActor | null;
  provider: 'ollama' | 'openai-compatible';
  baseUrl: string;
  status: number;
  requestedModel?: string | null;
  apiKey?: string | null;
  upstreamError?: unknown;
}

export type ProviderErrorType = 'model_not_found' | 'authentication_failed' | 'rate_limited' | 'server_failed' | 'upstream_error';

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The upstream's error message and code, from `{error: {message, code}}`, `{error: "..."}`, `{detail}` or plain text. */
export function upstreamErrorOf(body: unknown): { message: unknown; code: string | null } {
  let error: unknown = isObject(body) && 'error' in body ? body.error : body;
  let code: string | null = null;
  if (isObject(error)) {
    const found = error.code ?? error.type ?? error.error_code;
    code = found === undefined || found === null ? null : String(found);
    error = error.message ?? error.detail ?? error;
  }
  return { message: error, code };
}

export function classifyFailure(status: number, body: unknown): { type: ProviderErrorType; message: unknown; code: string | null } {
  const { message, code } = upstreamErrorOf(body);
  const text = typeof message === 'string' ? message : message === null || message === undefined ? '' : JSON.stringify(message);
  const marker = `${code ?? ''} ${text}`.toLowerCase();
  const notFound = ['model_not_found', 'model not found', 'does not exist', 'no such model'].some((m) => marker.includes(m));
  const type: ProviderErrorType =
    status === 404 && notFound
      ? 'model_not_found'
      : status === 401 || status === 403
        ? 'authentication_failed'
        : status === 429
          ? 'rate_limited'
          : status >= 500
            ? 'server_failed'
            : 'upstream_error';
  return { type, message, code };
}

interface Logger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export async function publishProviderFailure(events: EventBus, log: Logger, failure: ProviderFailure): Promise<void> {
  const { type, message, code } = classifyFailure(failure.status, failure.upstreamError);
  (failure.status >= 500 ? log.error : log.warn).call(
    log,
    { provider: failure.provider, status: failure.status, errorType: type, url: failure.baseUrl, model: failure.requestedModel ?? null, code },
    'Upstream provider request failed',
  );
  const data: Record<string, unknown> = { error_type: type, status: failure.status, provider: failure.provider, base_url: failure.baseUrl };
  if (failure.requestedModel) data.requested_model = failure.requestedModel;
  if (failure.apiKey) data.api_key_suffix = `...${failure.apiKey.slice(-4)}`;
  if (code) data.upstream_error_code = code;
  if (message !== null && message !== undefined && message !== '') data.upstream_message = message;
  await events.publish({
    event: 'model.provider_request.failed',
    actor: failure.actor,
    subjectId: failure.requestedModel ?? null,
    subjectType: 'model',
    data,
  });
}
