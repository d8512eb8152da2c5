import { describe, expect, it } from 'vitest';
import { fakeProviders } from '../../helpers/fake-upstreams.js';
import { useServer } from '../../helpers/world.js';
import { sseData } from './setup.js';

const world = useServer({ fakes: fakeProviders(), admin: 'App Admin' });

const lastOpenAI = (path: string) => world.openai.requests.filter((r) => r.path === path).at(-1)!;


describe('the completion service (for the chat pipeline)', () => {
  it('completes an OpenAI-style request on any provider\'s model, streamed as Chat Completions chunks', async () => {
    const user = await world.record(world.admin);
    const { completions } = world.server.parley.services;
    for (const model of ['gpt-fake', 'llama-fake:latest']) {
      const answer = await completions.complete(user, { model, stream: true, messages: [{ role: 'user', content: 'service call' }] }, { user });
      expect(answer.kind).toBe('stream');
      if (answer.kind !== 'stream') continue;
      let text = '';
      for await (const chunk of answer.body) text += chunk.toString();
      const content = sseData(text)
        .filter((d): d is any => d !== '[DONE]')
        .map((d) => d.choices[0]?.delta?.content ?? '')
        .join('');
      expect(content).toBe('You said: service call');
    }
    const whole = await completions.complete(user, { model: 'gpt-fake', messages: [{ role: 'user', content: 'x' }] }, { user });
    expect(whole).toMatchObject({ kind: 'json', status: 200, body: { choices: [{ message: { content: 'You said: x' } }] } });
    await expect(completions.complete(user, { model: 'nope', messages: [] }, { user })).rejects.toMatchObject({ statusCode: 404 });
  });
});

describe('POST /api/v1/messages', () => {
  it('converts tools and tool results to Chat Completions', async () => {
    const res = await world.api.post(
      '/api/v1/messages',
      {
        model: 'gpt-fake',
        max_tokens: 20,
        stop_sequences: ['END'],
        tools: [{ name: 'weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        tool_choice: { type: 'any' },
        messages: [
          { role: 'user', content: 'weather?' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }, { type: 'text', text: 'and tomorrow?' }] },
        ],
      },
      { token: world.admin.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'You said: and tomorrow?' }], usage: { input_tokens: 5, output_tokens: 4 } });
    const sent = lastOpenAI('/chat/completions').body;
    expect(sent).toMatchObject({
      max_tokens: 20,
      stop: ['END'],
      tool_choice: 'required',
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
        { role: 'user', content: 'and tomorrow?' },
      ],
    });
  });

  it('sends Anthropic requests unchanged to LiteLLM connections', async () => {
    await world.api.post('/openai/config/update', { ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: [world.openai.url], OPENAI_API_KEYS: ['k'], OPENAI_API_CONFIGS: { '0': { provider: 'litellm' } } }, { token: world.admin.token });
    try {
      const res = await world.api.post('/api/message', { model: 'gpt-fake', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, { token: world.admin.token });
      expect(res.body.content[0].text).toBe('native anthropic');
      expect(lastOpenAI('/messages').body).toEqual({ model: 'gpt-fake', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    } finally {
      await world.api.post('/openai/config/update', { ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: [world.openai.url], OPENAI_API_KEYS: ['sk-upstream-key-1234'], OPENAI_API_CONFIGS: {} }, { token: world.admin.token });
    }
  });

  it('answers 404 for unknown models and 422 for bodies that are not objects', async () => {
    expect((await world.api.post('/api/v1/messages', { model: 'unknown', messages: [] }, { token: world.admin.token })).status).toBe(404);
    expect((await world.api.post('/api/v1/messages', ['x'], { token: world.admin.token })).status).toBe(422);
  });
});

describe('POST /api/embeddings', () => {
  it('embeds with a preset\'s base model', async () => {
    await world.api.post('/api/v1/models/create', { id: 'embedder', base_model_id: 'llama-fake:latest', name: 'Embedder', meta: {}, params: {} }, { token: world.admin.token });
    const res = await world.api.post('/api/embeddings', { model: 'embedder', input: 'a' }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [{ object: 'embedding', embedding: [0.5, 0], index: 0 }], model: 'llama-fake:latest' });
    const failed = await world.api.post('/api/embeddings', { model: 'gpt-fake-error', input: 'a' }, { token: world.admin.token });
    expect(failed.status).toBe(500);
    expect(failed.body.detail).toBe('The provider broke');
  });
});
