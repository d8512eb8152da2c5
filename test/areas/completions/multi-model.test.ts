import { describe, expect, it } from 'vitest';
import { fakeModel } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { outputText, useBrowser, webRequest } from './setup.js';

/** One message to several models (`message_ids`), and titles when title generation is off. */
describe('several models, titles', () => {
  const world = useServer({ fakes: fakeModel(['fake-model', 'other-model']), admin: 'Multi Admin' });
  const browser = useBrowser(world);

  it('answers with every model, one task each, and is inactive only when both are done', async () => {
    world.model.script = (body) => ({ text: `${body.model} here`, delayMs: body.model === 'other-model' ? 30 : 0 });
    const { body, userId } = webRequest(browser.socket, { content: 'Both of you', extra: { background_tasks: { title_generation: true } } });
    const message_ids = [
      { model_id: 'fake-model', message_id: 'answer-a', modelIdx: 0 },
      { model_id: 'other-model', message_id: 'answer-b', modelIdx: 1 },
    ];
    const res = await world.api.post('/api/chat/completions', { ...body, message_ids }, { token: world.admin.token });
    expect(res.body.task_ids).toHaveLength(2);
    const chatId = res.body.chat_id;
    for (const [id, model] of [
      ['answer-a', 'fake-model'],
      ['answer-b', 'other-model'],
    ]) {
      const done = await browser.next((e) => e.message_id === id && e.type === 'chat:completion' && e.data?.done, `the answer of ${model}`);
      expect(outputText(done.data.output)).toBe(`${model} here`);
    }
    await browser.next((e) => e.chat_id === chatId && e.type === 'chat:active' && e.data.active === false, 'chat:active false');
    const inactive = browser.received.filter((e) => e.chat_id === chatId && e.type === 'chat:active' && e.data.active === false);
    expect(inactive).toHaveLength(1);
    const doneB = browser.received.find((e) => e.message_id === 'answer-b' && e.type === 'chat:completion' && e.data?.done)!;
    expect(inactive[0].seq).toBeGreaterThan(doneB.seq);

    const chat = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body.chat;
    expect(chat.models).toEqual(['fake-model', 'other-model']);
    expect(chat.history.messages[userId].childrenIds).toEqual(['answer-a', 'answer-b']);
    expect(chat.history.messages['answer-a']).toMatchObject({ model: 'fake-model', modelIdx: 0, done: true, content: 'fake-model here' });
    expect(chat.history.messages['answer-b']).toMatchObject({ model: 'other-model', modelIdx: 1, done: true, content: 'other-model here' });
    // The title came from the task model's answer (no JSON here): the first message, then.
    expect((await world.api.get(`/api/v1/chats/${chatId}`, { token: world.admin.token })).body.title).toBe('Both of you');
  });

  it('titles a chat with its first message when title generation is off', async () => {
    world.model.script = () => ({ text: 'fine' });
    const { body } = webRequest(browser.socket, { content: 'Untitled question', extra: { background_tasks: { title_generation: false } } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    const title = await browser.next((e) => e.chat_id === res.body.chat_id && e.type === 'chat:title', 'the title');
    expect(title.data).toBe('Untitled question');
    expect(world.model.requests.some((r) => JSON.stringify(r.messages).includes('Generate a concise title') && JSON.stringify(r.messages).includes('Untitled question'))).toBe(false);
  });
});
