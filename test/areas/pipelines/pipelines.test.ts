import { beforeAll, describe, expect, it } from 'vitest';
import { fakePipelines } from '../../helpers/fake-pipelines.js';
import { closedPortUrl } from '../../helpers/server.js';
import { as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/**
 * `/api/v1/pipelines` against a fake Pipelines server (and one that is an
 * ordinary OpenAI connection): the list, upload, add, delete, valves with
 * their spec, errors relayed, and the filter pipelines around chat answers.
 */
describe('pipelines', () => {
  const world = useServer({
    fakes: { start: async () => ({ pipes: await fakePipelines(), plain: await fakePipelines('plain-key') }) },
    users: { member: 'user' },
    freshEvents: true,
  });
  const admin = () => as(world.admin);
  let down: string;

  beforeAll(async () => {
    world.plain.plain = true;
    down = await closedPortUrl();
    const set = await world.api.post(
      '/openai/config/update',
      {
        ENABLE_OPENAI_API: true,
        OPENAI_API_BASE_URLS: [world.pipes.url, world.plain.url, down],
        OPENAI_API_KEYS: [world.pipes.key, world.plain.key, 'k'],
        OPENAI_API_CONFIGS: {},
      },
      admin(),
    );
    expect(set.status, set.text).toBe(200);
  });

  async function upload(filename: string, content: string, urlIdx: string | null = '0', token = world.admin.token) {
    const form = new FormData();
    form.append('file', new Blob([content]), filename);
    if (urlIdx !== null) form.append('urlIdx', urlIdx);
    const response = await fetch(`${world.server.url}/api/v1/pipelines/upload`, { method: 'POST', body: form, headers: { authorization: `Bearer ${token}` } });
    return { status: response.status, body: await response.json() };
  }

  it('lists the connections that are Pipelines servers, and a server\'s pipelines', async () => {
    const list = await world.api.get('/api/v1/pipelines/list', admin());
    expect(list.status, list.text).toBe(200);
    expect(list.body).toEqual({ data: [{ url: world.pipes.url, idx: 0 }] });
    const pipelines = await world.api.get('/api/v1/pipelines/?urlIdx=0', admin());
    expect(pipelines.body.data.map((p: any) => p.id)).toEqual(['echo', 'tagger', 'guard']);
    expect(world.pipes.requests.at(-1)?.headers.authorization).toBe(`Bearer ${world.pipes.key}`);
  });

  it('refuses non-admins and answers 404 where no server answers', async () => {
    for (const [method, path] of [['GET', '/list'], ['GET', '/?urlIdx=0'], ['GET', '/tagger/valves?urlIdx=0'], ['POST', '/add']] as const) {
      const res = await world.api.request(method, `/api/v1/pipelines${path}`, method === 'POST' ? { url: 'https://x', urlIdx: 0 } : undefined, as(world.member));
      expect(res.status, path).toBe(401);
    }
    expect((await upload('a.py', 'class Pipeline: pass', '0', world.member.token)).status).toBe(401);
    for (const path of ['/?urlIdx=2', '/?urlIdx=9', '/']) {
      const res = await world.api.get(`/api/v1/pipelines${path}`, admin());
      expect(res.status, path).toBe(404);
      expect(res.body.detail).toBe('Pipeline not found');
    }
    expect((await world.api.get('/api/v1/pipelines/tagger/valves', admin())).status).toBe(422);
  });

  it('uploads a .py file to the server, and refuses other files before any call', async () => {
    const before = world.pipes.requests.length;
    const wrong = await upload('notes.txt', 'class Pipeline: pass');
    expect(wrong).toEqual({ status: 400, body: { detail: 'Only Python (.py) files are allowed.' } });
    expect((await upload('a.py', 'x', null)).status).toBe(422);
    expect(world.pipes.requests.length).toBe(before);

    const code = 'class Pipeline:\n    name = "Ünïcode ✓"\n';
    const sent = await upload('../../etc/my_pipe.py', code);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body).toMatchObject({ status: true, id: 'my_pipe' });
    expect(world.pipes.uploads.at(-1)).toEqual({ filename: 'my_pipe.py', content: code });
    expect(world.takeEvents().filter((e) => e.event === 'pipeline.uploaded')).toMatchObject([{ subject: { id: 'my_pipe' }, data: { url_idx: 0, filename: 'my_pipe.py' } }]);

    // The server's refusal keeps its status and detail.
    expect(await upload('bad.py', 'print(1)')).toEqual({ status: 400, body: { detail: 'No Pipeline class found' } });
  });

  it('adds from a URL and deletes, relaying the server\'s answers and errors', async () => {
    const added = await world.api.post('/api/v1/pipelines/add', { url: 'https://example.com/p.py', urlIdx: 0 }, admin());
    expect(added.status, added.text).toBe(200);
    expect(world.pipes.requests.at(-1)?.body).toEqual({ url: 'https://example.com/p.py' });
    const refused = await world.api.post('/api/v1/pipelines/add', { url: 'ftp://x', urlIdx: 0 }, admin());
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toBe('Invalid URL');
    expect((await world.api.post('/api/v1/pipelines/add', { url: 'https://x', urlIdx: 'zero' }, admin())).status).toBe(422);

    const deleted = await world.api.request('DELETE', '/api/v1/pipelines/delete', { id: 'echo', urlIdx: 0 }, admin());
    expect(deleted.status, deleted.text).toBe(200);
    expect(world.pipes.requests.at(-1)).toMatchObject({ method: 'DELETE', body: { id: 'echo' } });
    const unknown = await world.api.request('DELETE', '/api/v1/pipelines/delete', { id: 'nope', urlIdx: 0 }, admin());
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe('Pipeline nope not found');
    const events = world.takeEvents().map((e) => e.event);
    expect(events).toContain('pipeline.added');
    expect(events.filter((e) => e === 'pipeline.deleted')).toHaveLength(1);
  });

  it('reads the valves spec, and the valves round trip with the server\'s validation', async () => {
    const spec = await world.api.get('/api/v1/pipelines/tagger/valves/spec?urlIdx=0', admin());
    expect(spec.body.properties.prefix.type).toBe('string');
    expect((await world.api.get('/api/v1/pipelines/tagger/valves?urlIdx=0', admin())).body).toEqual({ prefix: 'tag' });
    const updated = await world.api.post('/api/v1/pipelines/tagger/valves/update?urlIdx=0', { prefix: 'mark' }, admin());
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toEqual({ prefix: 'mark' });
    expect((await world.api.get('/api/v1/pipelines/tagger/valves?urlIdx=0', admin())).body).toEqual({ prefix: 'mark' });
    const invalid = await world.api.post('/api/v1/pipelines/tagger/valves/update?urlIdx=0', { prefix: 3 }, admin());
    expect(invalid.status).toBe(422);
    expect(invalid.body.detail).toBe('prefix: Input should be a valid string');
    expect((await world.api.get('/api/v1/pipelines/nope/valves?urlIdx=0', admin())).status).toBe(404);
    expect(world.takeEvents().filter((e) => e.event === 'pipeline.valves_updated')).toHaveLength(1);
    await world.api.post('/api/v1/pipelines/tagger/valves/update?urlIdx=0', { prefix: 'tag' }, admin());
  });

  it('hides filter pipelines from the model list', async () => {
    const ids = (await world.api.get('/api/models', admin())).body.data.map((m: any) => m.id);
    expect(ids).toContain('echo');
    expect(ids).not.toContain('tagger');
    expect(ids).not.toContain('guard');
  });

  it('runs the filter pipelines around an answer: inlet by priority before the model, outlet on the stored answer', async () => {
    const messages = {
      q: { id: 'q', parentId: null, childrenIds: ['a'], role: 'user', content: 'old question', timestamp: 1 },
      a: { id: 'a', parentId: 'q', childrenIds: [], role: 'assistant', content: '', model: 'echo', done: false, timestamp: 1 },
    };
    const chat = await world.api.post('/api/v1/chats/new', { chat: { title: 'Piped', models: ['echo'], history: { currentId: 'a', messages } } }, admin());
    const answer = await world.api.post('/api/chat/completions', { model: 'echo', chat_id: chat.body.id, id: 'a', stream: false, messages: [{ role: 'user', content: 'hello' }] }, admin());
    expect(answer.status, answer.text).toBe(200);
    // guard (priority 0) then tagger (1); the pipe model's own inlet runs last.
    expect(answer.body.choices[0].message.content).toBe('echo: hello [guard in] [tag in]');
    const inlets = world.pipes.requests.filter((r) => r.path.endsWith('/filter/inlet')).map((r) => r.path);
    expect(inlets.slice(-3)).toEqual(['/guard/filter/inlet', '/tagger/filter/inlet', '/echo/filter/inlet']);
    const inlet = world.pipes.requests.find((r) => r.path === '/guard/filter/inlet');
    expect(inlet?.body.user).toEqual({ id: world.admin.id, email: expect.any(String), name: expect.any(String), role: 'admin' });
    const stored = (await world.api.get(`/api/v1/chats/${chat.body.id}`, admin())).body.chat.history.messages.a;
    expect(stored).toMatchObject({ content: 'echo: hello [guard in] [tag in] [tag out]', originalContent: 'echo: hello [guard in] [tag in]' });

    // `/api/chat/completed` runs the outlets too.
    const completed = await world.api.post('/api/chat/completed', { model: 'echo', id: 'm1', chat_id: chat.body.id, messages: [{ id: 'm1', role: 'assistant', content: 'done' }] }, admin());
    expect(completed.status, completed.text).toBe(200);
    expect(completed.body.messages[0].content).toBe('done [tag out]');

    // A filter's refusal is the request's answer, with its status and detail.
    const refused = await world.api.post('/api/chat/completions', { model: 'echo', stream: false, messages: [{ role: 'user', content: 'forbidden' }] }, admin());
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toBe('Guard refused the message');
  });

  it('runs the inlet filters on task prompts too', async () => {
    const before = world.pipes.requests.length;
    const title = await world.api.post('/api/v1/tasks/title/completions', { model: 'echo', messages: [{ role: 'user', content: 'name this' }] }, admin());
    expect(title.status, title.text).toBe(200);
    const sent = world.pipes.requests.slice(before);
    expect(sent.filter((r) => r.path.endsWith('/filter/inlet')).map((r) => r.path)).toEqual(['/guard/filter/inlet', '/tagger/filter/inlet', '/echo/filter/inlet']);
    expect(sent.find((r) => r.path === '/chat/completions')?.body.messages.at(-1).content).toMatch(/ \[guard in\] \[tag in\]$/);
  });
});
