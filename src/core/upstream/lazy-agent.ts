import type { Agent, Dispatcher, request } from 'undici';

type RequestOptions = Omit<NonNullable<Parameters<typeof request>[1]>, 'dispatcher'>;

/** undici's `module.exports`: the one shape its import gives both from node_modules and from a bundle chunk. */
let undici: Promise<(typeof import('undici'))['default']> | undefined;

/**
 * A failed load is forgotten, so the next request tries again: a build that replaced the
 * bundle's chunks under a running instance, or a file briefly missing, must not leave the
 * instance without outgoing requests until it restarts (Node itself retries a failed import()).
 */
function loadUndici(): NonNullable<typeof undici> {
  return import('undici').then(
    (loaded) => loaded.default,
    (error: unknown) => {
      undici = undefined;
      throw error;
    },
  );
}

/**
 * A pooled undici agent made at its first request. Loading undici costs about 60 ms
 * of start-up CPU, and a server may run for long before it sends anything out.
 */
export class LazyAgent {
  private agent: Agent | undefined;

  constructor(private readonly options: Agent.Options) {}

  async request(url: string, options: RequestOptions): Promise<Dispatcher.ResponseData<unknown>> {
    const client = await (undici ??= loadUndici());
    this.agent ??= new client.Agent(this.options);
    return client.request(url, { ...options, dispatcher: this.agent });
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }
}

/** An outgoing request's failure in one line: its message, with the system error code (ECONNREFUSED, ...) when the message lacks it. */
export function requestErrorText(error: unknown): string {
  const cause = (error as { cause?: NodeJS.ErrnoException }).cause;
  const code = (error as NodeJS.ErrnoException).code ?? cause?.code;
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.includes(code) ? `${code} ${message}` : message;
}
