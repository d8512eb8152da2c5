import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;
type Log = (...args: unknown[]) => void;

/**
 * A request's logger (`request.log`), made only when the request logs something.
 * Fastify makes a pino child with the request id for every request; most never
 * log, and the child costs a few percent of a small request's CPU (docs/bench.md).
 */
class LazyRequestLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: unknown[]) {
    (this.logger.fatal as Log)(...args);
  }
  error(...args: unknown[]) {
    (this.logger.error as Log)(...args);
  }
  warn(...args: unknown[]) {
    (this.logger.warn as Log)(...args);
  }
  info(...args: unknown[]) {
    (this.logger.info as Log)(...args);
  }
  debug(...args: unknown[]) {
    (this.logger.debug as Log)(...args);
  }
  trace(...args: unknown[]) {
    (this.logger.trace as Log)(...args);
  }
  silent(...args: unknown[]) {
    (this.logger.silent as Log)(...args);
  }
  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

export function lazyRequestLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger {
  return new LazyRequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}
