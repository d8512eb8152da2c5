import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

/** The header a request id arrives in (from a proxy) and is answered in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** What an incoming id may be: a proxy's UUID or trace id, never text that could forge a log line or a header. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:+=@/-]{1,128}$/;

const current = new AsyncLocalStorage<string>();

/** The id of a request: the incoming header when it is sane, else a new UUID. */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && SANE_REQUEST_ID.test(header) ? header : randomUUID();
}

/** Runs a request's handling with its id, so every log line written meanwhile carries it. */
export function withRequestId<T>(id: string, handle: () => T): T {
  return current.run(id, handle);
}

/** The id of the request being handled, if any. */
export function currentRequestId(): string | undefined {
  return current.getStore();
}

/** pino's `mixin`: adds `reqId` to every line logged while a request is handled (services' lines too). */
export function requestIdMixin(): { reqId?: string } {
  const reqId = current.getStore();
  return reqId === undefined ? {} : { reqId };
}
