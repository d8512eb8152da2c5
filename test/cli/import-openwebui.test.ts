import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import argon2 from 'argon2';
import bcrypt from 'bcrypt';
import { afterEach, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/cli/main.js';
import { importOpenWebui } from '../../src/cli/openwebui/import.js';
import { openSource } from '../../src/cli/openwebui/source.js';
import type { Parley } from '../../src/app.js';
import { chatJson, createOpenWebuiDatabase, type FixtureRow, type OpenWebuiFixture, type SchemaVersion } from '../helpers/openwebui.js';
import { fakeEmbeddingEngine } from '../helpers/fake-embeddings.js';
import { processedFile } from '../helpers/files.js';
import { dialect, withServer, type ApiClient } from '../helpers/server.js';
import type { Account } from '../helpers/users.js';

const T = 1_700_000_000;
const ADMIN_PASSWORD = 'Old-admin-1!';
const ALICE_PASSWORD = 'Old-alice-1!';

/** An argon2 hash as Python's argon2-cffi writes it (its parameters in the order m, t, p). */
async function pythonArgon2(password: string): Promise<string> {
  return (await argon2.hash(password)).replace(/m=(\d+),p=(\d+),t=(\d+)/, 'm=$1,t=$3,p=$2');
}

/** An Open WebUI 0.10.2 install: two users, their chats, workspace and a few rows that cannot be carried over. */
async function fill0102(source: OpenWebuiFixture): Promise<void> {
  await source.insert('user', [
    { id: 'u-admin', email: 'Admin@Example.com', role: 'admin', name: 'Old Admin', profile_image_url: '', settings: { ui: { theme: 'dark' } }, last_active_at: T, updated_at: T, created_at: T },
    { id: 'u-alice', email: 'alice@example.com', role: 'user', name: 'Alice', profile_image_url: '', bio: 'hello', last_active_at: T, updated_at: T, created_at: T + 1 },
    { id: 'u-noemail', email: null, role: 'user', name: 'Nobody', last_active_at: T, updated_at: T, created_at: T },
  ]);
  await source.insert('auth', [
    { id: 'u-admin', email: 'Admin@Example.com', password: await bcrypt.hash(ADMIN_PASSWORD, 4), active: true },
    { id: 'u-alice', email: 'alice@example.com', password: await pythonArgon2(ALICE_PASSWORD), active: true },
    { id: 'u-ghost', email: 'ghost@example.com', password: await bcrypt.hash('x', 4), active: true },
  ]);
  await source.insert('api_key', { id: 'key_u-alice', user_id: 'u-alice', key: 'sk-0123456789abcdef0123456789abcdef', created_at: T, updated_at: T });
  await source.insert('group', { id: 'g-team', user_id: 'u-admin', name: 'Team', description: 'the team', permissions: { workspace: { models: true }, features: { api_keys: true } }, created_at: T, updated_at: T });
  await source.insert('group_member', { id: 'gm-1', group_id: 'g-team', user_id: 'u-alice', created_at: T, updated_at: T });
  await source.insert('folder', { id: 'f-work', user_id: 'u-alice', name: 'Work', is_expanded: true, created_at: T, updated_at: T });
  await source.insert('tag', { id: 'project_x', name: 'Project X', user_id: 'u-alice' });
  await source.insert('chat', [
    { id: 'c-1', user_id: 'u-alice', title: 'Planning', chat: { ...chatJson('c-1', 'Planning', 3), id: 'c-1' }, created_at: T, updated_at: T + 10, archived: false, pinned: true, meta: { tags: ['project_x'] }, folder_id: 'f-work', share_id: 's-1' },
    { id: 'c-2', user_id: 'u-admin', title: 'Admin chat', chat: { ...chatJson('c-2', 'Admin chat', 1), id: 'c-2' }, created_at: T, updated_at: T, archived: true, meta: {} },
    { id: 'c-orphan', user_id: 'u-missing', title: 'Orphan', chat: chatJson('c-orphan', 'Orphan', 1), created_at: T, updated_at: T, meta: {} },
  ]);
  await source.insert('shared_chat', { id: 's-1', chat_id: 'c-1', user_id: 'u-alice', title: 'Planning', chat: chatJson('c-1', 'Planning', 3), created_at: T, updated_at: T });
  await source.insert('model', { id: 'helper', user_id: 'u-admin', base_model_id: 'gpt-test', name: 'Helper', params: { system: 'Be brief.' }, meta: { description: 'brief' }, is_active: true, updated_at: T, created_at: T });
  await source.insert('tool', {
    id: 'calc',
    user_id: 'u-admin',
    name: 'Calculator',
    content: 'class Tools:\n    def add(self, a: int, b: int) -> int:\n        """Adds."""\n        return a + b\n',
    specs: [{ name: 'add', description: 'Adds.', parameters: { type: 'object', properties: {} } }],
    meta: { description: 'adds', manifest: {} },
    valves: { precision: 2 },
    updated_at: T,
    created_at: T,
  });
  await source.insert('function', [
    { id: 'shout', user_id: 'u-admin', name: 'Shout', type: 'filter', content: 'class Filter:\n    pass\n', meta: { description: 'loud' }, valves: { level: 3 }, is_active: true, is_global: false, updated_at: T, created_at: T },
    { id: 'weird', user_id: 'u-admin', name: 'Weird', type: 'gadget', content: '', meta: {}, is_active: false, is_global: false, updated_at: T, created_at: T },
  ]);
  await source.insert('prompt', { id: 'p-1', command: 'summarize', user_id: 'u-alice', name: 'Summarize', content: 'Summarize {{text}}', is_active: true, tags: [], version_id: 'pv-1', created_at: T - 100, updated_at: T });
  // Its versions: a first draft by the admin, the one in use, and a later one not put in use (ids not in time order).
  const promptSnapshot = (content: string) => ({ name: 'Summarize', content, command: 'summarize', data: {}, meta: {}, tags: [], access_grants: [] });
  await source.insert('prompt_history', [
    { id: 'pv-z', prompt_id: 'p-1', parent_id: null, snapshot: promptSnapshot('Summarize'), user_id: 'u-admin', commit_message: 'Initial version', created_at: T - 100 },
    { id: 'pv-1', prompt_id: 'p-1', parent_id: 'pv-z', snapshot: promptSnapshot('Summarize {{text}}'), user_id: 'u-alice', commit_message: 'with the text', created_at: T },
    { id: 'pv-2', prompt_id: 'p-1', parent_id: 'pv-1', snapshot: promptSnapshot('Summarize {{text}} briefly'), user_id: 'u-alice', commit_message: 'draft', created_at: T + 50 },
    { id: 'pv-orphan', prompt_id: 'p-gone', snapshot: promptSnapshot('?'), user_id: 'u-alice', created_at: T },
  ]);
  await source.insert('skill', { id: 'sk-1', user_id: 'u-admin', name: 'Reviewer', description: 'reviews', content: 'Review carefully.', meta: { tags: ['code'] }, is_active: true, updated_at: T, created_at: T });
  await source.insert('note', { id: 'n-1', user_id: 'u-alice', title: 'Ideas', data: { content: { md: 'an idea' } }, meta: {}, created_at: T, updated_at: T });
  await source.insert('pinned_note', [
    { id: 'pin-1', user_id: 'u-alice', note_id: 'n-1', created_at: T * 1_000_000_000 },
    { id: 'pin-2', user_id: 'u-alice', note_id: 'n-gone', created_at: T * 1_000_000_000 },
  ]);
  await source.insert('automation', [
    { id: 'a-1', user_id: 'u-alice', name: 'Digest', data: { prompt: 'Summarize the news', model_id: 'gpt-test', rrule: 'FREQ=DAILY;BYHOUR=8;BYMINUTE=0' }, is_active: true, created_at: T * 1_000_000_000, updated_at: T * 1_000_000_000 },
    { id: 'a-bad', user_id: 'u-alice', name: 'Broken', data: { prompt: 'x', model_id: 'gpt-test' }, is_active: true, created_at: T * 1_000_000_000, updated_at: T * 1_000_000_000 },
  ]);
  await source.insert('calendar', { id: 'cal-1', user_id: 'u-admin', name: 'Team days', color: '#ff0000', is_default: true, created_at: T * 1_000_000_000, updated_at: T * 1_000_000_000 });
  await source.insert('calendar_event', [
    { id: 'ev-1', calendar_id: 'cal-1', user_id: 'u-admin', title: 'Retro', location: 'Room 1', start_at: (T + 86_400) * 1_000_000_000, end_at: (T + 90_000) * 1_000_000_000, all_day: false, is_cancelled: false, created_at: T * 1_000_000_000, updated_at: T * 1_000_000_000 },
    { id: 'ev-orphan', calendar_id: 'cal-gone', user_id: 'u-admin', title: 'Lost', start_at: T * 1_000_000_000, all_day: false, is_cancelled: false, created_at: T, updated_at: T },
  ]);
  await source.insert('calendar_event_attendee', [
    { id: 'att-1', event_id: 'ev-1', user_id: 'u-alice', status: 'accepted', created_at: T * 1_000_000_000, updated_at: T * 1_000_000_000 },
    { id: 'att-orphan', event_id: 'ev-gone', user_id: 'u-alice', status: 'pending', created_at: T * 1_000_000_000, updated_at: T * 1_000_000_000 },
  ]);
  await source.insert('automation_run', [
    { id: 'run-1', automation_id: 'a-1', chat_id: 'c-1', status: 'success', created_at: (T + 60) * 1_000_000_000 },
    { id: 'run-2', automation_id: 'a-1', status: 'running', created_at: (T + 120) * 1_000_000_000 },
    { id: 'run-orphan', automation_id: 'a-gone', status: 'success', created_at: T * 1_000_000_000 },
  ]);
  await source.insert('memory', { id: 'mem-1', user_id: 'u-alice', content: 'Likes tea', type: 'context', updated_at: T, created_at: T });
  await source.insert('feedback', { id: 'fb-1', user_id: 'u-alice', version: 0, type: 'rating', data: { rating: 1, model_id: 'helper' }, meta: { chat_id: 'c-1' }, snapshot: {}, created_at: T, updated_at: T });
  await source.insert('channel', [
    { id: 'ch-1', user_id: 'u-admin', type: null, name: 'general', description: 'all of us', is_private: false, data: {}, meta: {}, created_at: T, updated_at: T },
    { id: 'ch-gone', user_id: 'u-admin', name: 'old', created_at: T, updated_at: T, deleted_at: T + 5, deleted_by: 'u-admin' },
  ]);
  await source.insert('channel_member', { id: 'cm-1', channel_id: 'ch-1', user_id: 'u-alice', status: 'joined', is_active: true, is_channel_muted: false, is_channel_pinned: false, joined_at: T, created_at: T, updated_at: T });
  await source.insert('message', [
    { id: 'msg-1', user_id: 'u-admin', channel_id: 'ch-1', content: 'Welcome!', data: {}, meta: {}, created_at: T * 1_000_000_000, updated_at: T * 1_000_000_000 },
    { id: 'msg-2', user_id: 'u-alice', channel_id: 'ch-gone', content: 'lost', created_at: T, updated_at: T },
  ]);
  await source.insert('message_reaction', { id: 'r-1', user_id: 'u-alice', message_id: 'msg-1', name: 'thumbsup', created_at: T });
  await source.insert('access_grant', [
    { id: 'ag-4', resource_type: 'skill', resource_id: 'sk-1', principal_type: 'group', principal_id: 'g-team', permission: 'read', created_at: T },
    { id: 'ag-3', resource_type: 'channel', resource_id: 'ch-1', principal_type: 'group', principal_id: 'g-team', permission: 'read', created_at: T },
    { id: 'ag-1', resource_type: 'model', resource_id: 'helper', principal_type: 'group', principal_id: 'g-team', permission: 'read', created_at: T },
    { id: 'ag-2', resource_type: 'calendar', resource_id: 'cal-1', principal_type: 'user', principal_id: '*', permission: 'read', created_at: T },
    { id: 'ag-5', resource_type: 'calendar', resource_id: 'cal-gone', principal_type: 'user', principal_id: '*', permission: 'read', created_at: T },
    { id: 'ag-6', resource_type: 'automation', resource_id: 'a-1', principal_type: 'user', principal_id: '*', permission: 'read', created_at: T },
  ]);
  await source.insert('config', [
    { key: 'ui.default_user_role', value: JSON.stringify('user'), updated_at: T },
    { key: 'channels.enable', value: JSON.stringify(true), updated_at: T },
    { key: 'openai.api_base_urls', value: JSON.stringify(['https://llm.example.com/v1']), updated_at: T },
    { key: 'webhook_url', value: JSON.stringify('http://93.184.216.34/owui-hook'), updated_at: T },
    { key: 'ui.enable_signup', value: JSON.stringify('yes'), updated_at: T },
  ]);
}

type Report = Awaited<ReturnType<typeof importOpenWebui>>;

async function runImport(location: string, parley: Parley, options: { dryRun?: boolean } = {}): Promise<{ report: Report; lines: string[] }> {
  const lines: string[] = [];
  const source = await openSource(location);
  try {
    return { report: await importOpenWebui(source, parley, { ...options, log: (line) => lines.push(line) }), lines };
  } finally {
    await source.close();
  }
}

const table = (report: Report, name: string, target = name) => report.tables.find((t) => t.table === name && t.target === target)!;

async function signin(api: ApiClient, email: string, password: string) {
  return api.post('/api/v1/auths/signin', { email, password });
}

const count = async (parley: Parley, name: 'chat' | 'chat_message') =>
  Number((await parley.core.db.selectFrom(name).select(({ fn }) => fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

/** Every row of the tables an import writes, for "a second run changes nothing". */
async function snapshot(parley: Parley) {
  const db = parley.core.db;
  const tables = ['user', 'auth', 'api_key', 'group', 'group_member', 'folder', 'chat', 'chat_content', 'chat_message', 'tag', 'chat_tag', 'shared_chat', 'model', 'tool', 'function', 'prompt', 'note', 'memory', 'feedback', 'access_grant', 'config', 'event_webhook', 'skill', 'prompt_history', 'channel', 'channel_member', 'message', 'message_reaction', 'pinned_note', 'automation', 'automation_run', 'calendar', 'calendar_event', 'calendar_event_attendee', 'channel_file', 'knowledge_directory', 'knowledge_file'] as const;
  const rows: Record<string, unknown[]> = {};
  for (const name of tables) rows[name] = await db.selectFrom(name).selectAll().execute();
  return JSON.stringify(rows, (_key, value) => (typeof value === 'bigint' ? Number(value) : value));
}

describe('parley import-openwebui', () => {
  const fixtures: OpenWebuiFixture[] = [];
  const source = async (version: SchemaVersion, sourceDialect: 'sqlite' | 'postgres' = 'sqlite', revision?: string) => {
    const fixture = await createOpenWebuiDatabase(version, sourceDialect, revision);
    fixtures.push(fixture);
    return fixture;
  };
  afterEach(async () => {
    for (const fixture of fixtures.splice(0)) await fixture.remove();
  });

  const sourceDialects: ('sqlite' | 'postgres')[] = dialect === 'postgres' ? ['sqlite', 'postgres'] : ['sqlite'];

  for (const sourceDialect of sourceDialects) {
    it(`carries a 0.10.2 install (${sourceDialect}) over: old passwords sign in, chats open, the workspace is there; a second run changes nothing`, { timeout: 60_000 }, async () => {
      const owui = await source('0.10.2', sourceDialect);
      await fill0102(owui);
      await withServer({ env: { ENABLE_API_KEYS: 'true' } }, async ({ api, parley }) => {
        // A dry run counts and reports, and writes nothing.
        const dry = await runImport(owui.location, parley, { dryRun: true });
        expect(dry.report.version).toMatchObject({ version: '0.10.2', revision: '42e2978c7933' });
        expect(table(dry.report, 'chat')).toMatchObject({ source: 3, written: 2 });
        expect(dry.report.notCarriedOver).toEqual([]);
        expect(dry.lines.some((line) => line.startsWith('chat: 3 rows, 2 to write'))).toBe(true);
        expect(await parley.core.db.selectFrom('user').select('id').execute()).toEqual([]);

        const { report, lines } = await runImport(owui.location, parley);
        expect(table(report, 'user')).toMatchObject({ source: 3, written: 2, verified: 2 });
        expect(table(report, 'user').unconvertible).toEqual([{ id: 'u-noemail', reason: 'no email' }]);
        expect(table(report, 'auth').unconvertible).toEqual([{ id: 'u-ghost', reason: 'its user u-ghost is not in the import' }]);
        expect(table(report, 'chat').unconvertible).toEqual([{ id: 'c-orphan', reason: 'its user u-missing is not in the import' }]);
        expect(table(report, 'function').unconvertible).toEqual([{ id: 'weird', reason: 'unknown function type gadget' }]);
        expect(table(report, 'channel').unconvertible).toEqual([{ id: 'ch-gone', reason: 'deleted in Open WebUI' }]);
        expect(table(report, 'message').unconvertible).toEqual([{ id: 'msg-2', reason: 'its channel ch-gone is not in the import' }]);
        expect(table(report, 'access_grant')).toMatchObject({
          written: 4,
          unconvertible: [
            { id: 'ag-6', reason: 'a grant on a automation, which is not carried over' },
            { id: 'ag-5', reason: 'its calendar cal-gone is not in the import' },
          ],
        });
        expect(table(report, 'prompt_history')).toMatchObject({ source: 4, written: 3, present: 0, unconvertible: [{ id: 'pv-orphan', reason: 'its prompt p-gone is not in the import' }] });
        expect(table(report, 'pinned_note').unconvertible).toEqual([{ id: 'pin-2', reason: 'its note n-gone is not in the import' }]);
        expect(table(report, 'automation').unconvertible).toEqual([{ id: 'a-bad', reason: 'its data has no prompt, model_id and rrule' }]);
        expect(table(report, 'calendar_event').unconvertible).toEqual([{ id: 'ev-orphan', reason: 'its calendar cal-gone is not in the import' }]);
        expect(table(report, 'calendar_event_attendee').unconvertible).toEqual([{ id: 'att-orphan', reason: 'its calendar_event ev-gone is not in the import' }]);
        expect(table(report, 'automation_run').unconvertible).toEqual([{ id: 'run-orphan', reason: 'its automation a-gone is not in the import' }]);
        expect(table(report, 'config')).toMatchObject({ source: 5, written: 4, unconvertible: [{ id: 'ui.enable_signup', reason: 'ui.enable_signup: must be a boolean' }] });
        expect(report.messages).toBe(8);
        expect(lines).toContain('verify chat: 2 of 2 convertible rows in Parley');

        // bcrypt and argon2 hashes both sign in; the e-mail address is found whatever its case.
        const admin = await signin(api, 'admin@example.com', ADMIN_PASSWORD);
        expect(admin.status, admin.text).toBe(200);
        expect(admin.body).toMatchObject({ id: 'u-admin', role: 'admin', name: 'Old Admin' });
        const alice = await signin(api, 'alice@example.com', ALICE_PASSWORD);
        expect(alice.status, alice.text).toBe(200);
        expect((await signin(api, 'alice@example.com', 'wrong')).status).toBe(400);
        const as = { token: alice.body.token as string };

        // Pinned, so listed among the pinned chats.
        expect((await api.get('/api/v1/chats/pinned', as)).body.map((c: { id: string }) => c.id)).toEqual(['c-1']);
        const chat = await api.get('/api/v1/chats/c-1', as);
        expect(chat.status).toBe(200);
        expect(chat.body).toMatchObject({ title: 'Planning', pinned: true, folder_id: 'f-work', share_id: 's-1', meta: { tags: ['project_x'] } });
        expect(Object.keys(chat.body.chat.history.messages)).toHaveLength(6);
        expect(chat.body.chat.history.currentId).toBe('c-1-m5');
        expect((await api.get('/api/v1/chats/all/tags', as)).body).toEqual([expect.objectContaining({ id: 'project_x', name: 'Project X' })]);
        expect((await api.get('/api/v1/chats/share/s-1', as)).body).toMatchObject({ title: 'Planning' });
        expect((await api.get('/api/v1/folders/', as)).body).toEqual([expect.objectContaining({ id: 'f-work', name: 'Work' })]);
        expect((await api.get('/api/v1/prompts/', as)).body).toEqual([expect.objectContaining({ command: 'summarize', content: 'Summarize {{text}}' })]);
        // Its current text is its first version, with the id the prompt names.
        const history = await api.get('/api/v1/prompts/id/p-1/history', as);
        expect(history.status, history.text).toBe(200);
        expect(history.body).toEqual([
          expect.objectContaining({ id: 'pv-2', parent_id: 'pv-1', user_id: 'u-alice', commit_message: 'draft', created_at: T + 50 }),
          expect.objectContaining({ id: 'pv-1', parent_id: 'pv-z', user_id: 'u-alice', commit_message: 'with the text', created_at: T }),
          expect.objectContaining({ id: 'pv-z', parent_id: null, user_id: 'u-admin', commit_message: 'Initial version', created_at: T - 100, snapshot: expect.objectContaining({ content: 'Summarize' }) }),
        ]);
        // The version in use is still Open WebUI's, not the latest.
        expect((await api.get('/api/v1/prompts/id/p-1', as)).body).toMatchObject({ version_id: 'pv-1', content: 'Summarize {{text}}' });
        expect((await api.get('/api/v1/notes/pinned', as)).body).toEqual([expect.objectContaining({ id: 'n-1' })]);
        expect((await api.get('/api/v1/notes/n-1', as)).body).toMatchObject({ title: 'Ideas' });
        expect((await api.get('/api/v1/memories/', as)).body).toEqual([expect.objectContaining({ id: 'mem-1', content: 'Likes tea' })]);
        // Her group's imported permissions let her use it.
        const byKey = await api.get('/api/v1/auths/', { headers: { 'x-api-key': 'sk-0123456789abcdef0123456789abcdef' } });
        expect(byKey.body, byKey.text).toMatchObject({ id: 'u-alice' });

        const adminAuth = { token: admin.body.token as string };
        expect((await api.get('/api/v1/groups/', adminAuth)).body).toEqual([expect.objectContaining({ id: 'g-team', name: 'Team', member_count: 1 })]);
        expect((await api.get('/api/v1/models/model?id=helper', adminAuth)).body).toMatchObject({ id: 'helper', base_model_id: 'gpt-test', params: { system: 'Be brief.' } });
        expect((await api.get('/api/v1/tools/id/calc/valves', adminAuth)).body).toEqual({ precision: 2 });
        expect((await api.get('/api/v1/functions/id/shout/valves', adminAuth)).body).toEqual({ level: 3 });
        expect((await api.get('/api/v1/evaluations/feedbacks/all/export', adminAuth)).body).toEqual([expect.objectContaining({ id: 'fb-1' })]);
        expect((await api.get('/api/v1/chats/c-2', adminAuth)).body).toMatchObject({ archived: true });
        // Alice's automation, scheduled again; the admin's calendar and its event.
        const automation = await api.get('/api/v1/automations/a-1', adminAuth);
        expect(automation.status, automation.text).toBe(200);
        expect(automation.body).toMatchObject({ user_id: 'u-alice', name: 'Digest', is_active: true, data: { rrule: 'FREQ=DAILY;BYHOUR=8;BYMINUTE=0' }, created_at: T * 1_000_000_000 });
        expect(automation.body.next_run_at).toEqual(expect.any(Number));
        const calendar = await api.get('/api/v1/calendars/cal-1', adminAuth);
        expect(calendar.body, calendar.text).toMatchObject({ name: 'Team days', is_default: true, access_grants: [expect.objectContaining({ principal_id: '*', permission: 'read' })] });
        const event = await api.get('/api/v1/calendars/events/ev-1', adminAuth);
        expect(event.body, event.text).toMatchObject({ calendar_id: 'cal-1', title: 'Retro', location: 'Room 1', start_at: (T + 86_400) * 1_000_000_000 });
        expect(event.body.attendees).toEqual([expect.objectContaining({ id: 'att-1', user_id: 'u-alice', status: 'accepted' })]);
        // Its past runs, newest first; one Open WebUI left running is kept as failed.
        const runs = await api.get('/api/v1/automations/a-1/runs', adminAuth);
        expect(runs.body, runs.text).toEqual([
          expect.objectContaining({ id: 'run-2', status: 'error', error: 'left running in Open WebUI' }),
          expect.objectContaining({ id: 'run-1', status: 'success', chat_id: 'c-1' }),
        ]);
        // The group's grants: Alice, a member, sees the admin's model and skill.
        expect((await api.get('/api/v1/models/model?id=helper', as)).status).toBe(200);
        expect((await api.get('/api/v1/skills/id/sk-1', as)).body).toMatchObject({ name: 'Reviewer', content: 'Review carefully.', meta: { tags: ['code'] } });
        // The channel, its message and reaction, seen by a member of its group.
        const messages = await api.get('/api/v1/channels/ch-1/messages', as);
        expect(messages.status, messages.text).toBe(200);
        expect(messages.body).toEqual([expect.objectContaining({ id: 'msg-1', content: 'Welcome!', reactions: [expect.objectContaining({ name: 'thumbsup', count: 1 })] })]);
        // Settings and connections, and the old single webhook as the webhook `default`.
        expect((await api.get('/api/v1/auths/admin/config', adminAuth)).body).toMatchObject({ DEFAULT_USER_ROLE: 'user' });
        expect((await api.get('/openai/config', adminAuth)).body).toMatchObject({ OPENAI_API_BASE_URLS: ['https://llm.example.com/v1'] });
        expect((await api.get('/api/events/webhooks', adminAuth)).body).toEqual([expect.objectContaining({ id: 'default', url: 'http://93.184.216.34/owui-hook' })]);

        // Idempotent: nothing changes on a second run, and it says so.
        const before = await snapshot(parley);
        const again = await runImport(owui.location, parley);
        expect(again.report.tables.reduce((n, t) => n + t.written, 0)).toBe(0);
        expect(table(again.report, 'chat')).toMatchObject({ present: 2, written: 0 });
        expect(await snapshot(parley)).toBe(before);
      });
    });
  }

  it('carries files over from the uploads folder, with the knowledge bases, folders, chats and channel messages holding them; extracted and indexed again', { timeout: 60_000 }, async () => {
    const owui = await source('0.10.2');
    await owui.insert('user', [
      { id: 'u-alice', email: 'alice@example.com', role: 'admin', name: 'Alice', last_active_at: T, updated_at: T, created_at: T },
      { id: 'u-bob', email: 'bob@example.com', role: 'user', name: 'Bob', last_active_at: T, updated_at: T, created_at: T },
    ]);
    await owui.insert('auth', [
      { id: 'u-alice', email: 'alice@example.com', password: await bcrypt.hash(ALICE_PASSWORD, 4), active: true },
      { id: 'u-bob', email: 'bob@example.com', password: await bcrypt.hash('Bob-pass-1!', 4), active: true },
    ]);
    const uploads = path.join(path.dirname(owui.location), 'uploads');
    mkdirSync(uploads);
    writeFileSync(path.join(uploads, 'f-1_guide.txt'), 'Lighthouses guide ships safely at night.');
    writeFileSync(path.join(uploads, 'f-2_notes.txt'), 'Notes on harbours.');
    const file = (id: string, name: string) => ({ id, user_id: 'u-alice', filename: name, path: `/app/backend/data/uploads/${id}_${name}`, data: { status: 'completed', content: 'old text' }, meta: { name, content_type: 'text/plain', size: 40 }, created_at: T, updated_at: T });
    await owui.insert('file', [file('f-1', 'guide.txt'), file('f-2', 'notes.txt'), file('f-missing', 'gone.txt')]);
    await owui.insert('knowledge', { id: 'k-1', user_id: 'u-alice', name: 'Docs', description: 'the docs', created_at: T, updated_at: T });
    // A folder inside another, the child's id first; one whose parent is gone.
    await owui.insert('knowledge_directory', [
      { id: 'kd-a', knowledge_id: 'k-1', parent_id: 'kd-b', name: 'Lights', user_id: 'u-alice', created_at: T, updated_at: T },
      { id: 'kd-b', knowledge_id: 'k-1', parent_id: null, name: 'Guides', user_id: 'u-alice', created_at: T, updated_at: T },
      { id: 'kd-c', knowledge_id: 'k-1', parent_id: 'kd-gone', name: 'Lost', user_id: 'u-alice', created_at: T, updated_at: T },
    ]);
    await owui.insert('knowledge_file', [
      { id: 'kf-1', knowledge_id: 'k-1', file_id: 'f-1', directory_id: 'kd-a', user_id: 'u-alice', created_at: T, updated_at: T },
      { id: 'kf-2', knowledge_id: 'k-1', file_id: 'f-missing', user_id: 'u-alice', created_at: T, updated_at: T },
    ]);
    // The first message names its file, as Open WebUI writes them; the link to the second message is all that says it held f-2.
    const chat = chatJson('c-f', 'With files', 1);
    const messages = (chat.history as { messages: Record<string, FixtureRow> }).messages;
    messages['c-f-m0']!.files = [{ type: 'file', id: 'f-1', name: 'guide.txt' }];
    await owui.insert('chat', { id: 'c-f', user_id: 'u-alice', title: 'With files', chat: { ...chat, id: 'c-f' }, created_at: T, updated_at: T, meta: {} });
    await owui.insert('chat_file', [
      { id: 'cf-1', user_id: 'u-alice', chat_id: 'c-f', message_id: 'c-f-m0', file_id: 'f-1', created_at: T, updated_at: T },
      { id: 'cf-2', user_id: 'u-alice', chat_id: 'c-f', message_id: 'c-f-m1', file_id: 'f-2', created_at: T, updated_at: T },
      { id: 'cf-3', user_id: 'u-alice', chat_id: 'c-f', message_id: null, file_id: 'f-missing', created_at: T, updated_at: T },
    ]);
    // Alice posted f-2 in a group channel Bob is in.
    await owui.insert('channel', { id: 'ch-g', user_id: 'u-alice', type: 'group', name: 'pair', created_at: T, updated_at: T });
    await owui.insert('channel_member', [
      { id: 'cm-a', channel_id: 'ch-g', user_id: 'u-alice', status: 'joined', is_active: true, is_channel_muted: false, is_channel_pinned: false, created_at: T, updated_at: T },
      { id: 'cm-b', channel_id: 'ch-g', user_id: 'u-bob', status: 'joined', is_active: true, is_channel_muted: false, is_channel_pinned: false, created_at: T, updated_at: T },
    ]);
    await owui.insert('message', { id: 'msg-f', user_id: 'u-alice', channel_id: 'ch-g', content: 'see this', data: { files: [{ type: 'file', id: 'f-2' }] }, created_at: T, updated_at: T });
    await owui.insert('channel_file', [
      { id: 'chf-1', user_id: 'u-alice', channel_id: 'ch-g', message_id: 'msg-f', file_id: 'f-2', created_at: T, updated_at: T },
      { id: 'chf-2', user_id: 'u-alice', channel_id: 'ch-g', message_id: 'msg-f', file_id: 'f-missing', created_at: T, updated_at: T },
    ]);
    const engine = fakeEmbeddingEngine();
    const fakes = await engine.start();
    try {
      await withServer({ env: { ...engine.env!(fakes), ENABLE_CHANNELS: 'true' } }, async ({ api, parley }) => {
        const { report } = await runImport(owui.location, parley);
        expect(table(report, 'file')).toMatchObject({ source: 3, written: 2, unconvertible: [{ id: 'f-missing', reason: `its bytes (f-missing_gone.txt) are not in ${uploads}` }] });
        expect(table(report, 'knowledge_directory')).toMatchObject({ written: 2, unconvertible: [{ id: 'kd-c', reason: 'its parent folder kd-gone is not in the import' }] });
        expect(table(report, 'knowledge_file')).toMatchObject({ written: 1, unconvertible: [{ id: 'kf-2', reason: 'its file f-missing is not in the import' }] });
        expect(table(report, 'chat_file', 'chat_message')).toMatchObject({
          source: 3,
          present: 1,
          written: 1,
          unconvertible: [{ id: 'cf-3', reason: 'it names no message (Parley links a chat to a file through one of its messages)' }],
        });
        expect(table(report, 'channel_file')).toMatchObject({ written: 1, unconvertible: [{ id: 'chf-2', reason: 'its file f-missing is not in the import' }] });

        const session = await signin(api, 'alice@example.com', ALICE_PASSWORD);
        const alice = { token: session.body.token } as Account;
        expect(await processedFile(api, alice, 'f-1')).toMatchObject({ status: 'completed' });
        expect((await api.get('/api/v1/files/f-1/content', alice)).text).toBe('Lighthouses guide ships safely at night.');
        expect((await api.get('/api/v1/knowledge/k-1', alice)).body).toMatchObject({ name: 'Docs', description: 'the docs' });
        // The file in its folder, the folder inside its parent.
        const top = await api.get('/api/v1/knowledge/k-1/files', alice);
        expect(top.status, top.text).toBe(200);
        expect(top.body.directories).toEqual([expect.objectContaining({ id: 'kd-b', name: 'Guides', parent_id: null })]);
        const guides = await api.get('/api/v1/knowledge/k-1/files?directory_id=kd-b', alice);
        expect(guides.body.directories).toEqual([expect.objectContaining({ id: 'kd-a', name: 'Lights' })]);
        const listed = await api.get('/api/v1/knowledge/k-1/files?directory_id=kd-a', alice);
        expect(listed.status, listed.text).toBe(200);
        expect(listed.body.items.map((f: { id: string }) => f.id)).toEqual(['f-1']);
        // The chat's messages name their files: the linked one is added to its message.
        const opened = await api.get('/api/v1/chats/c-f', alice);
        expect(opened.body.chat.history.messages['c-f-m0'].files).toEqual([expect.objectContaining({ id: 'f-1' })]);
        expect(opened.body.chat.history.messages['c-f-m1'].files).toEqual([expect.objectContaining({ type: 'file', id: 'f-2', name: 'notes.txt' })]);
        // Bob reads the file Alice posted in their channel.
        const bob = await signin(api, 'bob@example.com', 'Bob-pass-1!');
        const posted = await api.get('/api/v1/files/f-2', { token: bob.body.token });
        expect(posted.status, posted.text).toBe(200);
        expect((await api.get('/api/v1/files/f-1', { token: bob.body.token })).status).not.toBe(200);
        // Indexed again in the knowledge base's collection.
        const query = await api.post('/api/v1/retrieval/query/collection', { collection_names: ['k-1'], query: 'lighthouses', k: 5 }, alice);
        expect(query.status, query.text).toBe(200);
        expect(query.body.documents.flat().join(' ')).toContain('Lighthouses guide ships');

        const again = await runImport(owui.location, parley);
        expect(again.report.tables.reduce((n, t) => n + t.written, 0)).toBe(0);
      });
    } finally {
      await fakes.embeddings.close();
    }
  });

  it('resumes an interrupted run where it stopped', { timeout: 60_000 }, async () => {
    const owui = await source('0.10.2');
    await owui.insert('user', { id: 'u-1', email: 'one@example.com', role: 'admin', name: 'One', last_active_at: T, updated_at: T, created_at: T });
    await owui.insert(
      'chat',
      Array.from({ length: 1200 }, (_, i) => {
        const id = `c-${String(i).padStart(4, '0')}`;
        return { id, user_id: 'u-1', title: `Chat ${i}`, chat: { ...chatJson(id, `Chat ${i}`, 1), id }, created_at: T + i, updated_at: T + i, meta: {} };
      }),
    );
    await withServer({}, async ({ parley }) => {
      const restore = parley.services.chats.restore.bind(parley.services.chats);
      let calls = 0;
      parley.services.chats.restore = async (...args) => {
        if (++calls === 2) throw new Error('interrupted');
        return restore(...args);
      };
      await expect(runImport(owui.location, parley)).rejects.toThrow('interrupted');
      parley.services.chats.restore = restore;
      expect(await count(parley, 'chat')).toBe(500);

      const { report } = await runImport(owui.location, parley);
      expect(table(report, 'chat')).toMatchObject({ source: 1200, present: 500, written: 700, verified: 1200 });
      expect(await count(parley, 'chat_message')).toBe(2400);
    });
  });

  it('refuses a database of an unsupported version before writing anything, naming the version found', async () => {
    const old = await source('0.6.0', 'sqlite', '7826ab40b532');
    await old.insert('user', { id: 'u-1', email: 'one@example.com', role: 'admin', name: 'One', last_active_at: T, updated_at: T, created_at: T });
    const unknown = await source('0.10.2', 'sqlite', 'ffffffffffff');
    await withServer({}, async ({ parley }) => {
      await expect(runImport(old.location, parley)).rejects.toThrow('Found Open WebUI 0.5.0 (alembic revision 7826ab40b532): supported are 0.6 to 0.10');
      await expect(runImport(unknown.location, parley)).rejects.toThrow('Found alembic revision ffffffffffff, which is no Open WebUI release up to 0.10.2');
      expect(await parley.core.db.selectFrom('user').select('id').execute()).toEqual([]);
    });
    // The command says so and exits with status 2.
    const errors: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => errors.push(String(chunk)) > 0) as typeof process.stderr.write;
    try {
      expect(await runCommand(['import-openwebui', old.location, '--data-dir', `${old.location}-parley`])).toBe(2);
    } finally {
      process.stderr.write = write;
    }
    expect(errors.join('')).toContain('Found Open WebUI 0.5.0');
  });

  it('reads a 0.6 database: the key in the user row, members in the group row, prompts by command, shares as chat copies', { timeout: 60_000 }, async () => {
    const owui = await source('0.6.0');
    await owui.insert('user', [
      { id: 'u-admin', email: 'admin@example.com', role: 'admin', name: 'Admin', api_key: 'sk-00000000000000000000000000000006', last_active_at: T, updated_at: T, created_at: T },
      { id: 'u-bob', email: 'bob@example.com', role: 'user', name: 'Bob', last_active_at: T, updated_at: T, created_at: T },
    ]);
    await owui.insert('auth', [
      { id: 'u-admin', email: 'admin@example.com', password: await bcrypt.hash(ADMIN_PASSWORD, 4), active: true },
      { id: 'u-bob', email: 'bob@example.com', password: await bcrypt.hash('Bob-pass-1!', 4), active: true },
    ]);
    await owui.insert('group', { id: 'g-1', user_id: 'u-admin', name: 'Readers', description: '', user_ids: ['u-bob', 'u-gone'], created_at: T, updated_at: T });
    await owui.insert('prompt', [
      { command: '/hello', user_id: 'u-admin', title: 'Hello', content: 'Say hello', timestamp: T, access_control: null },
      { command: '/secret', user_id: 'u-admin', title: 'Secret', content: 'Private', timestamp: T, access_control: {} },
    ]);
    await owui.insert('config', { id: 1, version: 0, data: { version: 0, ui: { default_user_role: 'user' }, openai: { api_base_urls: ['https://old.example.com/v1'] } } });
    await owui.insert('chat', [
      { id: 'c-b', user_id: 'u-bob', title: 'Bob chat', chat: { ...chatJson('c-b', 'Bob chat', 2), id: 'c-b' }, created_at: T, updated_at: T, share_id: 'share-b', meta: {} },
      { id: 'share-b', user_id: 'shared-c-b', title: 'Bob chat', chat: chatJson('c-b', 'Bob chat', 2), created_at: T, updated_at: T, meta: {} },
    ]);
    await withServer({ env: { ENABLE_API_KEYS: 'true' } }, async ({ api, parley }) => {
      const { report } = await runImport(owui.location, parley);
      expect(report.version.version).toBe('0.6.0');
      expect(table(report, 'chat')).toMatchObject({ source: 1, written: 1 });
      expect(table(report, 'chat', 'shared_chat')).toMatchObject({ source: 1, written: 1, verified: 1 });
      expect(table(report, 'user', 'api_key')).toMatchObject({ source: 1, written: 1 });

      const bob = await signin(api, 'bob@example.com', 'Bob-pass-1!');
      expect(bob.status, bob.text).toBe(200);
      expect((await api.get('/api/v1/chats/share/share-b', { token: bob.body.token })).body).toMatchObject({ title: 'Bob chat' });
      expect((await api.get('/api/v1/auths/', { headers: { 'x-api-key': 'sk-00000000000000000000000000000006' } })).body).toMatchObject({ id: 'u-admin' });
      const admin = await signin(api, 'admin@example.com', ADMIN_PASSWORD);
      expect((await api.get('/api/v1/groups/', { token: admin.body.token })).body).toEqual([expect.objectContaining({ id: 'g-1', member_count: 1 })]);
      // access_control null was public: Bob reads the first prompt, not the private one.
      expect((await api.get('/api/v1/prompts/', { token: bob.body.token })).body).toEqual([expect.objectContaining({ command: '/hello', name: 'Hello', content: 'Say hello' })]);
      expect((await api.get('/api/v1/prompts/', { token: admin.body.token })).body).toHaveLength(2);
      expect((await api.get('/openai/config', { token: admin.body.token })).body).toMatchObject({ OPENAI_API_BASE_URLS: ['https://old.example.com/v1'] });

      const again = await runImport(owui.location, parley);
      expect(again.report.tables.reduce((n, t) => n + t.written, 0)).toBe(0);
    });
  });
});
