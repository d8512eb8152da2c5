import { afterEach, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { startRedis } from '../../helpers/redis.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import type { TestServer } from '../../helpers/server.js';
import { eventuallyPasses } from '../../helpers/eventually.js';
import { NoteEditor, paragraph } from './editor.js';

/**
 * Collaborative editing over the socket (socket/main.py `ydoc:*`): editors of one
 * note converge, the merged document is saved into the note, readers cannot
 * write, malformed updates are dropped, and acknowledged edits survive a stop.
 */
const world = useServer({ admin: 'Collab Admin', users: { owner: ['user', 'Olive Owner'], writer: ['user', 'Walt Writer'], reader: ['user', 'Rita Reader'], stranger: ['user', 'Stan Stranger'] } });

const editors: NoteEditor[] = [];
afterEach(() => {
  for (const editor of editors.splice(0)) editor.close();
});

async function sharedNote(owner: Account): Promise<string> {
  const res = await world.api.post(
    '/api/v1/notes/create',
    {
      title: 'Together',
      access_grants: [
        { principal_type: 'user', principal_id: world.writer.id, permission: 'write' },
        { principal_type: 'user', principal_id: world.reader.id, permission: 'read' },
      ],
    },
    { token: owner.token },
  );
  expect(res.status, res.text).toBe(200);
  return res.body.id;
}

async function editor(account: Account, noteId: string, server: TestServer = world.server): Promise<NoteEditor> {
  const opened = await NoteEditor.open(server.url, account.token, noteId);
  editors.push(opened);
  return opened;
}

const savedMarkdown = async (noteId: string) => (await world.api.get(`/api/v1/notes/${noteId}`, { token: world.owner.token })).body.data?.content?.md;

describe('collaborative editing', () => {
  it('converges two concurrent editors and saves the merged document into the note', async () => {
    const noteId = await sharedNote(world.owner);
    const [alice, walt] = [await editor(world.owner, noteId), await editor(world.writer, noteId)];
    expect(await alice.join()).toBe(true);
    expect(await walt.join()).toBe(true);
    await eventuallyPasses(() => expect(alice.received.some((r) => r.event === 'ydoc:user:joined')).toBe(true));

    // Both type before either hears the other.
    alice.type('Alpha from Olive');
    walt.type('Beta from Walt');
    expect(await alice.settled()).toEqual([true]);
    expect(await walt.settled()).toEqual([true]);
    await eventuallyPasses(() => expect(alice.text()).toBe(walt.text()));
    expect(alice.text()).toContain('Alpha from Olive');
    expect(alice.text()).toContain('Beta from Walt');

    await eventuallyPasses(async () => {
      const md = await savedMarkdown(noteId);
      expect(md).toContain('Alpha from Olive');
      expect(md).toContain('Beta from Walt');
    });
    const note = (await world.api.get(`/api/v1/notes/${noteId}`, { token: world.owner.token })).body;
    expect(note.data.content.html).toMatch(/<p>(Alpha from Olive|Beta from Walt)<\/p><p>(Alpha from Olive|Beta from Walt)<\/p>/);
    expect(note.data.content.json.type).toBe('doc');

    // A third editor joining later gets the merged state.
    const late = await editor(world.admin, noteId);
    expect(await late.join()).toBe(true);
    expect(late.text()).toBe(alice.text());
  });

  it('refuses updates from a reader and joins from a stranger; drops malformed updates', async () => {
    const noteId = await sharedNote(world.owner);
    const owner = await editor(world.owner, noteId);
    await owner.join();
    owner.type('Kept');
    await owner.settled();
    await eventuallyPasses(async () => expect(await savedMarkdown(noteId)).toBe('Kept'));

    const reader = await editor(world.reader, noteId);
    expect(await reader.join()).toBe(true);
    expect(reader.text()).toContain('Kept');
    reader.type('Vandalism');
    expect(await reader.settled()).toEqual([false]);

    const stranger = await editor(world.stranger, noteId);
    expect(await stranger.join()).toBe(false);
    const sneaky = await stranger.socket.timeout(5000).emitWithAck('ydoc:document:update', { document_id: `note:${noteId}`, update: [0, 0] });
    expect(sneaky).toBe(false);

    for (const update of [[1, 2, 3, 255, 7], 'not bytes', [300], []]) {
      expect(await owner.socket.timeout(5000).emitWithAck('ydoc:document:update', { document_id: `note:${noteId}`, update })).toBe(false);
    }
    // The same document under its `note_` spelling is the same note, with the same checks.
    expect(await reader.socket.timeout(5000).emitWithAck('ydoc:document:update', { document_id: `note_${noteId}`, update: [0, 0] })).toBe(false);

    await new Promise((r) => setTimeout(r, 700));
    expect(owner.received.filter((r) => r.event === 'ydoc:document:update')).toEqual([]);
    expect(await savedMarkdown(noteId)).toBe('Kept');
    const fresh = await editor(world.writer, noteId);
    expect(await fresh.join()).toBe(true);
    expect(fresh.text()).toBe('<paragraph>Kept</paragraph>');
  });

  it('relays awareness with the signed-in user id, and tells the others who left', async () => {
    const noteId = await sharedNote(world.owner);
    const [owner, writer] = [await editor(world.owner, noteId), await editor(world.writer, noteId)];
    await owner.join();
    await writer.join();
    expect(await writer.socket.timeout(5000).emitWithAck('ydoc:awareness:update', { document_id: `note:${noteId}`, user_id: 'spoofed', update: [123, 125] })).toBe(true);
    await eventuallyPasses(() => expect(owner.received.find((r) => r.event === 'ydoc:awareness:update')?.data).toEqual({ document_id: `note:${noteId}`, user_id: world.writer.id, update: [123, 125] }));
    expect(await writer.socket.timeout(5000).emitWithAck('ydoc:document:leave', { document_id: `note:${noteId}` })).toBe(true);
    await eventuallyPasses(() => expect(owner.received.find((r) => r.event === 'ydoc:user:left')?.data).toEqual({ document_id: `note:${noteId}`, user_id: world.writer.id }));
    // Having left, it may no longer push updates.
    expect(await writer.socket.timeout(5000).emitWithAck('ydoc:document:update', { document_id: `note:${noteId}`, update: [0, 0] })).toBe(false);
  });

  it('sends HTTP saves to the readers that joined the note (join-note), not to others', async () => {
    const noteId = await sharedNote(world.owner);
    const [reader, stranger] = [await editor(world.reader, noteId), await editor(world.stranger, noteId)];
    const heard: Record<string, any[]> = { reader: [], stranger: [] };
    reader.socket.on('note-events', (note: any) => heard.reader.push(note));
    stranger.socket.on('note-events', (note: any) => heard.stranger.push(note));
    await reader.socket.timeout(5000).emitWithAck('join-note', { auth: { token: world.reader.token }, note_id: noteId });
    await stranger.socket.timeout(5000).emitWithAck('join-note', { auth: { token: world.stranger.token }, note_id: noteId });
    expect((await world.api.post(`/api/v1/notes/${noteId}/update`, { title: 'Renamed' }, { token: world.owner.token })).status).toBe(200);
    await eventuallyPasses(() => expect(heard.reader.map((n) => n.title)).toEqual(['Renamed']));
    expect(heard.stranger).toEqual([]);
  });

  it('saves the last edit at once when its editor disconnects', async () => {
    const noteId = await sharedNote(world.owner);
    const owner = await editor(world.owner, noteId);
    await owner.join();
    owner.type('Typed then gone');
    await owner.settled();
    owner.close();
    await eventuallyPasses(async () => expect(await savedMarkdown(noteId)).toBe('Typed then gone'), 400);
  });

  it('keeps acknowledged edits that were never saved across a restart', async () => {
    const noteId = await sharedNote(world.owner);
    const owner = await editor(world.owner, noteId);
    await owner.join();
    owner.type('Before the crash');
    await owner.settled();
    await eventuallyPasses(async () => expect(await savedMarkdown(noteId)).toBe('Before the crash'));
    // As after a kill -9 between storing an update and saving the note: an update stored, no save to come.
    const { notes } = world.server.parley.services;
    const late = new Y.Doc();
    Y.applyUpdate(late, Y.encodeStateAsUpdate(owner.doc));
    const before = Y.encodeStateVector(late);
    late.getXmlFragment('prosemirror').insert(1, [paragraph('Stored, never saved')]);
    await notes.appendUpdate(noteId, Y.encodeStateAsUpdate(late, before));
    await world.restart();
    await eventuallyPasses(async () => expect(await savedMarkdown(noteId)).toBe('Before the crash\n\nStored, never saved'));
    const back = await editor(world.writer, noteId);
    expect(await back.join()).toBe(true);
    expect(back.text()).toBe('<paragraph>Before the crash</paragraph><paragraph>Stored, never saved</paragraph>');
  });
});

describe('collaborative editing across instances sharing Redis', () => {
  const multi = useServer({
    fakes: {
      start: async () => {
        const redis = await startRedis();
        return { redis: { url: redis.url, close: async () => redis.stop() } };
      },
      env: ({ redis }) => ({ REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'parley-notes-test' }),
    },
    admin: 'Redis Notes Admin',
    users: { writer: ['user', 'Redis Writer'] },
  });

  it('sends updates to editors on the other instance and saves the merged note', async () => {
    const second = await multi.addInstance();
    const note = await multi.api.post(
      '/api/v1/notes/create',
      { title: 'Across', access_grants: [{ principal_type: 'user', principal_id: multi.writer.id, permission: 'write' }] },
      { token: multi.admin.token },
    );
    const here = await NoteEditor.open(multi.server.url, multi.admin.token, note.body.id);
    const there = await NoteEditor.open(second.url, multi.writer.token, note.body.id);
    editors.push(here, there);
    expect(await here.join()).toBe(true);
    expect(await there.join()).toBe(true);
    here.type('From the first');
    there.type('From the second');
    await here.settled();
    await there.settled();
    await eventuallyPasses(() => {
      expect(here.text()).toBe(there.text());
      expect(here.text()).toContain('From the first');
      expect(here.text()).toContain('From the second');
    });
    await eventuallyPasses(async () => {
      const md = (await multi.api.get(`/api/v1/notes/${note.body.id}`, { token: multi.admin.token })).body.data?.content?.md;
      expect(md).toContain('From the first');
      expect(md).toContain('From the second');
    });
  });
});
