import { describe, expect, it } from 'vitest';
import { fakeModel } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { outputText, useBrowser, webRequest } from './setup.js';

/** A model of the user's direct connection as the web frontend names it (`model_item` with `direct: true`). */
const DIRECT = { id: 'laptop.llama', name: 'Llama on my laptop', object: 'model', owned_by: 'openai', direct: true, urlIdx: 0 };

/**
 * Direct connections (ENABLE_DIRECT_CONNECTIONS): the user's own OpenAI-style connection, kept in
 * their browser, answers through the browser's socket (`request:chat:completion`, then the SSE lines
 * on the channel it names), as the reference's generate_direct_chat_completion; the server never
 * sees the connection's URL or key.
 */
describe('direct connections', () => {
  const world = useServer({ fakes: fakeModel(), env: { ENABLE_DIRECT_CONNECTIONS: 'true' }, admin: 'Direct Admin' });
  const browser = useBrowser(world);

  /** The browser's side: answers each request from its connection, streamed or whole. */
  const asked: any[] = [];
  const answerInBrowser = () =>
    browser.socket.on('events', (payload: any, ack?: (value: unknown) => void) => {
      if (payload?.data?.type !== 'request:chat:completion' || !ack) return;
      const { channel, form_data: form, model, session_id: sessionId } = payload.data.data;
      asked.push({ form, model, sessionId });
      if (!form.stream) return ack({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Whole answer from the laptop' }, finish_reason: 'stop' }] });
      ack({ status: true });
      for (const piece of ['Hello', ' from', ' my laptop']) browser.socket.emit(channel, `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}`);
      browser.socket.emit(channel, 'data: [DONE]');
      browser.socket.emit(channel, { done: true });
    });

  it('answers a chat through the browser, stored and streamed like any answer', async () => {
    expect((await world.api.get('/api/config', { token: world.admin.token })).body.features.enable_direct_connections).toBe(true);
    answerInBrowser();
    const { body, assistantId } = webRequest(browser.socket, { model: DIRECT.id, content: 'Hi laptop', extra: { model_item: DIRECT, background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.type === 'chat:completion' && e.data?.done === true && e.message_id === assistantId, 'the done event');
    expect(outputText(done.data.output)).toBe('Hello from my laptop');

    expect(asked).toHaveLength(1);
    expect(asked[0].model).toMatchObject({ id: DIRECT.id, urlIdx: 0 });
    expect(asked[0].sessionId).toBe(browser.socket.id);
    expect(asked[0].form).toMatchObject({ model: DIRECT.id, stream: true });
    expect(asked[0].form.messages.at(-1)).toMatchObject({ role: 'user', content: 'Hi laptop' });
    expect(asked[0].form).not.toHaveProperty('metadata');
    // The server's model was never asked.
    expect(world.model.requests.filter((r: any) => r.body?.model === DIRECT.id)).toEqual([]);

    const chat = await world.api.get(`/api/v1/chats/${res.body.chat_id}`, { token: world.admin.token });
    expect(chat.body.chat.history.messages[assistantId]).toMatchObject({ done: true, content: 'Hello from my laptop', model: DIRECT.id });
  });

  it('takes a whole (non-streamed) answer from the browser', async () => {
    const { body, assistantId } = webRequest(browser.socket, { model: DIRECT.id, content: 'Whole please', extra: { model_item: DIRECT, background_tasks: {}, params: { stream_response: false } } });
    body.stream = false;
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.type === 'chat:completion' && e.data?.done === true && e.message_id === assistantId, 'the done event');
    expect(outputText(done.data.output)).toBe('Whole answer from the laptop');
    expect(asked.at(-1).form.stream).toBe(false);
  });

  it('refuses a direct model without a browser session, and when direct connections are off', async () => {
    const noSession = await world.api.post('/api/chat/completions', { model: DIRECT.id, model_item: DIRECT, messages: [{ role: 'user', content: 'hi' }], stream: false }, { token: world.admin.token });
    expect(noSession.status).toBe(400);
    expect(noSession.body.detail).toMatch(/Direct connection requires an active WebSocket session/);

    expect((await world.api.post('/api/v1/configs/import', { config: { 'direct.enable': false } }, { token: world.admin.token })).status).toBe(200);
    expect((await world.api.get('/api/config', { token: world.admin.token })).body.features.enable_direct_connections).toBe(false);
    const { body } = webRequest(browser.socket, { model: DIRECT.id, content: 'Still there?', extra: { model_item: DIRECT } });
    const off = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    expect(off.status).toBe(400);
    expect(off.body.detail).toBe('Model not found');
  });
});
