import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PythonHost, ToolSource } from '../../../src/core/python/host.js';
import { PROGRESS_OF_TWO, recordingCallbacks, testHost, toolSource } from './helpers.js';

describe('callTool', () => {
  let host: PythonHost;
  let dispose: () => Promise<void>;
  const stored = new Map<string, ToolSource>();
  const runtime = () => ({ id: 'runtime', content: toolSource('runtime') });

  beforeAll(() => {
    ({ host, dispose } = testHost({ poolSize: 2, env: { PARLEY_TOOL_SETTING: 'visible' } }));
    host.setToolResolver(async (id) => stored.get(id) ?? null);
    stored.set('runtime', { content: toolSource('runtime'), valves: { prefix: 'P' } });
  });
  afterAll(async () => dispose());

  it('round trip: valves, user valves, __user__ and __id__ applied', async () => {
    const result = await host.callTool('runtime', 'echo', { text: 'ab', times: 2 }, { user: { id: 'u1', name: 'Ada' }, userValves: { nickname: 'ada' } });
    expect(result).toEqual({ value: 'P:abab:ada:Ada:runtime', text: 'P:abab:ada:Ada:runtime', files: [], embeds: [], response: null });
  });

  it('uses defaults when no valves are stored', async () => {
    const result = await host.callTool(runtime(), 'echo', { text: 'x' }, { user: { name: 'Bo' } });
    expect(result.value).toBe('v:x:anon:Bo:runtime');
  });

  it('coerces arguments as the reference does (str→int, number→str only)', async () => {
    const scalars = { id: 'scalars', content: toolSource('scalars') };
    const result = await host.callTool(scalars, 'coerce', { number: '7', maybe: '8', label: 3, optional_label: 2.5, ratio: '0.5' });
    expect(result.value).toEqual({ number: 7, maybe: 8, label: '3', optional_label: '2.5', ratio: '0.5' });
    await expect(host.callTool(scalars, 'coerce', { number: 'seven' })).rejects.toMatchObject({
      code: 'python_error',
      message: "ValueError: invalid literal for int() with base 10: 'seven'",
      details: { pythonMessage: "invalid literal for int() with base 10: 'seven'" },
    });
  });

  it('runs async functions', async () => {
    const result = await host.callTool(runtime(), 'slow', { seconds: 0.05, tag: 'a' });
    expect(result.value).toBe('slept a');
  });

  it('relays __event_emitter__ and __event_call__ to Node', async () => {
    const { emitted, asked, callbacks } = recordingCallbacks();
    const result = await host.callTool(runtime(), 'progress', { steps: 2 }, { metadata: { chat_id: 'c1' }, ...callbacks });
    expect(result.value).toBe('answer=True chat=c1');
    expect(emitted).toEqual(PROGRESS_OF_TWO.events);
    expect(asked).toEqual(PROGRESS_OF_TWO.questions);
  });

  it('hands the tool {"error": ...} when the event call fails, and None without an emitter', async () => {
    const result = await host.callTool(runtime(), 'progress', { steps: 0 }, {
      eventEmitter: () => {},
      eventCall: async () => {
        throw new Error('Client session disconnected.');
      },
    });
    expect(result.value).toBe("answer={'error': 'Client session disconnected.'} chat=None");
    await expect(host.callTool(runtime(), 'progress', { steps: 1 })).rejects.toMatchObject({
      message: "TypeError: 'NoneType' object is not callable",
    });
  });

  it('passes the reserved extras a function declares', async () => {
    const notes = { id: 'notes', content: toolSource('example3_notes'), valves: { priority: 3 } };
    const events: unknown[] = [];
    const result = await host.callTool(notes, 'add_note', { title: 'T', item: { title: 'i' } }, { eventEmitter: (event) => void events.push(event) });
    expect(result.value).toEqual({ tool: 'notes', title: 'T', item: { title: 'i' }, priority: 3 });
    expect(events).toHaveLength(1);
  });

  it('renders results as the reference shows them to the model', async () => {
    const call = (kind: string) => host.callTool(runtime(), 'results', { kind });
    expect((await call('dict')).text).toBe('{\n  "a": 1.0,\n  "b": [\n    1,\n    2\n  ],\n  "c": "é"\n}');
    expect(await call('list')).toMatchObject({
      value: ['x', 'data:text/plain;base64,eA==', 'y'],
      text: '{\n  "results": [\n    "x",\n    "y"\n  ]\n}',
      files: [{ type: 'data', content: 'data:text/plain;base64,eA==' }],
    });
    expect(await call('none')).toMatchObject({ value: null, text: null });
    expect(await call('int')).toMatchObject({ value: 42, text: '42' });
    expect(await call('bool')).toMatchObject({ value: true, text: 'True' });
    expect(await call('image')).toMatchObject({
      text: 'results: Image file read successfully.',
      files: [{ type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' }],
    });
    expect(await call('model')).toMatchObject({ value: { prefix: 'm', delay: 0 }, text: "prefix='m' delay=0.0" });
    expect(await call('tuple')).toMatchObject({ value: [{ k: 1 }, { h: 'v' }], text: '{\n  "k": 1\n}' });
    expect(await call('html')).toMatchObject({
      text: '{\n  "status": "success",\n  "code": "ui_component",\n  "message": "results: Embedded UI result is active and visible to the user."\n}',
      embeds: ['<b>hi</b>'],
      response: { status: 200, headers: { 'Content-Disposition': 'inline' }, body: '<b>hi</b>' },
    });
    expect(await call('html_context')).toMatchObject({ text: '{\n  "seen": true\n}', embeds: ['<i>x</i>'] });
    expect(await call('html_attachment')).toMatchObject({ text: '<p>body</p>', embeds: [] });
  });

  it('reports exceptions with their Python text, SystemExit included', async () => {
    await expect(host.callTool(runtime(), 'fail', { message: 'nope' })).rejects.toMatchObject({
      code: 'python_error',
      message: 'ValueError: nope',
      details: { pythonType: 'ValueError', pythonMessage: 'nope' },
    });
    await expect(host.callTool(runtime(), 'leave', {})).rejects.toMatchObject({ code: 'python_error', message: 'SystemExit: 2' });
    expect((await host.callTool(runtime(), 'echo', { text: 'still here' })).value).toBe('v:still here:anon:None:runtime');
  });

  it('only calls public functions', async () => {
    await expect(host.callTool(runtime(), '_helper', {})).rejects.toMatchObject({ code: 'function_not_found' });
    await expect(host.callTool(runtime(), '__init__', {})).rejects.toMatchObject({ code: 'function_not_found' });
    await expect(host.callTool(runtime(), 'Valves', {})).rejects.toMatchObject({ code: 'function_not_found' });
    await expect(host.callTool(runtime(), 'missing', {})).rejects.toMatchObject({
      code: 'function_not_found',
      message: 'Tool "missing" not found in tool "runtime"',
    });
  });

  it('ignores reserved names in the model arguments', async () => {
    const result = await host.callTool(runtime(), 'echo', { text: 'a', __id__: 'forged', __user__: { name: 'Eve' } }, { user: { name: 'Ada' } });
    expect(result.value).toBe('v:a:anon:Ada:runtime');
  });

  it('fails clearly for an unknown tool id', async () => {
    await expect(host.callTool('nope', 'echo', {})).rejects.toMatchObject({ code: 'tool_not_found', message: 'Tool not found: nope' });
  });

  it('keeps print() output away from the protocol', async () => {
    const result = await host.callTool(runtime(), 'noisy', {});
    expect(result.value).toBe('quiet');
  });

  it("does not hand the server's environment to tool code", async () => {
    process.env.PARLEY_TEST_SECRET = 'do-not-leak';
    try {
      const { host: fresh, dataDir, dispose: disposeFresh } = testHost({ env: { PARLEY_TOOL_SETTING: 'visible' } });
      const seen = (await fresh.callTool(runtime(), 'environment', {})).value as Record<string, string>;
      await disposeFresh();
      // As in the reference's process (open_webui.env reads it), but the worker's private folder, not the server's data.
      expect(seen.DATA_DIR).toMatch(/parley-plugins-.*\/w-/);
      expect(seen.DATA_DIR.startsWith(dataDir)).toBe(false);
      expect(seen.HOME).toBe(seen.DATA_DIR);
      expect(seen.PARLEY_VERSION).toBe('0.11.0');
      expect(seen.PARLEY_TEST_SECRET).toBeUndefined();
      expect(seen.PARLEY_TOOL_SETTING).toBe('visible');
      expect(seen.PATH).toBe(process.env.PATH);
      expect(seen.PYTHONPATH).toBeUndefined();
      for (const name of Object.keys(seen)) {
        expect(name).toMatch(/^(PATH|PWD|HOME|USER|LANG|LANGUAGE|TZ|TMPDIR|TEMP|TMP|LC_\w+|PARLEY_TOOL_SETTING|DATA_DIR|PARLEY_VERSION|PYTHON\w+|.*_PROXY|.*_proxy|SSL_CERT_\w+|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE)$/);
      }
    } finally {
      delete process.env.PARLEY_TEST_SECRET;
    }
  });

  it('keeps the module per tool id and content hash; new content reloads', async () => {
    const v1 = { id: 'versioned', content: 'class Tools:\n    def version(self) -> str:\n        return "one"\n' };
    const v2 = { id: 'versioned', content: v1.content.replace('"one"', '"two"') };
    expect((await host.callTool(v1, 'version', {})).value).toBe('one');
    expect((await host.callTool(v2, 'version', {})).value).toBe('two');
    expect((await host.callTool(v1, 'version', {})).value).toBe('one');
    const extraction = await host.extract('versioned', v2.content);
    expect(extraction.specs.map((spec) => spec.name)).toEqual(['version']);
  });

  it('reuses the loaded instance between calls (state survives on a worker)', async () => {
    const { host: single, dispose: disposeSingle } = testHost({ poolSize: 1 });
    try {
      const tool = runtime();
      await single.callTool(tool, 'echo', { text: 'a' });
      await single.callTool(tool, 'echo', { text: 'b' });
      expect((await single.callTool(tool, 'count', {})).value).toBe(2);
      single.forget('runtime');
      expect((await single.callTool(tool, 'count', {})).value).toBe(0);
    } finally {
      await disposeSingle();
    }
  });
});
