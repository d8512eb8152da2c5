import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { useServer } from '../../helpers/world.js';

/**
 * Notes over HTTP (routers/notes.py): create, get, update (merging data and
 * meta), list, search, pins per user, grants, delete, and who may do what.
 */
const world = useServer({
  admin: 'Note Admin',
  users: { owner: ['user', 'Olive Owner'], reader: ['user', 'Rita Reader'], writer: ['user', 'Walt Writer'], stranger: ['user', 'Stan Stranger'] },
  freshEvents: true,
});

const content = (md: string) => ({ content: { md, html: `<p>${md}</p>`, json: null } });
let shared: { id: string };

beforeAll(async () => {
  const res = await world.api.post(
    '/api/v1/notes/create',
    {
      title: 'Shared plans',
      data: content('x'.repeat(1500)),
      access_grants: [
        { principal_type: 'user', principal_id: world.reader.id, permission: 'read' },
        { principal_type: 'user', principal_id: world.writer.id, permission: 'write' },
      ],
    },
    { token: world.owner.token },
  );
  expect(res.status, res.text).toBe(200);
  shared = res.body;
});

describe('records', () => {
  it('creates, reads and updates a note, merging data and meta key by key', async () => {
    const created = await world.api.post('/api/v1/notes/create', { title: 'Groceries', data: content('milk'), meta: { color: 'red' } }, { token: world.owner.token });
    expect(created.status, created.text).toBe(200);
    expect(created.body).toMatchObject({ user_id: world.owner.id, title: 'Groceries', is_pinned: false, access_grants: [], meta: { color: 'red' } });
    expect(created.body.created_at).toBeGreaterThan(1e18); // nanoseconds, as the reference
    expect(world.takeEvents().map((e) => [e.event, e.data])).toEqual([['note.created', { title: 'Groceries' }]]);

    const updated = await world.api.post(`/api/v1/notes/${created.body.id}/update`, { title: 'Groceries!', data: { files: [] }, meta: { size: 2 } }, { token: world.owner.token });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ title: 'Groceries!', data: { ...content('milk'), files: [] }, meta: { color: 'red', size: 2 } });
    expect(world.takeEvents().map((e) => e.event)).toEqual(['note.updated']);

    const got = await world.api.get(`/api/v1/notes/${created.body.id}`, { token: world.owner.token });
    expect(got.body).toMatchObject({ title: 'Groceries!', write_access: true, is_pinned: false });
  });

  it('lists own and shared notes with cut content, and searches words in title and text', async () => {
    const list = await world.api.get('/api/v1/notes/', { token: world.reader.token });
    expect(list.status).toBe(200);
    const item = list.body.find((n: any) => n.id === shared.id);
    expect(item).toMatchObject({ title: 'Shared plans', user: { id: world.owner.id, name: 'Olive Owner' } });
    expect(item.data.content.md).toHaveLength(1000);
    expect(item.data.content.html).toBeUndefined();
    expect((await world.api.get('/api/v1/notes/?page=1', { token: world.stranger.token })).body).toEqual([]);

    await world.api.post('/api/v1/notes/create', { title: 'To-do list', data: content('buy a lamp') }, { token: world.writer.token });
    const found = await world.api.get('/api/v1/notes/search?query=todo%20lamp', { token: world.writer.token });
    expect(found.status, found.text).toBe(200);
    expect(found.body.items.map((n: any) => n.title)).toEqual(['To-do list']);
    expect(found.body.total).toBe(1);
    // Write access is the search's default; readers ask for read.
    expect((await world.api.get('/api/v1/notes/search?query=plans', { token: world.reader.token })).body.total).toBe(0);
    const readable = await world.api.get('/api/v1/notes/search?query=plans&permission=read&view_option=shared', { token: world.reader.token });
    expect(readable.body.items.map((n: any) => n.id)).toEqual([shared.id]);
    expect(readable.body.items[0].user).toMatchObject({ id: world.owner.id });
  });

  it('pins per user; readers may pin; the pinned list follows access', async () => {
    const pin = await world.api.post(`/api/v1/notes/${shared.id}/pin`, {}, { token: world.reader.token });
    expect(pin.status, pin.text).toBe(200);
    expect(pin.body.is_pinned).toBe(true);
    expect(world.takeEvents().map((e) => e.event)).toEqual(['note.pinned']);
    expect((await world.api.get('/api/v1/notes/pinned', { token: world.reader.token })).body.map((n: any) => n.id)).toEqual([shared.id]);
    expect((await world.api.get('/api/v1/notes/pinned', { token: world.owner.token })).body).toEqual([]);
    expect((await world.api.get(`/api/v1/notes/${shared.id}`, { token: world.reader.token })).body).toMatchObject({ is_pinned: true, write_access: false });

    const unpin = await world.api.post(`/api/v1/notes/${shared.id}/pin`, {}, { token: world.reader.token });
    expect(unpin.body.is_pinned).toBe(false);
    expect(world.takeEvents().map((e) => e.event)).toEqual(['note.unpinned']);
    expect((await world.api.get('/api/v1/notes/pinned', { token: world.reader.token })).body).toEqual([]);
  });

  it('answers as the reference to readers, strangers, missing notes and users without features.notes', async () => {
    const before = (await world.api.get(`/api/v1/notes/${shared.id}`, { token: world.owner.token })).body;
    const forbidden = { status: 403, body: { detail: ERROR.DEFAULT() } };
    expect(await world.api.post(`/api/v1/notes/${shared.id}/update`, { title: 'Hijacked' }, { token: world.reader.token })).toMatchObject(forbidden);
    expect(await world.api.delete(`/api/v1/notes/${shared.id}/delete`, { token: world.reader.token })).toMatchObject(forbidden);
    expect(await world.api.post(`/api/v1/notes/${shared.id}/access/update`, { access_grants: [] }, { token: world.reader.token })).toMatchObject(forbidden);
    expect(await world.api.get(`/api/v1/notes/${shared.id}`, { token: world.stranger.token })).toMatchObject(forbidden);
    expect(await world.api.post(`/api/v1/notes/${shared.id}/pin`, {}, { token: world.stranger.token })).toMatchObject(forbidden);
    expect(await world.api.get('/api/v1/notes/no-such-note', { token: world.owner.token })).toMatchObject({ status: 404, body: { detail: ERROR.NOT_FOUND } });
    expect((await world.api.post('/api/v1/notes/create', { data: {} }, { token: world.owner.token })).status).toBe(422);
    const after = (await world.api.get(`/api/v1/notes/${shared.id}`, { token: world.owner.token })).body;
    expect(after).toEqual(before);
    // The writer may edit; the admin may read anything.
    expect((await world.api.post(`/api/v1/notes/${shared.id}/update`, { title: 'Shared plans' }, { token: world.writer.token })).status).toBe(200);
    expect((await world.api.get(`/api/v1/notes/${shared.id}`, { token: world.admin.token })).body.write_access).toBe(true);

    const perms = (await world.api.get('/api/v1/users/default/permissions', { token: world.admin.token })).body;
    await world.api.post('/api/v1/users/default/permissions', { ...perms, features: { ...perms.features, notes: false } }, { token: world.admin.token });
    try {
      expect(await world.api.get('/api/v1/notes/', { token: world.owner.token })).toMatchObject({ status: 401, body: { detail: ERROR.UNAUTHORIZED } });
      expect((await world.api.get('/api/v1/notes/', { token: world.admin.token })).status).toBe(200);
    } finally {
      await world.api.post('/api/v1/users/default/permissions', perms, { token: world.admin.token });
    }
  });

  it('replaces grants and deletes', async () => {
    const note = (await world.api.post('/api/v1/notes/create', { title: 'Short-lived' }, { token: world.owner.token })).body;
    const granted = await world.api.post(
      `/api/v1/notes/${note.id}/access/update`,
      { access_grants: [{ principal_type: 'user', principal_id: world.stranger.id, permission: 'read' }] },
      { token: world.owner.token },
    );
    expect(granted.status, granted.text).toBe(200);
    expect(granted.body.access_grants).toMatchObject([{ principal_id: world.stranger.id, permission: 'read' }]);
    expect((await world.api.get(`/api/v1/notes/${note.id}`, { token: world.stranger.token })).status).toBe(200);
    world.takeEvents();
    expect((await world.api.delete(`/api/v1/notes/${note.id}/delete`, { token: world.owner.token })).body).toBe(true);
    expect(world.takeEvents().map((e) => e.event)).toEqual(['note.deleted']);
    expect((await world.api.get(`/api/v1/notes/${note.id}`, { token: world.owner.token })).status).toBe(404);
  });

  it("keeps each user's hidden chats about a note (0.11.0), out of the chat list", async () => {
    const first = await world.api.get(`/api/v1/notes/${shared.id}/chat`, { token: world.reader.token });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ user_id: world.reader.id, title: 'Chat', meta: { internal: true, type: 'note', note_id: shared.id } });
    expect(first.body.chat.params.system).toContain(`You are chatting with note ${shared.id}.`);
    expect(first.body.chat.id).toBe(first.body.id);
    expect(world.takeEvents().map((e) => [e.event, e.data])).toEqual([['note.chat_linked', { chat_id: first.body.id }]]);
    // The latest chat is reused; POST starts another.
    expect((await world.api.get(`/api/v1/notes/${shared.id}/chat`, { token: world.reader.token })).body.id).toBe(first.body.id);
    const second = await world.api.post(`/api/v1/notes/${shared.id}/chat`, {}, { token: world.reader.token });
    expect(second.status, second.text).toBe(200);
    const listed = await world.api.get(`/api/v1/notes/${shared.id}/chats`, { token: world.reader.token });
    expect(listed.body.map((c: any) => c.id).sort()).toEqual([first.body.id, second.body.id].sort());
    expect((await world.api.get(`/api/v1/notes/${shared.id}/chats`, { token: world.owner.token })).body).toEqual([]);
    expect((await world.api.get('/api/v1/chats/', { token: world.reader.token })).body).toEqual([]);
    expect((await world.api.get(`/api/v1/notes/${shared.id}/chat`, { token: world.stranger.token })).status).toBe(403);
    expect((await world.api.post(`/api/v1/notes/${shared.id}/chat`, {}, { token: world.stranger.token })).status).toBe(403);
  });

  it('advertises notes in the frontend config', async () => {
    const config = await world.api.get('/api/config', { token: world.owner.token });
    expect(config.body.features.enable_notes).toBe(true);
  });
});
