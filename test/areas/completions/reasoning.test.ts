import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelReply, defaultScript, fakeModel, isTaskPrompt } from '../../helpers/fake-model.js';
import { type TestJupyter, startJupyter } from '../../helpers/jupyter.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, webRequest } from './setup.js';

/**
 * Reasoning kept out of the answer (reasoning.ts) and the code interpreter
 * (code-interpreter.ts): tags split across stream chunks, upstream reasoning
 * deltas, the browser engine's `execute:python` call and a real Jupyter server.
 */
describe('reasoning and the code interpreter', () => {
  const world = useServer({ fakes: fakeModel(), admin: 'Reasoning Admin', env: { CODE_INTERPRETER_BLOCKED_MODULES: 'subprocess, ctypes' } });
  let browser: Browser;
  let reply: (body: any) => ModelReply;

  beforeAll(async () => {
    world.model.script = (body) => (isTaskPrompt(body) ? defaultScript(body) : reply(body));
    browser = await openBrowser(world.server.url, world.admin.token);
  });
  afterAll(() => browser?.close());

  /** Sends a message in web mode; answers the final output, every streamed output, and the stored answer. */
  async function chat(content: string, extra: Record<string, unknown> = {}) {
    const { body, assistantId } = webRequest(browser.socket, { content, extra: { background_tasks: {}, ...extra } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the final answer', 20000);
    const streamed = browser.received.filter((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.output && !e.data.done).map((e) => e.data.output);
    const stored = (await world.api.get(`/api/v1/chats/${res.body.chat_id}`, { token: world.admin.token })).body.chat.history.messages[assistantId];
    return { output: done.data.output as any[], streamed, stored };
  }

  const texts = (output: any[]) => output.filter((i) => i.type === 'message').map((i) => i.content.map((p: any) => p.text).join(''));

  it('takes <think> split across chunks out of the visible text, with its duration', async () => {
    reply = () => ({ chunks: ['Hello <th', 'ink>Let me', ' ponder</thi', 'nk>The answer', ' is 4.'], delayMs: 5 });
    const { output, streamed, stored } = await chat('what is 2+2?');
    expect(output.map((i) => i.type)).toEqual(['message', 'reasoning', 'message']);
    expect(texts(output)).toEqual(['Hello ', 'The answer is 4.']);
    expect(output[1]).toMatchObject({ status: 'completed', start_tag: '<think>', end_tag: '</think>', content: [{ type: 'output_text', text: 'Let me ponder' }] });
    expect(typeof output[1].duration).toBe('number');
    expect(output[1].ended_at).toBeGreaterThanOrEqual(output[1].started_at);
    // No streamed state ever showed a piece of a tag or of the reasoning as answer text.
    for (const state of streamed) for (const text of texts(state)) expect(text).not.toMatch(/<|ponder|Let me/);
    expect(streamed.some((state) => state.some((i: any) => i.type === 'reasoning' && i.status === 'in_progress'))).toBe(true);
    expect(stored.output).toEqual(output);
    expect(stored.content).not.toContain('ponder');
  }, 30000);

  it('reads the other tag pairs, attributes and solution tags; params.reasoning_tags turns it off', async () => {
    reply = () => ({ chunks: ['<|begin_of_thought|>plan', ' it<|end_of_', 'thought|><|begin_of_solution|>Solved', '<|end_of_solution|>'] });
    let { output } = await chat('solve');
    expect(output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    expect(output[0].content[0].text).toBe('plan it');
    expect(texts(output)).toEqual(['Solved']);

    reply = () => ({ chunks: ['<thinking type="deep"', '>deep thought</thinking>', ' Fine <b>bold</b> < 3'] });
    ({ output } = await chat('attributes'));
    expect(output[0]).toMatchObject({ type: 'reasoning', start_tag: '<thinking>', attributes: { type: 'deep' }, content: [{ text: 'deep thought' }] });
    expect(texts(output)).toEqual(['Fine <b>bold</b> < 3']);

    reply = () => ({ chunks: ['<think>shown', '</think> as text'] });
    ({ output } = await chat('off', { params: { reasoning_tags: false } }));
    expect(texts(output)).toEqual(['<think>shown</think> as text']);

    reply = () => ({ chunks: ['[[x', ' y]] z'] });
    ({ output } = await chat('custom', { params: { reasoning_tags: ['[[', ']]'] } }));
    expect(output[0].content[0].text).toBe('x y');
    expect(texts(output)).toEqual(['z']);
  }, 30000);

  it('turns reasoning_content, reasoning and thinking deltas into the reasoning item', async () => {
    for (const field of ['reasoning_content', 'reasoning', 'thinking']) {
      reply = () => ({ reasoning: ['First I ', 'think.'], reasoningField: field, text: 'Then I answer.' });
      const { output, stored } = await chat(`upstream ${field}`);
      expect(output.map((i) => i.type)).toEqual(['reasoning', 'message']);
      expect(output[0]).toMatchObject({ status: 'completed', attributes: { type: 'reasoning_content' }, content: [{ text: 'First I think.' }] });
      expect(typeof output[0].duration).toBe('number');
      expect(texts(output)).toEqual(['Then I answer.']);
      expect(stored.output).toEqual(output);
    }
    // The reasoning is not sent back to the model next time.
    const last = world.model.chatRequests().at(-1);
    expect(JSON.stringify(last.messages)).not.toContain('First I think');
  }, 30000);

  it('sends API clients reasoning_content deltas, never reasoning as content', async () => {
    reply = () => ({ chunks: ['<think>hidden ', 'plan</think>Visible.'] });
    const created = await world.api.post('/api/v1/chats/new', { chat: { title: 'API', history: { messages: {}, currentId: null } } }, { token: world.admin.token });
    const client = new OpenAI({ apiKey: world.admin.token, baseURL: `${world.server.url}/api`, maxRetries: 0 });
    const answer: any = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'api' }], chat_id: created.body.id, id: 'answer-1' } as never);
    expect(answer.choices[0].message.content).toBe('Visible.');
    expect(answer.choices[0].message.reasoning_content).toBe('hidden plan');

    // Streamed through the pipeline (a server-side tool selected): reasoning deltas apart from the content.
    const tool = 'class Tools:\n    def noop(self) -> str:\n        """Does nothing."""\n        return "ok"\n';
    expect((await world.api.post('/api/v1/tools/create', { id: 'noop', name: 'noop', content: tool, meta: { description: 'noop' } }, { token: world.admin.token })).status).toBe(200);
    reply = () => ({ reasoning: ['upstream '], chunks: ['<thi', 'nk>tagged</think>Shown', ' text.'] });
    const stream: any = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'api stream' }], tool_ids: ['noop'], stream: true } as never);
    let content = '';
    let reasoning = '';
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta?.content ?? '';
      reasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
    }
    expect(content).toBe('Shown text.');
    expect(reasoning).toBe('upstream tagged');
  }, 60000);

  it('runs code blocks in the browser (pyodide) and gives the model the output', async () => {
    const calls: any[] = [];
    browser.socket.on('events', (payload: any, ack?: (answer: unknown) => void) => {
      if (payload.data?.type !== 'execute:python' || payload.data.data.code.includes('never_answered')) return;
      calls.push(payload);
      ack?.({ stdout: '4\n', stderr: '', result: '' });
    });
    reply = (body) => {
      const last = body.messages.at(-1);
      if (last.role === 'assistant') return { text: `The output says ${last.content.includes('<code_interpreter_output>\n4') ? 'four' : 'nothing'}.` };
      return { chunks: ['Let me compute. <code_interpreter type="code" lang="py', 'thon">\nprint(2', '+2)\n</code_inter', 'preter> ignored'] };
    };
    const { output, stored, streamed } = await chat('compute 2+2', { features: { code_interpreter: true } });
    // The code streams into its block before it runs.
    expect(streamed.some((state) => state.some((i: any) => i.type === 'open_webui:code_interpreter' && i.code.includes('print(2') && !i.code.includes('+2)')))).toBe(true);
    expect(calls).toHaveLength(1);
    expect(calls[0].data.data).toMatchObject({ code: expect.stringMatching(/^import builtins[\s\S]*restricted[\s\S]*\nprint\(2\+2\)$/), session_id: browser.socket.id });
    expect(output.map((i) => i.type)).toEqual(['message', 'open_webui:code_interpreter', 'message']);
    expect(output[1]).toMatchObject({ status: 'completed', lang: 'python', attributes: { type: 'code', lang: 'python' }, code: 'print(2+2)', output: { stdout: '4\n' } });
    expect(texts(output)).toEqual(['Let me compute. ', 'The output says four.']);
    expect(stored.output).toEqual(output);
    const [first, second] = world.model.chatRequests().slice(-2);
    expect(first.messages.at(-1).content).toContain('You have access to a Python code interpreter');
    expect(first.messages.at(-1).content).toContain('Pyodide Environment');
    expect(second.messages.at(-1)).toMatchObject({ role: 'assistant', content: expect.stringContaining('<code_interpreter>\nprint(2+2)\n</code_interpreter>') });
  }, 30000);

  it('a stop does not wait for a browser that never answers the code call', async () => {
    reply = () => ({ chunks: ['<code_interpreter type="code">never_answered()</code_interpreter>'] });
    const { body, assistantId } = webRequest(browser.socket, { content: 'hang', extra: { background_tasks: {}, features: { code_interpreter: true } } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.output?.some((i: any) => i.type === 'open_webui:code_interpreter'), 'the code block');
    const stop = await world.api.post(`/api/tasks/chat/${res.body.chat_id}/stop`, {}, { token: world.admin.token });
    expect(stop.status).toBe(200);
    await browser.next((e) => e.message_id === assistantId && e.type === 'chat:tasks:cancel', 'the cancel');
    const stored = (await world.api.get(`/api/v1/chats/${res.body.chat_id}`, { token: world.admin.token })).body.chat.history.messages[assistantId];
    expect(stored).toMatchObject({ done: true, output: [{ type: 'open_webui:code_interpreter', code: 'never_answered()' }] });
  }, 30000);

  it('leaves code blocks as text without features.code_interpreter, or for a model without the capability', async () => {
    reply = () => ({ chunks: ['<code_interpreter type="code">print(1)</code_interpreter>'] });
    const { output } = await chat('no interpreter');
    expect(texts(output)).toEqual(['<code_interpreter type="code">print(1)</code_interpreter>']);

    const preset = { id: 'no-code', base_model_id: 'fake-model', name: 'No code', meta: { capabilities: { code_interpreter: false } }, params: {} };
    expect((await world.api.post('/api/v1/models/create', preset, { token: world.admin.token })).status).toBe(200);
    const { body, assistantId } = webRequest(browser.socket, { model: 'no-code', content: 'no capability', extra: { background_tasks: {}, features: { code_interpreter: true } } });
    expect((await world.api.post('/api/chat/completions', body, { token: world.admin.token })).status).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer');
    expect(texts(done.data.output)).toEqual(['<code_interpreter type="code">print(1)</code_interpreter>']);
    expect(world.model.chatRequests().at(-1).messages.at(-1).content).toBe('no capability');
  }, 30000);

  it("runs code blocks on Parley's own Python host (engine parley)", async () => {
    const config = async (engine: string) => {
      const current = await world.api.get('/api/v1/configs/code_execution', { token: world.admin.token });
      expect((await world.api.post('/api/v1/configs/code_execution', { ...current.body, CODE_INTERPRETER_ENGINE: engine }, { token: world.admin.token })).status).toBe(200);
    };
    await config('parley');
    try {
      reply = (body) => {
        const last = body.messages.at(-1);
        if (last.role === 'assistant') return { text: 'Done.' };
        return { chunks: ['<code_interpreter type="code" lang="python">\nimport os\nprint(sum(range(10)))\nos.path.exists("/etc")\n</code_interpreter>'] };
      };
      const { output } = await chat('sum', { features: { code_interpreter: true } });
      expect(output[0]).toMatchObject({ type: 'open_webui:code_interpreter', status: 'completed', output: { stdout: '45', stderr: '', result: 'True' } });
      expect(world.model.chatRequests().at(-2).messages.at(-1).content).not.toContain('Pyodide Environment');

      reply = (body) => (body.messages.at(-1).role === 'assistant' ? { text: 'Oops.' } : { chunks: ['<code_interpreter type="code">raise SystemExit(3)</code_interpreter>'] });
      const failed = await chat('exit', { features: { code_interpreter: true } });
      expect(failed.output[0].output.stderr).toContain('SystemExit: 3');

      // CODE_INTERPRETER_BLOCKED_MODULES: a direct import fails, a library's own imports do not.
      reply = (body) => (body.messages.at(-1).role === 'assistant' ? { text: 'Blocked.' } : { chunks: ['<code_interpreter type="code">import json\nimport subprocess</code_interpreter>'] });
      const blocked = await chat('blocked', { features: { code_interpreter: true } });
      expect(blocked.output[0].output.stderr).toContain('ImportError: Direct import of module subprocess is restricted.');
    } finally {
      await config('pyodide');
    }
  }, 60000);

  describe('on a Jupyter server', () => {
    let jupyter: TestJupyter;
    beforeAll(async () => {
      jupyter = await startJupyter();
      const current = await world.api.get('/api/v1/configs/code_execution', { token: world.admin.token });
      const form = { ...current.body, CODE_INTERPRETER_ENGINE: 'jupyter', CODE_INTERPRETER_JUPYTER_URL: jupyter.url, CODE_INTERPRETER_JUPYTER_AUTH: 'token', CODE_INTERPRETER_JUPYTER_AUTH_TOKEN: jupyter.token };
      const res = await world.api.post('/api/v1/configs/code_execution', form, { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
    }, 120000);
    afterAll(() => jupyter?.stop());

    it('runs the code in a kernel: printed text, shown values and errors', async () => {
      reply = (body) => {
        const last = body.messages.at(-1);
        if (last.role === 'assistant') return { text: 'Done.' };
        return { chunks: ['<code_interpreter type="code" lang="python">\nimport sys\nprint(6*7)\nprint("warn", file=sys.stderr)\n"shown"\n</code_interpreter>'] };
      };
      const { output } = await chat('run it', { features: { code_interpreter: true } });
      expect(output[0]).toMatchObject({ type: 'open_webui:code_interpreter', status: 'completed', output: { stdout: '42', stderr: 'warn', result: "'shown'" } });
      const first = world.model.chatRequests().at(-2);
      expect(first.messages.at(-1).content).not.toContain('Pyodide Environment');

      reply = (body) => (body.messages.at(-1).role === 'assistant' ? { text: 'Oops.' } : { chunks: ['<code_interpreter type="code">1/0</code_interpreter>'] });
      const failed = await chat('fail', { features: { code_interpreter: true } });
      expect(failed.output[0].output.stderr).toContain('ZeroDivisionError');

      // A shown image (a plot) becomes a file of the user's, linked from the output.
      const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
      const code = `import base64\nfrom IPython.display import Image, display\ndisplay(Image(data=base64.b64decode("${png}"), format="png"))`;
      reply = (body) => (body.messages.at(-1).role === 'assistant' ? { text: 'A plot.' } : { chunks: [`<code_interpreter type="code">${code}</code_interpreter>`] });
      const plotted = await chat('plot', { features: { code_interpreter: true } });
      const shown = plotted.output[0].output.result;
      expect(shown).toMatch(/^!\[Output Image\]\(\/api\/v1\/files\/[\w-]+\/content\)$/);
      const image = await fetch(`${world.server.url}${shown.slice('![Output Image]('.length, -1)}`, { headers: { authorization: `Bearer ${world.admin.token}` } });
      expect(image.status).toBe(200);
      expect(Buffer.from(await image.arrayBuffer()).toString('base64')).toBe(png);
      expect(world.model.chatRequests().at(-1).messages.at(-1).content).toContain(`<code_interpreter_output>\n${shown}\n</code_interpreter_output>`);
    }, 60000);

    it('serves the code blocks\' Run button with the jupyter code execution engine (/api/v1/utils/code/execute)', async () => {
      const execute = (code: unknown) => world.api.post('/api/v1/utils/code/execute', { code }, { token: world.admin.token });
      const current = (await world.api.get('/api/v1/configs/code_execution', { token: world.admin.token })).body;
      const set = async (fields: Record<string, unknown>) =>
        expect((await world.api.post('/api/v1/configs/code_execution', { ...current, ...fields }, { token: world.admin.token })).status).toBe(200);
      expect(await execute('print(1)')).toMatchObject({ status: 400, body: { detail: '[ERROR: Code execution engine not supported]' } });
      await set({ CODE_EXECUTION_ENGINE: 'jupyter', CODE_EXECUTION_JUPYTER_URL: jupyter.url, CODE_EXECUTION_JUPYTER_AUTH: 'token', CODE_EXECUTION_JUPYTER_AUTH_TOKEN: jupyter.token });
      expect((await world.api.get('/api/config', { token: world.admin.token })).body.features.enable_code_execution).toBe(true);
      const ran = await execute('x = 6 * 7\nprint(x)\nx + 1');
      expect(ran.status, ran.text).toBe(200);
      expect(ran.body).toEqual({ stdout: '42', stderr: '', result: '43' });
      expect((await execute(42)).status).toBe(422);
      await set({ ENABLE_CODE_EXECUTION: false, CODE_EXECUTION_ENGINE: 'jupyter' });
      expect(await execute('print(1)')).toMatchObject({ status: 403, body: { detail: 'Code execution is disabled' } });
      expect((await world.api.get('/api/config', { token: world.admin.token })).body.features.enable_code_execution).toBe(false);
      await set({});
    }, 60000);

    it('signs in with a password (the login form, its cookies and XSRF header)', async () => {
      const locked = await startJupyter({ password: 'kernel-secret' });
      const form = async (fields: Record<string, string>) => {
        const current = await world.api.get('/api/v1/configs/code_execution', { token: world.admin.token });
        expect((await world.api.post('/api/v1/configs/code_execution', { ...current.body, ...fields }, { token: world.admin.token })).status).toBe(200);
      };
      try {
        reply = (body) => (body.messages.at(-1).role === 'assistant' ? { text: 'Done.' } : { chunks: ['<code_interpreter type="code">print("signed in")</code_interpreter>'] });
        await form({ CODE_INTERPRETER_JUPYTER_URL: locked.url, CODE_INTERPRETER_JUPYTER_AUTH: 'password', CODE_INTERPRETER_JUPYTER_AUTH_PASSWORD: 'kernel-secret' });
        expect((await chat('password', { features: { code_interpreter: true } })).output[0].output).toMatchObject({ stdout: 'signed in', stderr: '' });
        await form({ CODE_INTERPRETER_JUPYTER_AUTH_PASSWORD: 'wrong' });
        expect((await chat('wrong password', { features: { code_interpreter: true } })).output[0].output.stderr).toMatch(/^Error: /);
      } finally {
        locked.stop();
      }
    }, 90000);
  });
});
