import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { TestClock } from '../../helpers/server.js';
import { type Account, addUser, as } from '../../helpers/users.js';
import { fakeModel } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { NOT_FOUND, PROHIBITED, UNKNOWN, chain, newChat, setDefaultPermission } from './fixtures.js';

const clock = new TestClock(Date.UTC(2025, 0, 1));
const world = useServer({
  clock,
  admin: 'Chat Admin',
  users: { alice: ['user', 'Alice Chats'], bob: ['user', 'Bob Chats'], pending: ['pending', 'Pending Chats'] },
  freshEvents: true,
});

beforeEach(() => {
  clock.advance(10);
});

describe('POST /api/v1/chats/new', () => {
  it('stores the chat and answers ChatResponse, with the current message taken from the history', async () => {
    const history = chain(['u1', 'user', 'Hello there'], ['a1', 'assistant', 'Hi!', { model: 'gpt-fake' }]);
    const res = await world.api.post('/api/v1/chats/new', { chat: { title: 'Greeting', models: ['gpt-fake'], history }, variables: { '{{X}}': '1' } }, as(world.alice));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      id: expect.any(String),
      user_id: world.alice.id,
      title: 'Greeting',
      chat: { title: 'Greeting', models: ['gpt-fake'], history },
      updated_at: clock.now(),
      created_at: clock.now(),
      share_id: null,
      archived: false,
      pinned: false,
      meta: {},
      variables: { '{{X}}': '1' },
      folder_id: null,
      tasks: null,
      summary: null,
      current_message_id: 'a1',
      context_usage: null,
    });
    const [event] = world.takeEvents();
    expect(event).toMatchObject({ event: 'chat.created', actor: { id: world.alice.id }, subject: { type: 'chat', id: res.body.id }, data: { title: 'Greeting', folder_id: null } });

    const stored = await world.api.get(`/api/v1/chats/${res.body.id}`, as(world.alice));
    expect(stored.body).toEqual(res.body);
  });

  it('names an untitled chat "New Chat" and takes the last legacy message as current', async () => {
    const chat = await newChat(world.api, world.alice, { title: undefined, messages: [{ id: 'm1', role: 'user', content: 'x' }, { id: 'm2', role: 'assistant', content: 'y' }] });
    expect(chat.title).toBe('New Chat');
    expect(chat.current_message_id).toBe('m2');
  });

  it('refuses a missing or malformed chat (422), and callers that are not signed-in users (401)', async () => {
    for (const body of [{}, { chat: 'text' }, { chat: null }, { chat: {}, folder_id: 5 }]) {
      const res = await world.api.post('/api/v1/chats/new', body, as(world.alice));
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    expect((await world.api.post('/api/v1/chats/new', { chat: {} })).status).toBe(401);
    const res = await world.api.post('/api/v1/chats/new', { chat: {} }, as(world.pending));
    expect(res.status).toBe(401);
    expect(world.takeEvents()).toEqual([]);
  });

  it('files the chat in an own folder; an unknown or foreign folder is a 404 and nothing is stored', async () => {
    const folder = (await world.api.post('/api/v1/folders/', { name: `Files ${Date.now()}` }, as(world.alice))).body;
    const chat = await newChat(world.api, world.alice, {}, { folder_id: folder.id });
    expect(chat.folder_id).toBe(folder.id);
    const before = (await world.api.get('/api/v1/chats/?include_folders=true', as(world.bob))).body.length;
    for (const folder_id of [UNKNOWN, folder.id]) {
      const res = await world.api.post('/api/v1/chats/new', { chat: { title: 'x' }, folder_id }, as(world.bob));
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    expect((await world.api.get('/api/v1/chats/?include_folders=true', as(world.bob))).body.length).toBe(before);
  });
});

describe('GET /api/v1/chats/{id}', () => {
  it('is 401 NOT_FOUND for unknown chats and for chats of other users, as the reference', async () => {
    const chat = await newChat(world.api, world.alice);
    for (const [id, who] of [[UNKNOWN, world.alice], [chat.id, world.bob]] as const) {
      const res = await world.api.get(`/api/v1/chats/${id}`, as(who));
      expect(res.status).toBe(401);
      expect(res.body).toEqual(NOT_FOUND);
    }
  });

  it('reads a deleted account’s chat as the reference: 401 NOT_FOUND for the admin, 401 for the account’s own token', async () => {
    const leaving = await addUser(world.api, world.admin, 'user', 'Leaving Chats');
    const chat = await newChat(world.api, leaving, { title: 'to be deleted' });
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.admin))).status).toBe(200);
    expect((await world.api.delete(`/api/v1/users/${leaving.id}`, as(world.admin))).body).toBe(true);

    const read = await world.api.get(`/api/v1/chats/${chat.id}`, as(world.admin));
    expect(read.status).toBe(401);
    expect(read.body).toEqual(NOT_FOUND);
    expect((await world.api.get(`/api/v1/chats/list/user/${leaving.id}`, as(world.admin))).body).toEqual([]);
    // utils/auth.py: a valid token whose user is gone is an invalid token.
    const own = await world.api.get(`/api/v1/chats/${chat.id}`, as(leaving));
    expect(own.status).toBe(401);
    expect(own.body).toEqual({ detail: ERROR.INVALID_TOKEN });
    expect((await world.api.get('/api/v1/auths/', as(leaving))).status).toBe(401);
  });

  it('lets admins read any chat while ENABLE_ADMIN_CHAT_ACCESS is on', async () => {
    const chat = await newChat(world.api, world.alice);
    const res = await world.api.get(`/api/v1/chats/${chat.id}`, as(world.admin));
    expect(res.status).toBe(200);
    expect(res.body.user_id).toBe(world.alice.id);
  });
});

describe('POST /api/v1/chats/{id}', () => {
  it('merges the sent chat over the stored one and the sent messages into the history', async () => {
    const history = chain(['u1', 'user', 'first'], ['a1', 'assistant', 'answer']);
    const chat = await newChat(world.api, world.alice, { title: 'Before', models: ['m'], params: { temperature: 1 }, history });
    clock.advance(5);
    world.takeEvents();
    const regenerated = { id: 'a2', parentId: 'u1', childrenIds: [], role: 'assistant', content: 'another answer', timestamp: 1_700_000_100 };
    const res = await world.api.post(`/api/v1/chats/${chat.id}`, { chat: { title: 'After', history: { currentId: 'a2', messages: { a2: regenerated } } } }, as(world.alice));
    expect(res.status, res.text).toBe(200);
    expect(res.body.title).toBe('After');
    expect(res.body.chat.models).toEqual(['m']);
    expect(res.body.chat.params).toEqual({ temperature: 1 });
    expect(res.body.chat.history.currentId).toBe('a2');
    expect(Object.keys(res.body.chat.history.messages).sort()).toEqual(['a1', 'a2', 'u1']);
    expect(res.body.chat.history.messages.u1.childrenIds).toEqual(['a1', 'a2']);
    expect(res.body.current_message_id).toBe('a2');
    expect(res.body.updated_at).toBe(clock.now());
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.updated', subject: { type: 'chat', id: chat.id }, data: { title: 'After' } }]);
  });

  it('keeps the stored current message when the sent one is unknown, and does not move the chat for other changes', async () => {
    const chat = await newChat(world.api, world.alice, { history: chain(['u1', 'user', 'q']) });
    clock.advance(5);
    const res = await world.api.post(`/api/v1/chats/${chat.id}`, { chat: { params: { seed: 1 } }, variables: { a: 'b' } }, as(world.alice));
    expect(res.body.updated_at).toBe(chat.updated_at);
    expect(res.body.variables).toEqual({ a: 'b' });
    const again = await world.api.post(`/api/v1/chats/${chat.id}`, { chat: { history: { currentId: 'nope', messages: {} } } }, as(world.alice));
    expect(again.body.chat.history.currentId).toBe('u1');
  });

  it('is only for the owner (401 ACCESS_PROHIBITED otherwise, admins too, as the reference), and validates the form (422)', async () => {
    const chat = await newChat(world.api, world.alice, { title: 'Mine' });
    world.takeEvents();
    for (const who of [world.bob, world.admin]) {
      const res = await world.api.post(`/api/v1/chats/${chat.id}`, { chat: { title: 'Theirs' } }, as(who));
      expect(res.status).toBe(401);
      expect(res.body).toEqual(PROHIBITED);
    }
    expect((await world.api.post(`/api/v1/chats/${chat.id}`, { title: 'x' }, as(world.alice))).status).toBe(422);
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.alice))).body.title).toBe('Mine');
    expect(world.takeEvents()).toEqual([]);
  });
});

describe('GET /api/v1/chats/ (the sidebar)', () => {
  let owner: Account;
  beforeAll(async () => {
    owner = await addUser(world.api, world.admin, 'user', 'Lister');
    const chats = Array.from({ length: 63 }, (_, i) => ({ chat: { title: `chat ${i}` }, created_at: 1_000 + i, updated_at: 2_000 + i }));
    const res = await world.api.post('/api/v1/chats/import', { chats }, as(owner));
    expect(res.status, res.text).toBe(200);
  });

  it('pages by 60, newest change first, with the title/id fields only', async () => {
    const first = await world.api.get('/api/v1/chats/?page=1', as(owner));
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(60);
    expect(first.body[0]).toEqual({ id: expect.any(String), title: 'chat 62', updated_at: 2062, created_at: 1062, last_read_at: null, snippet: null, active: false });
    expect(first.body.map((c: { title: string }) => c.title).slice(0, 3)).toEqual(['chat 62', 'chat 61', 'chat 60']);
    const second = await world.api.get('/api/v1/chats/?page=2', as(owner));
    expect(second.body.map((c: { title: string }) => c.title)).toEqual(['chat 2', 'chat 1', 'chat 0']);
    expect((await world.api.get('/api/v1/chats/list', as(owner))).body).toHaveLength(63);
    const byTitle = await world.api.get('/api/v1/chats/?page=1&sort_by=title&sort_dir=asc', as(owner));
    expect(byTitle.body[0].title).toBe('chat 0');
    expect((await world.api.get('/api/v1/chats/?page=0', as(owner))).status).toBe(422);
  });

  it('leaves out pinned, archived and filed chats unless asked, and other users’ chats always', async () => {
    const ids = (await world.api.get('/api/v1/chats/', as(owner))).body.map((c: { id: string }) => c.id);
    const folder = (await world.api.post('/api/v1/folders/', { name: 'Lister folder' }, as(owner))).body;
    expect((await world.api.post(`/api/v1/chats/${ids[0]}/pin`, undefined, as(owner))).status).toBe(200);
    expect((await world.api.post(`/api/v1/chats/${ids[1]}/archive`, undefined, as(owner))).status).toBe(200);
    expect((await world.api.post(`/api/v1/chats/${ids[2]}/folder`, { folder_id: folder.id }, as(owner))).status).toBe(200);
    const listed = (await world.api.get('/api/v1/chats/', as(owner))).body.map((c: { id: string }) => c.id);
    expect(listed).toHaveLength(60);
    expect(listed).not.toContain(ids[0]);
    expect(listed).not.toContain(ids[1]);
    expect(listed).not.toContain(ids[2]);
    const all = (await world.api.get('/api/v1/chats/?include_pinned=true&include_folders=true', as(owner))).body.map((c: { id: string }) => c.id);
    expect(all).toContain(ids[0]);
    expect(all).toContain(ids[2]);
    expect(all).not.toContain(ids[1]);
    const pinned = await world.api.get('/api/v1/chats/pinned', as(owner));
    expect(pinned.body.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    expect((await world.api.get('/api/v1/chats/archived/count', as(owner))).body).toBe(1);
    expect((await world.api.get('/api/v1/chats/', as(world.bob))).body.every((c: { id: string }) => !ids.includes(c.id))).toBe(true);
  });
});

describe('pin, archive, folder', () => {
  it('toggles pinned and archived, publishing each change', async () => {
    const chat = await newChat(world.api, world.alice);
    world.takeEvents();
    const pinned = await world.api.post(`/api/v1/chats/${chat.id}/pin`, undefined, as(world.alice));
    expect(pinned.body).toMatchObject({ id: chat.id, pinned: true });
    expect((await world.api.get(`/api/v1/chats/${chat.id}/pinned`, as(world.alice))).body).toBe(true);
    const unpinned = await world.api.post(`/api/v1/chats/${chat.id}/pin`, undefined, as(world.alice));
    expect(unpinned.body.pinned).toBe(false);
    expect(world.takeEvents().map((e) => e.event)).toEqual(['chat.pinned', 'chat.unpinned']);

    const archived = await world.api.post(`/api/v1/chats/${chat.id}/archive`, undefined, as(world.alice));
    expect(archived.body.archived).toBe(true);
    const list = await world.api.get('/api/v1/chats/archived', as(world.alice));
    expect(list.body.map((c: { id: string }) => c.id)).toContain(chat.id);
    const full = await world.api.get('/api/v1/chats/all/archived', as(world.alice));
    expect(full.body.find((c: { id: string }) => c.id === chat.id)).toMatchObject({ archived: true, chat: { title: 'A chat' } });
    const restored = await world.api.post(`/api/v1/chats/${chat.id}/archive`, undefined, as(world.alice));
    expect(restored.body.archived).toBe(false);
    expect(world.takeEvents().map((e) => [e.event, e.subject])).toEqual([
      ['chat.archived', { type: 'chat', id: chat.id }],
      ['chat.unarchived', { type: 'chat', id: chat.id }],
    ]);
  });

  it('archives and restores every chat of the user at once', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Archiver');
    await newChat(world.api, user);
    await newChat(world.api, user);
    world.takeEvents();
    expect((await world.api.post('/api/v1/chats/archive/all', undefined, as(user))).body).toBe(true);
    expect((await world.api.get('/api/v1/chats/archived/count', as(user))).body).toBe(2);
    expect((await world.api.get('/api/v1/chats/', as(user))).body).toEqual([]);
    expect((await world.api.post('/api/v1/chats/unarchive/all', undefined, as(user))).body).toBe(true);
    expect((await world.api.get('/api/v1/chats/archived/count', as(user))).body).toBe(0);
    expect(world.takeEvents().map((e) => [e.event, e.subject])).toEqual([
      ['chat.archived', { type: 'user', id: user.id }],
      ['chat.unarchived', { type: 'user', id: user.id }],
    ]);
  });

  it('filters, orders and pages the archived list, refusing unknown orderings (400)', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Archive Sorter');
    await world.api.post('/api/v1/chats/import', { chats: ['beta', 'alpha', 'gamma'].map((title, i) => ({ chat: { title }, updated_at: 100 + i })) }, as(user));
    await world.api.post('/api/v1/chats/archive/all', undefined, as(user));
    const titles = async (query: string) => (await world.api.get(`/api/v1/chats/archived${query}`, as(user))).body.map((c: { title: string }) => c.title);
    expect(await titles('')).toEqual(['gamma', 'alpha', 'beta']);
    expect(await titles('?order_by=title&direction=asc')).toEqual(['alpha', 'beta', 'gamma']);
    expect(await titles('?query=AL')).toEqual(['alpha']);
    expect(await titles('?page=2')).toEqual([]);
    expect((await world.api.get('/api/v1/chats/archived?order_by=chat&direction=asc', as(user))).status).toBe(400);
    expect((await world.api.get('/api/v1/chats/archived?order_by=title&direction=up', as(user))).status).toBe(400);
  });

  it('files a chat in a folder (unpinning and unarchiving it) and takes it out again', async () => {
    const folder = (await world.api.post('/api/v1/folders/', { name: `Box ${Date.now()}` }, as(world.alice))).body;
    const chat = await newChat(world.api, world.alice);
    await world.api.post(`/api/v1/chats/${chat.id}/pin`, undefined, as(world.alice));
    await world.api.post(`/api/v1/chats/${chat.id}/archive`, undefined, as(world.alice));
    world.takeEvents();
    const moved = await world.api.post(`/api/v1/chats/${chat.id}/folder`, { folder_id: folder.id }, as(world.alice));
    expect(moved.body).toMatchObject({ folder_id: folder.id, pinned: false, archived: false });
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.folder_updated', data: { folder_id: folder.id } }]);
    const inFolder = await world.api.get(`/api/v1/chats/folder/${folder.id}`, as(world.alice));
    expect(inFolder.body.map((c: { id: string }) => c.id)).toEqual([chat.id]);
    const listed = await world.api.get(`/api/v1/chats/folder/${folder.id}/list?page=1`, as(world.alice));
    expect(listed.body.map((c: { id: string }) => c.id)).toEqual([chat.id]);
    const out = await world.api.post(`/api/v1/chats/${chat.id}/folder`, { folder_id: null }, as(world.alice));
    expect(out.body.folder_id).toBeNull();
    expect((await world.api.post(`/api/v1/chats/${chat.id}/folder`, { folder_id: UNKNOWN }, as(world.alice))).status).toBe(404);
    expect((await world.api.get(`/api/v1/chats/folder/${UNKNOWN}`, as(world.alice))).status).toBe(404);
    expect((await world.api.get(`/api/v1/chats/folder/${folder.id}/list`, as(world.bob))).status).toBe(404);
  });

  it('refuses every per-chat route for a chat the user does not own as the reference does, the same for unknown chats', async () => {
    const chat = await newChat(world.api, world.alice);
    world.takeEvents();
    // chats.py, route by route; fork and unread (0.11.0) answer 404.
    const FAILED = { detail: ERROR.DEFAULT() };
    const routes: [string, string, unknown, number, unknown][] = [
      ['POST', 'pin', undefined, 401, FAILED],
      ['GET', 'pinned', undefined, 401, FAILED],
      ['POST', 'archive', undefined, 401, FAILED],
      ['POST', 'folder', { folder_id: null }, 401, FAILED],
      ['GET', 'tags', undefined, 401, NOT_FOUND],
      ['POST', 'tags', { name: 'x' }, 401, FAILED],
      ['DELETE', 'tags', { name: 'x' }, 401, NOT_FOUND],
      ['POST', 'share', undefined, 401, PROHIBITED],
      ['DELETE', 'share', undefined, 401, PROHIBITED],
      ['POST', 'clone', {}, 401, FAILED],
      ['POST', 'compact', undefined, 401, NOT_FOUND],
      ['POST', 'unread', undefined, 404, NOT_FOUND],
      ['POST', 'fork', undefined, 404, NOT_FOUND],
    ];
    for (const [method, path, body, status, detail] of routes) {
      for (const id of [chat.id, UNKNOWN]) {
        const res = await world.api.request(method, `/api/v1/chats/${id}/${path}`, body, as(world.bob));
        expect(res.status, `${method} ${path} ${id}`).toBe(status);
        expect(res.body, `${method} ${path} ${id}`).toEqual(detail);
      }
    }
    expect(world.takeEvents()).toEqual([]);
  });
});

describe('DELETE /api/v1/chats/{id} and /api/v1/chats/', () => {
  it('deletes the own chat with its messages and share snapshot', async () => {
    const chat = await newChat(world.api, world.alice, { history: chain(['u1', 'user', 'bye']) });
    const share = (await world.api.post(`/api/v1/chats/${chat.id}/share`, undefined, as(world.alice))).body.share_id;
    world.takeEvents();
    const res = await world.api.delete(`/api/v1/chats/${chat.id}`, as(world.alice));
    expect(res.status).toBe(200);
    expect(res.body).toBe(true);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.deleted', subject: { type: 'chat', id: chat.id }, data: { owner_id: world.alice.id } }]);
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.alice))).status).toBe(401);
    expect((await world.api.get(`/api/v1/chats/share/${share}`, as(world.alice))).status).toBe(401);
    const rows = await world.server.parley.core.db.selectFrom('chat_message').select('id').where('chat_id', '=', chat.id).execute();
    expect(rows).toEqual([]);
    expect((await world.api.delete(`/api/v1/chats/${chat.id}`, as(world.alice))).status).toBe(404);
  });

  it('lets admins delete any chat; users need chat.delete (401 otherwise) and their own chat', async () => {
    const chat = await newChat(world.api, world.alice);
    expect((await world.api.delete(`/api/v1/chats/${chat.id}`, as(world.bob))).status).toBe(404);
    await setDefaultPermission(world.api, world.admin, 'chat', 'delete', false);
    try {
      const refused = await world.api.delete(`/api/v1/chats/${chat.id}`, as(world.alice));
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual(PROHIBITED);
      expect((await world.api.delete('/api/v1/chats/', as(world.alice))).status).toBe(401);
    } finally {
      await setDefaultPermission(world.api, world.admin, 'chat', 'delete', true);
    }
    world.takeEvents();
    expect((await world.api.delete(`/api/v1/chats/${chat.id}`, as(world.admin))).body).toBe(true);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.deleted', actor: { id: world.admin.id }, data: { owner_id: world.alice.id } }]);
  });

  it('deletes every chat of the user, and nobody else’s', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Wiper');
    const mine = await newChat(world.api, user);
    await world.api.post(`/api/v1/chats/${mine.id}/tags`, { name: 'Work' }, as(user));
    const other = await newChat(world.api, world.alice);
    world.takeEvents();
    expect((await world.api.delete('/api/v1/chats/', as(user))).body).toBe(true);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.deleted_all', subject: { type: 'user', id: user.id } }]);
    expect((await world.api.get('/api/v1/chats/', as(user))).body).toEqual([]);
    expect((await world.api.get('/api/v1/chats/all/tags', as(user))).body).toEqual([]);
    expect((await world.api.get(`/api/v1/chats/${other.id}`, as(world.alice))).status).toBe(200);
  });

  it('goes with its owner when the user is deleted', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Leaver');
    const chat = await newChat(world.api, user, { history: chain(['u1', 'user', 'x']) });
    expect((await world.api.delete(`/api/v1/users/${user.id}`, as(world.admin))).status).toBe(200);
    const rows = await world.server.parley.core.db.selectFrom('chat').select('id').where('id', '=', chat.id).execute();
    expect(rows).toEqual([]);
  });
});

describe('messages', () => {
  it('updates a message’s content (owner or admin), keeping the rest of it', async () => {
    const chat = await newChat(world.api, world.alice, { history: chain(['u1', 'user', 'question'], ['a1', 'assistant', 'draft', { model: 'm' }]) });
    world.takeEvents();
    const res = await world.api.post(`/api/v1/chats/${chat.id}/messages/a1`, { content: 'final answer' }, as(world.alice));
    expect(res.status, res.text).toBe(200);
    expect(res.body.chat.history.messages.a1).toMatchObject({ content: 'final answer', model: 'm', parentId: 'u1', role: 'assistant' });
    expect(res.body.chat.history.currentId).toBe('a1');
    expect(world.takeEvents()).toMatchObject([{ event: 'message.updated', subject: { type: 'message', id: 'a1' }, data: { chat_id: chat.id, content_preview: 'final answer' } }]);
    expect((await world.api.post(`/api/v1/chats/${chat.id}/messages/a1`, { content: 'x' }, as(world.bob))).status).toBe(401);
    expect((await world.api.post(`/api/v1/chats/${chat.id}/messages/a1`, { content: 'by admin' }, as(world.admin))).status).toBe(200);
    expect((await world.api.post(`/api/v1/chats/${chat.id}/messages/a1`, {}, as(world.alice))).status).toBe(422);
  });

  it('deletes a message with its replies; their replies move up to its parent', async () => {
    const history = chain(['u1', 'user', 'one'], ['a1', 'assistant', 'two'], ['u2', 'user', 'three'], ['a2', 'assistant', 'four']);
    const chat = await newChat(world.api, world.alice, { history });
    world.takeEvents();
    const res = await world.api.delete(`/api/v1/chats/${chat.id}/messages/a1`, as(world.alice));
    expect(res.status, res.text).toBe(200);
    const messages = res.body.chat.history.messages;
    expect(Object.keys(messages).sort()).toEqual(['a2', 'u1']);
    expect(messages.u1.childrenIds).toEqual(['a2']);
    expect(messages.a2.parentId).toBe('u1');
    expect(res.body.chat.history.currentId).toBe('a2');
    expect(world.takeEvents()).toMatchObject([{ event: 'message.deleted', subject: { id: 'a1' }, data: { chat_id: chat.id } }]);
    const rows = await world.server.parley.core.db.selectFrom('chat_message').select(['id', 'parent_id']).where('chat_id', '=', chat.id).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'a2', parent_id: 'u1' },
      { id: 'u1', parent_id: null },
    ]);
  });

  it('stores message events the way the reference’s emitter saves them, and relays them live', async () => {
    const chat = await newChat(world.api, world.alice, { history: chain(['u1', 'user', 'q'], ['a1', 'assistant', 'Hel']) });
    const relayed: unknown[] = [];
    world.server.parley.services.chats.onRealtime((userId, payload) => {
      relayed.push({ userId, payload });
    });
    const send = (type: string, data: Record<string, unknown>) => world.api.post(`/api/v1/chats/${chat.id}/messages/a1/event`, { type, data }, as(world.alice));
    expect((await send('message', { content: 'lo' })).body).toBe(true);
    await send('status', { action: 'web_search', done: true });
    await send('source', { source: { name: 'doc' } });
    await send('files', { files: [{ id: 'f1' }] });
    const stored = (await world.api.get(`/api/v1/chats/${chat.id}`, as(world.alice))).body.chat.history.messages.a1;
    expect(stored).toMatchObject({ content: 'Hello', statusHistory: [{ action: 'web_search', done: true }], sources: [{ source: { name: 'doc' } }], files: [{ id: 'f1' }] });
    expect(relayed[0]).toEqual({ userId: world.alice.id, payload: { chat_id: chat.id, message_id: 'a1', data: { type: 'message', data: { content: 'lo' } } } });
    expect(world.takeEvents().map((e) => [e.event, e.data])).toContainEqual(['message.event_received', { chat_id: chat.id, event_type: 'message' }]);
    expect((await world.api.post(`/api/v1/chats/${chat.id}/messages/a1/event`, { type: 'x' }, as(world.alice))).status).toBe(422);
    expect((await send('message', {})).status).toBe(200);
    expect((await world.api.post(`/api/v1/chats/${chat.id}/messages/a1/event`, { type: 'x', data: {} }, as(world.bob))).status).toBe(401);
  });
});

describe('import, clone and fork', () => {
  it('imports chats with their record fields, dropping folders that are not the user’s', async () => {
    const folder = (await world.api.post('/api/v1/folders/', { name: `Import ${Date.now()}` }, as(world.bob))).body;
    world.takeEvents();
    const history = chain(['u1', 'user', 'a'], ['a1', 'assistant', 'b']);
    const res = await world.api.post(
      '/api/v1/chats/import',
      {
        chats: [
          { chat: { title: 'Imported', history }, meta: { tags: ['Old Tag'] }, pinned: true, current_message_id: 'u1', created_at: 10, updated_at: 20, folder_id: folder.id },
          { chat: { title: 'Second' }, folder_id: folder.id },
        ],
      },
      as(world.alice),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body[0]).toMatchObject({ title: 'Imported', pinned: true, current_message_id: 'u1', created_at: 10, updated_at: 20, folder_id: null, meta: { tags: ['old_tag'] } });
    expect(res.body[1].folder_id).toBeNull();
    const [event] = world.takeEvents();
    expect(event).toMatchObject({ event: 'chat.imported', subject: { type: 'chat.import', id: null }, data: { count: 2, chat_ids: res.body.map((c: { id: string }) => c.id) } });
    const tags = await world.api.get('/api/v1/chats/all/tags', as(world.alice));
    expect(tags.body).toContainEqual({ id: 'old_tag', name: 'Old Tag', user_id: world.alice.id, meta: null });
  });

  it('needs chat.import for users (403), and a list of chats (422)', async () => {
    await setDefaultPermission(world.api, world.admin, 'chat', 'import', false);
    try {
      const res = await world.api.post('/api/v1/chats/import', { chats: [{ chat: {} }] }, as(world.alice));
      expect(res.status).toBe(403);
      expect(res.body).toEqual(PROHIBITED);
      expect((await world.api.post(`/api/v1/chats/${UNKNOWN}/clone`, {}, as(world.alice))).status).toBe(403);
      expect((await world.api.post(`/api/v1/chats/${UNKNOWN}/fork`, undefined, as(world.alice))).status).toBe(403);
      expect((await world.api.post('/api/v1/chats/import', { chats: [{ chat: {} }] }, as(world.admin))).status).toBe(200);
    } finally {
      await setDefaultPermission(world.api, world.admin, 'chat', 'import', true);
    }
    expect((await world.api.post('/api/v1/chats/import', { chats: null }, as(world.alice))).status).toBe(422);
  });

  it('clones the own chat, titled "Clone of …" unless a title is given', async () => {
    const chat = await newChat(world.api, world.alice, { title: 'Original', history: chain(['u1', 'user', 'x'], ['a1', 'assistant', 'y']) });
    await world.api.post(`/api/v1/chats/${chat.id}/tags`, { name: 'keep' }, as(world.alice));
    world.takeEvents();
    const copy = await world.api.post(`/api/v1/chats/${chat.id}/clone`, {}, as(world.alice));
    expect(copy.status, copy.text).toBe(200);
    expect(copy.body).toMatchObject({ title: 'Clone of Original', meta: { tags: ['keep'] }, chat: { originalChatId: chat.id, branchPointMessageId: 'a1' } });
    expect(copy.body.id).not.toBe(chat.id);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.cloned', subject: { id: copy.body.id }, data: { original_chat_id: chat.id } }]);
    const named = await world.api.post(`/api/v1/chats/${chat.id}/clone`, { title: 'Mine' }, as(world.alice));
    expect(named.body.title).toBe('Mine');
  });

  it('forks the branch that ends at a message into a new chat', async () => {
    const history = chain(['u1', 'user', 'one'], ['a1', 'assistant', 'two'], ['u2', 'user', 'three'], ['a2', 'assistant', 'four']);
    history.messages.u1.childrenIds = ['a1', 'a1b'];
    history.messages.a1b = { id: 'a1b', parentId: 'u1', childrenIds: [], role: 'assistant', content: 'other', timestamp: 1 };
    const chat = await newChat(world.api, world.alice, { title: 'Tree', history }, { variables: { v: '1' } });
    world.takeEvents();
    const fork = await world.api.post(`/api/v1/chats/${chat.id}/fork`, { message_id: 'a1' }, as(world.alice));
    expect(fork.status, fork.text).toBe(200);
    expect(fork.body).toMatchObject({
      title: 'Tree (fork)',
      current_message_id: 'a1',
      variables: { v: '1' },
      meta: { forked_from: chat.id, forked_from_message_id: 'a1' },
      chat: { originalChatId: chat.id, branchPointMessageId: 'a1' },
    });
    expect(Object.keys(fork.body.chat.history.messages)).toEqual(['u1', 'a1']);
    expect(fork.body.chat.history.messages.u1.childrenIds).toEqual(['a1']);
    expect(fork.body.chat.messages.map((m: { id: string }) => m.id)).toEqual(['u1', 'a1']);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.forked', subject: { id: fork.body.id }, data: { original_chat_id: chat.id, forked_from_message_id: 'a1' } }]);
    const whole = await world.api.post(`/api/v1/chats/${chat.id}/fork`, null, as(world.alice));
    expect(Object.keys(whole.body.chat.history.messages)).toEqual(['u1', 'a1', 'u2', 'a2']);
  });

  it('refuses to fork an unknown message (404), an empty chat (400) or a chat still answering (409)', async () => {
    const chat = await newChat(world.api, world.alice, { history: chain(['u1', 'user', 'x']) });
    const unknown = await world.api.post(`/api/v1/chats/${chat.id}/fork`, { message_id: 'zz' }, as(world.alice));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'message not found' });
    const empty = await newChat(world.api, world.alice);
    const res = await world.api.post(`/api/v1/chats/${empty.id}/fork`, {}, as(world.alice));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'chat has no messages to fork' });
    const busy = await newChat(world.api, world.alice, { history: chain(['u1', 'user', 'x'], ['a1', 'assistant', '', { done: false }]) });
    const conflict = await world.api.post(`/api/v1/chats/${busy.id}/fork`, {}, as(world.alice));
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ detail: 'Wait for the current response to finish before forking.' });
  });
});

describe('read state', () => {
  it('marks chats unread and read again, with per-folder unread counts that include subfolders', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Reader');
    const top = (await world.api.post('/api/v1/folders/', { name: 'Top' }, as(user))).body;
    const sub = (await world.api.post('/api/v1/folders/', { name: 'Sub', parent_id: top.id }, as(user))).body;
    const loose = await newChat(world.api, user);
    const filed = await newChat(world.api, user, {}, { folder_id: sub.id });
    world.takeEvents();

    const unread = await world.api.post(`/api/v1/chats/${filed.id}/unread`, undefined, as(user));
    expect(unread.status, unread.text).toBe(200);
    expect(unread.body).toEqual({ chat_id: filed.id, last_read_at: 0, folder_id: sub.id, folder_unread_counts: { [top.id]: 1, [sub.id]: 1 } });
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.unread', subject: { type: 'chat', id: filed.id } }]);
    const folders = await world.api.get('/api/v1/folders/', as(user));
    expect(Object.fromEntries(folders.body.map((f: { id: string; unread_count: number }) => [f.id, f.unread_count]))).toEqual({ [top.id]: 1, [sub.id]: 1 });
    await world.api.post(`/api/v1/chats/${loose.id}/unread`, undefined, as(user));
    expect((await world.api.get('/api/v1/chats/', as(user))).body.find((c: { id: string }) => c.id === loose.id).last_read_at).toBe(0);

    const read = await world.api.post('/api/v1/chats/read', undefined, as(user));
    expect(read.body).toEqual({ updated_count: 2, folder_unread_counts: { [top.id]: 0, [sub.id]: 0 } });
    const [event] = world.takeEvents().filter((e) => e.event === 'chat.read');
    expect(event).toMatchObject({ subject: { type: 'user', id: user.id }, data: { updated_count: 2 } });
    const listed = (await world.api.get('/api/v1/chats/', as(user))).body.find((c: { id: string }) => c.id === loose.id);
    expect(listed.last_read_at).toBe(listed.updated_at);
  });
});

describe('activity (the pipeline’s task registry)', () => {
  it('marks busy chats with an answer still being written as active, and refuses to fork or compact them', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Busy');
    const busy = await newChat(world.api, user, { models: ['m'], history: chain(['u1', 'user', 'q'], ['a1', 'assistant', '', { done: false }]) });
    const idle = await newChat(world.api, user, { history: chain(['u1', 'user', 'q'], ['a1', 'assistant', 'done']) });
    world.server.parley.services.chats.trackActivity(async (ids) => new Set(ids.filter((id) => id === busy.id || id === idle.id)));
    try {
      const list = await world.api.get('/api/v1/chats/', as(user));
      expect(Object.fromEntries(list.body.map((c: { id: string; active: boolean }) => [c.id, c.active]))).toEqual({ [busy.id]: true, [idle.id]: false });
      const fork = await world.api.post(`/api/v1/chats/${idle.id}/fork`, {}, as(user));
      expect(fork.status).toBe(409);
      const compact = await world.api.post(`/api/v1/chats/${busy.id}/compact`, {}, as(user));
      expect(compact.status).toBe(409);
      expect(compact.body).toEqual({ detail: 'Wait for the current response to finish before compacting.' });
    } finally {
      world.server.parley.services.chats.trackActivity(async () => new Set());
    }
  });

  it('lists a folder’s unread chats first by default', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Unread First');
    const box = (await world.api.post('/api/v1/folders/', { name: 'Inbox' }, as(user))).body;
    const older = await newChat(world.api, user, {}, { folder_id: box.id });
    clock.advance(5);
    const newer = await newChat(world.api, user, {}, { folder_id: box.id });
    await world.api.post(`/api/v1/chats/${older.id}/unread`, undefined, as(user));
    const ids = async (query: string) => (await world.api.get(`/api/v1/chats/folder/${box.id}/list${query}`, as(user))).body.map((c: { id: string }) => c.id);
    expect(await ids('')).toEqual([older.id, newer.id]);
    expect(await ids('?sort_by=updated_at')).toEqual([newer.id, older.id]);
  });
});

describe('statistics', () => {
  it('reports usage per chat and exports message statistics without text', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Statistician');
    const history = chain(['u1', 'user', 'four'], ['a1', 'assistant', 'sixsix', { model: 'm1', annotation: { rating: 1, tags: ['good'] } }]);
    const chat = await newChat(world.api, user, { history });
    await newChat(world.api, user);
    const usage = await world.api.get('/api/v1/chats/stats/usage', as(user));
    expect(usage.status, usage.text).toBe(200);
    expect(usage.body.total).toBe(2);
    expect(usage.body.items).toEqual([
      {
        id: chat.id,
        models: { m1: 1 },
        message_count: 2,
        history_models: { m1: 1 },
        history_message_count: 2,
        history_user_message_count: 1,
        history_assistant_message_count: 1,
        average_response_time: 1,
        average_user_message_content_length: 4,
        average_assistant_message_content_length: 6,
        tags: [],
        last_message_at: 1_700_000_001,
        updated_at: chat.updated_at,
        created_at: chat.created_at,
      },
    ]);
    const exported = await world.api.get(`/api/v1/chats/stats/export/${chat.id}`, as(user));
    expect(exported.status, exported.text).toBe(200);
    expect(exported.body.chat.history).toEqual({
      currentId: 'a1',
      messages: {
        u1: { id: 'u1', role: 'user', model: null, timestamp: 1_700_000_000, content_length: 4, token_count: null, rating: null, tags: null },
        a1: { id: 'a1', role: 'assistant', model: 'm1', timestamp: 1_700_000_001, content_length: 6, token_count: null, rating: 1, tags: ['good'] },
      },
    });
    expect(exported.body.stats).toMatchObject({ message_count: 2, history_models: { m1: 1 }, average_response_time: 1 });
    const page = await world.api.get('/api/v1/chats/stats/export', as(user));
    expect(page.body).toMatchObject({ type: 'chats', total: 2, page: 1 });
    expect(page.body.items).toHaveLength(2);
    const stream = await world.api.get('/api/v1/chats/stats/export?stream=true', as(user));
    expect(stream.headers.get('content-type')).toContain('application/x-ndjson');
    expect(stream.text.trim().split('\n').map((line) => JSON.parse(line).id).sort()).toEqual(page.body.items.map((i: { id: string }) => i.id).sort());
    expect((await world.api.get(`/api/v1/chats/stats/export/${chat.id}`, as(world.bob))).status).toBe(404);
    expect((await world.api.get(`/api/v1/chats/stats/export/${chat.id}`, as(world.admin))).status).toBe(200);
  });

  it('streams every chat of the user as NDJSON from /all', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Exporter');
    const a = await newChat(world.api, user, { title: 'one' });
    const b = await newChat(world.api, user, { title: 'two' });
    await world.api.post(`/api/v1/chats/${a.id}/archive`, undefined, as(user));
    const res = await world.api.get('/api/v1/chats/all', as(user));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = res.text.trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((c) => c.id).sort()).toEqual([a.id, b.id].sort());
    expect(lines[0]).toHaveProperty('chat');
  });

  it('gives admins every chat and another user’s list; users get 401', async () => {
    const chat = await newChat(world.api, world.bob, { title: 'Bob only' });
    const all = await world.api.get('/api/v1/chats/all/db', as(world.admin));
    expect(all.status).toBe(200);
    expect(all.body.map((c: { id: string }) => c.id)).toContain(chat.id);
    const list = await world.api.get(`/api/v1/chats/list/user/${world.bob.id}?query=bob`, as(world.admin));
    expect(list.body.map((c: { id: string }) => c.id)).toEqual([chat.id]);
    for (const path of ['/api/v1/chats/all/db', `/api/v1/chats/list/user/${world.bob.id}`, '/api/v1/chats/config']) {
      const res = await world.api.get(path, as(world.bob));
      expect(res.status, path).toBe(401);
      expect(res.body).toEqual({ detail: ERROR.ACCESS_PROHIBITED });
    }
  });
});

describe('GET/POST /api/v1/chats/config', () => {
  it('reads and saves the compaction settings, bounding the numbers', async () => {
    expect((await world.api.get('/api/v1/chats/config', as(world.admin))).body).toEqual({
      CONTEXT_COMPACTION_MODEL: '',
      ENABLE_CONTEXT_COMPACTION: false,
      CONTEXT_COMPACTION_TOKEN_THRESHOLD: 80000,
      CONTEXT_COMPACTION_TOKEN_CAP: 80000,
      CONTEXT_COMPACTION_RETENTION_PERCENTAGE: 40,
      CONTEXT_COMPACTION_PROMPT_TEMPLATE: '',
    });
    const res = await world.api.post(
      '/api/v1/chats/config',
      { ENABLE_CONTEXT_COMPACTION: false, CONTEXT_COMPACTION_TOKEN_THRESHOLD: 0, CONTEXT_COMPACTION_RETENTION_PERCENTAGE: 90, CONTEXT_COMPACTION_PROMPT_TEMPLATE: 'Sum up' },
      as(world.admin),
    );
    expect(res.body).toEqual({
      CONTEXT_COMPACTION_MODEL: '',
      ENABLE_CONTEXT_COMPACTION: false,
      CONTEXT_COMPACTION_TOKEN_THRESHOLD: 1,
      CONTEXT_COMPACTION_TOKEN_CAP: 1,
      CONTEXT_COMPACTION_RETENTION_PERCENTAGE: 50,
      CONTEXT_COMPACTION_PROMPT_TEMPLATE: 'Sum up',
    });
    expect((await world.api.post('/api/v1/chats/config', { ENABLE_CONTEXT_COMPACTION: true }, as(world.admin))).status).toBe(422);
    expect((await world.api.post('/api/v1/chats/config', res.body, as(world.alice))).status).toBe(401);
    await world.api.post(
      '/api/v1/chats/config',
      { ENABLE_CONTEXT_COMPACTION: false, CONTEXT_COMPACTION_TOKEN_THRESHOLD: 80000, CONTEXT_COMPACTION_PROMPT_TEMPLATE: '' },
      as(world.admin),
    );
  });
});

describe('with ENABLE_ADMIN_CHAT_ACCESS off', () => {
  const restricted = useServer({ fakes: fakeModel(), env: { ENABLE_ADMIN_CHAT_ACCESS: 'false' }, admin: 'Restricted Admin', users: { owner: ['user', 'Owner Chats'] } });

  it('refuses the admin every way into another user’s chat: read, message edit or deletion, a share grant, a continuation (reference #31413)', async () => {
    const chat = await newChat(restricted.api, restricted.owner, { history: chain(['u1', 'user', 'the question'], ['a1', 'assistant', 'the private answer']) });
    const admin = as(restricted.admin);
    expect((await restricted.api.get(`/api/v1/chats/${chat.id}`, admin)).status).toBe(401);
    const edited = await restricted.api.post(`/api/v1/chats/${chat.id}/messages/a1`, { content: 'edited' }, admin);
    expect(edited.status).toBe(401);
    const deleted = await restricted.api.delete(`/api/v1/chats/${chat.id}/messages/missing`, admin);
    expect(deleted.status).toBe(401);
    expect(deleted.text).not.toContain('the private answer');
    const grant = { access_grants: [{ principal_type: 'user', principal_id: restricted.admin.id, permission: 'read' }] };
    expect((await restricted.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, grant, admin)).status).toBe(404);
    const before = restricted.model.requests.length;
    const turn = await restricted.api.post(
      '/api/chat/completions',
      { model: 'fake-model', chat_id: chat.id, id: 'a2', parent_id: 'a1', user_message: { id: 'u2', parentId: 'a1', role: 'user', content: 'mine now' }, messages: [] },
      admin,
    );
    expect(turn.status).toBe(404);
    expect(restricted.model.requests.length).toBe(before);

    const stored = (await restricted.api.get(`/api/v1/chats/${chat.id}`, as(restricted.owner))).body.chat.history;
    expect(Object.keys(stored.messages).sort()).toEqual(['a1', 'u1']);
    expect(stored.messages.a1.content).toBe('the private answer');
    // The owner keeps every route.
    expect((await restricted.api.post(`/api/v1/chats/${chat.id}/messages/a1`, { content: 'edited' }, as(restricted.owner))).status).toBe(200);
    expect((await restricted.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, grant, as(restricted.owner))).status).toBe(200);
  });
});
