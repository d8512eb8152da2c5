import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { destroyServer, startServer, type TestServer } from '../../helpers/server.js';
import { type Account, addUser, signup } from '../../helpers/users.js';
import { NOT_FOUND, PROHIBITED, UNKNOWN, chain, newChat, recordEvents, setDefaultPermission } from './fixtures.js';

let server: TestServer;
let admin: Account;
let alice: Account;
let bob: Account;
let carol: Account;
let recorder: ReturnType<typeof recordEvents>;

beforeAll(async () => {
  server = await startServer();
  recorder = recordEvents(server);
  admin = await signup(server.api, 'Share Admin');
  alice = await addUser(server.api, admin, 'user', 'Alice Shares');
  bob = await addUser(server.api, admin, 'user', 'Bob Reads');
  carol = await addUser(server.api, admin, 'user', 'Carol Outside');
});

afterAll(async () => {
  await destroyServer(server);
});

beforeEach(() => {
  recorder.take();
});

const api = () => server.api;
const as = (account: Account) => ({ token: account.token });

async function sharedChat(title = 'Shared') {
  const chat = await newChat(api(), alice, { title, history: chain(['u1', 'user', 'what is shared'], ['a1', 'assistant', 'this']) });
  const res = await api().post(`/api/v1/chats/${chat.id}/share`, undefined, as(alice));
  expect(res.status, res.text).toBe(200);
  recorder.take();
  return { chat, shareId: res.body.share_id as string };
}

describe('POST /api/v1/chats/{id}/share', () => {
  it('snapshots the chat behind a share id, and refreshes the same snapshot when shared again', async () => {
    const chat = await newChat(api(), alice, { title: 'Version 1' });
    recorder.take();
    const first = await api().post(`/api/v1/chats/${chat.id}/share`, undefined, as(alice));
    expect(first.status).toBe(200);
    const shareId = first.body.share_id;
    expect(shareId).toEqual(expect.any(String));
    expect(recorder.take()).toMatchObject([{ event: 'chat.shared', subject: { type: 'chat', id: chat.id }, data: { share_id: shareId } }]);

    await api().post(`/api/v1/chats/${chat.id}`, { chat: { title: 'Version 2' } }, as(alice));
    const stale = await api().get(`/api/v1/chats/share/${shareId}`, as(alice));
    expect(stale.body).toMatchObject({ id: shareId, share_id: shareId, user_id: alice.id, title: 'Version 1', archived: false, pinned: false, meta: {} });

    recorder.take();
    const again = await api().post(`/api/v1/chats/${chat.id}/share`, undefined, as(alice));
    expect(again.body.share_id).toBe(shareId);
    expect(recorder.take()).toMatchObject([{ event: 'chat.shared', data: { share_id: shareId, updated: true } }]);
    expect((await api().get(`/api/v1/chats/share/${shareId}`, as(alice))).body.title).toBe('Version 2');
  });

  it('needs chat.share for users (401)', async () => {
    const chat = await newChat(api(), alice);
    await setDefaultPermission(api(), admin, 'chat', 'share', false);
    try {
      const res = await api().post(`/api/v1/chats/${chat.id}/share`, undefined, as(alice));
      expect(res.status).toBe(401);
      expect(res.body).toEqual(PROHIBITED);
    } finally {
      await setDefaultPermission(api(), admin, 'chat', 'share', true);
    }
    expect((await api().get(`/api/v1/chats/${chat.id}`, as(alice))).body.share_id).toBeNull();
  });

  it('lists the user’s shares with the chat id as id', async () => {
    const user = await addUser(server.api, admin, 'user', 'Lister of shares');
    const chat = await newChat(api(), user, { title: 'Listed' });
    const shareId = (await api().post(`/api/v1/chats/${chat.id}/share`, undefined, as(user))).body.share_id;
    const res = await api().get('/api/v1/chats/shared', as(user));
    expect(res.body).toEqual([{ id: chat.id, chat_id: chat.id, title: 'Listed', share_id: shareId, updated_at: expect.any(Number), created_at: expect.any(Number) }]);
    expect((await api().get('/api/v1/chats/shared?query=nothing', as(user))).body).toEqual([]);
  });
});

describe('GET /api/v1/chats/share/{share_id}', () => {
  it('shows the snapshot to its owner and admins; others get 401, unknown ids 404', async () => {
    const { shareId } = await sharedChat();
    expect((await api().get(`/api/v1/chats/share/${shareId}`, as(admin))).status).toBe(200);
    const other = await api().get(`/api/v1/chats/share/${shareId}`, as(bob));
    expect(other.status).toBe(401);
    expect(other.body).toEqual(PROHIBITED);
    const anonymous = await api().get(`/api/v1/chats/share/${shareId}`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ detail: ERROR.INVALID_TOKEN });
    const unknown = await api().get(`/api/v1/chats/share/${UNKNOWN}`, as(alice));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(NOT_FOUND);
  });

  it('lets admins open any chat by its own id there too', async () => {
    const chat = await newChat(api(), alice, { title: 'By id' });
    const res = await api().get(`/api/v1/chats/share/${chat.id}`, as(admin));
    expect(res.body).toMatchObject({ id: chat.id, title: 'By id' });
    expect((await api().get(`/api/v1/chats/share/${chat.id}`, as(bob))).status).toBe(404);
  });
});

describe('share access grants', () => {
  it('lets a granted user read the snapshot and the chat, and clone it', async () => {
    const { chat, shareId } = await sharedChat('Granted');
    const res = await api().post(
      `/api/v1/chats/shared/${chat.id}/access/update`,
      { access_grants: [{ principal_type: 'user', principal_id: bob.id, permission: 'read' }] },
      as(alice),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: chat.id, title: 'Granted' });
    const grants = await api().get(`/api/v1/chats/shared/${chat.id}/access`, as(alice));
    expect(grants.body).toEqual([{ id: expect.any(String), principal_type: 'user', principal_id: bob.id, permission: 'read' }]);

    expect((await api().get(`/api/v1/chats/share/${shareId}`, as(bob))).body.title).toBe('Granted');
    expect((await api().get(`/api/v1/chats/${chat.id}`, as(bob))).body.title).toBe('Granted');
    expect((await api().get(`/api/v1/chats/share/${shareId}`, as(carol))).status).toBe(401);
    expect((await api().get(`/api/v1/chats/${chat.id}`, as(carol))).status).toBe(404);

    recorder.take();
    const copy = await api().post(`/api/v1/chats/${shareId}/clone/shared`, undefined, as(bob));
    expect(copy.status, copy.text).toBe(200);
    expect(copy.body).toMatchObject({ user_id: bob.id, title: 'Clone of Granted', chat: { originalChatId: shareId, branchPointMessageId: 'a1' } });
    expect(recorder.names()).toEqual([]);
    const refused = await api().post(`/api/v1/chats/${shareId}/clone/shared`, undefined, as(carol));
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual(PROHIBITED);
    expect((await api().post(`/api/v1/chats/${UNKNOWN}/clone/shared`, undefined, as(bob))).status).toBe(404);
  });

  it('drops public and open grants users may not give; admins may give them, and an open link needs no sign-in', async () => {
    const { chat, shareId } = await sharedChat('Public?');
    const wide = [
      { principal_type: 'user', principal_id: '*', permission: 'read' },
      { principal_type: 'anyone', principal_id: '*', permission: 'read' },
    ];
    const byUser = await api().post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: wide }, as(alice));
    expect(byUser.status).toBe(200);
    expect((await api().get(`/api/v1/chats/shared/${chat.id}/access`, as(alice))).body).toEqual([]);
    expect((await api().get(`/api/v1/chats/share/${shareId}`)).status).toBe(401);

    await setDefaultPermission(api(), admin, 'sharing', 'public_chats', true);
    try {
      await api().post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: wide }, as(alice));
      const kept = (await api().get(`/api/v1/chats/shared/${chat.id}/access`, as(alice))).body;
      expect(kept.map((g: { principal_type: string }) => g.principal_type)).toEqual(['user']);
      expect((await api().get(`/api/v1/chats/share/${shareId}`, as(carol))).status).toBe(200);
    } finally {
      await setDefaultPermission(api(), admin, 'sharing', 'public_chats', false);
    }

    const byAdmin = await api().post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: wide }, as(admin));
    expect(byAdmin.status).toBe(200);
    expect((await api().get(`/api/v1/chats/shared/${chat.id}/access`, as(admin))).body).toHaveLength(2);
    const open = await api().get(`/api/v1/chats/share/${shareId}`);
    expect(open.status).toBe(200);
    expect(open.body.title).toBe('Public?');
  });

  it('refuses malformed grants (400, 422) and unknown principals (400), changing nothing', async () => {
    const { chat } = await sharedChat();
    await api().post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: bob.id, permission: 'read' }] }, as(alice));
    for (const body of [{ access_grants: null }, {}, { access_grants: 'x' }]) {
      expect((await api().post(`/api/v1/chats/shared/${chat.id}/access/update`, body, as(alice))).status).toBe(422);
    }
    const bad = await api().post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: [{ principal_type: 'robot', principal_id: 'x', permission: 'read' }] }, as(alice));
    expect(bad.status).toBe(400);
    const unknown = await api().post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: UNKNOWN, permission: 'read' }] }, as(alice));
    expect(unknown.status).toBe(400);
    expect((await api().get(`/api/v1/chats/shared/${chat.id}/access`, as(alice))).body.map((g: { principal_id: string }) => g.principal_id)).toEqual([bob.id]);
  });

  it('is for the chat’s owner and admins (404 for others and unknown chats)', async () => {
    const { chat } = await sharedChat();
    for (const id of [chat.id, UNKNOWN]) {
      expect((await api().get(`/api/v1/chats/shared/${id}/access`, as(bob))).status).toBe(404);
      expect((await api().post(`/api/v1/chats/shared/${id}/access/update`, { access_grants: [] }, as(bob))).status).toBe(404);
    }
    expect((await api().get(`/api/v1/chats/shared/${chat.id}/access`, as(admin))).status).toBe(200);
  });
});

describe('unsharing', () => {
  it('removes the snapshot and its grants', async () => {
    const { chat, shareId } = await sharedChat();
    await api().post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: bob.id, permission: 'read' }] }, as(alice));
    recorder.take();
    const res = await api().delete(`/api/v1/chats/${chat.id}/share`, as(alice));
    expect(res.body).toBe(true);
    expect(recorder.take()).toMatchObject([{ event: 'chat.unshared', subject: { type: 'chat', id: chat.id }, data: { share_id: shareId } }]);
    expect((await api().get(`/api/v1/chats/${chat.id}`, as(alice))).body.share_id).toBeNull();
    expect((await api().get(`/api/v1/chats/share/${shareId}`, as(bob))).status).toBe(404);
    expect((await api().get(`/api/v1/chats/${chat.id}`, as(bob))).status).toBe(404);
  });

  it('unshares every chat of the user at once', async () => {
    const user = await addUser(server.api, admin, 'user', 'Unsharer');
    const a = await newChat(api(), user);
    const b = await newChat(api(), user);
    await api().post(`/api/v1/chats/${a.id}/share`, undefined, as(user));
    await api().post(`/api/v1/chats/${b.id}/share`, undefined, as(user));
    const untouched = await sharedChat('Not theirs');
    recorder.take();
    expect((await api().delete('/api/v1/chats/share/all', as(user))).body).toBe(true);
    const [event] = recorder.take();
    expect(event).toMatchObject({ event: 'chat.unshared', subject: { type: 'user', id: user.id }, data: { count: 2 } });
    expect((event.data.chat_ids as string[]).sort()).toEqual([a.id, b.id].sort());
    expect((await api().get('/api/v1/chats/shared', as(user))).body).toEqual([]);
    expect((await api().get(`/api/v1/chats/${a.id}`, as(user))).body.share_id).toBeNull();
    expect((await api().get(`/api/v1/chats/share/${untouched.shareId}`, as(alice))).status).toBe(200);
  });
});
