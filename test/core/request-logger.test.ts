import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { lazyRequestLogger } from '../../src/core/http/request-logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, stream) };
}

describe('the lazy request logger', () => {
  it('makes its pino child at the first log, with the request id, and keeps it', () => {
    const { lines, logger } = capture();
    let children = 0;
    const child = logger.child.bind(logger);
    logger.child = ((...args: Parameters<typeof child>) => (children++, child(...args))) as typeof logger.child;

    const log = lazyRequestLogger(logger, { reqId: 'req-1' }, {});
    expect(children).toBe(0);
    expect(log.level).toBe('info');
    log.debug('not at this level');
    log.error({ err: 'boom' }, 'request failed');
    log.info('again');
    expect(children).toBe(1);
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([
      ['req-1', 'request failed'],
      ['req-1', 'again'],
    ]);
    expect(lines[0].err).toBe('boom');
  });

  it('follows a route level and its changes', () => {
    const { lines, logger } = capture();
    const log = lazyRequestLogger(logger, { reqId: 'req-2' }, { level: 'warn' });
    expect(log.level).toBe('warn');
    log.info('dropped');
    log.level = 'debug';
    log.debug('kept');
    expect(lines.map((l) => l.msg)).toEqual(['kept']);
    expect(log.child({ part: 'x' }).level).toBe('debug');
  });
});
