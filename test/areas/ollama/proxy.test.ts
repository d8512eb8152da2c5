import { beforeEach, describe, expect, it } from 'vitest';
import { fakeProviders, startFakeOllama } from '../../helpers/fake-upstreams.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { readChunks, readThenLeave } from '../models/setup.js';

const providers = fakeProviders();
const world = useServer({
  fakes: { start: async () => ({ ...(await providers.start()), second: await startFakeOllama(['llama-fake:latest', 'only-second:latest'], '0.5.1') }), env: providers.env },
  admin: 'Ollama Admin',
  users: { alice: ['user', 'Ollama Alice'] },
});

const lastRequest = (path: string, fake = world.ollama) => fake.requests.filter((r) => r.path === path).at(-1)!;
const ndjson = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

async function configure(urls: string[] = [world.ollama.url], configs: Record<string, unknown> = {}, enabled = true) {
  const res = await world.api.post('/ollama/config/update', { ENABLE_OLLAMA_API: enabled, OLLAMA_BASE_URLS: urls, OLLAMA_API_CONFIGS: configs }, { token: world.admin.token });
  expect(res.status, res.text).toBe(200);
}

async function share(id: string, account: Account) {
  const res = await world.api.post('/api/v1/models/model/access/update', { id, access_grants: [{ principal_type: 'user', principal_id: account.id, permission: 'read' }] }, { token: world.admin.token });
  expect(res.status, res.text).toBe(200);
}


beforeEach(async () => {
  await configure();
  await world.api.delete('/api/v1/models/delete/all', { token: world.admin.token });
  world.events.length = 0;
});

describe('status and connections config', () => {
  it('answers the health check without credentials', async () => {
    expect((await world.api.get('/ollama/')).body).toEqual({ status: true });
    expect((await world.api.request('HEAD', '/ollama/')).status).toBe(200);
  });

  it('saves the config, drops options of missing indexes, publishes the change', async () => {
    const res = await world.api.post('/ollama/config/update', { ENABLE_OLLAMA_API: true, OLLAMA_BASE_URLS: [world.ollama.url], OLLAMA_API_CONFIGS: { '0': { prefix_id: 'p' }, '3': {} } }, { token: world.admin.token });
    expect(res.body).toEqual({ ENABLE_OLLAMA_API: true, OLLAMA_BASE_URLS: [world.ollama.url], OLLAMA_API_CONFIGS: { '0': { prefix_id: 'p' } } });
    expect((await world.api.get('/ollama/config', { token: world.admin.token })).body).toEqual(res.body);
    expect(world.events.find((e) => e.event === 'model.provider_config.updated')).toMatchObject({ subject: { id: 'ollama' }, data: { provider: 'ollama', enabled: true, base_url_count: 1 } });
    expect((await world.api.get('/ollama/config', { token: world.alice.token })).status).toBe(401);
  });

  it('verifies a server by its version', async () => {
    expect((await world.api.post('/ollama/verify', { url: world.ollama.url }, { token: world.admin.token })).body).toEqual({ version: '0.6.2' });
    expect((await world.api.post('/ollama/verify', { url: 'http://127.0.0.1:1' }, { token: world.admin.token })).status).toBe(502);
  });
});

describe('model lists', () => {
  it('merges tags across connections, remembering which serve each model', async () => {
    await configure([world.ollama.url, world.second.url]);
    const res = await world.api.get('/ollama/api/tags', { token: world.admin.token });
    expect(res.status).toBe(200);
    const byId = Object.fromEntries(res.body.models.map((m: any) => [m.model, m.urls]));
    expect(byId['llama-fake:latest']).toEqual([0, 1]);
    expect(byId['only-second:latest']).toEqual([1]);
    const one = await world.api.get('/ollama/api/tags/1', { token: world.admin.token });
    expect(one.body.models.map((m: any) => m.model)).toEqual(['llama-fake:latest', 'only-second:latest']);
  });

  it('shows users only shared models', async () => {
    expect((await world.api.get('/ollama/api/tags', { token: world.alice.token })).body.models).toEqual([]);
    await share('llama-fake:latest', world.alice);
    expect((await world.api.get('/ollama/api/tags', { token: world.alice.token })).body.models.map((m: any) => m.model)).toEqual(['llama-fake:latest']);
    expect((await world.api.get('/ollama/v1/models', { token: world.alice.token })).body).toEqual({
      object: 'list',
      data: [{ id: 'llama-fake:latest', object: 'model', created: expect.any(Number), owned_by: 'openai' }],
    });
  });

  it('lists loaded models with prefixes, skipping connections that fail', async () => {
    await configure([world.ollama.url, 'http://127.0.0.1:1', world.second.url], { '2': { prefix_id: 'two' } });
    const res = await world.api.get('/ollama/api/ps', { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body.models.map((m: any) => [m.model, m.urls])).toEqual([
      ['llama-fake:latest', [0]],
      ['two.llama-fake:latest', [2]],
    ]);
    expect((await world.api.get('/ollama/api/ps', { token: world.alice.token })).status).toBe(401);
  });

  it('reports the lowest version, or one connection\'s', async () => {
    await configure([world.ollama.url, world.second.url]);
    expect((await world.api.get('/ollama/api/version')).body).toEqual({ version: '0.5.1' });
    expect((await world.api.get('/ollama/api/version/0')).body).toEqual({ version: '0.6.2' });
    await configure(['http://127.0.0.1:1']);
    const none = await world.api.get('/ollama/api/version');
    expect(none.status).toBe(500);
    expect(none.body.detail).toBe('Open WebUI could not connect to Ollama');
    await configure([world.ollama.url], {}, false);
    expect((await world.api.get('/ollama/api/version')).body).toEqual({ version: false });
    expect((await world.api.get('/ollama/api/tags', { token: world.admin.token })).status).toBe(503);
  });
});

describe('POST /ollama/api/chat', () => {
  it('streams NDJSON by default and answers JSON when stream is false', async () => {
    const response = await fetch(`${world.server.url}/ollama/api/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama-fake:latest', messages: [{ role: 'user', content: 'hey' }] }),
    });
    expect(response.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = ndjson((await readChunks(response)).text);
    expect(lines.map((l) => l.message.content).join('')).toBe('You said: hey');
    expect(lines.at(-1).done).toBe(true);
    expect(lastRequest('/api/chat').body.stream).toBe(true);
    const plain = await world.api.post('/ollama/api/chat', { model: 'llama-fake:latest', stream: false, messages: [{ role: 'user', content: 'hey' }] }, { token: world.admin.token });
    expect(plain.body.message.content).toBe('You said: hey');
  });

  it('applies a preset\'s parameters the Ollama way', async () => {
    await world.api.post('/api/v1/models/create', { id: 'ollama-preset', base_model_id: 'llama-fake:latest', name: 'P', meta: {}, params: { system: 'sys', temperature: 0.3, max_tokens: 20, keep_alive: '5m', num_ctx: 4096 } }, { token: world.admin.token });
    const res = await world.api.post('/ollama/api/chat', { model: 'ollama-preset', stream: false, messages: [{ role: 'user', content: 'x' }] }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(lastRequest('/api/chat').body).toMatchObject({
      model: 'llama-fake:latest',
      keep_alive: '5m',
      options: { temperature: 0.3, num_predict: 20, num_ctx: 4096 },
      messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'x' }],
    });
  });

  it('routes by url_idx and prefix, and keeps users on the connections serving the model', async () => {
    await configure([world.ollama.url, world.second.url], { '1': { prefix_id: 'two' } });
    const res = await world.api.post('/ollama/api/chat/1', { model: 'two.only-second:latest', stream: false, messages: [] }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(lastRequest('/api/chat', world.second).body.model).toBe('only-second:latest');
    await share('llama-fake:latest', world.alice);
    const wrong = await world.api.post('/ollama/api/chat/1', { model: 'llama-fake:latest', stream: false, messages: [] }, { token: world.alice.token });
    expect(wrong.status).toBe(403);
    expect((await world.api.post('/ollama/api/chat/0', { model: 'llama-fake:latest', stream: false, messages: [] }, { token: world.alice.token })).status).toBe(200);
  });

  it('refuses unknown, unshared and malformed requests', async () => {
    const unknown = await world.api.post('/ollama/api/chat', { model: 'nope', messages: [] }, { token: world.admin.token });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe("Model 'nope' was not found");
    const denied = await world.api.post('/ollama/api/chat', { model: 'llama-fake:latest', messages: [] }, { token: world.alice.token });
    expect(denied.status).toBe(403);
    expect(denied.body.detail).toBe('Model not found');
    const malformed = await world.api.post('/ollama/api/chat', { model: 'llama-fake:latest', messages: 'hi' }, { token: world.admin.token });
    expect(malformed.status).toBe(422);
  });

  it('passes Ollama\'s error on with its status and publishes provider_request.failed', async () => {
    const res = await world.api.post('/ollama/api/chat', { model: 'llama-fake-error:latest', messages: [] }, { token: world.admin.token });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ detail: 'The provider broke' });
    expect(world.events.find((e) => e.event === 'model.provider_request.failed')).toMatchObject({
      data: { provider: 'ollama', status: 500, error_type: 'server_failed', base_url: `${world.ollama.url}/api/chat`, requested_model: 'llama-fake-error:latest' },
    });
  });

  it('cancels Ollama\'s stream when the client goes away', async () => {
    const before = world.ollama.cancelled;
    await readThenLeave(`${world.server.url}/ollama/api/chat`, world.admin.token, { model: 'llama-fake-endless:latest', messages: [{ role: 'user', content: 'go' }] });
    await world.ollama.waitForCancelled(before + 1);
  });
});

describe('other native routes', () => {
  it('generates, embeds and shows', async () => {
    const generated = await world.api.post('/ollama/api/generate', { model: 'llama-fake:latest', prompt: 'p', stream: false }, { token: world.admin.token });
    expect(generated.body.response).toBe('You said: p');
    const streamed = await world.api.post('/ollama/api/generate', { model: 'llama-fake:latest', prompt: 'p' }, { token: world.admin.token });
    expect(ndjson(streamed.text).at(-1).done).toBe(true);
    const embed = await world.api.post('/ollama/api/embed', { model: 'llama-fake:latest', input: ['a', 'b'] }, { token: world.admin.token });
    expect(embed.body.embeddings).toEqual([
      [0.5, 0],
      [0.5, 1],
    ]);
    const legacy = await world.api.post('/ollama/api/embeddings', { model: 'llama-fake:latest', prompt: 'a', extra: 'dropped' }, { token: world.admin.token });
    expect(legacy.body).toEqual({ embedding: [0.5, 0.25] });
    expect(lastRequest('/api/embeddings').body).toEqual({ model: 'llama-fake:latest', prompt: 'a' });
    const shown = await world.api.post('/ollama/api/show', { name: 'llama-fake:latest' }, { token: world.admin.token });
    expect(shown.body.details.family).toBe('llama');
    expect((await world.api.post('/ollama/api/show', { model: 'llama-fake:latest' }, { token: world.alice.token })).status).toBe(403);
    expect((await world.api.post('/ollama/api/embed', { model: 'llama-fake:latest' }, { token: world.admin.token })).status).toBe(422);
  });

  it('manages models: pull, push, create stream progress; copy and delete publish events', async () => {
    const pulled = await world.api.post('/ollama/api/pull', { model: 'new-model' }, { token: world.admin.token });
    expect(ndjson(pulled.text).map((l) => l.status)).toEqual(['pulling manifest', 'success']);
    expect(lastRequest('/api/pull').body).toEqual({ model: 'new-model', insecure: true });
    const pushed = await world.api.request('DELETE', '/ollama/api/push', { model: 'llama-fake:latest' }, { token: world.admin.token });
    expect(pushed.status).toBe(200);
    expect(lastRequest('/api/push').method).toBe('POST');
    expect((await world.api.post('/ollama/api/create/0', { model: 'made', from: 'llama-fake:latest' }, { token: world.admin.token })).status).toBe(200);
    const copied = await world.api.post('/ollama/api/copy', { source: 'llama-fake:latest', destination: 'copy-of:latest' }, { token: world.admin.token });
    expect(copied.body).toBe(true);
    expect(world.events.find((e) => e.event === 'model.provider_model.created')).toMatchObject({ subject: { id: 'copy-of:latest' }, data: { provider: 'ollama', source: 'llama-fake:latest', url_idx: 0 } });
    expect((await world.api.get('/ollama/api/tags', { token: world.admin.token })).body.models.map((m: any) => m.model)).toContain('copy-of:latest');
    const deleted = await world.api.request('DELETE', '/ollama/api/delete', { model: 'copy-of:latest' }, { token: world.admin.token });
    expect(deleted.body).toBe(true);
    expect(world.events.find((e) => e.event === 'model.provider_model.deleted')).toMatchObject({ subject: { id: 'copy-of:latest' }, data: { url_idx: 0 } });
    const missing = await world.api.request('DELETE', '/ollama/api/delete/0', { model: 'copy-of:latest' }, { token: world.admin.token });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toBe("model 'copy-of:latest' not found");
    expect((await world.api.post('/ollama/api/pull', { model: 'x' }, { token: world.alice.token })).status).toBe(401);
  });

  it('unloads a model from every connection serving it', async () => {
    await configure([world.ollama.url, world.second.url]);
    const res = await world.api.post('/ollama/api/unload', { model: 'llama-fake:latest' }, { token: world.admin.token });
    expect(res.body).toEqual({ status: true });
    expect(lastRequest('/api/generate').body).toEqual({ model: 'llama-fake:latest', keep_alive: 0, prompt: '' });
    expect(lastRequest('/api/generate', world.second).body.keep_alive).toBe(0);
    const app = await world.api.post('/api/models/unload', { model: 'llama-fake:latest' }, { token: world.admin.token });
    expect(app.body).toEqual({ status: true });
    const openai = await world.api.post('/api/models/unload', { model: 'gpt-fake' }, { token: world.admin.token });
    expect(openai.status).toBe(400);
    expect(openai.body.detail).toBe('Provider "default" does not support model unloading');
    expect((await world.api.post('/api/models/unload', { model: 'nothing' }, { token: world.admin.token })).status).toBe(404);
  });
});

describe('OpenAI-, Anthropic- and Responses-style routes', () => {
  it('forwards chat completions, completions and embeddings', async () => {
    const chat = await world.api.post('/ollama/v1/chat/completions', { model: 'llama-fake:latest', messages: [{ role: 'user', content: 'yo' }] }, { token: world.admin.token });
    expect(chat.body.choices[0].message.content).toBe('You said: yo');
    const stream = await world.api.post('/ollama/v1/chat/completions/0', { model: 'llama-fake:latest', stream: true, messages: [{ role: 'user', content: 'yo' }] }, { token: world.admin.token });
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(stream.text.trim().endsWith('data: [DONE]')).toBe(true);
    const completion = await world.api.post('/ollama/v1/completions', { model: 'llama-fake:latest', prompt: 'once' }, { token: world.admin.token });
    expect(completion.body.choices[0].text).toBe('Completed: once');
    const embeddings = await world.api.post('/ollama/v1/embeddings', { model: 'llama-fake:latest', input: 'x' }, { token: world.admin.token });
    expect(embeddings.body.data).toHaveLength(1);
    const embeddingsAt = await world.api.post('/ollama/v1/embeddings/0', { model: 'llama-fake:latest', input: ['x', 'y'] }, { token: world.admin.token });
    expect(embeddingsAt.body.data).toHaveLength(2);
  });

  it('forwards Anthropic-style messages and Responses requests, streamed as event streams', async () => {
    const message = await world.api.post('/ollama/v1/messages', { model: 'llama-fake:latest', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { token: world.admin.token });
    expect(message.body.content[0].text).toBe('Anthropic says: hi');
    const streamed = await world.api.post('/ollama/v1/messages/0', { model: 'llama-fake:latest', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }, { token: world.admin.token });
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');
    expect(streamed.text).toContain('event: message_stop');
    const response = await world.api.post('/ollama/v1/responses', { model: 'llama-fake:latest', input: 'q' }, { token: world.admin.token });
    expect(response.body.output[0].content[0].text).toBe('Responded to: q');
    expect((await world.api.post('/ollama/v1/responses', { input: 'q' }, { token: world.admin.token })).status).toBe(422);
    expect((await world.api.post('/ollama/v1/messages', { model: 'llama-fake:latest', messages: [] }, { token: world.alice.token })).status).toBe(403);
  });
});

describe('model files', () => {
  it('uploads a file as a blob and creates a model from it, reporting progress', async () => {
    const form = new FormData();
    form.append('note', 'ignored field');
    form.append('file', new Blob([Buffer.alloc(300_000, 7)]), 'tiny-model.gguf');
    const response = await fetch(`${world.server.url}/ollama/models/upload`, { method: 'POST', headers: { authorization: `Bearer ${world.admin.token}` }, body: form });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = (await response.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => JSON.parse(e.replace(/^data: /, '')));
    expect(events.at(-1)).toMatchObject({ done: true, name: 'tiny-model.gguf', model_created: 'tiny-model', blob: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    expect(events.at(-2)).toMatchObject({ progress: 100, total: 300_000, completed: 300_000 });
    const blob = world.ollama.requests.find((r) => r.path.startsWith('/api/blobs/'))!;
    expect(blob.body.size).toBe(300_000);
    expect(lastRequest('/api/create').body).toEqual({ model: 'tiny-model', files: { 'tiny-model.gguf': events.at(-1).blob } });
  });

  it('refuses uploads without a file and downloads from other hosts', async () => {
    const empty = await fetch(`${world.server.url}/ollama/models/upload/0`, { method: 'POST', headers: { authorization: `Bearer ${world.admin.token}` }, body: new FormData() });
    expect(empty.status).toBe(422);
    const download = await world.api.post('/ollama/models/download', { url: 'https://example.com/model.gguf' }, { token: world.admin.token });
    expect(download.status).toBe(400);
    expect(download.body.detail).toBe('Invalid file_url. Only URLs from allowed hosts are permitted.');
    expect((await world.api.post('/ollama/models/download', { url: 'https://huggingface.co/x' }, { token: world.alice.token })).status).toBe(401);
  });
});
