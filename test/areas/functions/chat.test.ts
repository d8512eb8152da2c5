import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultScript, fakeModel, isTaskPrompt, lastUserText } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, outputText, webRequest } from '../completions/setup.js';

/**
 * Functions in chats, with real Python: a manifold pipe answering as models
 * (text, dict, sync and async generators, a failure, a hang), global filters
 * whose inlet the model sees, whose stream filter changes every chunk and whose
 * outlet changes the stored answer, and an action with two buttons.
 */
const MANIFOLD = `"""
title: Demo manifold
"""
import asyncio
from pydantic import BaseModel
from open_webui.constants import TASKS
from open_webui.utils.misc import openai_chat_chunk_message_template


class Pipe:
    class Valves(BaseModel):
        greeting: str = "echo"
        upstream: str = ""

    class UserValves(BaseModel):
        nickname: str = "friend"

    def __init__(self):
        self.name = "Demo/"
        self.valves = self.Valves()

    def pipes(self):
        return [{"id": name, "name": name.title()} for name in ("echo", "dict", "gen", "agen", "proxy", "boom", "hang")]

    async def pipe(self, body: dict, __user__: dict, __event_emitter__=None, __metadata__=None, __task__=None):
        kind = body["model"].split(".", 1)[1]
        if __task__ == TASKS.TITLE_GENERATION:
            return '{"title": "Piped title"}'
        last = body["messages"][-1]["content"]
        if kind == "echo":
            if __event_emitter__:
                await __event_emitter__({"type": "status", "data": {"description": "piping", "done": True}})
            return f"{self.valves.greeting} {__user__['valves'].nickname}: {last}"
        if kind == "dict":
            return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "from a dict"}}]}
        if kind == "gen":
            return (word for word in ["a", "b", "c"])
        if kind == "agen":
            async def words():
                for word in ["x", "y"]:
                    await asyncio.sleep(0)
                    yield openai_chat_chunk_message_template(body["model"], word)
            return words()
        if kind == "proxy":
            import requests
            answer = requests.post(self.valves.upstream + "/chat/completions", json={**body, "model": "fake-model"}, stream=True, timeout=10)
            answer.raise_for_status()
            return answer.iter_lines()
        if kind == "boom":
            raise ValueError("pipe exploded")
        while True:
            await asyncio.sleep(0.05)
`;

const FILTER = `
from open_webui.utils.misc import get_last_user_message, set_last_user_message_content


class Filter:
    def inlet(self, body: dict, __user__: dict, __model__=None) -> dict:
        if get_last_user_message(body["messages"]) == "forbidden":
            raise Exception("This topic is not allowed")
        set_last_user_message_content(get_last_user_message(body["messages"]) + " [inlet " + __model__["id"] + "]", body["messages"])
        return body

    def stream(self, event: dict) -> dict:
        for choice in event.get("choices", []):
            delta = choice.get("delta") or {}
            if delta.get("content"):
                delta["content"] = delta["content"].upper()
        return event

    def outlet(self, body: dict) -> dict:
        body["messages"][-1]["content"] += " [outlet]"
        return body
`;

const ACTION = `
from fastapi.responses import HTMLResponse


class Action:
    actions = [{"id": "one", "name": "One"}, {"id": "two", "name": "Two"}]

    async def action(self, body: dict, __id__=None, __event_emitter__=None, __user__=None):
        if __id__ == "chart":
            return HTMLResponse(content="<b>chart</b>", headers={"Content-Disposition": "inline"})
        await __event_emitter__({"type": "status", "data": {"description": "pressed " + __id__, "done": True}})
        return {"pressed": __id__, "by": __user__["name"], "message": body["id"]}
`;

describe('functions in chats', () => {
  const world = useServer({ fakes: fakeModel(), env: { PLUGIN_POOL_SIZE: '3', PLUGIN_CALL_TIMEOUT: '4' }, admin: 'Fn Chat Admin', users: { alice: ['user', 'Fn Chat Alice'] } });
  let browser: Browser;
  const admin = () => ({ token: world.admin.token });

  const install = async (id: string, content: string, global = false) => {
    const res = await world.api.post('/api/v1/functions/create', { id, name: `Fn ${id}`, content, meta: { description: id } }, admin());
    expect(res.status, res.text).toBe(200);
    expect((await world.api.post(`/api/v1/functions/id/${id}/toggle`, {}, admin())).body.is_active).toBe(true);
    if (global) expect((await world.api.post(`/api/v1/functions/id/${id}/toggle/global`, {}, admin())).body.is_global).toBe(true);
  };

  beforeAll(async () => {
    await install('demo', MANIFOLD);
    await install('buttons', ACTION);
    await world.api.post('/api/v1/functions/id/demo/valves/user/update', { nickname: 'admin' }, admin());
    await world.api.post('/api/v1/functions/id/demo/valves/update', { upstream: world.model.url }, admin());
    world.model.script = (body) => (isTaskPrompt(body) ? defaultScript(body) : { text: `You said: ${lastUserText(body.messages)}` });
    browser = await openBrowser(world.server.url, world.admin.token);
  }, 30000);

  afterAll(() => browser?.close());

  it('lists a manifold pipe as models named with its prefix', async () => {
    const res = await world.api.get('/api/models', admin());
    const pipes = res.body.data.filter((m: any) => m.pipe);
    expect(pipes.map((m: any) => [m.id, m.name])).toEqual([
      ['demo.echo', 'Demo/Echo'],
      ['demo.dict', 'Demo/Dict'],
      ['demo.gen', 'Demo/Gen'],
      ['demo.agen', 'Demo/Agen'],
      ['demo.proxy', 'Demo/Proxy'],
      ['demo.boom', 'Demo/Boom'],
      ['demo.hang', 'Demo/Hang'],
    ]);
    expect(pipes[0]).toMatchObject({ object: 'model', owned_by: 'openai', pipe: { type: 'pipe' }, has_user_valves: true });
    expect(res.body.data.some((m: any) => m.id === 'fake-model')).toBe(true);
  }, 30000);

  it('obeys model access: a user reaches a pipe model only through a grant', async () => {
    const alice = { token: world.alice.token };
    const ask = () => world.api.post('/api/chat/completions', { model: 'demo.echo', messages: [{ role: 'user', content: 'hey' }] }, alice);
    expect((await world.api.get('/api/models', alice)).body.data.some((m: any) => m.pipe)).toBe(false);
    const refused = await ask();
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toBe('Model not found');
    const grant = [{ principal_type: 'user', principal_id: world.alice.id, permission: 'read' }];
    const model = await world.api.post('/api/v1/models/create', { id: 'demo.echo', name: 'Echo for Alice', meta: {}, params: {}, access_grants: grant }, admin());
    expect(model.status, model.text).toBe(200);
    expect((await world.api.get('/api/models', alice)).body.data.map((m: any) => m.id)).toContain('demo.echo');
    const answered = await ask();
    expect(answered.status, answered.text).toBe(200);
    expect(answered.body.choices[0].message.content).toBe('echo friend: hey');
  }, 30000);

  it('answers API clients from the pipe, streamed and not, whatever pipe returns', async () => {
    const client = new OpenAI({ apiKey: world.admin.token, baseURL: `${world.server.url}/api`, maxRetries: 0 });
    const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hello' }] });
    expect((await ask('demo.echo')).choices[0].message.content).toBe('echo admin: hello');
    expect((await ask('demo.dict')).choices[0].message.content).toBe('from a dict');
    expect((await ask('demo.gen')).choices[0].message.content).toBe('abc');
    for (const [model, expected] of [
      ['demo.gen', 'abc'],
      ['demo.agen', 'xy'],
      ['demo.echo', 'echo admin: hello'],
      // An upstream's own event stream, relayed line by line (requests' iter_lines).
      ['demo.proxy', 'You said: hello'],
    ]) {
      const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'hello' }] });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      expect(text).toBe(expected);
    }
    const failed = await world.api.post('/api/chat/completions', { model: 'demo.boom', messages: [{ role: 'user', content: 'hi' }] }, admin());
    // As the reference: a non-streamed pipe failure is the answer `{error: {detail}}`.
    expect(failed.status).toBe(200);
    expect(failed.body).toEqual({ error: { detail: 'pipe exploded' } });
  }, 30000);

  it('answers a web chat from a generator pipe, and a raising pipe is the chat error with no stuck task', async () => {
    const { body, assistantId } = webRequest(browser.socket, { model: 'demo.gen', content: 'go', extra: { background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, admin());
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer', 20000);
    expect(outputText(done.data.output)).toBe('abc');

    const echo = webRequest(browser.socket, { model: 'demo.echo', content: 'hi', extra: { background_tasks: { title_generation: true } } });
    await world.api.post('/api/chat/completions', echo.body, admin());
    const echoed = await browser.next((e) => e.message_id === echo.assistantId && e.type === 'chat:completion' && e.data?.done, 'the echo', 20000);
    expect(outputText(echoed.data.output)).toBe('echo admin: hi');
    // The title task went to the pipe too, which knew it from `__task__`.
    const title = await browser.next((e) => e.message_id === echo.assistantId && e.type === 'chat:title', 'the title', 20000);
    expect(title.data).toBe('Piped title');
    const status = await browser.next((e) => e.message_id === echo.assistantId && e.type === 'status', 'the pipe status');
    expect(status.data).toEqual({ description: 'piping', done: true });

    const boom = webRequest(browser.socket, { model: 'demo.boom', content: 'hi', extra: { background_tasks: {} } });
    const started = await world.api.post('/api/chat/completions', boom.body, admin());
    const error = await browser.next((e) => e.message_id === boom.assistantId && e.type === 'chat:message:error', 'the pipe error', 20000);
    expect(error.data.error.content).toBe('pipe exploded');
    const stored = (await world.api.get(`/api/v1/chats/${started.body.chat_id}`, admin())).body.chat.history.messages[boom.assistantId];
    expect(stored).toMatchObject({ done: true, error: { content: 'pipe exploded' } });
    await browser.next((e) => e.chat_id === started.body.chat_id && e.type === 'chat:active' && e.data.active === false, 'the chat inactive');
  }, 30000);

  it('stops a hanging pipe on task stop and on the call timeout', async () => {
    const hang = webRequest(browser.socket, { model: 'demo.hang', content: 'wait', extra: { background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', hang.body, admin());
    await new Promise((r) => setTimeout(r, 300));
    const stop = await world.api.post(`/api/tasks/stop/${res.body.task_ids[0]}`, {}, admin());
    expect(stop.status, stop.text).toBe(200);
    await browser.next((e) => e.message_id === hang.assistantId && e.type === 'chat:tasks:cancel', 'the cancel', 10000);

    const started = Date.now();
    const timedOut = await world.api.post('/api/chat/completions', { model: 'demo.hang', messages: [{ role: 'user', content: 'wait' }] }, admin());
    expect(timedOut.status).toBe(200);
    expect(timedOut.body.error.detail).toBe('The function did not finish within 4 s; its worker was stopped');
    expect(Date.now() - started).toBeLessThan(10000);
  }, 30000);

  it('runs global filters: inlet before the model, stream on every chunk, outlet on the stored answer', async () => {
    await install('marks', FILTER, true);
    const { body, assistantId } = webRequest(browser.socket, { content: 'filtered', extra: { background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, admin());
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer', 20000);
    const sent = world.model.chatRequests().at(-1);
    expect(sent.messages.at(-1).content).toBe('filtered [inlet fake-model]');
    expect(outputText(done.data.output)).toBe('YOU SAID: FILTERED [INLET FAKE-MODEL]');
    const outlet = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:outlet', 'the outlet event');
    expect(outlet.data.messages.at(-1).content).toBe('YOU SAID: FILTERED [INLET FAKE-MODEL] [outlet]');
    const stored = (await world.api.get(`/api/v1/chats/${res.body.chat_id}`, admin())).body.chat.history.messages[assistantId];
    expect(stored).toMatchObject({ content: 'YOU SAID: FILTERED [INLET FAKE-MODEL] [outlet]', originalContent: 'YOU SAID: FILTERED [INLET FAKE-MODEL]' });

    const completed = await world.api.post(
      '/api/chat/completed',
      { model: 'fake-model', id: 'm1', chat_id: res.body.chat_id, session_id: browser.socket.id, messages: [{ id: 'm1', role: 'assistant', content: 'done' }] },
      admin(),
    );
    expect(completed.status, completed.text).toBe(200);
    expect(completed.body.messages[0].content).toBe('done [outlet]');

    // A raising inlet refuses the request, and its message is the answer's error.
    const refused = webRequest(browser.socket, { content: 'forbidden', extra: { background_tasks: {} } });
    const denied = await world.api.post('/api/chat/completions', refused.body, admin());
    expect(denied.status).toBe(400);
    expect(denied.body.detail).toBe('This topic is not allowed');
    const shown = await browser.next((e) => e.message_id === refused.assistantId && e.type === 'chat:message:error', 'the inlet error');
    expect(shown.data.error.content).toBe('This topic is not allowed');

    // An API client's stream passes through the stream filter too.
    const client = new OpenAI({ apiKey: world.admin.token, baseURL: `${world.server.url}/api`, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'shout' }] });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
    expect(streamed).toBe('YOU SAID: SHOUT [INLET FAKE-MODEL]');

    // An API client answering a stored message: the outlet changes what is stored.
    const messages = {
      q: { id: 'q', parentId: null, childrenIds: ['a'], role: 'user', content: 'old question', timestamp: 1 },
      a: { id: 'a', parentId: 'q', childrenIds: [], role: 'assistant', content: 'old answer', model: 'fake-model', done: true, timestamp: 1 },
    };
    const chat = await world.api.post('/api/v1/chats/new', { chat: { title: 'Stored', models: ['fake-model'], history: { currentId: 'a', messages } } }, admin());
    const api = await world.api.post('/api/chat/completions', { model: 'fake-model', chat_id: chat.body.id, id: 'a', stream: false, messages: [{ role: 'user', content: 'api' }] }, admin());
    expect(api.status, api.text).toBe(200);
    expect(api.body.choices[0].message.content).toBe('You said: api [inlet fake-model]');
    const kept = (await world.api.get(`/api/v1/chats/${chat.body.id}`, admin())).body.chat.history.messages.a;
    expect(kept).toMatchObject({ content: 'You said: api [inlet fake-model] [outlet]', originalContent: 'You said: api [inlet fake-model]' });
    await world.api.post('/api/v1/functions/id/marks/toggle', {}, admin());
  }, 30000);

  it('runs an action and its sub-actions, its events reaching the chat', async () => {
    const { body, assistantId } = webRequest(browser.socket, { content: 'press', extra: { background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, admin());
    await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer', 20000);
    for (const sub of ['one', 'two']) {
      const pressed = await world.api.post(
        `/api/chat/actions/buttons.${sub}`,
        { model: 'fake-model', chat_id: res.body.chat_id, id: assistantId, session_id: browser.socket.id, messages: [] },
        admin(),
      );
      expect(pressed.status, pressed.text).toBe(200);
      expect(pressed.body).toEqual({ pressed: sub, by: 'Fn Chat Admin', message: assistantId });
      const status = await browser.next((e) => e.message_id === assistantId && e.type === 'status' && e.data.description === `pressed ${sub}`, 'the action status');
      expect(status.data.done).toBe(true);
    }
    // A rich UI result: the embed reaches the message, the caller gets the status.
    const chart = await world.api.post(
      '/api/chat/actions/buttons.chart',
      { model: 'fake-model', chat_id: res.body.chat_id, id: assistantId, session_id: browser.socket.id, messages: [] },
      admin(),
    );
    expect(chart.body).toEqual({ status: 'success', code: 'ui_component', message: 'buttons: Embedded UI result is active and visible to the user.' });
    const embeds = await browser.next((e) => e.message_id === assistantId && e.type === 'embeds', 'the embed');
    expect(embeds.data.embeds).toEqual(['<b>chart</b>']);

    // Global: every model shows its two buttons.
    await world.api.post('/api/v1/functions/id/buttons/toggle/global', {}, admin());
    const listed = (await world.api.get('/api/models', admin())).body.data.find((m: any) => m.id === 'fake-model');
    expect(listed.actions).toEqual([
      { id: 'buttons.one', name: 'One', description: 'buttons', icon: null },
      { id: 'buttons.two', name: 'Two', description: 'buttons', icon: null },
    ]);
    expect(listed.filters).toEqual([]);
    const missing = await world.api.post('/api/chat/actions/nothing', { model: 'fake-model', chat_id: res.body.chat_id, id: assistantId, messages: [] }, admin());
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toBe('Action not found: nothing');
  }, 30000);
});
