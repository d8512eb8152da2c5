import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallResult } from '../../../src/core/python/host.js';
import { toolBody, TOOLS_ENV } from '../../areas/tools/helpers.js';
import { onlyOpenAI, startFakeOpenAI } from '../../helpers/fake-upstreams.js';
import { listenLocally } from '../../helpers/server.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { TOOLS_DIR } from './helpers.js';

/**
 * The `open_webui` compatibility package (docs/plugin-compat.md), run for real:
 * tools of our own import each module and use each name through Parley's
 * server, as the user each call runs for.
 */
const compatSource = (name: string) => readFileSync(path.join(TOOLS_DIR, 'compat', `${name}.py`), 'utf8');

describe('open_webui compatibility package', () => {
  const world = useServer({
    fakes: { start: async () => ({ openai: await startFakeOpenAI() }), env: ({ openai }) => onlyOpenAI(openai.url) },
    env: TOOLS_ENV,
    admin: 'Admin Compat',
    users: { alice: ['user', 'Alice Compat'], bob: ['user', 'Bob Compat'], pending: ['pending', 'Pending Compat'] },
  });
  const call = async (tool: string, fn: string, args: Record<string, unknown>, as: Account): Promise<ToolCallResult> =>
    world.server.parley.services.tools.callTool(tool, fn, args, { user: await world.record(as) });
  const value = async (tool: string, fn: string, args: Record<string, unknown>, as: Account) => (await call(tool, fn, args, as)).value;

  beforeAll(async () => {
    const tools = ['environment_tool', 'users_tool', 'chats_tool', 'files_tool', 'images_tool', 'config_tool', 'completion_tool', 'html_tool', 'lifetime_tool'];
    for (const name of tools) {
      const res = await world.api.post('/api/v1/tools/create', toolBody(name, { content: compatSource(name) }), { token: world.admin.token });
      expect(res.status, res.text).toBe(200);
    }
  }, 60_000);

  describe('the standard environment', () => {
    let page: Server;
    let pageUrl: string;

    beforeAll(async () => {
      page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>Parley page</title></head></html>'));
      pageUrl = `${await listenLocally(page)}/`;
    });
    afterAll(() => new Promise<void>((resolve) => page.close(() => resolve())));

    it('runs requests, httpx, aiohttp, BeautifulSoup, pytz and FastAPI in a tool', async () => {
      expect(await value('environment_tool', 'fetch', { url: pageUrl }, world.alice)).toEqual({ same: true, title: 'Parley page', request: 'MinimalRequest' });
      expect(await value('environment_tool', 'clock', { zone: 'Europe/Paris' }, world.alice)).toBe('2024-07-01T14:00:00+02:00');
      expect(await value('environment_tool', 'types', {}, world.alice)).toEqual(['fastapi.datastructures', 'starlette.responses']);
    });
  });

  describe('open_webui.models.users', () => {
    it('answers awaited (0.10.2), plainly (earlier releases), from sync functions and from threads', async () => {
      expect(await value('users_tool', 'me_awaited', {}, world.alice)).toEqual({ type: 'UserModel', is_model: true, id: world.alice.id, email: world.alice.email, role: 'user' });
      expect(await value('users_tool', 'me_plain', {}, world.alice)).toEqual({ type: 'UserModel', id: world.alice.id });
      expect(await value('users_tool', 'me_sync', {}, world.bob)).toBe('Bob Compat');
      expect(await value('users_tool', 'me_threads', {}, world.bob)).toEqual([world.bob.id, world.bob.id]);
    });

    it('shows other users as their public card, whole records to admins, nothing to pending users', async () => {
      const card = await value('users_tool', 'other', { user_id: world.bob.id }, world.alice);
      expect(card).toEqual({ found: true, name: 'Bob Compat', email: world.bob.email, settings: false, created_at: 0 });
      const full = (await value('users_tool', 'other', { user_id: world.bob.id }, world.admin)) as Record<string, unknown>;
      expect(full.created_at).toBeGreaterThan(0);
      expect(await value('users_tool', 'other', { user_id: world.bob.id }, world.pending)).toEqual({ found: false });
      expect(await value('users_tool', 'other', { user_id: 'no-such-user' }, world.admin)).toEqual({ found: false });
    });

    it('lists and counts users', async () => {
      expect(await value('users_tool', 'listing', { query: 'compat' }, world.alice)).toEqual({
        total: 4,
        names: ['Admin Compat', 'Alice Compat', 'Bob Compat', 'Pending Compat'],
      });
      expect(await value('users_tool', 'listing', { roles: ['admin'] }, world.alice)).toEqual({ total: 1, names: ['Admin Compat'] });
      expect(await value('users_tool', 'listing', { roles: ['!pending'], limit: 1 }, world.admin)).toMatchObject({ total: 3 });
      expect(await value('users_tool', 'listing', {}, world.pending)).toEqual({ total: 1, names: ['Pending Compat'] });
      const [total, has, active, today] = (await value('users_tool', 'counts', {}, world.alice)) as [number, boolean, number, number];
      expect([total, has]).toEqual([4, true]);
      expect(active).toBeGreaterThanOrEqual(1);
      expect(today).toBeGreaterThanOrEqual(1);
    });
  });

  describe('open_webui.models.chats', () => {
    let bobChat: string;

    beforeAll(async () => {
      const res = await world.api.post(
        '/api/v1/chats/new',
        {
          chat: {
            title: 'Bob private',
            history: { currentId: 'm1', messages: { m1: { id: 'm1', parentId: null, childrenIds: [], role: 'user', content: 'secret' } } },
          },
        },
        { token: world.bob.token },
      );
      expect(res.status, res.text).toBe(200);
      bobChat = res.body.id;
    });

    it('a tool acting for one user cannot read another user’s chat', async () => {
      expect(await value('chats_tool', 'read', { chat_id: bobChat }, world.alice)).toBe('none');
      expect(await value('chats_tool', 'read_sync', { chat_id: bobChat }, world.alice)).toBe('none');
      expect(await value('chats_tool', 'read', { chat_id: bobChat }, world.bob)).toBe(`Bob private by ${world.bob.id}`);
      // Admins read every chat while ENABLE_ADMIN_CHAT_ACCESS is on, as over HTTP.
      expect(await value('chats_tool', 'read', { chat_id: bobChat }, world.admin)).toBe(`Bob private by ${world.bob.id}`);
    });

    it('changes only the caller’s own chats', async () => {
      expect(await value('chats_tool', 'retitle', { chat_id: bobChat, title: 'Hijacked' }, world.admin)).toBe('refused');
      expect(await value('chats_tool', 'attach', { chat_id: bobChat, message_id: 'm1', name: 'x.txt' }, world.alice)).toBe('none');
      expect((await world.api.get(`/api/v1/chats/${bobChat}`, { token: world.bob.token })).body.title).toBe('Bob private');

      expect(await value('chats_tool', 'retitle', { chat_id: bobChat, title: 'Renamed by tool' }, world.bob)).toBe('Renamed by tool');
      expect(await value('chats_tool', 'attach', { chat_id: bobChat, message_id: 'm1', name: 'a.txt' }, world.bob)).toBe('a.txt');
      expect(await value('chats_tool', 'attach', { chat_id: bobChat, message_id: 'm1', name: 'b.txt' }, world.bob)).toBe('a.txt,b.txt');
      expect(await value('chats_tool', 'attach', { chat_id: bobChat, message_id: 'absent', name: 'c.txt' }, world.bob)).toBe('');
      const stored = (await world.api.get(`/api/v1/chats/${bobChat}`, { token: world.bob.token })).body;
      expect(stored.title).toBe('Renamed by tool');
      expect(stored.chat.history.messages.m1.files).toEqual([
        { type: 'file', name: 'a.txt' },
        { type: 'file', name: 'b.txt' },
      ]);
    });
  });

  describe('open_webui.models.files, storage.provider and routers.files', () => {
    it('stores bytes, records them and reads them back for their owner only', async () => {
      const stored = (await value('files_tool', 'store', { text: 'hello file' }, world.alice)) as Record<string, unknown>;
      // The stored path is the server's (outside the sandbox); Storage.get_file hands the plugin a copy it can open.
      expect(stored).toMatchObject({ model: true, owner: world.alice.id, read: 'hello file', in_upload_dir: false });
      expect(await value('files_tool', 'get', { file_id: stored.id }, world.alice)).toBe('note.txt');
      expect(await value('files_tool', 'get', { file_id: stored.id }, world.bob)).toBe('none');
      expect(await value('files_tool', 'get', { file_id: stored.id }, world.admin)).toBe('note.txt');
      const file = await world.server.parley.services.files.get(await world.record(world.alice), String(stored.id));
      await expect(call('files_tool', 'read_path', { path: file!.path }, world.bob)).rejects.toMatchObject({
        code: 'python_error',
        details: { pythonType: 'ParleyAPIError' },
      });
    });

    it('uploads an UploadFile through upload_file_handler, served at /api/v1/files/{id}/content', async () => {
      const uploaded = (await value('files_tool', 'upload', { text: '<p>report</p>' }, world.alice)) as Record<string, unknown>;
      expect(uploaded).toMatchObject({ name: 'report.html', type: 'text/html', size: 13, data: { chat_id: 'c1' }, processed: true });
      const content = await world.api.get(`/api/v1/files/${uploaded.id}/content`, { token: world.alice.token });
      expect(content.status).toBe(200);
      expect(content.text).toBe('<p>report</p>');
      expect((await world.api.get(`/api/v1/files/${uploaded.id}/content`, { token: world.bob.token })).status).toBe(404);
      const meta = await world.api.get(`/api/v1/files/${uploaded.id}`, { token: world.alice.token });
      expect(meta.body).toMatchObject({ id: uploaded.id, user_id: world.alice.id, filename: 'report.html' });
    });

    it('refuses to store a file for another user', async () => {
      await expect(call('files_tool', 'insert_for', { user_id: world.bob.id }, world.alice)).rejects.toMatchObject({
        message: expect.stringContaining(`cannot act as user ${world.bob.id}`),
        details: { pythonType: 'ParleyPermissionError' },
      });
    });
  });

  describe('open_webui.routers.images', () => {
    it('decodes image data and uploads it as the caller', async () => {
      const result = (await value('images_tool', 'store_image', {}, world.bob)) as Record<string, string>;
      expect(result).toMatchObject({ name: 'generated-image.png', type: 'image/png', size: 12 });
      expect(result.url).toMatch(/^\/api\/v1\/files\/[0-9a-f-]+\/content$/);
      const image = await world.api.get(result.url, { token: world.bob.token });
      expect(image.status).toBe(200);
      expect(image.headers.get('content-type')).toBe('image/png');
    });

    it('does not fetch URLs on non-public addresses', async () => {
      expect(await value('images_tool', 'local_url', { url: `${world.server.url}/api/config` }, world.bob)).toEqual([null, null]);
    });
  });

  describe('open_webui.config, env, models.config and utils.oauth', () => {
    it('gives the data, upload and cache folders', async () => {
      const paths = (await value('config_tool', 'paths', {}, world.alice)) as Record<string, string>;
      // The worker's private folder: the server's DATA_DIR is out of the plugin's reach.
      expect(path.relative(world.server.dataDir, paths.data).startsWith('..')).toBe(true);
      expect(paths).toEqual({
        data: paths.env_data_dir,
        upload: path.join(paths.env_data_dir, 'uploads'),
        cache_exists: true,
        env_data_dir: expect.stringMatching(/parley-plugins-.*\/w-/),
        version: '0.11.0',
        log_level: 'INFO',
      });
    });

    it('reads config keys; credentials only for admins', async () => {
      expect(await value('config_tool', 'setting', { key: 'ui.enable_signup' }, world.alice)).toEqual({ value: expect.any(Boolean) });
      expect(await value('config_tool', 'setting', { key: 'ui.no_such_setting' }, world.alice)).toEqual({ value: 'fallback' });
      expect(await value('config_tool', 'setting', { key: 'openai.api_keys' }, world.alice)).toEqual({ refused: 'Config key openai.api_keys is readable by admins only' });
      expect(await value('config_tool', 'setting', { key: 'openai.api_keys' }, world.admin)).toEqual({ value: ['sk-fake'] });
    });

    it('OAuthManager imports, and asking it for a client fails clearly', async () => {
      expect(await value('config_tool', 'oauth', {}, world.alice)).toMatch(/^OAuth clients are not available to plugins in Parley; declare a __oauth_token__ parameter/);
    });
  });

  describe('open_webui.utils.chat', () => {
    it('completes through Parley as the calling user, with the model access check', async () => {
      expect(await value('completion_tool', 'ask', { model: 'gpt-fake', question: 'ping' }, world.admin)).toBe('You said: ping');
      expect(await value('completion_tool', 'ask', { model: 'gpt-fake', question: 'ping', stream: true }, world.admin)).toMatch(/^\d+ events$/);
      const sent = world.openai.requests.filter((r) => r.path === '/chat/completions');
      expect(sent.at(-1)?.body).toMatchObject({ model: 'gpt-fake', stream: true });
      // A user without access to the model is refused, as over HTTP.
      expect(await value('completion_tool', 'ask', { model: 'gpt-fake', question: 'ping' }, world.alice)).toMatch(/^ParleyAPIError 40[34]|^ParleyPermissionError 40[13]/);
      expect(await value('completion_tool', 'ask', { model: 'gpt-fake-error', question: 'ping' }, world.admin)).toMatch(/^ParleyAPIError 500/);
      expect(await value('completion_tool', 'ask_as', { user_id: world.admin.id }, world.alice)).toMatch(/^refused: This plugin runs for user/);
    });
  });

  describe('HTML results', () => {
    it('an inline HTMLResponse becomes an embed, in the shape process_tool_result gives', async () => {
      const page = '<html><body><h1>Chart</h1></body></html>';
      const embed = await call('html_tool', 'embed', {}, world.alice);
      expect(embed).toMatchObject({
        text: JSON.stringify({ status: 'success', code: 'ui_component', message: 'embed: Embedded UI result is active and visible to the user.' }, null, 2),
        files: [],
        embeds: [page],
        response: { status: 200, body: page },
      });
      expect((await call('html_tool', 'embed_with_context', {}, world.alice)).embeds).toEqual([page]);
      expect((await call('html_tool', 'embed_with_context', {}, world.alice)).text).toBe('{\n  "rows": 3\n}');
      const inlineText = await call('html_tool', 'html_string', {}, world.alice);
      expect(inlineText.embeds).toEqual([page]);
      expect(JSON.parse(inlineText.text!)).toMatchObject({ code: 'ui_component', status: 'success' });
      expect(await call('html_tool', 'download', {}, world.alice)).toMatchObject({ text: page, embeds: [] });
    });
  });

  describe('authorisation lasts as long as the call', () => {
    it('refuses a call made after the tool call ended', async () => {
      expect(await value('lifetime_tool', 'leak', {}, world.alice)).toBe('started');
      // Bob's call runs in a worker of his own: Alice's leftover task is not there.
      expect(await value('lifetime_tool', 'outcome', {}, world.bob)).toBe('nothing yet');
      expect(await value('lifetime_tool', 'outcome', {}, world.alice)).toBe('ParleyPermissionError: api: no call in flight holds this token; Parley refuses the request');
    });

    it('refuses calls at load time and without a user', async () => {
      const atImport = `from open_webui.models.users import Users\nUsers.get_num_users()\n\nclass Tools:\n    pass\n`;
      const res = await world.api.post('/api/v1/tools/create', toolBody('compat_at_import', { content: atImport }), { token: world.admin.token });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain('Parley can only be reached while a tool call made for a user is running');
      await expect(world.server.parley.services.tools.callTool('users_tool', 'counts', {}, {})).rejects.toMatchObject({
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
      const res = await world.api.post('/api/v1/tools/create', toolBody('compat_missing', { content }), { token: world.admin.token });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain(message);
      expect((await world.api.get('/api/v1/tools/id/compat_missing', { token: world.admin.token })).status).toBe(404);
    });

    it('refuses an update that adds a missing import, keeping the stored source', async () => {
      const update = await world.api.post(
        '/api/v1/tools/id/html_tool/update',
        toolBody('html_tool', { content: `import parley_absent_package\n${compatSource('html_tool')}` }),
        { token: world.admin.token },
      );
      expect(update.status).toBe(400);
      expect(update.body.detail).toContain("No module named 'parley_absent_package'");
      expect((await world.api.get('/api/v1/tools/id/html_tool', { token: world.admin.token })).body.content).toBe(compatSource('html_tool'));
    });
  });
});
