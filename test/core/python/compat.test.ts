import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserRecord } from '../../../src/core/auth/user.js';
import type { ToolCallResult } from '../../../src/core/python/host.js';
import { startToolsServer, toolBody } from '../../areas/tools/helpers.js';
import { type FakeUpstream, startFakeOpenAI } from '../../helpers/fake-upstreams.js';
import { type TestServer, destroyServer } from '../../helpers/server.js';
import { type Account, addUser, signup } from '../../helpers/users.js';
import { TOOLS_DIR } from './helpers.js';

/**
 * The `open_webui` compatibility package (docs/plugin-compat.md), run for real:
 * tools of our own import each module and use each name through Parley's
 * server, as the user each call runs for.
 */
const compatSource = (name: string) => readFileSync(path.join(TOOLS_DIR, 'compat', `${name}.py`), 'utf8');

describe('open_webui compatibility package', () => {
  let server: TestServer;
  let openai: FakeUpstream;
  let admin: Account;
  let alice: Account;
  let bob: Account;
  let pending: Account;

  const record = async (account: Account): Promise<UserRecord> => (await server.parley.services.users.byId(account.id))!;
  const call = async (tool: string, fn: string, args: Record<string, unknown>, as: Account): Promise<ToolCallResult> =>
    server.parley.services.tools.callTool(tool, fn, args, { user: await record(as) });
  const value = async (tool: string, fn: string, args: Record<string, unknown>, as: Account) => (await call(tool, fn, args, as)).value;

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    server = await startToolsServer({ env: { OPENAI_API_BASE_URLS: openai.url, OPENAI_API_KEYS: 'sk-fake', ENABLE_OLLAMA_API: 'false' } });
    admin = await signup(server.api, 'Admin Compat');
    alice = await addUser(server.api, admin, 'user', 'Alice Compat');
    bob = await addUser(server.api, admin, 'user', 'Bob Compat');
    pending = await addUser(server.api, admin, 'pending', 'Pending Compat');
    const tools = ['environment_tool', 'users_tool', 'chats_tool', 'files_tool', 'images_tool', 'config_tool', 'completion_tool', 'html_tool', 'lifetime_tool'];
    for (const name of tools) {
      const res = await server.api.post('/api/v1/tools/create', toolBody(name, { content: compatSource(name) }), { token: admin.token });
      expect(res.status, res.text).toBe(200);
    }
  }, 60_000);

  afterAll(async () => {
    await destroyServer(server);
    await openai.close();
  });

  describe('the standard environment', () => {
    let page: Server;
    let pageUrl: string;

    beforeAll(async () => {
      page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>Parley page</title></head></html>'));
      await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
      pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
    });
    afterAll(() => new Promise<void>((resolve) => page.close(() => resolve())));

    it('runs requests, httpx, aiohttp, BeautifulSoup, pytz and FastAPI in a tool', async () => {
      expect(await value('environment_tool', 'fetch', { url: pageUrl }, alice)).toEqual({ same: true, title: 'Parley page', request: 'MinimalRequest' });
      expect(await value('environment_tool', 'clock', { zone: 'Europe/Paris' }, alice)).toBe('2024-07-01T14:00:00+02:00');
      expect(await value('environment_tool', 'types', {}, alice)).toEqual(['fastapi.datastructures', 'starlette.responses']);
    });
  });

  describe('open_webui.models.users', () => {
    it('answers awaited (0.10.2), plainly (earlier releases), from sync functions and from threads', async () => {
      expect(await value('users_tool', 'me_awaited', {}, alice)).toEqual({ type: 'UserModel', is_model: true, id: alice.id, email: alice.email, role: 'user' });
      expect(await value('users_tool', 'me_plain', {}, alice)).toEqual({ type: 'UserModel', id: alice.id });
      expect(await value('users_tool', 'me_sync', {}, bob)).toBe('Bob Compat');
      expect(await value('users_tool', 'me_threads', {}, bob)).toEqual([bob.id, bob.id]);
    });

    it('shows other users as their public card, whole records to admins, nothing to pending users', async () => {
      const card = await value('users_tool', 'other', { user_id: bob.id }, alice);
      expect(card).toEqual({ found: true, name: 'Bob Compat', email: bob.email, settings: false, created_at: 0 });
      const full = (await value('users_tool', 'other', { user_id: bob.id }, admin)) as Record<string, unknown>;
      expect(full.created_at).toBeGreaterThan(0);
      expect(await value('users_tool', 'other', { user_id: bob.id }, pending)).toEqual({ found: false });
      expect(await value('users_tool', 'other', { user_id: 'no-such-user' }, admin)).toEqual({ found: false });
    });

    it('lists and counts users', async () => {
      expect(await value('users_tool', 'listing', { query: 'compat' }, alice)).toEqual({
        total: 4,
        names: ['Admin Compat', 'Alice Compat', 'Bob Compat', 'Pending Compat'],
      });
      expect(await value('users_tool', 'listing', { roles: ['admin'] }, alice)).toEqual({ total: 1, names: ['Admin Compat'] });
      expect(await value('users_tool', 'listing', { roles: ['!pending'], limit: 1 }, admin)).toMatchObject({ total: 3 });
      expect(await value('users_tool', 'listing', {}, pending)).toEqual({ total: 1, names: ['Pending Compat'] });
      const [total, has, active, today] = (await value('users_tool', 'counts', {}, alice)) as [number, boolean, number, number];
      expect([total, has]).toEqual([4, true]);
      expect(active).toBeGreaterThanOrEqual(1);
      expect(today).toBeGreaterThanOrEqual(1);
    });
  });

  describe('open_webui.models.chats', () => {
    let bobChat: string;

    beforeAll(async () => {
      const res = await server.api.post(
        '/api/v1/chats/new',
        {
          chat: {
            title: 'Bob private',
            history: { currentId: 'm1', messages: { m1: { id: 'm1', parentId: null, childrenIds: [], role: 'user', content: 'secret' } } },
          },
        },
        { token: bob.token },
      );
      expect(res.status, res.text).toBe(200);
      bobChat = res.body.id;
    });

    it('a tool acting for one user cannot read another user’s chat', async () => {
      expect(await value('chats_tool', 'read', { chat_id: bobChat }, alice)).toBe('none');
      expect(await value('chats_tool', 'read_sync', { chat_id: bobChat }, alice)).toBe('none');
      expect(await value('chats_tool', 'read', { chat_id: bobChat }, bob)).toBe(`Bob private by ${bob.id}`);
      // Admins read every chat while ENABLE_ADMIN_CHAT_ACCESS is on, as over HTTP.
      expect(await value('chats_tool', 'read', { chat_id: bobChat }, admin)).toBe(`Bob private by ${bob.id}`);
    });

    it('changes only the caller’s own chats', async () => {
      expect(await value('chats_tool', 'retitle', { chat_id: bobChat, title: 'Hijacked' }, admin)).toBe('refused');
      expect(await value('chats_tool', 'attach', { chat_id: bobChat, message_id: 'm1', name: 'x.txt' }, alice)).toBe('none');
      expect((await server.api.get(`/api/v1/chats/${bobChat}`, { token: bob.token })).body.title).toBe('Bob private');

      expect(await value('chats_tool', 'retitle', { chat_id: bobChat, title: 'Renamed by tool' }, bob)).toBe('Renamed by tool');
      expect(await value('chats_tool', 'attach', { chat_id: bobChat, message_id: 'm1', name: 'a.txt' }, bob)).toBe('a.txt');
      expect(await value('chats_tool', 'attach', { chat_id: bobChat, message_id: 'm1', name: 'b.txt' }, bob)).toBe('a.txt,b.txt');
      expect(await value('chats_tool', 'attach', { chat_id: bobChat, message_id: 'absent', name: 'c.txt' }, bob)).toBe('');
      const stored = (await server.api.get(`/api/v1/chats/${bobChat}`, { token: bob.token })).body;
      expect(stored.title).toBe('Renamed by tool');
      expect(stored.chat.history.messages.m1.files).toEqual([
        { type: 'file', name: 'a.txt' },
        { type: 'file', name: 'b.txt' },
      ]);
    });
  });

  describe('open_webui.models.files, storage.provider and routers.files', () => {
    it('stores bytes, records them and reads them back for their owner only', async () => {
      const stored = (await value('files_tool', 'store', { text: 'hello file' }, alice)) as Record<string, unknown>;
      expect(stored).toMatchObject({ model: true, owner: alice.id, read: 'hello file', in_upload_dir: true });
      expect(await value('files_tool', 'get', { file_id: stored.id }, alice)).toBe('note.txt');
      expect(await value('files_tool', 'get', { file_id: stored.id }, bob)).toBe('none');
      expect(await value('files_tool', 'get', { file_id: stored.id }, admin)).toBe('note.txt');
      const file = await server.parley.services.files.get(await record(alice), String(stored.id));
      await expect(call('files_tool', 'read_path', { path: file!.path }, bob)).rejects.toMatchObject({
        code: 'python_error',
        details: { pythonType: 'ParleyAPIError' },
      });
    });

    it('uploads an UploadFile through upload_file_handler, served at /api/v1/files/{id}/content', async () => {
      const uploaded = (await value('files_tool', 'upload', { text: '<p>report</p>' }, alice)) as Record<string, unknown>;
      expect(uploaded).toMatchObject({ name: 'report.html', type: 'text/html', size: 13, data: { chat_id: 'c1' }, processed: true });
      const content = await server.api.get(`/api/v1/files/${uploaded.id}/content`, { token: alice.token });
      expect(content.status).toBe(200);
      expect(content.text).toBe('<p>report</p>');
      expect((await server.api.get(`/api/v1/files/${uploaded.id}/content`, { token: bob.token })).status).toBe(404);
      const meta = await server.api.get(`/api/v1/files/${uploaded.id}`, { token: alice.token });
      expect(meta.body).toMatchObject({ id: uploaded.id, user_id: alice.id, filename: 'report.html' });
    });

    it('refuses to store a file for another user', async () => {
      await expect(call('files_tool', 'insert_for', { user_id: bob.id }, alice)).rejects.toMatchObject({
        message: expect.stringContaining(`cannot act as user ${bob.id}`),
        details: { pythonType: 'ParleyPermissionError' },
      });
    });
  });

  describe('open_webui.routers.images', () => {
    it('decodes image data and uploads it as the caller', async () => {
      const result = (await value('images_tool', 'store_image', {}, bob)) as Record<string, string>;
      expect(result).toMatchObject({ name: 'generated-image.png', type: 'image/png', size: 12 });
      expect(result.url).toMatch(/^\/api\/v1\/files\/[0-9a-f-]+\/content$/);
      const image = await server.api.get(result.url, { token: bob.token });
      expect(image.status).toBe(200);
      expect(image.headers.get('content-type')).toBe('image/png');
    });

    it('does not fetch URLs on non-public addresses', async () => {
      expect(await value('images_tool', 'local_url', { url: `${server.url}/api/config` }, bob)).toEqual([null, null]);
    });
  });

  describe('open_webui.config, env, models.config and utils.oauth', () => {
    it('gives the data, upload and cache folders', async () => {
      const paths = (await value('config_tool', 'paths', {}, alice)) as Record<string, unknown>;
      expect(paths).toEqual({
        data: server.dataDir,
        upload: path.join(server.dataDir, 'uploads'),
        cache_exists: true,
        env_data_dir: server.dataDir,
        version: '0.11.0',
        log_level: 'INFO',
      });
    });

    it('reads config keys; credentials only for admins', async () => {
      expect(await value('config_tool', 'setting', { key: 'ui.enable_signup' }, alice)).toEqual({ value: expect.any(Boolean) });
      expect(await value('config_tool', 'setting', { key: 'ui.no_such_setting' }, alice)).toEqual({ value: 'fallback' });
      expect(await value('config_tool', 'setting', { key: 'openai.api_keys' }, alice)).toEqual({ refused: 'Config key openai.api_keys is readable by admins only' });
      expect(await value('config_tool', 'setting', { key: 'openai.api_keys' }, admin)).toEqual({ value: ['sk-fake'] });
    });

    it('OAuthManager imports, and asking it for a client fails clearly', async () => {
      expect(await value('config_tool', 'oauth', {}, alice)).toMatch(/^OAuth clients are not available to plugins in Parley; declare a __oauth_token__ parameter/);
    });
  });

  describe('open_webui.utils.chat', () => {
    it('completes through Parley as the calling user, with the model access check', async () => {
      expect(await value('completion_tool', 'ask', { model: 'gpt-fake', question: 'ping' }, admin)).toBe('You said: ping');
      expect(await value('completion_tool', 'ask', { model: 'gpt-fake', question: 'ping', stream: true }, admin)).toMatch(/^\d+ events$/);
      const sent = openai.requests.filter((r) => r.path === '/chat/completions');
      expect(sent.at(-1)?.body).toMatchObject({ model: 'gpt-fake', stream: true });
      // A user without access to the model is refused, as over HTTP.
      expect(await value('completion_tool', 'ask', { model: 'gpt-fake', question: 'ping' }, alice)).toMatch(/^ParleyAPIError 40[34]|^ParleyPermissionError 40[13]/);
      expect(await value('completion_tool', 'ask', { model: 'gpt-fake-error', question: 'ping' }, admin)).toMatch(/^ParleyAPIError 500/);
      expect(await value('completion_tool', 'ask_as', { user_id: admin.id }, alice)).toMatch(/^refused: This plugin runs for user/);
    });
  });

  describe('HTML results', () => {
    it('an inline HTMLResponse becomes an embed, in the shape process_tool_result gives', async () => {
      const page = '<html><body><h1>Chart</h1></body></html>';
      const embed = await call('html_tool', 'embed', {}, alice);
      expect(embed).toMatchObject({
        text: JSON.stringify({ status: 'success', code: 'ui_component', message: 'embed: Embedded UI result is active and visible to the user.' }, null, 2),
        files: [],
        embeds: [page],
        response: { status: 200, body: page },
      });
      expect((await call('html_tool', 'embed_with_context', {}, alice)).embeds).toEqual([page]);
      expect((await call('html_tool', 'embed_with_context', {}, alice)).text).toBe('{\n  "rows": 3\n}');
      const inlineText = await call('html_tool', 'html_string', {}, alice);
      expect(inlineText.embeds).toEqual([page]);
      expect(JSON.parse(inlineText.text!)).toMatchObject({ code: 'ui_component', status: 'success' });
      expect(await call('html_tool', 'download', {}, alice)).toMatchObject({ text: page, embeds: [] });
    });
  });

  describe('authorisation lasts as long as the call', () => {
    it('refuses a call made after the tool call ended', async () => {
      expect(await value('lifetime_tool', 'leak', {}, alice)).toBe('started');
      expect(await value('lifetime_tool', 'outcome', {}, bob)).toBe('ParleyPermissionError: api: the call this request belongs to has ended');
    });

    it('refuses calls at load time and without a user', async () => {
      const atImport = `from open_webui.models.users import Users\nUsers.get_num_users()\n\nclass Tools:\n    pass\n`;
      const res = await server.api.post('/api/v1/tools/create', toolBody('compat_at_import', { content: atImport }), { token: admin.token });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain('Parley can only be reached while a tool call made for a user is running');
      await expect(server.parley.services.tools.callTool('users_tool', 'counts', {}, {})).rejects.toMatchObject({
        code: 'python_error',
        message: expect.stringContaining('Parley can only be reached while a tool call made for a user is running'),
      });
    });
  });

  describe('modules that are not there', () => {
    it.each([
      ['a package', 'import parley_absent_package\n', "No module named 'parley_absent_package': it is not installed in the plugin environment"],
      ['an open_webui module', 'from open_webui.retrieval.utils import get_sources\n', "No module named 'open_webui.retrieval'"],
    ])('refuses a tool importing %s with 400 naming the module, storing nothing', async (_kind, imports, message) => {
      const content = `${imports}\nclass Tools:\n    def run(self) -> str:\n        return "ok"\n`;
      const res = await server.api.post('/api/v1/tools/create', toolBody('compat_missing', { content }), { token: admin.token });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain(message);
      expect((await server.api.get('/api/v1/tools/id/compat_missing', { token: admin.token })).status).toBe(404);
    });

    it('refuses an update that adds a missing import, keeping the stored source', async () => {
      const update = await server.api.post(
        '/api/v1/tools/id/html_tool/update',
        toolBody('html_tool', { content: `import parley_absent_package\n${compatSource('html_tool')}` }),
        { token: admin.token },
      );
      expect(update.status).toBe(400);
      expect(update.body.detail).toContain("No module named 'parley_absent_package'");
      expect((await server.api.get('/api/v1/tools/id/html_tool', { token: admin.token })).body.content).toBe(compatSource('html_tool'));
    });
  });
});
