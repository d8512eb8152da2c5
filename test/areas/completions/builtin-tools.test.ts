import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultScript, fakeModel, isTaskPrompt } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, webRequest } from './setup.js';

/**
 * Built-in tools (builtin-tools.ts): offered to a web client's answers in native
 * function calling, each category as the reference gates it, and run against
 * Parley's own services.
 */
const world = useServer({ fakes: fakeModel(), env: { BYPASS_MODEL_ACCESS_CONTROL: 'true' }, admin: 'Builtin Admin', users: { alice: ['user', 'Builtin Alice'] } });
let browser: Browser;

beforeAll(async () => {
  const res = await world.api.post(
    '/api/v1/models/create',
    { id: 'no-time', base_model_id: 'fake-model', name: 'No time', meta: { builtinTools: { time: false, notes: false, chats: false, knowledge: false } }, params: {} },
    { token: world.admin.token },
  );
  expect(res.status, res.text).toBe(200);
  browser = await openBrowser(world.server.url, world.alice.token);
});
afterAll(() => browser?.close());

/** Calls the functions once, then answers with the tool results joined. */
const callingScript = (calls: { name: string; arguments: Record<string, unknown> }[]) => (body: any) => {
  if (isTaskPrompt(body)) return defaultScript(body);
  const results = body.messages.filter((m: any) => m.role === 'tool');
  if (results.length === 0) return { toolCalls: calls };
  return { text: 'done' };
};

/** A web client's turn; answers the model's first request (its tools) and the tool results it was sent back. */
async function turn(content: string, extra: Record<string, unknown> = {}) {
  const { body, assistantId } = webRequest(browser.socket, { content, extra: { background_tasks: {}, ...extra } });
  const res = await world.api.post('/api/chat/completions', body, { token: world.alice.token });
  expect(res.status, res.text).toBe(200);
  await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer', 20000);
  const requests = world.model.chatRequests();
  const first = requests.find((r) => r.messages.some((m: any) => m.role === 'user' && m.content === content) && !r.messages.some((m: any) => m.role === 'tool'));
  const second = requests.find((r) => r.messages.some((m: any) => m.role === 'user' && m.content === content) && r.messages.some((m: any) => m.role === 'tool'));
  return { chatId: res.body.chat_id as string, names: (first?.tools ?? []).map((t: any) => t.function.name) as string[], results: (second?.messages ?? []).filter((m: any) => m.role === 'tool').map((m: any) => m.content) as string[] };
}

describe('built-in tools', () => {
  it('calculate_timestamp and get_current_timestamp give the times the model asks for', async () => {
    world.model.script = callingScript([
      { name: 'calculate_timestamp', arguments: { days_ago: 1, weeks_ago: 1, months_ago: 1 } },
      { name: 'get_current_timestamp', arguments: {} },
    ]);
    const before = Math.floor(Date.now() / 1000);
    const { names, results } = await turn('what was the date a month, a week and a day ago?');
    expect(names).toEqual(['get_current_timestamp', 'calculate_timestamp', 'list_knowledge_bases', 'search_knowledge_bases', 'query_knowledge_files', 'search_chats', 'view_chat', 'search_notes', 'view_note', 'write_note', 'replace_note_content']);
    const calculated = JSON.parse(results[0]);
    expect(calculated.current_timestamp).toBeGreaterThanOrEqual(before);
    const expected = new Date(calculated.current_timestamp * 1000 - 8 * 86_400_000);
    expected.setUTCMonth(expected.getUTCMonth() - 1);
    expect(Math.abs(calculated.calculated_timestamp - Math.floor(expected.getTime() / 1000))).toBeLessThanOrEqual(1);
    expect(calculated.current_iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
    expect(Object.keys(JSON.parse(results[1]))).toEqual(['current_timestamp', 'current_iso']);
  }, 30000);

  it('are not offered to API clients, nor the categories a model switches off', async () => {
    world.model.script = defaultScript;
    await world.api.post('/api/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'api' }] }, { token: world.alice.token });
    expect(world.model.chatRequests().at(-1).tools).toBeUndefined();
    const { names } = await turn('no tools here', { model: 'no-time', model_item: { id: 'no-time' } });
    expect(names).toEqual([]);
  }, 30000);

  it('notes: write_note, search_notes and view_note act as the user', async () => {
    world.model.script = callingScript([{ name: 'write_note', arguments: { title: 'Groceries', content: 'Buy green tea and rice' } }]);
    const written = await turn('note my groceries');
    const id = JSON.parse(written.results[0]).id;
    expect(JSON.parse(written.results[0])).toMatchObject({ status: 'success', title: 'Groceries' });
    const note = await world.api.get(`/api/v1/notes/${id}`, { token: world.alice.token });
    expect(note.status, note.text).toBe(200);
    expect(note.body.data.content.md).toBe('Buy green tea and rice');

    world.model.script = callingScript([
      { name: 'search_notes', arguments: { query: 'tea' } },
      { name: 'view_note', arguments: { note_id: id } },
      { name: 'view_note', arguments: { note_id: 'missing' } },
    ]);
    const { results } = await turn('what did I note about tea?');
    expect(JSON.parse(results[0])).toEqual([expect.objectContaining({ id, title: 'Groceries', snippet: 'Buy green tea and rice' })]);
    expect(JSON.parse(results[1])).toEqual({ id, title: 'Groceries', content: 'Buy green tea and rice' });
    expect(JSON.parse(results[2])).toEqual({ error: 'Note not found' });

    world.model.script = callingScript([{ name: 'replace_note_content', arguments: { note_id: id, content: 'Buy oolong' } }]);
    const replaced = await turn('change my groceries');
    expect(JSON.parse(replaced.results[0])).toMatchObject({ status: 'success', id, title: 'Groceries' });
    expect((await world.api.get(`/api/v1/notes/${id}`, { token: world.alice.token })).body.data.content.md).toBe('Buy oolong');
  }, 30000);

  it('search_chats finds earlier conversations (not the current one) and view_chat reads one', async () => {
    world.model.script = defaultScript;
    const earlier = await turn('planning a trip to Lisbon in spring');
    expect(earlier.names).toContain('search_chats');
    const lisbon = { id: earlier.chatId };
    world.model.script = callingScript([
      { name: 'search_chats', arguments: { query: 'lisbon' } },
      { name: 'view_chat', arguments: { chat_id: lisbon.id } },
      { name: 'view_chat', arguments: { chat_id: 'not-a-chat' } },
    ]);
    const { results } = await turn('what did we say about lisbon?');
    const found = JSON.parse(results[0]);
    expect(found.map((c: any) => c.id)).toContain(lisbon.id);
    expect(found.every((c: any) => typeof c.snippet === 'string')).toBe(true);
    const viewed = JSON.parse(results[1]);
    expect(viewed.messages[0]).toEqual({ role: 'user', content: 'planning a trip to Lisbon in spring' });
    expect(viewed.messages[1].role).toBe('assistant');
    expect(JSON.parse(results[2])).toEqual({ error: 'Chat not found or access denied' });
  }, 30000);

  it('knowledge: lists, searches and queries the knowledge bases the user may read', async () => {
    const alice = await world.record(world.alice);
    const mine = await world.api.post('/api/v1/knowledge/create', { name: 'Handbook', description: 'Office rules' }, { token: world.admin.token });
    expect(mine.status, mine.text).toBe(200);
    await world.api.post(`/api/v1/knowledge/${mine.body.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: alice.id, permission: 'read' }] }, { token: world.admin.token });
    const hidden = await world.api.post('/api/v1/knowledge/create', { name: 'Secret plans', description: 'Not for Alice' }, { token: world.admin.token });
    const admin = await world.record(world.admin);
    for (const [base, text] of [
      [mine.body.id, 'Holidays are booked in the staff portal.'],
      [hidden.body.id, 'Holidays are secretly cancelled.'],
    ]) {
      const file = await world.server.parley.services.files.upload(admin, { filename: 'f.txt', content: Buffer.from(text), contentType: 'text/plain', process: false });
      expect((await world.api.post(`/api/v1/files/${file.id}/data/content/update`, { content: text }, { token: world.admin.token })).status).toBe(200);
      expect((await world.api.post(`/api/v1/knowledge/${base}/file/add`, { file_id: file.id }, { token: world.admin.token })).status).toBe(200);
    }
    world.model.script = callingScript([
      { name: 'list_knowledge_bases', arguments: {} },
      { name: 'search_knowledge_bases', arguments: { query: 'rules' } },
      { name: 'query_knowledge_files', arguments: { query: 'holidays booked' } },
    ]);
    const { results } = await turn('how do I book holidays?');
    expect(JSON.parse(results[0])).toEqual([{ id: mine.body.id, name: 'Handbook', description: 'Office rules', file_count: 1, updated_at: expect.any(Number) }]);
    expect(JSON.parse(results[1]).map((k: any) => k.id)).toEqual([mine.body.id]);
    const chunks = JSON.parse(results[2]);
    expect(chunks.map((c: any) => c.content)).toEqual(['Holidays are booked in the staff portal.']);
    expect(chunks[0]).toMatchObject({ source: 'f.txt', file_id: expect.any(String) });
  }, 30000);

  it('memory tools come with features.memory, and store and find the memories', async () => {
    world.model.script = callingScript([{ name: 'add_memory', arguments: { content: 'Prefers green tea', type: 'user', path: 'food' } }]);
    const added = await turn('remember I like green tea', { features: { memory: true } });
    expect(added.names.filter((n) => n.includes('memor'))).toEqual([
      'search_memories',
      'list_memory_paths',
      'read_memory_path',
      'list_memories',
      'update_memory',
      'add_memory',
      'replace_memory_content',
      'delete_memory',
    ]);
    const memory = JSON.parse(added.results[0]);
    expect(memory).toMatchObject({ status: 'success', type: 'user', path: 'food' });

    world.model.script = callingScript([
      { name: 'replace_memory_content', arguments: { memory_id: memory.id, content: 'Prefers green tea, no sugar' } },
      { name: 'read_memory_path', arguments: { path: 'food' } },
    ]);
    const replaced = await turn('no sugar please', { features: { memory: true } });
    expect(JSON.parse(replaced.results[0])).toMatchObject({ status: 'success', id: memory.id, content: 'Prefers green tea, no sugar', path: 'food' });
    expect(JSON.stringify(JSON.parse(replaced.results[1]))).toContain('Prefers green tea, no sugar');

    world.model.script = callingScript([
      { name: 'search_memories', arguments: { query: 'tea' } },
      { name: 'delete_memory', arguments: { memory_id: memory.id } },
      { name: 'list_memories', arguments: {} },
    ]);
    const { results } = await turn('what do I drink?', { features: { memory: true } });
    expect(JSON.parse(results[0])).toEqual([expect.objectContaining({ id: memory.id, content: 'Prefers green tea, no sugar', type: 'user' })]);
    expect(JSON.parse(results[1])).toEqual({ status: 'success', message: `Memory ${memory.id} deleted` });
    expect(JSON.parse(results[2])).toEqual([]);
    const { names } = await turn('no memory feature');
    expect(names).not.toContain('search_memories');
  }, 30000);
});
