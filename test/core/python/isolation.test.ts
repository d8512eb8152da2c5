import { chmodSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginError } from '../../../src/core/python/errors.js';
import { PythonHost } from '../../../src/core/python/host.js';
import { useServer } from '../../helpers/world.js';
import { isAlive, testHost, toolSource } from './helpers.js';

const runtime = () => ({ id: 'runtime', content: toolSource('runtime') });

describe('crash isolation', () => {
  const world = useServer({ admin: false });
  let host: PythonHost;
  let dispose: () => Promise<void>;
  beforeAll(() => {
    ({ host, dispose } = testHost({ poolSize: 3, callTimeoutMs: 1500, memoryLimitMb: 512 }));
  });
  afterAll(async () => {
    await dispose();
  });

  it('kills a tool that loops forever at the timeout while other calls and the server carry on', async () => {
    // Warm every worker first, so the calls below measure answering, not start-up.
    await Promise.all([0, 1, 2].map(() => host.callTool(runtime(), 'slow', { seconds: 0.2 })));
    const started = Date.now();
    let settled = false;
    const looping = host
      .callTool(runtime(), 'forever', {})
      .catch((error: PluginError) => error)
      .finally(() => (settled = true));

    // Meanwhile: Node's event loop stays responsive, other calls and HTTP requests are answered.
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 50);
    const others: string[] = [];
    const health: number[] = [];
    while (!settled) {
      others.push((await host.callTool(runtime(), 'echo', { text: 'x' })).value as string);
      health.push((await world.api.get('/health')).status);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const error = await looping;
    clearInterval(ticker);

    expect(error).toMatchObject({ code: 'timeout', message: 'The tool did not finish within 1.5 s; its worker was stopped' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(others.length).toBeGreaterThanOrEqual(3);
    expect(others.every((value) => value === 'v:x:anon:None:runtime')).toBe(true);
    expect(health.every((status) => status === 200)).toBe(true);
    expect(ticks).toBeGreaterThanOrEqual(10);
    expect((await host.callTool(runtime(), 'echo', { text: 'after' })).value).toBe('v:after:anon:None:runtime');
  });

  it('a per-call timeout overrides the default', async () => {
    await expect(host.callTool(runtime(), 'slow', { seconds: 5 }, { timeoutMs: 300 })).rejects.toMatchObject({
      code: 'timeout',
      message: 'The tool did not finish within 300 ms; its worker was stopped',
    });
  });

  it('survives a tool that kills its own interpreter', async () => {
    const before = new Set(host.workerPids());
    await expect(host.callTool(runtime(), 'die', {})).rejects.toMatchObject({
      code: 'worker_died',
      message: expect.stringContaining('The Python worker exited unexpectedly (signal SIGKILL)'),
    });
    await expect(host.callTool(runtime(), 'exit_quietly', {})).rejects.toMatchObject({
      code: 'worker_died',
      message: expect.stringContaining('exit code 4'),
    });
    expect((await host.callTool(runtime(), 'echo', { text: 'ok' })).value).toBe('v:ok:anon:None:runtime');
    // The dead were replaced by new processes.
    expect(host.workerPids().some((pid) => !before.has(pid))).toBe(true);
  });

  it('stops a tool that goes over the memory limit', async () => {
    const error = (await host.callTool(runtime(), 'hog', { megabytes: 2048 }).catch((e) => e)) as PluginError;
    expect(error.code).toBe('memory');
    expect(error.message).toBe('The tool exceeded the memory limit of 512 MiB; its worker was replaced');
    expect(error.details.pythonType).toBe('MemoryError');
    expect((await host.callTool(runtime(), 'echo', { text: 'ok' })).value).toBe('v:ok:anon:None:runtime');
  });

  it('runs concurrent calls on the pool, queueing beyond its size', async () => {
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 9 }, (_, index) => host.callTool(runtime(), 'slow', { seconds: 0.3, tag: String(index) })),
    );
    expect(results.map((result) => result.value)).toEqual(Array.from({ length: 9 }, (_, index) => `slept ${index}`));
    const elapsed = Date.now() - started;
    // 3 workers: three rounds of 0.3 s, not nine.
    expect(elapsed).toBeGreaterThanOrEqual(850);
    expect(elapsed).toBeLessThan(4000);
    expect(host.stats().workers).toBeLessThanOrEqual(3);
  });
});

describe('missing Python pieces', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-python-missing-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('reports the interpreter in use', async () => {
    const { host, dispose } = testHost();
    expect(await host.probe()).toMatchObject({ python: expect.stringMatching(/^3\./), pydantic: expect.stringMatching(/^2\./) });
    await dispose();
  });

  it('names a missing interpreter', async () => {
    const host = new PythonHost({ dataDir, python: '/nonexistent/python3', pipInstall: false });
    await expect(host.probe()).rejects.toMatchObject({ code: 'unavailable' });
    await expect(host.extract('t', 'class Tools:\n    pass\n')).rejects.toMatchObject({
      code: 'unavailable',
      message: 'Python interpreter "/nonexistent/python3" was not found. Install Python 3 with pydantic 2 (scripts/setup-python.sh prepares one) or set PYTHON.',
    });
    // Every waiting caller gets the error, none hangs.
    const many = await Promise.allSettled([host.extract('a', ''), host.extract('b', ''), host.extract('c', '')]);
    expect(many.every((outcome) => outcome.status === 'rejected')).toBe(true);
    await host.close();
  });

  it('names missing pydantic', async () => {
    // An interpreter without site-packages: pydantic cannot be imported.
    // Outside DATA_DIR, which the sandbox never shows, and readable by the plugin user.
    const interpreters = mkdtempSync(path.join(tmpdir(), 'parley-python-bare-'));
    chmodSync(interpreters, 0o755);
    const bare = path.join(interpreters, 'python-without-site');
    writeFileSync(bare, `#!/bin/sh\nexec ${realpathSync(new PythonHost({ dataDir }).python)} -S "$@"\n`);
    chmodSync(bare, 0o755);
    const host = new PythonHost({ dataDir, python: bare, pipInstall: false });
    const error = (await host.extract('t', 'class Tools:\n    pass\n').catch((e) => e)) as PluginError;
    expect(error.code).toBe('unavailable');
    expect(error.message).toMatch(/^pydantic is not importable by .*\(No module named 'pydantic'\)\. Run scripts\/setup-python\.sh/);
    const pids = host.workerPids();
    await host.close();
    expect(pids.filter(isAlive)).toEqual([]);
  });

  it('can be switched off (ENABLE_PLUGINS=false)', async () => {
    const { host, dispose } = testHost({ enabled: false });
    await expect(host.callTool(runtime(), 'echo', {})).rejects.toMatchObject({
      code: 'disabled',
      message: 'Plugins are disabled by ENABLE_PLUGINS=false',
    });
    expect(host.workerPids()).toEqual([]);
    await dispose();
  });
});
