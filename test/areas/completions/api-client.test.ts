import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { TITLE, defaultScript, fakeModel, lastUserText } from '../../helpers/fake-model.js';
import { addUser } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { openBrowser, outputText, useBrowser, webRequest } from './setup.js';

/**
 * API client mode (no `session_id`): OpenAI's format, used with the official
 * `openai` client; and what goes wrong: a model the user may not use, a
 * provider that fails, a stream cut midway.
 */
describe('API client mode', () => {
  const world = useServer({ fakes: fakeModel(), admin: 'Api Admin', users: { alice: ['user', 'Api Alice'] } });

  const client = (token: string, path = '/api') => new OpenAI({ apiKey: token, baseURL: `${world.server.url}${path}`, maxRetries: 0 });

  it('answers the openai client as JSON, on both paths', async () => {
    for (const path of ['/api', '/api/v1']) {
      const answer = await client(world.admin.token, path).chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: `hi via ${path}` }] });
      expect(answer.choices[0].message.content).toBe(`You said: hi via ${path}`);
      expect(answer.usage?.total_tokens).toBeGreaterThan(0);
    }
    // Nothing is stored for an API call.
    expect((await world.api.get('/api/v1/chats/', { token: world.admin.token })).body).toEqual([]);
  });

  it('streams to the openai client', async () => {
    const stream = await client(world.admin.token).chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'stream this please' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe('You said: stream this please');
    const [request] = world.model.chatRequests().slice(-1);
    expect(request).toMatchObject({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'stream this please' }] });
  });

  it('applies the request parameters and keeps pipeline fields away from the provider', async () => {
    await client(world.admin.token).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'with params' }],
      // @ts-expect-error: the frontend's fields
      params: { temperature: 0.25, function_calling: 'native' },
      features: { web_search: false },
      variables: {},
    });
    const [request] = world.model.chatRequests().slice(-1);
    expect(request.temperature).toBe(0.25);
    for (const field of ['params', 'features', 'variables', 'function_calling']) expect(request).not.toHaveProperty(field);
  });

  it('refuses a model the user may not use, before asking any provider', async () => {
    const before = world.model.requests.length;
    const res = await world.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] }, { token: world.alice.token });
    expect(res.status).toBe(400);
    // `detail` as the reference, and OpenAI's error object for the SDKs.
    expect(res.body).toEqual({ detail: 'Model not found', error: { message: 'Model not found', type: 'invalid_request_error', code: null } });
    const unknown = await world.api.post('/api/chat/completions', { model: 'no-such-model', messages: [] }, { token: world.admin.token });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ detail: 'Model not found' });
    expect(world.model.requests.length).toBe(before);
    // Pending users are not verified users.
    expect((await world.api.post('/api/chat/completions', { model: 'fake-model' })).status).toBe(401);
  });

  it('lets a user use a model shared with them', async () => {
    const created = await world.api.post(
      '/api/v1/models/create',
      { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: [{ principal_type: 'user', principal_id: world.alice.id, permission: 'read' }] },
      { token: world.admin.token },
    );
    expect(created.status, created.text).toBe(200);
    const answer = await client(world.alice.token).chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'shared' }] });
    expect(answer.choices[0].message.content).toBe('You said: shared');
  });

  it('passes a provider error on', async () => {
    world.model.script = () => ({ status: 500, error: 'The provider broke' });
    try {
      await expect(client(world.admin.token).chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 500 });
    } finally {
      world.model.script = defaultScript;
    }
  });
});

describe('web client mode when things go wrong', () => {
  const world = useServer({ fakes: fakeModel(), admin: 'Failure Admin' });
  const browser = useBrowser(world);

  it('a stream cut midway: an error event, the partial answer kept, the chat still usable', async () => {
    world.model.script = (body) => (lastUserText(body.messages) === 'break please' ? { text: 'one two three four five six', breakAfter: 3 } : defaultScript(body));
    const { body, userId, assistantId } = webRequest(browser.socket, { content: 'break please', extra: { background_tasks: { title_generation: true } } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    const chatId = res.body.chat_id;
    const error = await browser.next((e) => e.chat_id === chatId && e.type === 'chat:message:error', 'the error event');
    expect(error).toMatchObject({ message_id: assistantId, data: { error: { content: expect.stringContaining('Server Connection Error') } } });
    await browser.next((e) => e.chat_id === chatId && e.type === 'chat:tasks:cancel', 'chat:tasks:cancel');
    await browser.next((e) => e.chat_id === chatId && e.type === 'chat:active' && e.data.active === false, 'chat:active false');

    const chat = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body;
    const answer = chat.chat.history.messages[assistantId];
    expect(answer).toMatchObject({ parentId: userId, done: true, error: { content: error.data.error.content } });
    expect(outputText(answer.output)).toBe('one two three');
    expect(chat.title).toBe(TITLE);

    // The chat goes on.
    world.model.script = defaultScript;
    const next = webRequest(browser.socket, { content: 'and now?', chatId, parentId: assistantId });
    await world.api.post('/api/chat/completions', next.body, { token: world.admin.token });
    const done = await browser.next((e) => e.message_id === next.assistantId && e.type === 'chat:completion' && e.data.done, 'the next answer');
    expect(outputText(done.data.output)).toBe('You said: and now?');
    expect(world.model.chatRequests().at(-1).messages).toEqual([
      { role: 'user', content: 'break please' },
      { role: 'assistant', content: 'one two three' },
      { role: 'user', content: 'and now?' },
    ]);
  });

  it('a provider error: the error event, nothing else written', async () => {
    world.model.script = () => ({ status: 429, error: 'Rate limit reached' });
    try {
      const { body, assistantId } = webRequest(browser.socket, { content: 'limited', extra: { background_tasks: {} } });
      const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
      expect(res.status).toBe(200);
      const error = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:message:error', 'the error event');
      expect(error.data).toEqual({ error: { content: 'Rate limit reached' } });
      const answer = (await world.api.get(`/api/v1/chats/${res.body.chat_id}`, { token: world.admin.token })).body.chat.history.messages[assistantId];
      expect(answer).toMatchObject({ done: true, error: { content: 'Rate limit reached' } });
      expect(answer.output).toBeUndefined();
    } finally {
      world.model.script = defaultScript;
    }
  });

  it('an existing chat of someone else is not found', async () => {
    const bob = await addUser(world.api, world.admin, 'user', 'Bob Other');
    await world.api.post(
      '/api/v1/models/create',
      { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] },
      { token: world.admin.token },
    );
    const own = await world.api.post('/api/v1/chats/new', { chat: { title: 'Admin only' } }, { token: world.admin.token });
    const bobBrowser = await openBrowser(world.server.url, bob.token);
    try {
      const { body } = webRequest(bobBrowser.socket, { content: 'let me in', chatId: own.body.id, parentId: 'x' });
      const res = await world.api.post('/api/chat/completions', body, { token: bob.token });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ detail: 'Something went wrong :/' });
      expect((await world.api.get(`/api/tasks/chat/${own.body.id}`, { token: bob.token })).body).toEqual({ task_ids: [] });
      expect((await world.api.post(`/api/tasks/chat/${own.body.id}/stop`, undefined, { token: bob.token })).status).toBe(404);
    } finally {
      bobBrowser.close();
    }
  });
});

describe('API client mode on a stored chat', () => {
  const world = useServer({ fakes: fakeModel(), admin: 'Stored Api Admin' });

  it('answers a stored message again in place: parent, timestamp and the question’s children kept', async () => {
    const timestamp = 1_700_000_000;
    const messages = {
      q: { id: 'q', parentId: null, childrenIds: ['a'], role: 'user', content: 'what now?', timestamp },
      a: { id: 'a', parentId: 'q', childrenIds: [], role: 'assistant', content: 'old answer', model: 'fake-model', done: true, timestamp },
    };
    const created = await world.api.post('/api/v1/chats/new', { chat: { title: 'Stored', models: ['fake-model'], history: { currentId: 'a', messages } } }, { token: world.admin.token });
    expect(created.status, created.text).toBe(200);
    const chatId = created.body.id;

    for (const stream of [false, true]) {
      const res = await world.api.post(
        '/api/chat/completions',
        { model: 'fake-model', chat_id: chatId, id: 'a', stream, messages: [{ role: 'user', content: `what now? (${stream ? 'streamed' : 'json'})` }] },
        { token: world.admin.token },
      );
      expect(res.status, res.text).toBe(200);
      // Streamed without a socket session, the call returns `null` once the answer is stored (as the reference).
      if (stream) expect(res.text).toBe('null');
      const stored = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body.chat.history.messages;
      expect(stored.a).toMatchObject({ parentId: 'q', childrenIds: [], role: 'assistant', done: true, timestamp, content: `You said: what now? (${stream ? 'streamed' : 'json'})` });
      expect(stored.q).toMatchObject({ parentId: null, childrenIds: ['a'], timestamp });
    }

    // A failed answer keeps its place too.
    world.model.script = () => ({ status: 500, error: 'The provider broke' });
    try {
      const res = await world.api.post('/api/chat/completions', { model: 'fake-model', chat_id: chatId, id: 'a', messages: [{ role: 'user', content: 'x' }] }, { token: world.admin.token });
      expect(res.status).toBe(400);
      const stored = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body.chat.history.messages;
      expect(stored.a).toMatchObject({ parentId: 'q', timestamp, error: { content: expect.any(String) } });
    } finally {
      world.model.script = defaultScript;
    }
  });
});
