import { beforeEach, describe, expect, it } from 'vitest';
import { onlyOpenAI, startFakeOpenAI } from '../../helpers/fake-upstreams.js';
import { as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { chain, newChat } from './fixtures.js';

const world = useServer({
  fakes: {
    start: async () => ({ upstream: await startFakeOpenAI(['gpt-fake', 'gpt-summary']) }),
    env: ({ upstream }) => ({ ...onlyOpenAI(upstream.url, 'sk-upstream'), ENABLE_EVALUATION_ARENA_MODELS: 'false' }),
  },
  admin: 'Compaction Admin',
  freshEvents: true,
});

beforeEach(() => {
  world.upstream.requests.length = 0;
});
const configure = (form: Record<string, unknown>) =>
  world.api.post('/api/v1/chats/config', { ENABLE_CONTEXT_COMPACTION: true, CONTEXT_COMPACTION_TOKEN_THRESHOLD: 1000, CONTEXT_COMPACTION_PROMPT_TEMPLATE: '', ...form }, as(world.admin));

const conversation = () =>
  chain(['u1', 'user', 'one'], ['a1', 'assistant', 'two', { model: 'gpt-fake' }], ['u2', 'user', 'three'], ['a2', 'assistant', 'four', { model: 'gpt-fake' }]);

describe('POST /api/v1/chats/{id}/compact', () => {
  it('does nothing while compaction is off', async () => {
    await configure({ ENABLE_CONTEXT_COMPACTION: false });
    const chat = await newChat(world.api, world.admin, { history: conversation() });
    const res = await world.api.post(`/api/v1/chats/${chat.id}/compact`, undefined, as(world.admin));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ ok: true, compacted: false, reason: 'disabled', context_usage: null });
    expect(world.upstream.requests.filter((r) => r.path.endsWith('/chat/completions'))).toEqual([]);
  });

  it('summarises the branch up to its last message through the model and stores the summary there', async () => {
    await configure({ CONTEXT_COMPACTION_PROMPT_TEMPLATE: 'Summarise:\n{{COMPACTED_MESSAGES}}\nKeep: {{RECENT_MESSAGES}}\nBefore: {{PREVIOUS_SUMMARY}}' });
    const chat = await newChat(world.api, world.admin, { history: conversation() });
    world.takeEvents();
    const res = await world.api.post(`/api/v1/chats/${chat.id}/compact`, {}, as(world.admin));
    expect(res.status, res.text).toBe(200);
    const prompt = 'Summarise:\nUSER: one\nASSISTANT: two\nUSER: three\nKeep: ASSISTANT: four\nBefore: ';
    const summary = `You said: ${prompt}`.trim();
    expect(res.body).toEqual({
      ok: true,
      compacted: true,
      dropped_messages: 3,
      kept_messages: 1,
      summary_chars: summary.length,
      context_usage: { tokens: expect.any(Number), estimated_tokens: expect.any(Number), threshold: 1000, percent: expect.any(Number), source: 'estimated' },
    });
    const [call] = world.upstream.requests.filter((r) => r.path.endsWith('/chat/completions'));
    expect(call.body).toMatchObject({ model: 'gpt-fake', stream: false, messages: [{ role: 'user', content: prompt }] });
    const stored = await world.api.get(`/api/v1/chats/${chat.id}`, as(world.admin));
    expect(stored.body.chat.history.messages.a2.contextSummary).toBe(summary);
    expect(stored.body.updated_at).toBe(chat.updated_at);
    expect(stored.body.context_usage).toMatchObject({ threshold: 1000, source: 'estimated' });
    expect(world.takeEvents().filter((e) => e.event === 'chat.compacted')).toMatchObject([{ subject: { type: 'chat', id: chat.id }, data: { dropped_messages: 3 } }]);

    // From the stored summary on, nothing older is left to compact.
    const again = await world.api.post(`/api/v1/chats/${chat.id}/compact`, {}, as(world.admin));
    expect(again.body).toMatchObject({ ok: true, compacted: false, reason: 'too_short' });
  });

  it('uses the configured compaction model, and the model named in the form for the chat', async () => {
    await configure({ CONTEXT_COMPACTION_MODEL: 'gpt-summary' });
    const chat = await newChat(world.api, world.admin, { history: conversation() });
    await world.api.post(`/api/v1/chats/${chat.id}/compact`, { model: 'gpt-fake' }, as(world.admin));
    const [call] = world.upstream.requests.filter((r) => r.path.endsWith('/chat/completions'));
    expect(call.body.model).toBe('gpt-summary');
    await configure({ CONTEXT_COMPACTION_MODEL: '' });
  });

  it('needs a model (400) and an upstream that answers (its error)', async () => {
    await configure({});
    const modelless = await newChat(world.api, world.admin, { history: chain(['u1', 'user', 'a'], ['a1', 'assistant', 'b']) });
    const res = await world.api.post(`/api/v1/chats/${modelless.id}/compact`, {}, as(world.admin));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'No model found for context compaction.' });
    const unknown = await world.api.post(`/api/v1/chats/${modelless.id}/compact`, { model: 'no-such-model' }, as(world.admin));
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ detail: 'No available model for context compaction' });
    const chat = await newChat(world.api, world.admin, { models: ['gpt-fake'], history: chain(['u1', 'user', 'a'], ['a1', 'assistant', 'b']) });
    expect((await world.api.post(`/api/v1/chats/${chat.id}/compact`, null, as(world.admin))).body).toMatchObject({ compacted: true, dropped_messages: 1 });
  });
});

describe('context usage on GET /api/v1/chats/{id}', () => {
  it('estimates from text, or counts from the newest reported usage plus what came after', async () => {
    await configure({ CONTEXT_COMPACTION_TOKEN_THRESHOLD: 100 });
    const estimated = await newChat(world.api, world.admin, { history: chain(['u1', 'user', 'x'.repeat(40)]) });
    expect((await world.api.get(`/api/v1/chats/${estimated.id}`, as(world.admin))).body.context_usage).toEqual({
      tokens: 14,
      estimated_tokens: 14,
      threshold: 100,
      percent: 14,
      source: 'estimated',
    });
    const reported = await newChat(world.api, world.admin, {
      params: { compact_token_threshold: 50 },
      history: chain(['u1', 'user', 'q'], ['a1', 'assistant', 'a', { usage: { prompt_tokens: 20, completion_tokens: 5 } }], ['u2', 'user', 'y'.repeat(8)]),
    });
    expect((await world.api.get(`/api/v1/chats/${reported.id}`, as(world.admin))).body.context_usage).toMatchObject({ tokens: 31, threshold: 50, percent: 62 });
    await configure({ ENABLE_CONTEXT_COMPACTION: false });
    expect((await world.api.get(`/api/v1/chats/${reported.id}`, as(world.admin))).body.context_usage).toBeNull();
  });
});
