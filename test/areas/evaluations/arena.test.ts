import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeModel } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, webRequest } from '../completions/setup.js';

/** The arena in chat: a configured arena model answers with one of its models, named to the frontend, then rated blind. */
describe('arena models in chat', () => {
  const world = useServer({ fakes: fakeModel(['fake-model', 'other-model']), admin: 'Arena Admin' });
  let browser: Browser;
  beforeAll(async () => {
    browser = await openBrowser(world.server.url, world.admin.token);
  });
  afterAll(() => browser.close());

  it('answers with a model picked among the arena’s, and its rating reaches the leaderboard', async () => {
    const arena = { id: 'blind-arena', name: 'Blind Arena', meta: { model_ids: ['other-model'] } };
    const set = await world.api.post('/api/v1/evaluations/config', { ENABLE_EVALUATION_ARENA_MODELS: true, EVALUATION_ARENA_MODELS: [arena] }, { token: world.admin.token });
    expect(set.status, set.text).toBe(200);
    const models = (await world.api.get('/api/models', { token: world.admin.token })).body.data.map((m: any) => m.id);
    expect(models).toContain('blind-arena');

    const { body, assistantId } = webRequest(browser.socket, { content: 'which one are you', model: 'blind-arena' });
    const res = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const picked = await browser.next((e) => e.message_id === assistantId && e.data?.selected_model_id !== undefined, 'the picked model');
    expect(picked.data.selected_model_id).toBe('other-model');
    await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done === true, 'the answer');
    expect(world.model.chatRequests().at(-1).model).toBe('other-model');
    const chat = (await world.api.get(`/api/v1/chats/${res.body.chat_id}`, { token: world.admin.token })).body;
    expect(chat.chat.history.messages[assistantId]).toMatchObject({ selectedModelId: 'other-model' });

    // The frontend rates the picked model against its siblings.
    const rated = await world.api.post(
      '/api/v1/evaluations/feedback',
      { type: 'rating', data: { rating: 1, model_id: 'other-model', sibling_model_ids: ['fake-model'] }, meta: { arena: true, chat_id: res.body.chat_id, message_id: assistantId } },
      { token: world.admin.token },
    );
    expect(rated.status, rated.text).toBe(200);
    const board = (await world.api.get('/api/v1/evaluations/leaderboard', { token: world.admin.token })).body.entries;
    expect(board.map((e: any) => [e.model_id, e.rating])).toEqual([['other-model', 1016], ['fake-model', 984]]);
  });
});
