import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import { describe, expect, it } from 'vitest';
import { fakeProviders } from '../../helpers/fake-upstreams.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/** The official `ollama` and `@anthropic-ai/sdk` clients, used as a user would. */
const world = useServer({ fakes: fakeProviders(), admin: 'Client Admin', users: { alice: ['user', 'Client Alice'] } });

const ollamaAs = (account: Account) => new Ollama({ host: `${world.server.url}/ollama`, headers: { Authorization: `Bearer ${account.token}` } });
const anthropicAt = (path: string, account: Account = world.admin) => new Anthropic({ apiKey: account.token, baseURL: `${world.server.url}${path}`, maxRetries: 0 });


describe('ollama against /ollama', () => {
  it('lists, shows, reports versions and loaded models', async () => {
    const ollama = ollamaAs(world.admin);
    expect((await ollama.list()).models.map((m) => m.model)).toContain('llama-fake:latest');
    expect((await ollama.show({ model: 'llama-fake:latest' })).details.family).toBe('llama');
    expect((await ollama.version()).version).toBe('0.6.2');
    expect((await ollama.ps()).models.map((m) => m.model)).toEqual(['llama-fake:latest']);
  });

  it('chats and generates, whole and streamed', async () => {
    const ollama = ollamaAs(world.admin);
    const reply = await ollama.chat({ model: 'llama-fake:latest', messages: [{ role: 'user', content: 'hello' }] });
    expect(reply.message.content).toBe('You said: hello');
    let text = '';
    for await (const part of await ollama.chat({ model: 'llama-fake:latest', stream: true, messages: [{ role: 'user', content: 'hello you' }] })) text += part.message.content;
    expect(text).toBe('You said: hello you');
    expect((await ollama.generate({ model: 'llama-fake:latest', prompt: 'p' })).response).toBe('You said: p');
    const embedded = await ollama.embed({ model: 'llama-fake:latest', input: ['x'] });
    expect(embedded.embeddings).toEqual([[0.5, 0]]);
  });

  it('pulls with progress, copies and deletes models', async () => {
    const ollama = ollamaAs(world.admin);
    const statuses: string[] = [];
    for await (const progress of await ollama.pull({ model: 'pulled', stream: true })) statuses.push(progress.status);
    expect(statuses).toEqual(['pulling manifest', 'success']);
    await ollama.copy({ source: 'llama-fake:latest', destination: 'sdk-copy:latest' });
    await ollama.delete({ model: 'sdk-copy:latest' });
    expect(world.events.filter((e) => e.event.startsWith('model.provider_model.')).map((e) => e.event)).toEqual(['model.provider_model.created', 'model.provider_model.deleted']);
  });

  it('keeps unshared models away from users', async () => {
    const ollama = ollamaAs(world.alice);
    expect((await ollama.list()).models).toEqual([]);
    await expect(ollama.chat({ model: 'llama-fake:latest', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status_code: 403 });
  });
});

describe('@anthropic-ai/sdk', () => {
  it('talks to Ollama\'s Messages API through /ollama/v1/messages', async () => {
    const anthropic = anthropicAt('/ollama');
    const message = await anthropic.messages.create({ model: 'llama-fake:latest', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'Anthropic says: hi' });
    const stream = anthropic.messages.stream({ model: 'llama-fake:latest', max_tokens: 50, messages: [{ role: 'user', content: 'hey' }] });
    const final = await stream.finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'Anthropic says: hey' });
    expect(world.ollama.requests.filter((r) => r.path === '/v1/messages').at(-1)!.body.model).toBe('llama-fake:latest');
  });

  it('serves every model through /api/v1/messages, converting to and from Chat Completions', async () => {
    const anthropic = anthropicAt('/api');
    for (const model of ['gpt-fake', 'llama-fake:latest']) {
      const message = await anthropic.messages.create({ model, max_tokens: 50, system: 'be brief', messages: [{ role: 'user', content: 'ping' }] });
      expect(message).toMatchObject({ type: 'message', role: 'assistant', model, stop_reason: 'end_turn', content: [{ type: 'text', text: 'You said: ping' }] });
      const streamed = await anthropic.messages.stream({ model, max_tokens: 50, messages: [{ role: 'user', content: 'ping pong' }] }).finalMessage();
      expect(streamed.content).toEqual([{ type: 'text', text: 'You said: ping pong', citations: null }].map(({ citations: _c, ...b }) => expect.objectContaining(b)));
    }
    const sent = world.openai.requests.filter((r) => r.path === '/chat/completions').at(-2)!.body;
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'be brief' });
    await expect(anthropicAt('/api', world.alice).messages.create({ model: 'gpt-fake', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 403 });
  });
});
