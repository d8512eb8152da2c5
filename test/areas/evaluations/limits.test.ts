import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeModel } from '../../helpers/fake-model.js';
import { ApiClient } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, webRequest } from '../completions/setup.js';

/**
 * Usage limits (beyond the reference): budgets an admin sets per user or group,
 * enforced before any provider is asked, on the OpenAI proxy and the chat
 * pipeline alike, counted in the database so every instance agrees, and shown
 * in the user's usage report.
 */
describe('usage limits', () => {
  const world = useServer({ fakes: fakeModel(), env: { BYPASS_MODEL_ACCESS_CONTROL: 'true' }, admin: 'Limits Admin', users: { alice: ['user', 'Limit Alice'], bob: ['user', 'Limit Bob'] } });
  const as = (token: string) => ({ token });
  let bobBrowser: Browser;
  beforeAll(async () => {
    bobBrowser = await openBrowser(world.server.url, world.bob.token);
  });
  afterAll(() => bobBrowser.close());

  const ask = (token: string, api = world.api) =>
    api.post('/openai/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], stream: false }, as(token));
  const nextMidnight = () => new Date((Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000).toISOString();

  it('are set by admins only, and checked', async () => {
    const form = { scope: 'user', subject_id: world.alice.id, period: 'day', max_requests: 2 };
    expect((await world.api.post('/api/v1/limits/create', form, as(world.alice.token))).status).toBe(401);
    expect((await world.api.get('/api/v1/limits/', as(world.alice.token))).status).toBe(401);
    expect(await world.api.post('/api/v1/limits/create', { ...form, max_requests: null }, as(world.admin.token))).toMatchObject({
      status: 400,
      body: { detail: 'A limit needs max_requests, max_tokens or max_cost' },
    });
    for (const bad of [{ ...form, max_requests: -1 }, { ...form, period: 'week' }, { ...form, scope: 'everyone' }]) {
      expect((await world.api.post('/api/v1/limits/create', bad, as(world.admin.token))).status).toBe(422);
    }
    expect((await world.api.get('/api/v1/limits/', as(world.admin.token))).body).toEqual({ limits: [], prices: {} });
  });

  it('refuse requests over a daily budget with 429, the limit and the reset time, on every path and instance', async () => {
    const created = await world.api.post('/api/v1/limits/create', { scope: 'user', subject_id: world.alice.id, period: 'day', max_requests: 2 }, as(world.admin.token));
    expect(created.status, created.text).toBe(200);
    expect((await ask(world.alice.token)).status).toBe(200);
    expect((await world.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] }, as(world.alice.token))).status).toBe(200);
    const asked = world.model.requests.length;
    const refused = await ask(world.alice.token);
    expect(refused.status).toBe(429);
    expect(refused.body.detail).toBe(`Usage limit reached: 2 requests per day (user limit). It resets at ${nextMidnight()}.`);
    expect(refused.body.error).toMatchObject({ type: 'rate_limit_error' });
    expect((await world.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] }, as(world.alice.token))).status).toBe(429);
    // Another instance on the same database sees the same counters.
    const other = await world.addInstance();
    expect((await ask(world.alice.token, new ApiClient(other.url))).status).toBe(429);
    expect(world.model.requests.length).toBe(asked);
    // Bob has no limit.
    expect((await ask(world.bob.token)).status).toBe(200);

    const usage = (await world.api.get('/api/v1/users/usage?days=7', as(world.alice.token))).body;
    expect(usage.limits).toEqual([
      expect.objectContaining({ id: created.body.id, max_requests: 2, used: { requests: 2, tokens: 0, cost: 0 }, reset_at: Date.parse(nextMidnight()) / 1000 }),
    ]);
    // Raised, it lets the user go on.
    const raised = await world.api.post(`/api/v1/limits/${created.body.id}/update`, { scope: 'user', subject_id: world.alice.id, period: 'day', max_requests: 10 }, as(world.admin.token));
    expect(raised.body.max_requests).toBe(10);
    expect((await ask(world.alice.token)).status).toBe(200);
    expect((await world.api.delete(`/api/v1/limits/${created.body.id}`, as(world.admin.token))).body).toBe(true);
  });

  it("hold a group's members to token and cost budgets counted from their stored answers", async () => {
    const group = await world.api.post('/api/v1/groups/create', { name: 'Budgeted', description: '' }, as(world.admin.token));
    await world.api.post(`/api/v1/groups/id/${group.body.id}/users/add`, { user_ids: [world.bob.id] }, as(world.admin.token));
    expect((await world.api.post('/api/v1/limits/prices', { 'fake-model': { input: 2_000_000, output: 1_000_000 } }, as(world.admin.token))).status).toBe(200);
    await world.api.post('/api/v1/limits/create', { scope: 'group', subject_id: group.body.id, period: 'month', max_tokens: 5, max_cost: 1000 }, as(world.admin.token));

    // One answer with usage reported: 5 tokens in, 4 out ("You said: hello there").
    const { body, assistantId } = webRequest(bobBrowser.socket, { content: 'hello there', extra: { stream_options: { include_usage: true } } });
    expect((await world.api.post('/api/chat/completions', body, as(world.bob.token))).status).toBe(200);
    await bobBrowser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done === true, 'the answer');

    const refused = await ask(world.bob.token);
    expect(refused.status).toBe(429);
    expect(refused.body.detail).toMatch(/^Usage limit reached: 5 tokens per month \(group limit\)\. It resets at \d{4}-\d{2}-01T00:00:00\.000Z\.$/);
    const [budget] = (await world.api.get('/api/v1/users/usage?days=7', as(world.bob.token))).body.limits;
    // Cost: 5 × 2 + 4 × 1 (per million tokens, prices per million).
    expect(budget).toMatchObject({ scope: 'group', period: 'month', used: { tokens: 9, cost: 14 } });
    expect((await ask(world.alice.token)).status).toBe(200);
  });
});
