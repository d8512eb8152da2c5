import { createServer } from 'node:http';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { fakeProviders } from '../../helpers/fake-upstreams.js';
import { listenLocally } from '../../helpers/server.js';
import type { Account } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';

/** The official `openai` client, used as a user would, against Parley's three OpenAI-style mounts. */
const world = useServer({ fakes: fakeProviders(), admin: 'SDK Admin', users: { alice: ['user', 'SDK Alice'] } });

const client = (path: string, account: Account = world.admin) => new OpenAI({ apiKey: account.token, baseURL: `${world.server.url}${path}`, maxRetries: 0 });


describe('openai against /openai', () => {
  it('lists models and completes, whole and streamed', async () => {
    const openai = client('/openai');
    const models = await openai.models.list();
    expect(models.data.map((m) => m.id)).toContain('gpt-fake');
    const completion = await openai.chat.completions.create({ model: 'gpt-fake', messages: [{ role: 'user', content: 'ping' }] });
    expect(completion.choices[0].message.content).toBe('You said: ping');
    const stream = await openai.chat.completions.create({ model: 'gpt-fake', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'ping pong' }] });
    let text = '';
    let usage: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('You said: ping pong');
    expect(usage).toMatchObject({ prompt_tokens: 5 });
  });

  it('raises the SDK\'s errors with the status and message', async () => {
    const openai = client('/openai');
    await expect(openai.chat.completions.create({ model: 'missing-model', messages: [] })).rejects.toMatchObject({ status: 404 });
    await expect(openai.chat.completions.create({ model: 'gpt-fake-error', messages: [] })).rejects.toMatchObject({ status: 500, message: expect.stringContaining('The provider broke') });
    await expect(client('/openai', world.alice).chat.completions.create({ model: 'gpt-fake', messages: [] })).rejects.toMatchObject({ status: 403 });
  });

  it('stops the provider\'s stream when the SDK aborts', async () => {
    const before = world.openai.cancelled;
    const controller = new AbortController();
    const stream = await client('/openai').chat.completions.create({ model: 'gpt-fake-endless', stream: true, messages: [{ role: 'user', content: 'x' }] }, { signal: controller.signal });
    let seen = 0;
    for await (const _chunk of stream) {
      if (++seen === 3) controller.abort();
    }
    expect(seen).toBeGreaterThanOrEqual(3);
    await world.openai.waitForCancelled(before + 1);
  });

  it('uses the Responses API', async () => {
    const response = await client('/openai').responses.create({ model: 'gpt-fake', input: 'hello' });
    expect(response.output_text).toBe('Responded to: hello');
  });
});

describe('openai against /ollama/v1', () => {
  it('lists, completes, streams and embeds on Ollama models', async () => {
    const openai = client('/ollama/v1');
    expect((await openai.models.list()).data.map((m) => m.id)).toContain('llama-fake:latest');
    const completion = await openai.chat.completions.create({ model: 'llama-fake:latest', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0].message.content).toBe('You said: hi');
    let text = '';
    for await (const chunk of await openai.chat.completions.create({ model: 'llama-fake:latest', stream: true, messages: [{ role: 'user', content: 'hi you' }] })) {
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    expect(text).toBe('You said: hi you');
    const embeddings = await openai.embeddings.create({ model: 'llama-fake:latest', input: ['a', 'b'], encoding_format: 'float' });
    expect(embeddings.data).toHaveLength(2);
    const legacy = await openai.completions.create({ model: 'llama-fake:latest', prompt: 'tell' });
    expect(legacy.choices[0].text).toBe('Completed: tell');
  });
});

describe('openai against /api', () => {
  it('lists the merged models and embeds with any provider\'s model', async () => {
    for (const path of ['/api', '/api/v1']) {
      const openai = client(path);
      const ids = (await openai.models.list()).data.map((m) => m.id);
      expect(ids).toEqual(expect.arrayContaining(['gpt-fake', 'llama-fake:latest']));
      const fromOpenAI = await openai.embeddings.create({ model: 'gpt-fake', input: 'one', encoding_format: 'float' });
      expect(fromOpenAI.data[0].embedding).toEqual([0.1, 0.2, 0]);
      const fromOllama = await openai.embeddings.create({ model: 'llama-fake:latest', input: ['one', 'two'], encoding_format: 'float' });
      expect(fromOllama.data.map((d) => [d.index, d.embedding])).toEqual([
        [0, [0.5, 0]],
        [1, [0.5, 1]],
      ]);
    }
    expect((await client('/api', world.alice).models.list()).data).toEqual([]);
    await expect(client('/api', world.alice).embeddings.create({ model: 'gpt-fake', input: 'x' })).rejects.toMatchObject({ status: 403 });
    await expect(client('/api').embeddings.create({ model: 'nothing', input: 'x' })).rejects.toMatchObject({ status: 404 });
  });
});

describe('errors the SDK can read', () => {
  /** The SDK's error for `call`: its message is "<status> <error.message>", or "(no body)" without an `error` object. */
  const failure = async (call: () => Promise<unknown>) => {
    const error = await call().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    return error as InstanceType<typeof OpenAI.APIError>;
  };

  it('says why on every OpenAI-compatible mount', async () => {
    const cases: [() => Promise<unknown>, number, string][] = [
      [() => client('/openai').chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), 404, "Model 'no-such-model' was not found"],
      [() => client('/api').chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), 400, 'Model not found'],
      [() => client('/api/v1').chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), 400, 'Model not found'],
      [() => client('/api').embeddings.create({ model: 'nothing', input: 'x' }), 404, ''],
      [() => client('/api', world.alice).embeddings.create({ model: 'gpt-fake', input: 'x' }), 403, ''],
      [() => client('/ollama/v1').chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), 404, ''],
      [() => client('/openai').chat.completions.create({ model: 'gpt-fake-error', messages: [] }), 500, 'The provider broke'],
    ];
    for (const [call, status, reason] of cases) {
      const error = await failure(call);
      expect(error.status).toBe(status);
      expect(error.message).not.toContain('no body');
      expect(error.message).toContain(reason);
      expect(error.type, error.message).toMatch(/_error$/);
    }
  });

  it('names the missing credential and the invalid field', async () => {
    const anonymous = new OpenAI({ apiKey: 'sk-not-a-parley-key', baseURL: `${world.server.url}/openai`, maxRetries: 0 });
    const refused = await failure(() => anonymous.models.list());
    expect(refused.status).toBe(401);
    expect(refused.type).toBe('authentication_error');
    expect(refused.message).toMatch(/^401 \S/);

    const invalid = await failure(() => client('/ollama/v1').chat.completions.create({ model: 'gpt-fake' } as never));
    expect(invalid.status).toBe(422);
    expect(invalid.message).toContain('body.messages: Field required');
    expect(invalid.type).toBe('invalid_request_error');
  });

  it("gives a provider's error without an OpenAI error object one, keeping the provider's fields", async () => {
    // A provider that refuses in FastAPI's shape (another Open WebUI, a proxy in front of one).
    const provider = createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      if (request.url?.endsWith('/models')) return void response.end(JSON.stringify({ data: [{ id: 'picky-model', object: 'model' }] }));
      response.statusCode = 400;
      response.end(JSON.stringify({ detail: 'Context window exceeded for picky-model', request_id: 'r-1' }));
    });
    const url = await listenLocally(provider);
    try {
      await withWorld({ env: { OPENAI_API_BASE_URLS: url, OPENAI_API_KEYS: 'sk-picky', ENABLE_OLLAMA_API: 'false' } }, async (picky) => {
        const res = await picky.api.post('/openai/chat/completions', { model: 'picky-model', messages: [{ role: 'user', content: 'x' }] }, { token: picky.admin.token });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({
          detail: 'Context window exceeded for picky-model',
          request_id: 'r-1',
          error: { message: 'Context window exceeded for picky-model', type: 'invalid_request_error', code: null },
        });
        const sdk = new OpenAI({ apiKey: picky.admin.token, baseURL: `${picky.server.url}/openai`, maxRetries: 0 });
        const error = await failure(() => sdk.chat.completions.create({ model: 'picky-model', messages: [{ role: 'user', content: 'x' }] }));
        expect(error.message).toBe('400 Context window exceeded for picky-model');
      });
    } finally {
      provider.close();
    }
  });

  it('keeps `detail` as the reference sends it, and sends no `error` on the other routes', async () => {
    const openai = await world.api.post('/openai/chat/completions', { model: 'no-such-model', messages: [] }, { token: world.admin.token });
    expect(openai.body).toEqual({ detail: "Model 'no-such-model' was not found", error: { message: "Model 'no-such-model' was not found", type: 'invalid_request_error', code: null } });
    const other = await world.api.get('/api/v1/chats/no-such-chat', { token: world.admin.token });
    expect(Object.keys(other.body)).toEqual(['detail']);
  });
});
