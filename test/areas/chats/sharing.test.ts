import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { addUser, as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { NOT_FOUND, PROHIBITED, UNKNOWN, chain, newChat, setDefaultPermission } from './fixtures.js';

const world = useServer({
  admin: 'Share Admin',
  users: { alice: ['user', 'Alice Shares'], bob: ['user', 'Bob Reads'], carol: ['user', 'Carol Outside'] },
  freshEvents: true,
});

async function sharedChat(title = 'Shared') {
  const chat = await newChat(world.api, world.alice, { title, history: chain(['u1', 'user', 'what is shared'], ['a1', 'assistant', 'this']) });
  const res = await world.api.post(`/api/v1/chats/${chat.id}/share`, undefined, as(world.alice));
  expect(res.status, res.text).toBe(200);
  world.takeEvents();
  return { chat, shareId: res.body.share_id as string };
}

describe('POST /api/v1/chats/{id}/share', () => {
  it('snapshots the chat behind a share id, and refreshes the same snapshot when shared again', async () => {
    const chat = await newChat(world.api, world.alice, { title: 'Version 1' });
    world.takeEvents();
    const first = await world.api.post(`/api/v1/chats/${chat.id}/share`, undefined, as(world.alice));
    expect(first.status).toBe(200);
    const shareId = first.body.share_id;
    expect(shareId).toEqual(expect.any(String));
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.shared', subject: { type: 'chat', id: chat.id }, data: { share_id: shareId } }]);

    await world.api.post(`/api/v1/chats/${chat.id}`, { chat: { title: 'Version 2' } }, as(world.alice));
    const stale = await world.api.get(`/api/v1/chats/share/${shareId}`, as(world.alice));
    expect(stale.body).toMatchObject({ id: shareId, share_id: shareId, user_id: world.alice.id, title: 'Version 1', archived: false, pinned: false, meta: {} });

    world.takeEvents();
    const again = await world.api.post(`/api/v1/chats/${chat.id}/share`, undefined, as(world.alice));
    expect(again.body.share_id).toBe(shareId);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.shared', data: { share_id: shareId, updated: true } }]);
    expect((await world.api.get(`/api/v1/chats/share/${shareId}`, as(world.alice))).body.title).toBe('Version 2');
  });

  it('needs chat.share for users (401)', async () => {
    const chat = await newChat(world.api, world.alice);
    await setDefaultPermission(world.api, world.admin, 'chat', 'share', false);
    try {
      const res = await world.api.post(`/api/v1/chats/${chat.id}/share`, undefined, as(world.alice));
      expect(res.status).toBe(401);
      expect(res.body).toEqual(PROHIBITED);
    } finally {
      await setDefaultPermission(world.api, world.admin, 'chat', 'share', true);
    }
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.alice))).body.share_id).toBeNull();
  });

  it('lists the user’s shares with the chat id as id', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Lister of shares');
    const chat = await newChat(world.api, user, { title: 'Listed' });
    const shareId = (await world.api.post(`/api/v1/chats/${chat.id}/share`, undefined, as(user))).body.share_id;
    const res = await world.api.get('/api/v1/chats/shared', as(user));
    expect(res.body).toEqual([{ id: chat.id, chat_id: chat.id, title: 'Listed', share_id: shareId, updated_at: expect.any(Number), created_at: expect.any(Number) }]);
    expect((await world.api.get('/api/v1/chats/shared?query=nothing', as(user))).body).toEqual([]);
  });
});

describe('GET /api/v1/chats/share/{share_id}', () => {
  it('shows the snapshot to its owner and admins; others get 401, unknown ids 401 NOT_FOUND', async () => {
    const { shareId } = await sharedChat();
    expect((await world.api.get(`/api/v1/chats/share/${shareId}`, as(world.admin))).status).toBe(200);
    const other = await world.api.get(`/api/v1/chats/share/${shareId}`, as(world.bob));
    expect(other.status).toBe(401);
    expect(other.body).toEqual(PROHIBITED);
    const anonymous = await world.api.get(`/api/v1/chats/share/${shareId}`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ detail: ERROR.INVALID_TOKEN });
    const unknown = await world.api.get(`/api/v1/chats/share/${UNKNOWN}`, as(world.alice));
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual(NOT_FOUND);
  });

  it('lets admins open any chat by its own id there too', async () => {
    const chat = await newChat(world.api, world.alice, { title: 'By id' });
    const res = await world.api.get(`/api/v1/chats/share/${chat.id}`, as(world.admin));
    expect(res.body).toMatchObject({ id: chat.id, title: 'By id' });
    expect((await world.api.get(`/api/v1/chats/share/${chat.id}`, as(world.bob))).status).toBe(401);
  });
});

describe('share access grants', () => {
  it('lets a granted user read the snapshot and the chat, and clone it', async () => {
    const { chat, shareId } = await sharedChat('Granted');
    const res = await world.api.post(
      `/api/v1/chats/shared/${chat.id}/access/update`,
      { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] },
      as(world.alice),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: chat.id, title: 'Granted' });
    const grants = await world.api.get(`/api/v1/chats/shared/${chat.id}/access`, as(world.alice));
    expect(grants.body).toEqual([{ id: expect.any(String), principal_type: 'user', principal_id: world.bob.id, permission: 'read' }]);

    expect((await world.api.get(`/api/v1/chats/share/${shareId}`, as(world.bob))).body.title).toBe('Granted');
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.bob))).body.title).toBe('Granted');
    expect((await world.api.get(`/api/v1/chats/share/${shareId}`, as(world.carol))).status).toBe(401);
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.carol))).status).toBe(401);

    world.takeEvents();
    const copy = await world.api.post(`/api/v1/chats/${shareId}/clone/shared`, undefined, as(world.bob));
    expect(copy.status, copy.text).toBe(200);
    expect(copy.body).toMatchObject({ user_id: world.bob.id, title: 'Clone of Granted', chat: { originalChatId: shareId, branchPointMessageId: 'a1' } });
    expect(world.takeEvents().map((e) => e.event)).toEqual([]);
    const refused = await world.api.post(`/api/v1/chats/${shareId}/clone/shared`, undefined, as(world.carol));
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual(PROHIBITED);
    expect((await world.api.post(`/api/v1/chats/${UNKNOWN}/clone/shared`, undefined, as(world.bob))).status).toBe(401);
  });

  it('drops public and open grants users may not give; admins may give them, and an open link needs no sign-in', async () => {
    const { chat, shareId } = await sharedChat('Public?');
    const wide = [
      { principal_type: 'user', principal_id: '*', permission: 'read' },
      { principal_type: 'anyone', principal_id: '*', permission: 'read' },
    ];
    const byUser = await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: wide }, as(world.alice));
    expect(byUser.status).toBe(200);
    expect((await world.api.get(`/api/v1/chats/shared/${chat.id}/access`, as(world.alice))).body).toEqual([]);
    expect((await world.api.get(`/api/v1/chats/share/${shareId}`)).status).toBe(401);

    await setDefaultPermission(world.api, world.admin, 'sharing', 'public_chats', true);
    try {
      await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: wide }, as(world.alice));
      const kept = (await world.api.get(`/api/v1/chats/shared/${chat.id}/access`, as(world.alice))).body;
      expect(kept.map((g: { principal_type: string }) => g.principal_type)).toEqual(['user']);
      expect((await world.api.get(`/api/v1/chats/share/${shareId}`, as(world.carol))).status).toBe(200);
    } finally {
      await setDefaultPermission(world.api, world.admin, 'sharing', 'public_chats', false);
    }

    const byAdmin = await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: wide }, as(world.admin));
    expect(byAdmin.status).toBe(200);
    expect((await world.api.get(`/api/v1/chats/shared/${chat.id}/access`, as(world.admin))).body).toHaveLength(2);
    const open = await world.api.get(`/api/v1/chats/share/${shareId}`);
    expect(open.status).toBe(200);
    expect(open.body.title).toBe('Public?');
  });

  it('refuses malformed grants (400, 422) and unknown principals (400), changing nothing', async () => {
    const { chat } = await sharedChat();
    await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] }, as(world.alice));
    for (const body of [{ access_grants: null }, {}, { access_grants: 'x' }]) {
      expect((await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, body, as(world.alice))).status).toBe(422);
    }
    const bad = await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: [{ principal_type: 'robot', principal_id: 'x', permission: 'read' }] }, as(world.alice));
    expect(bad.status).toBe(400);
    const unknown = await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: UNKNOWN, permission: 'read' }] }, as(world.alice));
    expect(unknown.status).toBe(400);
    expect((await world.api.get(`/api/v1/chats/shared/${chat.id}/access`, as(world.alice))).body.map((g: { principal_id: string }) => g.principal_id)).toEqual([world.bob.id]);
  });

  it('is for the chat’s owner and admins (404 for others and unknown chats)', async () => {
    const { chat } = await sharedChat();
    for (const id of [chat.id, UNKNOWN]) {
      expect((await world.api.get(`/api/v1/chats/shared/${id}/access`, as(world.bob))).status).toBe(404);
      expect((await world.api.post(`/api/v1/chats/shared/${id}/access/update`, { access_grants: [] }, as(world.bob))).status).toBe(404);
    }
    expect((await world.api.get(`/api/v1/chats/shared/${chat.id}/access`, as(world.admin))).status).toBe(200);
  });
});

describe('unsharing', () => {
  it('removes the snapshot and its grants', async () => {
    const { chat, shareId } = await sharedChat();
    await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] }, as(world.alice));
    world.takeEvents();
    const res = await world.api.delete(`/api/v1/chats/${chat.id}/share`, as(world.alice));
    expect(res.body).toBe(true);
    expect(world.takeEvents()).toMatchObject([{ event: 'chat.unshared', subject: { type: 'chat', id: chat.id }, data: { share_id: shareId } }]);
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.alice))).body.share_id).toBeNull();
    expect((await world.api.get(`/api/v1/chats/share/${shareId}`, as(world.bob))).status).toBe(401);
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.bob))).status).toBe(401);
  });

  it('unshares every chat of the user at once', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Unsharer');
    const a = await newChat(world.api, user);
    const b = await newChat(world.api, user);
    await world.api.post(`/api/v1/chats/${a.id}/share`, undefined, as(user));
    await world.api.post(`/api/v1/chats/${b.id}/share`, undefined, as(user));
    const untouched = await sharedChat('Not theirs');
    world.takeEvents();
    expect((await world.api.delete('/api/v1/chats/share/all', as(user))).body).toBe(true);
    const [event] = world.takeEvents();
    expect(event).toMatchObject({ event: 'chat.unshared', subject: { type: 'user', id: user.id }, data: { count: 2 } });
    expect((event.data.chat_ids as string[]).sort()).toEqual([a.id, b.id].sort());
    expect((await world.api.get('/api/v1/chats/shared', as(user))).body).toEqual([]);
    expect((await world.api.get(`/api/v1/chats/${a.id}`, as(user))).body.share_id).toBeNull();
    expect((await world.api.get(`/api/v1/chats/share/${untouched.shareId}`, as(world.alice))).status).toBe(200);
  });
});
