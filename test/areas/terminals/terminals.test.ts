import { beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { eventually } from '../../helpers/eventually.js';
import { defaultScript, isTaskPrompt, startFakeModel } from '../../helpers/fake-model.js';
import { fakeTerminal } from '../../helpers/fake-terminal.js';
import { openBrowser } from '../completions/setup.js';
import { onlyOpenAI } from '../../helpers/fake-upstreams.js';
import { as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/**
 * `/api/v1/terminals` against a fake terminal server: the list and the proxy
 * follow each connection's grants (admins only without any), a policy's
 * connection goes through the orchestrator's policy route, paths cannot climb
 * out, and the interactive websocket authenticates both hops.
 */
describe('terminals', () => {
  const world = useServer({
    fakes: { start: async () => ({ terminal: await fakeTerminal(), model: await startFakeModel() }), env: ({ model }) => onlyOpenAI(model.url) },
    env: { TERMINAL_PROXY_HEADERS: '{"x-frame-options": "DENY"}' },
    users: { member: 'user', other: 'user' },
  });
  const admin = () => as(world.admin);

  beforeAll(async () => {
    const grant = [{ principal_type: 'user', principal_id: world.member.id, permission: 'read' }];
    const connection = (id: string, extra: Record<string, unknown> = {}) => ({ id, name: `Terminal ${id}`, url: `${world.terminal.url}/`, key: world.terminal.key, ...extra });
    const set = await world.api.post(
      '/api/v1/configs/terminal_servers',
      {
        TERMINAL_SERVER_CONNECTIONS: [
          connection('private'),
          connection('team', { policy_id: 'team a', server_type: 'orchestrator', config: { access_grants: grant } }),
          connection('off', { enabled: false, config: { access_grants: grant } }),
          connection('open', { auth_type: 'none', config: { access_grants: grant } }),
        ],
      },
      admin(),
    );
    expect(set.status, set.text).toBe(200);
  });

  it('lists the enabled servers each user may use', async () => {
    const ids = async (token: string) => (await world.api.get('/api/v1/terminals/', { token })).body.map((t: any) => t.id);
    expect(await ids(world.admin.token)).toEqual(['private', 'team', 'open']);
    expect(await ids(world.member.token)).toEqual(['team', 'open']);
    expect(await ids(world.other.token)).toEqual([]);
    expect((await world.api.get('/api/v1/terminals/', { token: world.member.token })).body[0]).toEqual({ id: 'team', url: `${world.terminal.url}/`, name: 'Terminal team' });
    expect((await world.api.get('/api/v1/terminals/')).status).toBe(401);
  });

  it('proxies requests with the key and the user named, through the policy route, answers relayed', async () => {
    const files = await world.api.get('/api/v1/terminals/team/api/files?dir=%2Fhome', { token: world.member.token, headers: { 'x-session-id': 'chat-1' } });
    expect(files.status, files.text).toBe(200);
    expect(files.body).toEqual({ dir: '/home', entries: ['a.txt'] });
    expect(files.headers.get('x-frame-options')).toBe('DENY');
    const sent = world.terminal.requests.at(-1)!;
    expect(sent.path).toBe('/p/team%20a/api/files?dir=%2Fhome');
    expect(sent.headers).toMatchObject({ 'x-user-id': world.member.id, 'x-session-id': 'chat-1', authorization: `Bearer ${world.terminal.key}` });

    const echoed = await world.api.request('PUT', '/api/v1/terminals/private/api/echo', { path: '/tmp/ü.txt' }, admin());
    expect(echoed.status).toBe(201);
    expect(echoed.body).toEqual({ path: '/tmp/ü.txt' });
    expect(echoed.headers.get('x-terminal')).toBe('yes');
    expect(world.terminal.requests.at(-1)).toMatchObject({ method: 'PUT', path: '/api/echo' });

    // A file upload (multipart) passes through as sent.
    const form = new FormData();
    form.append('file', new Blob(['file body']), 'notes.txt');
    const uploaded = await fetch(`${world.server.url}/api/v1/terminals/private/api/echo`, { method: 'POST', body: form, headers: { authorization: `Bearer ${world.admin.token}` } });
    expect(uploaded.status).toBe(201);
    expect(uploaded.headers.get('content-type')).toMatch(/^multipart\/form-data; boundary=/);
    expect(await uploaded.text()).toContain('filename="notes.txt"');

    const failed = await world.api.get('/api/v1/terminals/private/api/fail', admin());
    expect(failed.status).toBe(500);
    expect(failed.body).toEqual({ detail: 'disk full' });

    // `auth_type: none` sends no credential; the terminal's own refusal comes back as it is.
    const open = await world.api.get('/api/v1/terminals/open/api/config', as(world.member));
    expect(open.status).toBe(401);
    expect(world.terminal.requests.at(-1)?.headers.authorization).toBeUndefined();
  });

  it('refuses what the user may not reach, and paths that climb out, before any call', async () => {
    const before = world.terminal.requests.length;
    const cases: [string, string, number, string][] = [
      ['/api/v1/terminals/private/api/config', world.member.token, 403, 'Access denied'],
      ['/api/v1/terminals/team/api/config', world.other.token, 403, 'Access denied'],
      ['/api/v1/terminals/off/api/config', world.admin.token, 403, 'Terminal server disabled'],
      ['/api/v1/terminals/nope/api/config', world.admin.token, 404, "Terminal server 'nope' not found"],
      ['/api/v1/terminals/private/%252e%252e/%252e%252e/etc/passwd', world.admin.token, 400, 'Invalid path'],
      ['/api/v1/terminals/private/api/..%5C..%5Cx', world.admin.token, 400, 'Invalid path'],
      ['/api/v1/terminals/private/%25252525252525252e%25252525252525252e/x', world.admin.token, 400, 'Invalid path'],
    ];
    for (const [path, token, status, error] of cases) {
      const res = await world.api.get(path, { token });
      expect(res.status, path).toBe(status);
      expect(res.body, path).toEqual({ error });
    }
    expect(world.terminal.requests.length).toBe(before);
  });

  /** A browser's terminal socket: its messages, and how it was closed. */
  function openSocket(serverId: string, session: string) {
    const socket = new WebSocket(`${world.server.url.replace('http', 'ws')}/api/v1/terminals/${serverId}/api/terminals/${session}`);
    const received: string[] = [];
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    socket.on('message', (data: Buffer, binary: boolean) => received.push(binary ? `<${data.length} bytes>` : data.toString('utf8')));
    const opened = new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return { socket, received, closed, opened };
  }

  it('relays an interactive session both ways after both hops authenticate', async () => {
    const session = openSocket('team', 'sess%201');
    await session.opened;
    session.socket.send(JSON.stringify({ type: 'auth', token: world.member.token }));
    session.socket.send('ls');
    session.socket.send(Buffer.from([1, 2, 3]), { binary: true });
    await eventually(() => session.received.length >= 2);
    expect(session.received).toEqual(['echo:ls', '<3 bytes>']);
    const upstream = world.terminal.sessions.at(-1)!;
    expect(upstream.url).toBe(`/p/team%20a/api/terminals/sess%201?user_id=${world.member.id}`);
    expect(upstream.messages).toEqual(['ls', '<3 bytes>']);
    session.socket.send('exit');
    expect((await session.closed).code).toBe(1005);
    await eventually(() => world.events.some((e) => e.event === 'terminal.session.closed'));
    expect(world.events.filter((e) => e.event.startsWith('terminal.session')).map((e) => [e.event, e.subject?.id, e.data.server_id])).toEqual([
      ['terminal.session.opened', 'sess 1', 'team'],
      ['terminal.session.closed', 'sess 1', 'team'],
    ]);
  });

  it('closes sessions that do not authenticate or may not reach the server', async () => {
    const refusals: [string, unknown, number, string][] = [
      ['team', { type: 'auth', token: 'not-a-token' }, 4001, 'Invalid token'],
      ['team', { type: 'hello' }, 4001, 'Expected auth message'],
      ['team', 'not json', 4001, 'Auth timeout or invalid payload'],
      ['private', { type: 'auth', token: world.member.token }, 4003, 'Access denied'],
      ['nope', { type: 'auth', token: world.member.token }, 4004, "Terminal server 'nope' not found"],
    ];
    // A path that cannot be decoded is not upgraded (and the server carries on).
    const broken = new WebSocket(`${world.server.url.replace('http', 'ws')}/api/v1/terminals/team/api/terminals/%E0%A4%A`);
    await expect(new Promise((resolve, reject) => broken.on('open', resolve).on('error', reject))).rejects.toThrow();
    expect((await world.api.get('/api/v1/terminals/', as(world.member))).status).toBe(200);
    const before = world.terminal.sessions.length;
    for (const [serverId, first, code, reason] of refusals) {
      const session = openSocket(serverId, 's');
      await session.opened;
      session.socket.send(typeof first === 'string' ? first : JSON.stringify(first));
      expect(await session.closed, reason).toEqual({ code, reason });
    }
    expect(world.terminal.sessions.length).toBe(before);
  });

  it('gives a chat the terminal named by terminal_id: its tools, working directory and prompt', async () => {
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, admin());
    world.model.script = (body: any) => {
      if (isTaskPrompt(body)) return defaultScript(body);
      const results = body.messages.filter((m: any) => m.role === 'tool');
      if (results.length === 0) return { toolCalls: [{ name: 'run_command', arguments: { command: 'ls' } }] };
      return { text: results.map((r: any) => r.content).join('\n') };
    };
    const ask = (token: string, terminalId: string) =>
      world.api.post('/api/chat/completions', { model: 'fake-model', stream: false, terminal_id: terminalId, messages: [{ role: 'user', content: 'list files' }] }, { token });

    const answer = await ask(world.member.token, 'team');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.choices[0].message.content).toContain(`ran ls as ${world.member.id}`);
    const first = world.model.chatRequests().find((r: any) => r.tools)!;
    const tool = first.tools.find((t: any) => t.function.name === 'run_command');
    expect(tool.function.description).toContain('The current working directory is: /home/user');
    expect(first.messages.find((m: any) => m.role === 'system')?.content).toContain('You can run commands in a terminal.');
    expect(first.terminal_id).toBeUndefined();
    expect(world.terminal.requests.find((r) => r.path === '/p/team%20a/execute')?.body).toBe('{"command":"ls"}');

    // A stored answer's terminal calls are announced to the owner's sockets (the frontend's file pane).
    const browser = await openBrowser(world.server.url, world.member.token);
    try {
      world.model.script = (body: any) => {
        if (isTaskPrompt(body)) return defaultScript(body);
        if (body.messages.some((m: any) => m.role === 'tool')) return { text: 'done' };
        return {
          toolCalls: [
            { name: 'run_command', arguments: { command: 'touch a.txt' } },
            { name: 'display_file', arguments: { path: '/a.txt' } },
            { name: 'display_file', arguments: { path: '/missing.txt' } },
          ],
        };
      };
      const messages = { q: { id: 'q', parentId: null, childrenIds: ['a'], role: 'user', content: 'make a file', timestamp: 1 }, a: { id: 'a', parentId: 'q', childrenIds: [], role: 'assistant', content: '', done: false, timestamp: 1 } };
      const chat = await world.api.post('/api/v1/chats/new', { chat: { title: 'Terminal', models: ['fake-model'], history: { currentId: 'a', messages } } }, as(world.member));
      const stored = await world.api.post('/api/chat/completions', { model: 'fake-model', chat_id: chat.body.id, id: 'a', stream: false, terminal_id: 'team', messages: [{ role: 'user', content: 'make a file' }] }, as(world.member));
      expect(stored.status, stored.text).toBe(200);
      await eventually(() => browser.received.filter((e) => e.type.startsWith('terminal:')).length >= 2);
      // The calls may run together: the events in any order.
      expect(browser.received.filter((e) => e.type.startsWith('terminal:')).map((e) => [e.type, e.data]).sort()).toEqual([
        ['terminal:display_file', { path: '/a.txt' }],
        ['terminal:run_command', {}],
      ]);
      expect(world.terminal.requests.find((r) => r.path === '/p/team%20a/execute' && r.body.includes('touch'))?.headers['x-session-id']).toBe(chat.body.id);
    } finally {
      browser.close();
    }

    // The tools document and system prompt are read once and kept; the working directory is asked every turn.
    const reads = (path: string) => world.terminal.requests.filter((r) => r.path === path).length;
    expect(reads('/p/team%20a/openapi.json')).toBe(1);
    expect(reads('/p/team%20a/files/cwd')).toBeGreaterThan(1);

    const denied = await ask(world.other.token, 'team');
    expect(denied.status).toBe(503);
    expect(denied.body.detail).toBe('Terminal unavailable: Access denied to terminal team');
    expect((await ask(world.member.token, 'nope')).body.detail).toBe("Terminal unavailable: Terminal server 'nope' not found");

    // A changed connection setting reads the document again.
    const settings = await world.api.get('/api/v1/configs/terminal_servers', admin());
    const renamed = settings.body.TERMINAL_SERVER_CONNECTIONS.map((c: any) => (c.id === 'team' ? { ...c, name: 'Team terminal' } : c));
    expect((await world.api.post('/api/v1/configs/terminal_servers', { TERMINAL_SERVER_CONNECTIONS: renamed }, admin())).status).toBe(200);
    expect((await ask(world.member.token, 'team')).status).toBe(200);
    expect(reads('/p/team%20a/openapi.json')).toBe(2);
  });
});
