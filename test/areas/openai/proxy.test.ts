import { beforeEach, describe, expect, it } from 'vitest';
import { fakeProviders } from '../../helpers/fake-upstreams.js';
import { useServer, withWorld } from '../../helpers/world.js';
import { readChunks, readThenLeave, sseData } from '../models/setup.js';

const world = useServer({ fakes: fakeProviders(), env: { USER_PERMISSIONS_WORKSPACE_MODELS_ACCESS: 'true' }, admin: 'OpenAI Admin', users: { alice: ['user', 'OpenAI Alice'] } });

const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user', content: 'hello there' }], ...extra });
const lastRequest = (path: string) => world.openai.requests.filter((r) => r.path === path).at(-1)!;

async function configure(configs: Record<string, unknown> = {}, urls = [world.openai.url]) {
  const res = await world.api.post('/openai/config/update', { ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: urls, OPENAI_API_KEYS: ['sk-upstream-key-1234'], OPENAI_API_CONFIGS: configs }, { token: world.admin.token });
  expect(res.status, res.text).toBe(200);
}


beforeEach(async () => {
  await configure();
  world.events.length = 0;
});

describe('connections config', () => {
  it('returns and saves the connections, padding keys and dropping options of missing indexes', async () => {
    const initial = await world.api.get('/openai/config', { token: world.admin.token });
    expect(initial.body).toEqual({ ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: [world.openai.url], OPENAI_API_KEYS: ['sk-upstream-key-1234'], OPENAI_API_CONFIGS: {} });
    const res = await world.api.post(
      '/openai/config/update',
      { ENABLE_OPENAI_API: null, OPENAI_API_BASE_URLS: ['http://a', 'http://b'], OPENAI_API_KEYS: ['k1', 'k2', 'k3'], OPENAI_API_CONFIGS: { '0': { prefix_id: 'a' }, '5': { prefix_id: 'gone' } } },
      { token: world.admin.token },
    );
    expect(res.body).toEqual({ ENABLE_OPENAI_API: null, OPENAI_API_BASE_URLS: ['http://a', 'http://b'], OPENAI_API_KEYS: ['k1', 'k2'], OPENAI_API_CONFIGS: { '0': { prefix_id: 'a' } } });
    expect((await world.api.get('/openai/config', { token: world.admin.token })).body).toEqual(res.body);
    expect(world.events.find((e) => e.event === 'model.provider_config.updated')).toMatchObject({
      subject: { type: 'model.provider_config', id: 'openai' },
      data: { provider: 'openai', enabled: null, base_url_count: 2 },
    });
    const short = await world.api.post('/openai/config/update', { ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: ['http://a', 'http://b'], OPENAI_API_KEYS: [], OPENAI_API_CONFIGS: {} }, { token: world.admin.token });
    expect(short.body.OPENAI_API_KEYS).toEqual(['', '']);
  });

  it('is for admins, and every field of the form is required', async () => {
    expect((await world.api.get('/openai/config', { token: world.alice.token })).status).toBe(401);
    const missing = await world.api.post('/openai/config/update', { OPENAI_API_BASE_URLS: [] }, { token: world.admin.token });
    expect(missing.status).toBe(422);
    expect(missing.body.detail.map((d: any) => d.loc)).toEqual([
      ['body', 'OPENAI_API_KEYS'],
      ['body', 'OPENAI_API_CONFIGS'],
    ]);
  });

  it('verifies a connection: its model list, the provider\'s refusal, or a 502 when nobody answers', async () => {
    const ok = await world.api.post('/openai/verify', { url: world.openai.url, key: 'sk-x' }, { token: world.admin.token });
    expect(ok.status).toBe(200);
    expect(ok.body.data.map((m: any) => m.id)).toContain('gpt-fake');
    expect(lastRequest('/models').headers.authorization).toBe('Bearer sk-x');
    world.openai.listFails = true;
    try {
      const refused = await world.api.post('/openai/verify', { url: world.openai.url, key: 'bad' }, { token: world.admin.token });
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('invalid_api_key');
    } finally {
      world.openai.listFails = false;
    }
    const down = await world.api.post('/openai/verify', { url: 'http://127.0.0.1:1', key: 'k' }, { token: world.admin.token });
    expect(down.status).toBe(502);
    expect(down.body.detail).toBe('Open WebUI: Server Connection Error');
  });
});

describe('GET /openai/models', () => {
  it('lists the connections\' models, and users only the ones shared with them', async () => {
    const all = await world.api.get('/openai/models', { token: world.admin.token });
    expect(all.body.data.map((m: any) => m.id)).toEqual(['gpt-fake', 'gpt-fake-endless', 'gpt-fake-error', 'gpt-fake-silent']);
    const one = await world.api.get('/openai/models/0', { token: world.admin.token });
    expect(one.body.object).toBe('list');
    expect((await world.api.get('/openai/models', { token: world.alice.token })).body.data).toEqual([]);
    await world.api.post('/api/v1/models/model/access/update', { id: 'gpt-fake', access_grants: [{ principal_type: 'user', principal_id: world.alice.id, permission: 'read' }] }, { token: world.admin.token });
    try {
      expect((await world.api.get('/openai/models', { token: world.alice.token })).body.data.map((m: any) => m.id)).toEqual(['gpt-fake']);
    } finally {
      await world.api.post('/api/v1/models/model/delete', { id: 'gpt-fake' }, { token: world.admin.token });
    }
    expect((await world.api.get('/openai/models/x', { token: world.admin.token })).status).toBe(422);
  });

  it('answers 503 while the OpenAI API is off', async () => {
    await world.api.post('/openai/config/update', { ENABLE_OPENAI_API: false, OPENAI_API_BASE_URLS: [world.openai.url], OPENAI_API_KEYS: [''], OPENAI_API_CONFIGS: {} }, { token: world.admin.token });
    const res = await world.api.get('/openai/models', { token: world.admin.token });
    expect(res.status).toBe(503);
    expect(res.body.detail).toBe('OpenAI API is disabled. An admin switches it on in Admin Settings > Connections.');
    expect((await world.api.post('/openai/chat/completions', chat('gpt-fake'), { token: world.admin.token })).status).toBe(503);
  });
});

describe('POST /openai/chat/completions', () => {
  it('returns the provider\'s completion', async () => {
    const res = await world.api.post('/openai/chat/completions', chat('gpt-fake'), { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body.choices[0].message.content).toBe('You said: hello there');
    expect(lastRequest('/chat/completions').headers.authorization).toBe('Bearer sk-upstream-key-1234');
  });

  it('streams the provider\'s events as they come', async () => {
    const response = await fetch(`${world.server.url}/openai/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(chat('gpt-fake', { stream: true })),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const { text } = await readChunks(response);
    const data = sseData(text);
    expect(data.at(-1)).toBe('[DONE]');
    expect(
      data
        .slice(0, -1)
        .map((d: any) => d.choices[0].delta.content ?? '')
        .join(''),
    ).toBe('You said: hello there');
  });

  it('routes prefixed ids to their connection and sends the provider its own id', async () => {
    await configure({ '0': { prefix_id: 'one' }, '1': { prefix_id: 'two' } }, [world.openai.url, world.openai.url]);
    const res = await world.api.post('/openai/chat/completions', chat('two.gpt-fake'), { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(lastRequest('/chat/completions').body.model).toBe('gpt-fake');
  });

  it('sends the connection\'s custom headers, and no key with auth_type none', async () => {
    await configure({ '0': { auth_type: 'none', headers: { 'X-Team': 'team of {{USER_EMAIL}}', 'X-Chat': '{{CHAT_ID}}' } } });
    const res = await world.api.post('/openai/chat/completions', chat('gpt-fake', { metadata: { chat_id: 'c-1' } }), { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const sent = lastRequest('/chat/completions');
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.headers['x-team']).toBe(`team of ${world.admin.email}`);
    expect(sent.headers['x-chat']).toBe('c-1');
    expect(sent.body.metadata).toBeUndefined();
  });

  it('applies a preset: its base model, parameters and system prompt', async () => {
    // A user's preset reaches its base model only when that model is shared with the user too.
    await world.api.post('/api/v1/models/model/access/update', { id: 'gpt-fake', access_grants: [{ principal_type: 'user', principal_id: world.alice.id, permission: 'read' }] }, { token: world.admin.token });
    const created = await world.api.post(
      '/api/v1/models/create',
      { id: 'friendly', base_model_id: 'gpt-fake', name: 'Friendly', meta: {}, params: { system: 'Be friendly to {{USER_NAME}}', temperature: '0.2', stream_response: false, max_tokens: 10 } },
      { token: world.alice.token },
    );
    expect(created.status, created.text).toBe(200);
    const res = await world.api.post('/openai/chat/completions', chat('friendly'), { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    const sent = lastRequest('/chat/completions').body;
    expect(sent).toMatchObject({ model: 'gpt-fake', temperature: 0.2, max_tokens: 10 });
    expect(sent.stream_response).toBeUndefined();
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'Be friendly to OpenAI Alice' });
    await world.api.post('/api/v1/models/model/delete', { id: 'gpt-fake' }, { token: world.admin.token });
    const denied = await world.api.post('/openai/chat/completions', chat('friendly'), { token: world.alice.token });
    expect(denied.status).toBe(403);
    await world.api.post('/api/v1/models/model/delete', { id: 'friendly' }, { token: world.alice.token });
  });

  it('adapts requests for reasoning models', async () => {
    world.openai.models.push('o3-fake');
    try {
      await world.api.get('/api/models?refresh=true', { token: world.admin.token });
      const res = await world.api.post('/openai/chat/completions', { model: 'o3-fake', max_tokens: 5, messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }] }, { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
      const sent = lastRequest('/chat/completions').body;
      expect(sent.max_completion_tokens).toBe(5);
      expect(sent.max_tokens).toBeUndefined();
      expect(sent.messages[0].role).toBe('developer');
    } finally {
      world.openai.models.pop();
    }
  });

  it('answers 404 for unknown models, 422 for malformed bodies', async () => {
    const unknown = await world.api.post('/openai/chat/completions', chat('no-such-model'), { token: world.admin.token });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe("Model 'no-such-model' was not found");
    const noModel = await world.api.post('/openai/chat/completions', { messages: [] }, { token: world.admin.token });
    expect(noModel.status).toBe(422);
    const broken = await world.api.post('/openai/chat/completions', undefined, { token: world.admin.token, raw: '{"model": ' });
    expect(broken.status).toBe(422);
    const notObject = await world.api.post('/openai/chat/completions', [1, 2], { token: world.admin.token });
    expect(notObject.status).toBe(422);
  });

  it('refuses models not shared with the user before calling the provider', async () => {
    const before = world.openai.requests.length;
    const res = await world.api.post('/openai/chat/completions', chat('gpt-fake'), { token: world.alice.token });
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe('Model not found');
    expect(world.openai.requests.filter((r) => r.path === '/chat/completions').length).toBe(world.openai.requests.slice(0, before).filter((r) => r.path === '/chat/completions').length);
  });

  it('passes provider errors on with their status, a detail, and a provider_request.failed event', async () => {
    const res = await world.api.post('/openai/chat/completions', chat('gpt-fake-error'), { token: world.admin.token });
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ detail: 'The provider broke', error: { message: 'The provider broke' } });
    expect(world.events.find((e) => e.event === 'model.provider_request.failed')).toMatchObject({
      actor: { id: world.admin.id },
      subject: { type: 'model', id: 'gpt-fake-error' },
      data: { error_type: 'server_failed', status: 500, provider: 'openai-compatible', base_url: world.openai.url, requested_model: 'gpt-fake-error', api_key_suffix: '...1234', upstream_message: 'The provider broke' },
    });
  });

  it('answers 502 with a clear detail when the provider is down', async () => {
    await configure({ '1': { model_ids: ['gpt-down'] } }, [world.openai.url, 'http://127.0.0.1:1']);
    const started = Date.now();
    const res = await world.api.post('/openai/chat/completions', chat('gpt-down'), { token: world.admin.token });
    expect(res.status).toBe(502);
    expect(res.body.detail).toBe('Open WebUI: Server Connection Error');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('cancels the provider\'s stream when the client goes away', async () => {
    const before = world.openai.cancelled;
    await readThenLeave(`${world.server.url}/openai/chat/completions`, world.admin.token, chat('gpt-fake-endless', { stream: true }), 2);
    await world.openai.waitForCancelled(before + 1);
    expect(world.openai.cancelled).toBe(before + 1);
  });
});

describe('deadlines', () => {
  it('gives up on a stream that stays silent, with a 504', async () => {
    await withWorld({ fakes: fakeProviders(), env: { AIOHTTP_CLIENT_STREAM_IDLE_TIMEOUT: '1' }, admin: 'Deadline Admin' }, async (strict) => {
      const boss = strict.admin;
      const started = Date.now();
      const res = await strict.server.api.post('/openai/chat/completions', chat('gpt-fake-silent', { stream: true }), { token: boss.token });
      expect(res.status).toBe(504);
      expect(res.body.detail).toBe('Open WebUI: Server Connection Error (the model provider did not answer in time)');
      expect(Date.now() - started).toBeLessThan(5000);
      await strict.openai.waitForIdle();
    });
  });
});

describe('POST /openai/responses', () => {
  it('forwards to the model\'s connection, streamed or not', async () => {
    const res = await world.api.post('/openai/responses', { model: 'gpt-fake', input: 'hi', temperature: null }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.output[0].content[0].text).toBe('Responded to: hi');
    expect(lastRequest('/responses').body).toEqual({ model: 'gpt-fake', input: 'hi' });
    const stream = await world.api.post('/openai/responses', { model: 'gpt-fake', input: 'hi', stream: true }, { token: world.admin.token });
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(stream.text).toContain('response.completed');
    expect((await world.api.post('/openai/responses', { model: 'gpt-fake', input: 'hi' }, { token: world.alice.token })).status).toBe(403);
  });

  it('speaks the Responses API to connections configured for it', async () => {
    await configure({ '0': { api_type: 'responses' } });
    const res = await world.api.post('/openai/chat/completions', chat('gpt-fake', { max_tokens: 7, messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'q' }] }), { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant' } }] });
    expect(lastRequest('/responses').body).toMatchObject({ instructions: 'sys', max_output_tokens: 7, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'q' }] }] });
  });
});

describe('speech and the pass-through', () => {
  it('needs an api.openai.com connection for speech', async () => {
    const res = await world.api.post('/openai/audio/speech', { model: 'tts-1', input: 'hi', voice: 'alloy' }, { token: world.admin.token });
    expect(res.status).toBe(401);
    expect(res.body.detail).toBe('OpenAI API was not found');
  });

  it('keeps the pass-through off unless enabled', async () => {
    const res = await world.api.get('/openai/files', { token: world.admin.token });
    expect(res.status).toBe(403);
    await withWorld({ fakes: fakeProviders(), env: { ENABLE_OPENAI_API_PASSTHROUGH: 'true' }, admin: 'Passthrough Admin' }, async (open) => {
      const boss = open.admin;
      const files = await open.server.api.get('/openai/files?limit=1', { token: boss.token });
      expect(files.status).toBe(200);
      expect(files.body.data).toEqual([{ id: 'file-1' }]);
      const sent = await open.server.api.post('/openai/embeddings', { model: 'gpt-fake', input: ['a', 'b'] }, { token: boss.token });
      expect(sent.status).toBe(200);
      expect(sent.body.data).toHaveLength(2);
      expect(open.openai.requests.at(-1)!.headers.authorization).toBe('Bearer sk-upstream-key-1234');
    });
  });
});

describe('load', () => {
  it('relays 200 concurrent streams completely', async () => {
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const response = await fetch(`${world.server.url}/openai/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${world.admin.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(chat('gpt-fake', { stream: true, messages: [{ role: 'user', content: `number ${i}` }] })),
        });
        return { status: response.status, text: await response.text(), i };
      }),
    );
    for (const { status, text, i } of results) {
      expect(status).toBe(200);
      const content = sseData(text)
        .slice(0, -1)
        .map((d: any) => d.choices[0].delta.content ?? '')
        .join('');
      expect(content).toBe(`You said: number ${i}`);
    }
    await world.openai.waitForIdle();
  });
});

describe('forwarded identity', () => {
  it('tells providers who is asking when ENABLE_FORWARD_USER_INFO_HEADERS is on', async () => {
    await withWorld({ fakes: fakeProviders(), env: { ENABLE_FORWARD_USER_INFO_HEADERS: 'true' }, admin: 'Forward Admin' }, async (forwarding) => {
      const boss = forwarding.admin;
      const res = await forwarding.server.api.post('/openai/chat/completions', chat('gpt-fake', { metadata: { chat_id: 'chat-9' } }), { token: boss.token });
      expect(res.status, res.text).toBe(200);
      const headers = forwarding.openai.requests.filter((r) => r.path === '/chat/completions').at(-1)!.headers;
      expect(headers).toMatchObject({ 'x-openwebui-user-name': 'Forward Admin', 'x-openwebui-user-id': boss.id, 'x-openwebui-user-email': boss.email, 'x-openwebui-user-role': 'admin', 'x-openwebui-chat-id': 'chat-9' });
    });
  });
});
