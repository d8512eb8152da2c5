import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { useServer } from '../../helpers/world.js';

/**
 * Evaluations (routers/evaluations.py): feedback as the web frontend sends it
 * (ResponseMessage.svelte's feedbackHandler), the admin lists and exports, and
 * the arena leaderboard's Elo figures checked against a hand computation.
 */
describe('evaluations', () => {
  const world = useServer({ admin: 'Eval Admin', users: { alice: ['user', 'Eval Alice'], bob: ['user', 'Eval Bob'] }, freshEvents: true });
  const as = (token: string) => ({ token });

  async function chatOf(token: string) {
    const created = await world.api.post('/api/v1/chats/new', { chat: { title: 'Rated', history: { messages: {}, currentId: null }, messages: [] } }, as(token));
    expect(created.status, created.text).toBe(200);
    return created.body.id as string;
  }

  /** The frontend's feedback: the message's annotation as data, where it was given as meta, the chat as snapshot. */
  const frontendFeedback = (chatId: string, annotation: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    type: 'rating',
    data: { ...annotation, model_id: 'model-a', sibling_model_ids: ['model-b'] },
    meta: { arena: true, model_id: 'model-a', message_id: 'm-2', message_index: 2, chat_id: chatId },
    snapshot: { chat: { id: chatId, title: 'Rated', chat: { history: { messages: {} } } } },
    ...extra,
  });

  it('round-trips the frontend feedback: create, read, update, list, delete', async () => {
    const chatId = await chatOf(world.alice.token);
    world.takeEvents();
    // A client's id, owner and timestamps are ignored.
    const created = await world.api.post('/api/v1/evaluations/feedback', frontendFeedback(chatId, { rating: 1 }, { id: 'mine', user_id: world.bob.id, version: 9 }), as(world.alice.token));
    expect(created.status, created.text).toBe(200);
    expect(created.body).toMatchObject({
      user_id: world.alice.id,
      version: 0,
      type: 'rating',
      data: { rating: 1, model_id: 'model-a', sibling_model_ids: ['model-b'], reason: null, comment: null },
      meta: { chat_id: chatId, message_id: 'm-2', arena: true },
      snapshot: { chat: { id: chatId } },
    });
    const id = created.body.id;
    expect(id).not.toBe('mine');
    expect(world.takeEvents().map((e) => [e.event, e.data])).toEqual([['feedback.created', { rating: 1 }]]);

    expect((await world.api.get(`/api/v1/evaluations/feedback/${id}`, as(world.alice.token))).body).toEqual(created.body);
    expect((await world.api.get(`/api/v1/evaluations/feedback/${id}`, as(world.admin.token))).body.id).toBe(id);
    expect(await world.api.get(`/api/v1/evaluations/feedback/${id}`, as(world.bob.token))).toMatchObject({ status: 404, body: { detail: ERROR.NOT_FOUND } });

    // The detailed rating the frontend sends after the thumbs (reason, comment, tags, details).
    const detailed = { rating: 1, reason: 'Accurate information', comment: 'Spot on', tags: ['coding'], details: { rating: 9 } };
    const updated = await world.api.post(`/api/v1/evaluations/feedback/${id}`, frontendFeedback(chatId, detailed), as(world.alice.token));
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data).toMatchObject({ reason: 'Accurate information', comment: 'Spot on', tags: ['coding'], details: { rating: 9 } });
    expect(await world.api.post(`/api/v1/evaluations/feedback/${id}`, frontendFeedback(chatId, { rating: -1 }), as(world.bob.token))).toMatchObject({ status: 404 });

    const mine = await world.api.get('/api/v1/evaluations/feedbacks/user', as(world.alice.token));
    expect(mine.body).toMatchObject({ total: 1, items: [{ id, user: { id: world.alice.id, name: 'Eval Alice' } }] });
    expect(mine.body.items[0]).not.toHaveProperty('snapshot');
    expect((await world.api.get('/api/v1/evaluations/feedbacks/user', as(world.bob.token))).body).toEqual({ items: [], total: 0 });

    const listed = await world.api.get('/api/v1/evaluations/feedbacks/list?order_by=username&direction=asc&model_id=model-a', as(world.admin.token));
    expect(listed.body).toMatchObject({ total: 1, items: [{ id }] });
    expect((await world.api.get('/api/v1/evaluations/feedbacks/list?model_id=other', as(world.admin.token))).body.total).toBe(0);
    expect((await world.api.get('/api/v1/evaluations/feedbacks/models', as(world.admin.token))).body).toEqual(['model-a']);
    expect((await world.api.get('/api/v1/evaluations/feedbacks/all/ids', as(world.admin.token))).body).toEqual([
      { id, user_id: world.alice.id, created_at: created.body.created_at, updated_at: updated.body.updated_at },
    ]);
    const exported = await world.api.get('/api/v1/evaluations/feedbacks/all/export?model_id=model-a', as(world.admin.token));
    expect(exported.body).toEqual([updated.body]);

    expect((await world.api.delete(`/api/v1/evaluations/feedback/${id}`, as(world.bob.token))).status).toBe(404);
    expect((await world.api.delete(`/api/v1/evaluations/feedback/${id}`, as(world.alice.token))).body).toBe(true);
    expect((await world.api.get(`/api/v1/evaluations/feedback/${id}`, as(world.alice.token))).status).toBe(404);
  });

  it('refuses bad input and other users, changing nothing', async () => {
    const alicesChat = await chatOf(world.alice.token);
    // Bob may not rate an answer in Alice's chat.
    expect(await world.api.post('/api/v1/evaluations/feedback', frontendFeedback(alicesChat, { rating: 1 }), as(world.bob.token))).toMatchObject({
      status: 403,
      body: { detail: ERROR.ACCESS_PROHIBITED },
    });
    for (const rating of [2, 'great', 0.5, -3]) {
      expect((await world.api.post('/api/v1/evaluations/feedback', frontendFeedback(alicesChat, { rating }), as(world.alice.token))).status).toBe(422);
    }
    expect((await world.api.post('/api/v1/evaluations/feedback', { data: { rating: 1 } }, as(world.alice.token))).status).toBe(422);
    expect((await world.api.get('/api/v1/evaluations/feedbacks/user', as(world.alice.token))).body.total).toBe(0);
    for (const path of ['/leaderboard', '/config', '/feedbacks/models', '/feedbacks/all/ids', '/feedbacks/all/export', '/feedbacks/list', '/leaderboard/x/history']) {
      expect((await world.api.get(`/api/v1/evaluations${path}`, as(world.alice.token))).status, path).toBe(401);
      expect((await world.api.get(`/api/v1/evaluations${path}`)).status, path).toBe(401);
    }
    expect((await world.api.delete('/api/v1/evaluations/feedbacks/all', as(world.alice.token))).status).toBe(401);
    expect((await world.api.post('/api/v1/evaluations/config', { EVALUATION_ARENA_MODELS: [{ name: 'no id' }] }, as(world.admin.token))).status).toBe(400);
  });

  it('ranks models by Elo over the pairwise outcomes, as computed by hand', async () => {
    const chatId = await chatOf(world.admin.token);
    const rate = (model: string, rating: number | string, siblings: string[], tags: string[] = []) =>
      world.api.post(
        '/api/v1/evaluations/feedback',
        { type: 'rating', data: { rating, model_id: model, sibling_model_ids: siblings, tags }, meta: { chat_id: chatId } },
        as(world.admin.token),
      );
    // A beats B, A beats C, B loses to C; a neutral rating and a rating without opponents are no matches.
    for (const [model, rating, siblings, tags] of [
      ['A', 1, ['B'], ['coding', 'math']],
      ['A', '1', ['C'], ['coding']],
      ['B', -1, ['C'], ['cooking']],
      ['C', 0, ['A'], []],
      ['C', 1, [], []],
    ] as const) {
      expect((await rate(model, rating, [...siblings], [...tags])).status).toBe(200);
    }
    // By hand, K = 32: A 1000→1016 (vs B at 1000, expected 0.5), B 984;
    // A vs C: expected 1/(1+10^((1000-1016)/400)) = 0.523012, A 1031.2637, C 984.7363;
    // B loses to C: expected for B 1/(1+10^((984.7363-984)/400)) = 0.498940, B 968.0339, C 1000.7024.
    const board = await world.api.get('/api/v1/evaluations/leaderboard', as(world.admin.token));
    expect(board.status, board.text).toBe(200);
    expect(board.body.entries).toEqual([
      { model_id: 'A', rating: 1031, won: 2, lost: 0, count: 2, top_tags: [{ tag: 'coding', count: 2 }, { tag: 'math', count: 1 }] },
      { model_id: 'C', rating: 1001, won: 1, lost: 1, count: 2, top_tags: [] },
      { model_id: 'B', rating: 968, won: 0, lost: 2, count: 2, top_tags: [{ tag: 'cooking', count: 1 }] },
    ]);
    // Without an embedding engine a query changes nothing.
    expect((await world.api.get('/api/v1/evaluations/leaderboard?query=coding', as(world.admin.token))).body).toEqual(board.body);

    const history = await world.api.get('/api/v1/evaluations/leaderboard/A/history?days=3', as(world.admin.token));
    const today = new Date().toISOString().slice(0, 10);
    expect(history.body.model_id).toBe('A');
    expect(history.body.history).toHaveLength(3);
    expect(history.body.history.at(-1)).toEqual({ date: today, won: 2, lost: 0 });

    expect((await world.api.delete('/api/v1/evaluations/feedbacks/all', as(world.admin.token))).body).toBe(true);
    expect((await world.api.get('/api/v1/evaluations/leaderboard', as(world.admin.token))).body).toEqual({ entries: [] });
  });

  it('reads and sets the arena config', async () => {
    expect((await world.api.get('/api/v1/evaluations/config', as(world.admin.token))).body).toMatchObject({ EVALUATION_ARENA_MODELS: [] });
    const arena = { id: 'arena-1', name: 'Blind Arena', meta: { model_ids: ['model-a', 'model-b'], access_grants: [] } };
    world.takeEvents();
    const set = await world.api.post('/api/v1/evaluations/config', { ENABLE_EVALUATION_ARENA_MODELS: true, EVALUATION_ARENA_MODELS: [arena] }, as(world.admin.token));
    expect(set.body).toEqual({ ENABLE_EVALUATION_ARENA_MODELS: true, EVALUATION_ARENA_MODELS: [arena] });
    expect(world.takeEvents().map((e) => [e.event, e.data])).toEqual([
      ['config.updated', { keys: ['evaluation.arena.enable', 'evaluation.arena.models'], arena_enabled: true, arena_model_count: 1 }],
    ]);
    expect((await world.api.get('/api/v1/evaluations/config', as(world.admin.token))).body).toEqual(set.body);
  });
});
