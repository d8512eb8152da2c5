import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { startFakeModel, type FakeModel } from '../../helpers/fake-model.js';
import { destroyServer, startServer, type TestServer } from '../../helpers/server.js';
import { type Account, addUser, signup } from '../../helpers/users.js';
import { type Browser, openBrowser, outputText, webRequest } from '../../areas/completions/setup.js';

/**
 * Two Parley instances on one database and one Redis: a socket on one
 * instance receives the events of an answer the other instance generates,
 * and any instance lists and stops any instance's tasks. The test runs its own
 * redis-server on a free port.
 */
describe('instances sharing Redis', () => {
  let redis: TestRedis;
  let model: FakeModel;
  let first: TestServer;
  let second: TestServer;
  let admin: Account;
  let alice: Account;
  let browser: Browser;

  beforeAll(async () => {
    redis = await startRedis();
    model = await startFakeModel();
    const env = { OPENAI_API_BASE_URLS: model.url, OPENAI_API_KEYS: 'sk-fake', ENABLE_OLLAMA_API: 'false', REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'parley-test' };
    first = await startServer({ env });
    second = await startServer({ env, reuse: { dataDir: first.dataDir, databaseUrl: first.databaseUrl } });
    admin = await signup(first.api, 'Redis Admin');
    alice = await addUser(first.api, admin, 'user', 'Redis Alice');
    browser = await openBrowser(second.url, admin.token);
  }, 60_000);

  afterAll(async () => {
    browser?.close();
    await second?.close();
    if (first) await destroyServer(first);
    await model?.close();
    redis?.stop();
  });

  it("delivers one instance's events to a socket on the other", async () => {
    const { body, assistantId } = webRequest(browser.socket, { content: 'across instances', extra: { background_tasks: { title_generation: true } } });
    const res = await first.api.post('/api/chat/completions', body, { token: admin.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer on the other instance');
    expect(outputText(done.data.output)).toBe('You said: across instances');
    expect((await browser.next((e) => e.chat_id === res.body.chat_id && e.type === 'chat:title', 'the title')).data).toBe('A Fake Title');
  });

  it('lists and stops a task from the instance that does not run it', async () => {
    model.script = () => ({ text: 'Endless', endless: true, delayMs: 5 });
    try {
      const cancelled = model.cancelled;
      const { body, assistantId } = webRequest(browser.socket, { content: 'keep going', extra: { background_tasks: {} } });
      const res = await first.api.post('/api/chat/completions', body, { token: admin.token });
      const { chat_id: chatId, task_ids: [taskId] } = res.body;
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && /more2/.test(outputText(e.data.output ?? [])), 'streamed text');
      expect((await second.api.get('/api/tasks', { token: admin.token })).body).toEqual({ tasks: [taskId] });
      expect((await second.api.get(`/api/tasks/chat/${chatId}`, { token: admin.token })).body).toEqual({ task_ids: [taskId] });
      const stop = await second.api.post(`/api/tasks/chat/${chatId}/stop`, undefined, { token: admin.token });
      expect(stop.body).toEqual({ status: true, message: `All tasks for item ${chatId} stopped.` });
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:tasks:cancel', 'chat:tasks:cancel');
      await model.waitFor(() => model.cancelled > cancelled, 'the provider stream to be cancelled');
      expect((await first.api.get(`/api/tasks/chat/${chatId}`, { token: admin.token })).body).toEqual({ task_ids: [] });
      const answer = (await second.api.get(`/api/v1/chats/${chatId}`, { token: admin.token })).body.chat.history.messages[assistantId];
      expect(answer.done).toBe(true);
      expect(outputText(answer.output)).toMatch(/^Endless more0 more1 more2/);
    } finally {
      model.script = () => ({ text: 'done' });
    }
  });

  it("knows a temporary chat's owner by its socket, wherever the socket is", async () => {
    model.script = () => ({ text: 'Endless', endless: true, delayMs: 5 });
    try {
      const chatId = `local:${browser.socket.id}`;
      const { body, assistantId } = webRequest(browser.socket, { content: 'temporary', chatId, parentId: null, extra: { background_tasks: {}, messages: [{ role: 'user', content: 'temporary' }] } });
      const res = await first.api.post('/api/chat/completions', body, { token: admin.token });
      expect(res.body.chat_id).toBe(chatId);
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion', 'streamed text');
      expect((await first.api.get(`/api/tasks/chat/${chatId}`, { token: alice.token })).body).toEqual({ task_ids: [] });
      expect((await first.api.post(`/api/tasks/chat/${chatId}/stop`, undefined, { token: alice.token })).status).toBe(404);
      expect((await first.api.get(`/api/tasks/chat/${chatId}`, { token: admin.token })).body).toEqual({ task_ids: res.body.task_ids });
      await second.api.post(`/api/tasks/chat/${chatId}/stop`, undefined, { token: admin.token });
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:tasks:cancel', 'chat:tasks:cancel');
    } finally {
      model.script = () => ({ text: 'done' });
    }
  });
});
