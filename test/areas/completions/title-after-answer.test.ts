import { describe, expect, it } from 'vitest';
import { TITLE, defaultScript, fakeModel, isTaskPrompt } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { useBrowser, webRequest } from './setup.js';

/**
 * A new chat's title is generated while the answer streams but its `chat:title`
 * event comes after the answer's `done`, as the reference sends it. Found in the
 * browser run with a tool (docs/chat-pipeline.md): with a quick title model the
 * event reached the browser before it had read the reply naming the new chat, so
 * the web app dropped it and kept showing "New Chat".
 */
describe('the title of a new chat', () => {
  const world = useServer({ fakes: fakeModel(), admin: 'Title Admin' });
  const browser = useBrowser(world);

  it('is stored at once but announced after the answer, even when it is ready long before', async () => {
    // The title comes back at once; the answer takes a while.
    world.model.script = (body) => (isTaskPrompt(body) ? defaultScript(body) : { text: 'a slow answer in seven short words', delayMs: 40 });
    const { body, assistantId } = webRequest(browser.socket, { content: 'Name this chat' });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const chatId = res.body.chat_id;

    await world.model.waitFor(() => world.model.requests.some((r) => isTaskPrompt(r) && r.messages.at(-1).content.includes('concise title')), 'the title request');
    await world.model.waitFor(() => world.model.open === 1, 'the answer streaming');
    await expect.poll(async () => (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body.title).toBe(TITLE);
    expect(browser.received.some((e) => e.type === 'chat:title')).toBe(false);

    const title = await browser.next((e) => e.chat_id === chatId && e.type === 'chat:title', 'the title', 10000);
    const done = browser.received.find((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done);
    expect(title.data).toBe(TITLE);
    expect(done?.data.title).toBe(TITLE);
    expect(title.seq).toBeGreaterThan(done!.seq);
    expect(browser.received.filter((e) => e.type === 'chat:title')).toHaveLength(1);
  });
});
