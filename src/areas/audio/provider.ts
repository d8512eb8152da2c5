import { HttpError } from '../../core/http/errors.js';

/** The reference's words when a provider cannot be reached. */
export const CONNECTION_ERROR = 'Open WebUI: Server Connection Error';

/** Sends one request to a speech provider; a connection failure or timeout is a 500 in the reference's words. */
export async function callProvider(url: string, init: RequestInit, timeoutMs: number): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch {
    throw new HttpError(500, CONNECTION_ERROR);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The message of a provider's error body: `error.message`, `error` as text, `message`, or `detail` (JSON), else its text. */
export function providerMessage(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body.trim().slice(0, 500);
  }
  if (!isObject(parsed)) return body.trim().slice(0, 500);
  const error = parsed.error;
  if (isObject(error) && typeof error.message === 'string') return error.message;
  if (typeof error === 'string') return error;
  if (typeof parsed.message === 'string') return parsed.message;
  if (parsed.detail !== undefined) return typeof parsed.detail === 'string' ? parsed.detail : JSON.stringify(parsed.detail);
  return body.trim().slice(0, 500);
}

/** A refused call passed on: the provider's status, and its message after `External: ` (the reference's form). */
export async function providerError(response: Response): Promise<HttpError> {
  const message = providerMessage(await response.text().catch(() => ''));
  return new HttpError(response.status, message ? `External: ${message}` : CONNECTION_ERROR);
}

/** A successful answer's JSON object; anything else is a 500 naming the provider. */
export async function providerJson(response: Response, provider: string): Promise<Record<string, unknown>> {
  if (!response.ok) throw await providerError(response);
  const body = (await response.json().catch(() => null)) as unknown;
  if (!isObject(body)) throw new HttpError(500, `Failed to parse ${provider} response: the answer is not a JSON object`);
  return body;
}

export const trimSlash = (url: string) => url.replace(/\/+$/, '');
