import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TAGS, fakeModel } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, webRequest } from '../completions/setup.js';

/**
 * Analytics (routers/analytics.py, 0.11.0) and the user's usage report, after
 * chats through the fake model, which reports usage when asked for it
 * (`stream_options.include_usage`) and otherwise leaves the counting to Parley's
 * tokenizer.
 */
describe('analytics and usage after chats', () => {
  const world = useServer({
    fakes: fakeModel(['fake-model', 'other-model']),
    env: { BYPASS_MODEL_ACCESS_CONTROL: 'true' },
    admin: 'Stats Admin',
    users: { alice: ['user', 'Stats Alice'], bob: ['user', 'Stats Bob'] },
  });
  const as = (token: string) => ({ token });
  const browsers: Record<string, Browser> = {};
  let groupId: string;
  let aliceChat: string;
  let bobChat: string;
  let started: number;

  /** One message of the web frontend, waited for until the answer is done. */
  async function say(who: 'alice' | 'bob', content: string, options: { model?: string; usage?: boolean; chatId?: string; parentId?: string } = {}) {
    const browser = browsers[who]!;
    const { body, assistantId } = webRequest(browser.socket, {
      content,
      model: options.model,
      chatId: options.chatId,
      parentId: options.parentId,
      extra: options.usage ? { stream_options: { include_usage: true } } : {},
    });
    const res = await world.api.post('/api/chat/completions', body, as(world[who].token));
    expect(res.status, res.text).toBe(200);
    await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done === true, 'the answer');
    await browser.next((e) => e.chat_id === res.body.chat_id && e.type === 'chat:active' && e.data?.active === false, 'the end of the tasks');
    return { chatId: res.body.chat_id as string, assistantId };
  }

  beforeAll(async () => {
    started = Math.floor(Date.now() / 1000);
    for (const who of ['alice', 'bob'] as const) browsers[who] = await openBrowser(world.server.url, world[who].token);
    const group = await world.api.post('/api/v1/groups/create', { name: 'Analysts', description: '' }, as(world.admin.token));
    groupId = group.body.id;
    await world.api.post(`/api/v1/groups/id/${groupId}/users/add`, { user_ids: [world.alice.id] }, as(world.admin.token));
    // Alice: a chat of two turns with usage reported ("You said: one two three" is 5 words: 5 in, 5 out),
    // and one with the other model without usage; Bob: one chat with usage.
    const first = await say('alice', 'one two three', { usage: true });
    aliceChat = first.chatId;
    await say('alice', 'four five', { usage: true, chatId: first.chatId, parentId: first.assistantId });
    await say('alice', 'count these words myself', { model: 'other-model' });
    bobChat = (await say('bob', 'hello there', { usage: true })).chatId;
  });
  afterAll(() => {
    for (const browser of Object.values(browsers)) browser.close();
  });

  const get = async (path: string, token = world.admin.token) => {
    const res = await world.api.get(`/api/v1/analytics${path}`, as(token));
    expect(res.status, `${path}: ${res.text}`).toBe(200);
    return res.body;
  };

  it('sums the answers: summary, per model with unique users and chats, per user', async () => {
    expect(await get('/summary')).toEqual({ total_messages: 4, total_chats: 3, total_models: 2, total_users: 2 });
    expect((await get('/models')).models).toEqual([
      { model_id: 'fake-model', count: 3, unique_users: 2, unique_chats: 2 },
      { model_id: 'other-model', count: 1, unique_users: 1, unique_chats: 1 },
    ]);
    const users = (await get('/users')).users;
    expect(users.map((u: any) => [u.name, u.count])).toEqual([['Stats Alice', 3], ['Stats Bob', 1]]);
    // Reported usage: 5 in per answer; out: "You said: one two three" 5, "You said: four five" 4, "You said: hello there" 4.
    expect(users[1]).toMatchObject({ input_tokens: 5, output_tokens: 4, total_tokens: 9 });
    expect(users[0].input_tokens).toBeGreaterThan(10);
  });

  it('filters by group and by date range, exactly at the ends', async () => {
    expect(await get(`/summary?group_id=${groupId}`)).toEqual({ total_messages: 3, total_chats: 2, total_models: 2, total_users: 1 });
    expect(await get('/summary?group_id=nobody')).toEqual({ total_messages: 0, total_chats: 0, total_models: 0, total_users: 0 });
    const now = Math.floor(Date.now() / 1000);
    // A range starting and ending mid-day reads the messages themselves at both ends.
    expect(await get(`/summary?start_date=${started - 5}&end_date=${now + 5}`)).toMatchObject({ total_messages: 4, total_chats: 3 });
    expect(await get(`/summary?start_date=${started - 5 - 3 * 86400}&end_date=${now + 2 * 86400}`)).toMatchObject({ total_messages: 4, total_chats: 3 });
    expect(await get(`/summary?start_date=${now + 60}`)).toMatchObject({ total_messages: 0 });
    expect(await get(`/summary?end_date=${started - 60}`)).toMatchObject({ total_messages: 0 });
    const daily = await get(`/daily?start_date=${now - 2 * 86400}&end_date=${now}`);
    expect(daily.data).toHaveLength(3);
    expect(daily.data.at(-1)).toEqual({ date: new Date(now * 1000).toISOString().slice(0, 10), models: { 'fake-model': 3, 'other-model': 1 } });
    const hourly = await get(`/daily?granularity=hourly&start_date=${now - 3600}&end_date=${now}`);
    expect(hourly.data.reduce((sum: number, h: any) => sum + (h.models['fake-model'] ?? 0), 0)).toBe(3);
    expect((await world.api.get('/api/v1/analytics/summary?start_date=20&end_date=10', as(world.admin.token))).status).toBe(400);
  });

  it('counts tokens per model, reported or estimated', async () => {
    const tokens = await get('/tokens');
    const fake = tokens.models.find((m: any) => m.model_id === 'fake-model');
    expect(fake).toEqual({ model_id: 'fake-model', input_tokens: 15, output_tokens: 13, total_tokens: 28, message_count: 3 });
    const other = tokens.models.find((m: any) => m.model_id === 'other-model');
    // Estimated by the tokenizer: the prompt in, the answer out.
    expect(other.input_tokens).toBeGreaterThan(0);
    expect(other.output_tokens).toBeGreaterThan(other.input_tokens);
    expect(tokens.total_tokens).toBe(tokens.total_input_tokens + tokens.total_output_tokens);
  });

  it('lists messages, a model’s chats and its overview', async () => {
    const messages = await get(`/messages?chat_id=${aliceChat}`);
    // Oldest first; messages of the same second in any order.
    expect(messages.map((m: any) => m.role).sort()).toEqual(['assistant', 'assistant', 'user', 'user']);
    expect(messages.find((m: any) => m.content.startsWith('You said: one'))).toMatchObject({ chat_id: aliceChat, model_id: 'fake-model', content: 'You said: one two three', done: true, usage: { input_tokens: 5 } });
    expect(await get('/messages')).toEqual([]);
    expect((await get(`/messages?user_id=${world.bob.id}&limit=2`)).map((m: any) => m.role).sort()).toEqual(['assistant', 'user']);
    expect(await get(`/messages?user_id=${world.bob.id}&skip=2`)).toEqual([]);
    const chats = await get('/models/fake-model/chats?order_by=user_name&direction=asc');
    expect(chats.total).toBe(2);
    expect(chats.chats.map((c: any) => [c.user_name, c.first_message])).toEqual([['Stats Alice', 'one two three'], ['Stats Bob', 'hello there']]);
    const overview = await get('/models/fake-model/overview?days=7');
    expect(overview.history).toHaveLength(7);
    expect(overview.tags).toEqual(TAGS.map((t) => ({ tag: t.toLowerCase(), count: 2 })).sort((a, b) => a.tag.localeCompare(b.tag)));
  });

  it('is for admins only', async () => {
    for (const path of ['/summary', '/models', '/users', '/messages', '/daily', '/tokens', '/models/x/chats', '/models/x/overview']) {
      expect((await world.api.get(`/api/v1/analytics${path}`, as(world.alice.token))).status, path).toBe(401);
    }
  });

  it("reports the user's own usage from the stored messages", async () => {
    const usage = (await world.api.get('/api/v1/users/usage?days=7', as(world.alice.token))).body;
    expect(usage.totals).toMatchObject({ messages: 6, user_messages: 3, assistant_messages: 3, total_chats: 2, models_used: 2, active_days: 1, current_streak: 1 });
    expect(usage.totals.input_tokens).toBeGreaterThan(10);
    expect(usage.totals.estimated_tokens).toBeGreaterThan(0);
    expect(usage.totals.lifetime_tokens).toBe(usage.totals.input_tokens + usage.totals.output_tokens);
    expect(usage.top_models.map((m: any) => [m.model_id, m.messages])).toEqual([['fake-model', 2], ['other-model', 1]]);
    expect(usage.top_models[0]).toMatchObject({ input_tokens: 10, output_tokens: 9, total_tokens: 19 });
    expect(usage.insights).toMatchObject({ most_used_model: 'fake-model', average_messages_per_active_day: 6, user_message_share: 50, assistant_message_share: 50 });
    expect(usage.heatmap.at(-1)).toMatchObject({ messages: 6, chats: 2, models: { 'fake-model': 2, 'other-model': 1 } });
    const bob = (await world.api.get('/api/v1/users/usage?days=7', as(world.bob.token))).body;
    expect(bob.totals).toMatchObject({ messages: 2, input_tokens: 5, output_tokens: 4, estimated_tokens: 0 });
  });

  it('forgets the answers of a deleted chat', async () => {
    expect((await world.api.delete(`/api/v1/chats/${bobChat}`, as(world.bob.token))).body).toBe(true);
    expect(await get('/summary')).toEqual({ total_messages: 3, total_chats: 2, total_models: 2, total_users: 1 });
    expect((await get('/tokens')).models.find((m: any) => m.model_id === 'fake-model')).toMatchObject({ input_tokens: 10, output_tokens: 9, message_count: 2 });
  });
});
