import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, openBrowser, outputText, webRequest } from '../../areas/completions/setup.js';
import { startFakeModel } from '../../helpers/fake-model.js';
import { onlyOpenAI } from '../../helpers/fake-upstreams.js';
import { startRedis } from '../../helpers/redis.js';
import { type TestServer } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';

/** A redis-server of the test's own, as a fake the world closes. */
async function redisServer() {
  const redis = await startRedis();
  return { url: redis.url, close: async () => redis.stop() };
}

/**
 * Two Parley instances on one database and one Redis: a socket on one
 * instance receives the events of an answer the other instance generates,
 * and any instance lists and stops any instance's tasks. The test runs its own
 * redis-server on a free port.
 */
describe('instances sharing Redis', () => {
  const world = useServer({
    fakes: {
      start: async () => ({ model: await startFakeModel(), redis: await redisServer() }),
      env: ({ model, redis }) => ({ ...onlyOpenAI(model.url), REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'parley-test' }),
    },
    admin: 'Redis Admin',
    users: { alice: ['user', 'Redis Alice'] },
  });
  let second: TestServer;
  let browser: Browser;

  beforeAll(async () => {
    second = await world.addInstance();
    browser = await openBrowser(second.url, world.admin.token);
  });

  afterAll(() => {
    browser?.close();
  });

  it("delivers one instance's events to a socket on the other", async () => {
    const { body, assistantId } = webRequest(browser.socket, { content: 'across instances', extra: { background_tasks: { title_generation: true } } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer on the other instance');
    expect(outputText(done.data.output)).toBe('You said: across instances');
    expect((await browser.next((e) => e.chat_id === res.body.chat_id && e.type === 'chat:title', 'the title')).data).toBe('A Fake Title');
  });

  it('lists and stops a task from the instance that does not run it', async () => {
    world.model.script = () => ({ text: 'Endless', endless: true, delayMs: 5 });
    try {
      const cancelled = world.model.cancelled;
      const { body, assistantId } = webRequest(browser.socket, { content: 'keep going', extra: { background_tasks: {} } });
      const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
      const { chat_id: chatId, task_ids: [taskId] } = res.body;
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && /more2/.test(outputText(e.data.output ?? [])), 'streamed text');
      expect((await second.api.get('/api/tasks', { token: world.admin.token })).body).toEqual({ tasks: [taskId] });
      expect((await second.api.get(`/api/tasks/chat/${chatId}`, { token: world.admin.token })).body).toEqual({ task_ids: [taskId] });
      const stop = await second.api.post(`/api/tasks/chat/${chatId}/stop`, undefined, { token: world.admin.token });
      expect(stop.body).toEqual({ status: true, message: `All tasks for item ${chatId} stopped.` });
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:tasks:cancel', 'chat:tasks:cancel');
      await world.model.waitFor(() => world.model.cancelled > cancelled, 'the provider stream to be cancelled');
      expect((await world.api.get(`/api/tasks/chat/${chatId}`, { token: world.admin.token })).body).toEqual({ task_ids: [] });
      const answer = (await second.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body.chat.history.messages[assistantId];
      expect(answer.done).toBe(true);
      expect(outputText(answer.output)).toMatch(/^Endless more0 more1 more2/);
    } finally {
      world.model.script = () => ({ text: 'done' });
    }
  });

  it("knows a temporary chat's owner by its socket, wherever the socket is", async () => {
    world.model.script = () => ({ text: 'Endless', endless: true, delayMs: 5 });
    try {
      const chatId = `local:${browser.socket.id}`;
      const { body, assistantId } = webRequest(browser.socket, { content: 'temporary', chatId, parentId: null, extra: { background_tasks: {}, messages: [{ role: 'user', content: 'temporary' }] } });
      const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
      expect(res.body.chat_id).toBe(chatId);
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion', 'streamed text');
      expect((await world.api.get(`/api/tasks/chat/${chatId}`, { token: world.alice.token })).body).toEqual({ task_ids: [] });
      expect((await world.api.post(`/api/tasks/chat/${chatId}/stop`, undefined, { token: world.alice.token })).status).toBe(404);
      expect((await world.api.get(`/api/tasks/chat/${chatId}`, { token: world.admin.token })).body).toEqual({ task_ids: res.body.task_ids });
      await second.api.post(`/api/tasks/chat/${chatId}/stop`, undefined, { token: world.admin.token });
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:tasks:cancel', 'chat:tasks:cancel');
    } finally {
      world.model.script = () => ({ text: 'done' });
    }
  });
});
