import { describe, expect, it } from 'vitest';
import { FOLLOW_UPS, TAGS, TITLE, defaultScript, fakeModel, lastUserText } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { outputText, stamp, useBrowser, webRequest } from './setup.js';

/**
 * The web frontend's journey over socket.io, end to end against a fake model:
 * a new chat, its streamed answer, title, tags and follow-ups, the reload, a
 * follow-up built from the stored history, and a stop mid-stream.
 */
describe('web client journey', () => {
  const world = useServer({ fakes: fakeModel(), admin: 'Journey Admin' });
  const browser = useBrowser(world);
  let chatId: string;
  let firstAnswerId: string;

  it('joins the user room on user-join and answers with the user', async () => {
    const ack = await browser.socket.timeout(2000).emitWithAck('user-join', { auth: { token: world.admin.token } });
    expect(ack).toEqual({ id: world.admin.id, name: world.admin.name });
    // Heartbeats and usage reports are accepted.
    expect(await browser.socket.timeout(2000).emitWithAck('heartbeat', {})).toBeNull();
    expect(await browser.socket.timeout(2000).emitWithAck('usage', { action: 'chat', model: 'fake-model', chat_id: '' })).toBeNull();
    expect((await world.api.get('/api/usage', { token: world.admin.token })).body).toEqual({ model_ids: ['fake-model'], user_count: 1 });
  });

  it('starts a new chat: the reply first, then the streamed answer, title, tags and follow-ups', async () => {
    world.events.length = 0;
    const { body, userId, assistantId } = webRequest(browser.socket, { content: 'Hello there my friend', system: 'Be brief', extra: { stream_options: { include_usage: true } } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    const replySeq = stamp();
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ status: true, task_ids: [expect.any(String)], chat_id: expect.any(String) });
    chatId = res.body.chat_id;
    firstAnswerId = assistantId;

    const done = await browser.next((e) => e.type === 'chat:completion' && e.data?.done === true, 'the done event');
    expect(done).toMatchObject({ chat_id: chatId, message_id: assistantId });
    expect(outputText(done.data.output)).toBe('You said: Hello there my friend');
    expect(done.data.output[0]).toMatchObject({ type: 'message', id: expect.stringMatching(/^msg_[0-9a-f]{24}$/), status: 'completed', role: 'assistant' });
    expect(done.data.usage).toMatchObject({ input_tokens: 5, output_tokens: 6, total_tokens: 11 });

    const title = await browser.next((e) => e.type === 'chat:title', 'the title');
    expect(title.data).toBe(TITLE);
    expect((await browser.next((e) => e.type === 'chat:tags', 'the tags')).data).toEqual(TAGS);
    expect((await browser.next((e) => e.type === 'chat:message:follow_ups', 'the follow-ups')).data).toEqual({ follow_ups: FOLLOW_UPS });
    const inactive = await browser.next((e) => e.type === 'chat:active' && e.data?.active === false, 'chat:active false');

    const mine = browser.received.filter((e) => e.chat_id === chatId);
    // Nothing reached the socket before the HTTP reply.
    expect(mine.every((e) => e.seq > replySeq)).toBe(true);
    expect(mine[0].type).toBe('chat:list');
    expect(mine[1]).toMatchObject({ type: 'chat:active', data: { active: true } });
    const deltas = mine.filter((e) => e.type === 'chat:completion' && e.data.output && !e.data.done);
    expect(deltas.length).toBeGreaterThanOrEqual(4);
    expect(deltas.map((e) => outputText(e.data.output))).toContain('You said: Hello');
    // chat:active false comes last.
    expect(mine.at(-1)).toBe(inactive);

    // The model got the system prompt and the user's message, rebuilt from the stored chat.
    const [request] = world.model.chatRequests().slice(-1);
    expect(request.messages).toEqual([
      { role: 'system', content: 'Be brief' },
      { role: 'user', content: 'Hello there my friend' },
    ]);
    expect(request.stream).toBe(true);

    // Events published: chat.created, then message.created for the user's message and the answer slot.
    const published = world.events.filter((e) => ['chat.created', 'message.created'].includes(e.event));
    expect(published.map((e) => [e.event, e.subject?.id, e.data.role ?? null])).toEqual([
      ['chat.created', chatId, null],
      ['message.created', userId, 'user'],
      ['message.created', assistantId, 'assistant'],
    ]);
    expect(published[1].data).toMatchObject({ chat_id: chatId, content_preview: 'Hello there my friend' });
  });

  it('stores the chat as the frontend reloads it', async () => {
    const res = await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body.title).toBe(TITLE);
    expect(res.body.meta.tags).toEqual(TAGS.map((t) => t.toLowerCase()));
    const { history, models } = res.body.chat;
    expect(models).toEqual(['fake-model']);
    expect(history.currentId).toBe(firstAnswerId);
    const answer = history.messages[firstAnswerId];
    expect(answer).toMatchObject({ role: 'assistant', done: true, model: 'fake-model', content: 'You said: Hello there my friend', followUps: FOLLOW_UPS });
    expect(outputText(answer.output)).toBe('You said: Hello there my friend');
    const userMessage = history.messages[answer.parentId];
    expect(userMessage).toMatchObject({ role: 'user', content: 'Hello there my friend', childrenIds: [firstAnswerId] });
    const list = await world.api.get('/api/v1/chats/?page=1', { token: world.admin.token });
    expect(list.body.map((c: any) => [c.id, c.title])).toContainEqual([chatId, TITLE]);
    expect((await world.api.get(`/api/tasks/chat/${chatId}`, { token: world.admin.token })).body).toEqual({ task_ids: [] });
  });

  it('answers a follow-up from the stored history', async () => {
    browser.received.length = 0;
    const { body, userId, assistantId } = webRequest(browser.socket, { content: 'And again', chatId, parentId: firstAnswerId });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    expect(res.body).toMatchObject({ status: true, chat_id: chatId });
    const done = await browser.next((e) => e.type === 'chat:completion' && e.data?.done === true, 'the second answer');
    expect(outputText(done.data.output)).toBe('You said: And again');
    expect(done.data.title).toBe(TITLE);
    await browser.next((e) => e.type === 'chat:active' && e.data?.active === false, 'chat:active false');

    const [request] = world.model.chatRequests().slice(-1);
    expect(request.messages).toEqual([
      { role: 'user', content: 'Hello there my friend' },
      { role: 'assistant', content: 'You said: Hello there my friend' },
      { role: 'user', content: 'And again' },
    ]);
    // No new title for a later message.
    expect(browser.received.some((e) => e.type === 'chat:title')).toBe(false);

    const chat = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body.chat;
    expect(chat.history.currentId).toBe(assistantId);
    expect(chat.history.messages[firstAnswerId].childrenIds).toEqual([userId]);
    expect(chat.history.messages[userId]).toMatchObject({ parentId: firstAnswerId, childrenIds: [assistantId] });
    expect(chat.history.messages[assistantId]).toMatchObject({ parentId: userId, done: true, content: 'You said: And again' });
  });

  it('stops an answer mid-stream: the provider request ends, the partial answer is kept', async () => {
    world.model.script = (body) => (lastUserText(body.messages) === 'Go on forever' ? { text: 'Here goes', endless: true, delayMs: 5 } : defaultScript(body));
    browser.received.length = 0;
    const cancelledBefore = world.model.cancelled;
    const { body, assistantId } = webRequest(browser.socket, { content: 'Go on forever', chatId, parentId: firstAnswerId });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    const [taskId] = res.body.task_ids;
    await browser.next((e) => e.type === 'chat:completion' && /more3/.test(outputText(e.data.output ?? [])), 'some streamed text');

    expect((await world.api.get(`/api/tasks/chat/${chatId}`, { token: world.admin.token })).body).toEqual({ task_ids: [taskId] });
    expect((await world.api.get('/api/tasks', { token: world.admin.token })).body).toEqual({ tasks: [taskId] });
    const stop = await world.api.post(`/api/tasks/chat/${chatId}/stop`, undefined, { token: world.admin.token });
    expect(stop.body).toEqual({ status: true, message: `All tasks for item ${chatId} stopped.` });

    await browser.next((e) => e.type === 'chat:tasks:cancel', 'chat:tasks:cancel');
    await browser.next((e) => e.type === 'chat:active' && e.data?.active === false, 'chat:active false');
    await world.model.waitFor(() => world.model.cancelled > cancelledBefore, 'the provider stream to be cancelled');
    expect(browser.received.some((e) => e.type === 'chat:completion' && e.data?.done)).toBe(false);

    const answer = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body.chat.history.messages[assistantId];
    expect(answer.done).toBe(true);
    expect(outputText(answer.output)).toMatch(/^Here goes more0 more1 more2 more3/);
    expect((await world.api.get(`/api/tasks/chat/${chatId}`, { token: world.admin.token })).body).toEqual({ task_ids: [] });
    world.model.script = defaultScript;
  });

  it('marks a chat read on events:chat and tells the user with chat:list', async () => {
    browser.received.length = 0;
    browser.socket.emit('events:chat', { chat_id: chatId, data: { type: 'last_read_at' } });
    const listed = await browser.next((e) => e.type === 'chat:list' && e.chat_id === chatId, 'chat:list');
    expect(listed.data).toMatchObject({ chat_id: chatId, last_read_at: expect.any(Number) });
    const chats = await world.api.get('/api/v1/chats/?page=1', { token: world.admin.token });
    expect(chats.body.find((c: any) => c.id === chatId).last_read_at).toBe(listed.data.last_read_at);
  });
});
