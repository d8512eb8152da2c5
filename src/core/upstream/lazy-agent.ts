import type { Agent, Dispatcher, request } from 'undici';

type RequestOptions = Omit<NonNullable<Parameters<typeof request>[1]>, 'dispatcher'>;

/** undici's `module.exports`: the one shape its import gives both from node_modules and from a bundle chunk. */
let undici: Promise<(typeof import('undici'))['default']> | undefined;

/**
 * A pooled undici agent made at its first request. Loading undici costs about 60 ms
 * of start-up CPU, and a server may run for long before it sends anything out.
 */
export class LazyAgent {
  private agent: Agent | undefined;

  constructor(private readonly options: Agent.Options) {}

  async request(url: string, options: RequestOptions): Promise<Dispatcher.ResponseData<unknown>> {
    const client = await (undici ??= import('undici').then((loaded) => loaded.default));
    this.agent ??= new client.Agent(this.options);
    return client.request(url, { ...options, dispatcher: this.agent });
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }
}
