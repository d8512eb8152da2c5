import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultScript, fakeModel, isTaskPrompt } from '../../helpers/fake-model.js';
import { useServer, withWorld } from '../../helpers/world.js';
import { type Browser, openBrowser, outputText, webRequest } from './setup.js';

/**
 * Native function calling with real Python tools: the selected tools' specs
 * go to the model (a name two tools share is offered twice, distinctly), the
 * calls run in the plugin host with the user's valves, their results go back
 * as tool messages, a failing tool is an error result, and what the tools emit
 * reaches the socket and the stored message.
 */
const CALC = `"""
title: Calc
"""
from pydantic import BaseModel


class Tools:
    class UserValves(BaseModel):
        unit: str = "apples"

    async def add(self, a: int, b: int, __user__: dict = {}, __event_emitter__=None) -> str:
        """Adds two numbers."""
        if __event_emitter__ is None:  # API calls without a chat have no emitter
            return f"{a + b} {__user__['valves'].unit}"
        await __event_emitter__({"type": "status", "data": {"description": f"adding {a} and {b}", "done": False}})
        await __event_emitter__({"type": "citation", "data": {"source": {"name": "calculator"}, "document": ["arithmetic"], "metadata": [{"source": "calc"}]}})
        return f"{a + b} {__user__['valves'].unit}"

    def fail(self) -> str:
        """Always fails."""
        raise ValueError("this tool always fails")
`;

const OTHER = `"""
title: Other
"""


class Tools:
    def add(self, a: int, b: int) -> str:
        """Adds differently."""
        return f"{a + b} other"
`;

const toolsScript = (body: any) => {
  if (isTaskPrompt(body)) return defaultScript(body);
  const results = body.messages.filter((m: any) => m.role === 'tool');
  if (results.length === 0) {
    return {
      text: 'Let me compute.',
      toolCalls: [
        { name: 'add', arguments: { a: 2, b: 3, extra: 'dropped' } },
        { name: 'fail', arguments: {} },
        { name: 'other_add', arguments: '{"a": 1, "b": 1}' },
        { name: 'missing_tool', arguments: {} },
        { name: 'add', arguments: '{"a": 1,' },
      ],
    };
  }
  return { text: `Results: ${results.map((r: any) => r.content).join(' | ')}` };
};

describe('tool calling', () => {
  const world = useServer({ fakes: fakeModel(), env: { PLUGIN_POOL_SIZE: '2' }, admin: 'Tools Admin', users: { alice: ['user', 'Tools Alice'] } });
  let browser: Browser;

  beforeAll(async () => {
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    for (const [id, content] of [
      ['calc', CALC],
      ['other', OTHER],
    ]) {
      const res = await world.api.post('/api/v1/tools/create', { id, name: id, content, meta: { description: id }, access_grants: everyone }, { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
    }
    const valves = await world.api.post('/api/v1/tools/id/calc/valves/user/update', { unit: 'pears' }, { token: world.alice.token });
    expect(valves.status, valves.text).toBe(200);
    await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, { token: world.admin.token });
    world.model.script = toolsScript;
    browser = await openBrowser(world.server.url, world.alice.token);
  });

  afterAll(() => {
    browser?.close();
  });

  it('runs the calls in the plugin host and sends the results back to the model', async () => {
    const { body, assistantId } = webRequest(browser.socket, { content: 'add 2 and 3', extra: { tool_ids: ['calc', 'other|add', 'server:nowhere', 'not-a-tool'], background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the final answer', 20000);

    const [first, second] = world.model.chatRequests().slice(-2);
    expect(first.tools.map((t: any) => [t.type, t.function.name])).toEqual([
      ['function', 'add'],
      ['function', 'fail'],
      ['function', 'other_add'],
      // A web client's answer also gets the built-in tools (builtin-tools.ts): time, knowledge, chats and notes here.
      ['function', 'get_current_timestamp'],
      ['function', 'calculate_timestamp'],
      ['function', 'list_knowledge_bases'],
      ['function', 'search_knowledge_bases'],
      ['function', 'query_knowledge_files'],
      ['function', 'search_chats'],
      ['function', 'view_chat'],
      ['function', 'search_notes'],
      ['function', 'view_note'],
      ['function', 'write_note'],
      ['function', 'replace_note_content'],
    ]);
    expect(first.tools[0].function.parameters.properties).toMatchObject({ a: { type: 'integer' }, b: { type: 'integer' } });
    const calls = second.messages.find((m: any) => m.role === 'assistant').tool_calls;
    expect(calls.map((c: any) => c.function.name)).toEqual(['add', 'fail', 'other_add', 'missing_tool', 'add']);
    const results = second.messages.filter((m: any) => m.role === 'tool');
    expect(results.map((m: any) => m.tool_call_id)).toEqual(calls.map((c: any) => c.id));
    expect(results[0].content).toBe('5 pears');
    expect(results[1].content).toContain('this tool always fails');
    expect(results[2].content).toBe('2 other');
    expect(results[3].content).toBe('Error: Tool "missing_tool" not found.');
    expect(results[4].content).toMatch(/^Error: Tool call arguments could not be parsed/);
    expect(second.messages.at(-1).role).toBe('tool');
    expect(second.messages[0]).toEqual({ role: 'user', content: 'add 2 and 3' });

    const output = done.data.output;
    expect(output.map((item: any) => item.type)).toEqual(['message', ...Array(5).fill('function_call'), ...Array(5).fill('function_call_output'), 'message']);
    expect(output.every((item: any) => item.status === 'completed')).toBe(true);
    expect(output[1]).toMatchObject({ name: 'add', arguments: expect.stringContaining('"a":2') });
    expect(output[6]).toMatchObject({ call_id: output[1].call_id, output: [{ type: 'input_text', text: '5 pears' }] });
    expect(outputText(output)).toBe(`Let me compute.\nResults: 5 pears | ${results[1].content} | 2 other | ${results[3].content} | ${results[4].content}`);

    // What the tool emitted reached the socket, and the message keeps it.
    const status = await browser.next((e) => e.message_id === assistantId && e.type === 'status', 'the tool status');
    expect(status.data).toEqual({ description: 'adding 2 and 3', done: false });
    expect(browser.received.some((e) => e.message_id === assistantId && e.type === 'citation' && e.data.source.name === 'calculator')).toBe(true);
    const stored = (await world.api.get(`/api/v1/chats/${res.body.chat_id}`, { token: world.alice.token })).body.chat.history.messages[assistantId];
    expect(stored.statusHistory).toEqual([{ description: 'adding 2 and 3', done: false }]);
    expect(stored.sources).toEqual([{ source: { name: 'calculator' }, document: ['arithmetic'], metadata: [{ source: 'calc' }] }]);
    expect(stored.output.map((item: any) => item.type)).toEqual(output.map((item: any) => item.type));
  }, 30000);

  it('runs tools for API clients too, answering with the final text', async () => {
    const client = new OpenAI({ apiKey: world.alice.token, baseURL: `${world.server.url}/api`, maxRetries: 0 });
    const body = { model: 'fake-model', messages: [{ role: 'user' as const, content: 'add please' }], tool_ids: ['calc', 'other'] };
    const answer = await client.chat.completions.create(body as never);
    expect((answer as any).choices[0].message.content).toMatch(/^Let me compute.\nResults: 5 pears \| .*this tool always fails.* \| 2 other/);

    const stream = await client.chat.completions.create({ ...body, stream: true } as never);
    let text = '';
    for await (const chunk of stream as any) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toMatch(/^Let me compute.Results: 5 pears/);
  }, 30000);

  it('with function_calling legacy, lets the task model pick the tools and puts their results before the model as sources', async () => {
    const previous = world.model.script;
    world.model.script = (body: any) => {
      const system = body.messages[0]?.role === 'system' ? String(body.messages[0].content) : '';
      if (system.startsWith('Available Tools:')) {
        return { text: 'Sure: {"tool_calls": [{"name": "add", "parameters": {"a": 4, "b": 5, "extra": "dropped"}}, {"name": "not_a_tool", "parameters": {}}]}' };
      }
      if (isTaskPrompt(body)) return defaultScript(body);
      return { text: `Answer from: ${body.messages.at(-1).content}` };
    };
    try {
      const { body, assistantId } = webRequest(browser.socket, { content: 'add 4 and 5', extra: { tool_ids: ['calc'], params: { function_calling: 'legacy' }, background_tasks: {} } });
      const res = await world.api.post('/api/chat/completions', body, { token: world.alice.token });
      expect(res.status, res.text).toBe(200);
      const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the final answer', 20000);

      const choice = world.model.requests.find((r: any) => String(r.messages?.[0]?.content ?? '').startsWith('Available Tools:'));
      expect(choice.stream).toBe(false);
      expect(JSON.parse(choice.messages[0].content.slice('Available Tools: '.length, choice.messages[0].content.indexOf('\n'))).map((spec: any) => spec.name)).toEqual(['add', 'fail']);
      expect(choice.messages[1]).toEqual({ role: 'user', content: 'Query: add 4 and 5' });

      // The model itself is offered no tools; the result reaches it through the RAG template.
      const answer = world.model.chatRequests().at(-1);
      expect(answer.tools).toBeUndefined();
      expect(answer.messages.at(-1).content).toContain('<source id="1" name="calc/add">9 pears</source>');
      expect(outputText(done.data.output)).toMatch(/^Answer from: /);
      const stored = (await world.api.get(`/api/v1/chats/${res.body.chat_id}`, { token: world.alice.token })).body.chat.history.messages[assistantId];
      expect(stored.sources).toEqual([{ source: { name: 'calc/add' }, document: ['9 pears'], metadata: [{ source: 'calc/add', parameters: { a: 4, b: 5 } }], tool_result: true }]);
    } finally {
      world.model.script = previous;
    }
  }, 30000);

  it('stops after the configured number of tool rounds', async () => {
    await withWorld({ fakes: fakeModel(), env: { CHAT_RESPONSE_MAX_TOOL_CALL_ITERATIONS: '2' }, admin: 'Limit Admin' }, async (limited) => {
      const owner = limited.admin;
      await limited.server.api.post('/api/v1/tools/create', { id: 'calc', name: 'calc', content: CALC, meta: { description: 'calc' } }, { token: owner.token });
      limited.model.script = (body) => (isTaskPrompt(body) ? defaultScript(body) : { toolCalls: [{ name: 'add', arguments: { a: 1, b: 1 } }] });
      const res = await limited.server.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'loop' }], tool_ids: ['calc'] }, { token: owner.token });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ detail: 'Tool-call limit reached (2 iterations).', error: { message: 'Tool-call limit reached (2 iterations).' } });
      expect(limited.model.chatRequests()).toHaveLength(3);
    });
  }, 30000);
});
