import { describe, expect, it } from 'vitest';
import { uploadFile } from '../../helpers/files.js';
import { as } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';

/**
 * Channels over HTTP (routers/channels.py): standard channels by admins with
 * grants, group and direct-message channels by members, messages with threads,
 * reactions, pins, unread counts, incoming webhooks, and the reference's refusals.
 */
const world = useServer({
  env: { ENABLE_CHANNELS: 'true', ENABLE_OPENAI_API: 'false', ENABLE_OLLAMA_API: 'false' },
  admin: 'Channel Admin',
  users: { alice: ['user', 'Alice'], bob: ['user', 'Bob'], carol: ['user', 'Carol'] },
  freshEvents: true,
});

const base = '/api/v1/channels';

async function standardChannel(grants: { principal_id: string; permission: 'read' | 'write' }[]) {
  const res = await world.api.post(
    `${base}/create`,
    { name: 'General', description: 'all hands', access_grants: grants.map((g) => ({ principal_type: 'user', ...g })) },
    as(world.admin),
  );
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function post(channelId: string, account: typeof world.alice, body: Record<string, unknown>) {
  const res = await world.api.post(`${base}/${channelId}/messages/post`, body, as(account));
  expect(res.status, res.text).toBe(200);
  return res.body;
}

describe('standard channels', () => {
  it('are created by admins only, named in lower case, read and written as their grants say', async () => {
    expect((await world.api.post(`${base}/create`, { name: 'Nope' }, as(world.alice))).status).toBe(401);
    const channel = await standardChannel([
      { principal_id: world.alice.id, permission: 'write' },
      { principal_id: world.bob.id, permission: 'read' },
    ]);
    expect(channel).toMatchObject({ name: 'general', type: null, description: 'all hands', user_id: world.admin.id });
    expect(channel.access_grants).toHaveLength(2);
    expect(world.takeEvents().map((e) => e.event)).toContain('channel.created');

    const forAlice = await world.api.get(`${base}/${channel.id}`, as(world.alice));
    expect(forAlice.body).toMatchObject({ id: channel.id, write_access: true, is_manager: false, user_count: 2 });
    expect((await world.api.get(`${base}/${channel.id}`, as(world.bob))).body.write_access).toBe(false);
    expect((await world.api.get(`${base}/${channel.id}`, as(world.carol))).status).toBe(403);
    expect((await world.api.get(`${base}/nope`, as(world.alice))).status).toBe(404);

    expect((await world.api.get(`${base}/`, as(world.alice))).body.map((c: any) => c.id)).toContain(channel.id);
    expect((await world.api.get(`${base}/`, as(world.carol))).body.map((c: any) => c.id)).not.toContain(channel.id);

    // Bob reads but may not post or react; Carol may not even read.
    const hello = await post(channel.id, world.alice, { content: 'hello all' });
    expect((await world.api.post(`${base}/${channel.id}/messages/post`, { content: 'hi' }, as(world.bob))).status).toBe(403);
    expect((await world.api.post(`${base}/${channel.id}/messages/${hello.id}/reactions/add`, { name: 'thumbsup' }, as(world.bob))).status).toBe(403);
    expect((await world.api.get(`${base}/${channel.id}/messages`, as(world.carol))).status).toBe(403);
    expect((await world.api.get(`${base}/${channel.id}/messages/${hello.id}`, as(world.carol))).status).toBe(403);
    expect((await world.api.get(`${base}/${channel.id}/messages`, as(world.bob))).body.map((m: any) => m.content)).toEqual(['hello all']);

    // Members: the readers the grants name (and the creator).
    const members = await world.api.get(`${base}/${channel.id}/members`, as(world.bob));
    expect(members.body.total).toBe(3);
    expect(members.body.users.map((u: any) => u.name).sort()).toEqual(['Alice', 'Bob', 'Channel Admin']);

    // Only the creator (or an admin) changes or deletes it.
    expect((await world.api.post(`${base}/${channel.id}/update`, { name: 'x' }, as(world.alice))).status).toBe(403);
    const renamed = await world.api.post(`${base}/${channel.id}/update`, { name: 'renamed', description: null }, as(world.admin));
    expect(renamed.body).toMatchObject({ name: 'renamed', description: null });
    expect(renamed.body.access_grants).toHaveLength(2);
  });

  it('pages messages newest first, with thread reply counts, reactions and pins', async () => {
    const channel = await standardChannel([{ principal_id: world.alice.id, permission: 'write' }, { principal_id: world.bob.id, permission: 'write' }]);
    const first = await post(channel.id, world.alice, { content: 'first' });
    for (let i = 0; i < 5; i++) await post(channel.id, world.bob, { content: `m${i}` });
    const page = await world.api.get(`${base}/${channel.id}/messages?skip=1&limit=3`, as(world.alice));
    expect(page.body.map((m: any) => m.content)).toEqual(['m3', 'm2', 'm1']);

    // A thread: replies are not top-level messages; the parent counts them.
    await post(channel.id, world.bob, { content: 'reply one', parent_id: first.id });
    const last = await post(channel.id, world.alice, { content: 'reply two', parent_id: first.id, reply_to_id: first.id });
    const listed = (await world.api.get(`${base}/${channel.id}/messages?limit=100`, as(world.alice))).body;
    expect(listed).toHaveLength(6);
    const parent = listed.find((m: any) => m.id === first.id);
    expect(parent).toMatchObject({ reply_count: 2, latest_reply_at: last.created_at, user: { id: world.alice.id, name: 'Alice', role: 'user' } });
    const thread = (await world.api.get(`${base}/${channel.id}/messages/${first.id}/thread`, as(world.bob))).body;
    expect(thread.map((m: any) => m.content)).toEqual(['reply two', 'reply one', 'first']);
    expect(thread[0].reply_to_message).toMatchObject({ id: first.id, content: 'first' });

    // A parent from another channel is refused.
    const other = await standardChannel([{ principal_id: world.alice.id, permission: 'write' }]);
    expect((await world.api.post(`${base}/${other.id}/messages/post`, { content: 'x', parent_id: first.id }, as(world.alice))).status).toBe(400);
    expect((await world.api.get(`${base}/${other.id}/messages/${first.id}`, as(world.alice))).status).toBe(400);

    // Reactions: grouped by name; adding twice counts once.
    for (const account of [world.alice, world.bob, world.bob]) {
      expect((await world.api.post(`${base}/${channel.id}/messages/${first.id}/reactions/add`, { name: 'wave' }, as(account))).body).toBe(true);
    }
    const reacted = (await world.api.get(`${base}/${channel.id}/messages/${first.id}`, as(world.alice))).body;
    expect(reacted.reactions).toEqual([{ name: 'wave', count: 2, users: [{ id: world.alice.id, name: 'Alice' }, { id: world.bob.id, name: 'Bob' }] }]);
    await world.api.post(`${base}/${channel.id}/messages/${first.id}/reactions/remove`, { name: 'wave' }, as(world.bob));
    expect((await world.api.get(`${base}/${channel.id}/messages/${first.id}`, as(world.alice))).body.reactions[0].count).toBe(1);
    expect((await world.api.post(`${base}/${channel.id}/messages/${first.id}/reactions/add`, { name: '' }, as(world.alice))).status).toBe(422);

    // Pins.
    const pinned = await world.api.post(`${base}/${channel.id}/messages/${first.id}/pin`, { is_pinned: true }, as(world.bob));
    expect(pinned.body).toMatchObject({ is_pinned: true, pinned_by: world.bob.id });
    expect((await world.api.get(`${base}/${channel.id}/messages/pinned`, as(world.alice))).body.map((m: any) => m.id)).toEqual([first.id]);
    await world.api.post(`${base}/${channel.id}/messages/${first.id}/pin`, { is_pinned: false }, as(world.bob));
    expect((await world.api.get(`${base}/${channel.id}/messages/pinned`, as(world.alice))).body).toEqual([]);
    const events = world.takeEvents().map((e) => e.event);
    for (const name of ['message.created', 'message.reaction_added', 'message.reaction_removed', 'message.pinned', 'message.unpinned']) expect(events).toContain(name);
  });

  it('lets authors edit and delete their messages (and writers in standard channels); deleting takes the thread', async () => {
    const channel = await standardChannel([{ principal_id: world.alice.id, permission: 'write' }, { principal_id: world.bob.id, permission: 'read' }]);
    const mine = await post(channel.id, world.alice, { content: 'draft', data: { files: [] }, meta: { a: 1 } });
    expect((await world.api.post(`${base}/${channel.id}/messages/${mine.id}/update`, { content: 'hack' }, as(world.bob))).status).toBe(403);
    const edited = await world.api.post(`${base}/${channel.id}/messages/${mine.id}/update`, { content: 'final', meta: { b: 2 } }, as(world.alice));
    expect(edited.body).toMatchObject({ content: 'final', meta: { a: 1, b: 2 } });
    const reply = await post(channel.id, world.alice, { content: 'in thread', parent_id: mine.id });
    expect((await world.api.delete(`${base}/${channel.id}/messages/${mine.id}/delete`, as(world.bob))).status).toBe(403);
    expect((await world.api.delete(`${base}/${channel.id}/messages/${mine.id}/delete`, as(world.alice))).body).toBe(true);
    expect((await world.api.get(`${base}/${channel.id}/messages/${mine.id}`, as(world.alice))).status).toBe(404);
    expect((await world.api.get(`${base}/${channel.id}/messages/${reply.id}`, as(world.alice))).status).toBe(404);
  });

  it('refuses a message over the size limit and changes nothing', async () => {
    const channel = await standardChannel([{ principal_id: world.alice.id, permission: 'write' }]);
    const res = await world.api.post(`${base}/${channel.id}/messages/post`, { content: 'x'.repeat(100_001) }, as(world.alice));
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect((await world.api.get(`${base}/${channel.id}/messages`, as(world.alice))).body).toEqual([]);
    expect((await world.api.post(`${base}/${channel.id}/messages/post`, { nope: 1 }, as(world.alice))).status).toBe(422);
  });

  it('deletes a channel with its messages: every route answers 404 afterwards', async () => {
    const channel = await standardChannel([{ principal_id: world.alice.id, permission: 'write' }]);
    const message = await post(channel.id, world.alice, { content: 'soon gone' });
    expect((await world.api.delete(`${base}/${channel.id}/delete`, as(world.alice))).status).toBe(403);
    expect((await world.api.delete(`${base}/${channel.id}/delete`, as(world.admin))).body).toBe(true);
    expect((await world.api.get(`${base}/${channel.id}/messages`, as(world.admin))).status).toBe(404);
    expect((await world.api.get(`${base}/${channel.id}/messages/${message.id}`, as(world.admin))).status).toBe(404);
    expect((await world.api.get(`${base}/list`, as(world.admin))).body.map((c: any) => c.id)).not.toContain(channel.id);
    expect(world.takeEvents().map((e) => e.event)).toContain('channel.deleted');
  });
});

describe('group and direct-message channels', () => {
  it('belong to their members; the creator manages the membership', async () => {
    const created = await world.api.post(`${base}/create`, { type: 'group', name: 'Team', user_ids: [world.bob.id] }, as(world.alice));
    expect(created.status, created.text).toBe(200);
    const id = created.body.id;
    const full = (await world.api.get(`${base}/${id}`, as(world.bob))).body;
    expect(full).toMatchObject({ type: 'group', write_access: true, user_count: 2, is_manager: false });
    expect(full.user_ids.sort()).toEqual([world.alice.id, world.bob.id].sort());
    expect((await world.api.get(`${base}/${id}`, as(world.alice))).body.is_manager).toBe(true);
    // Not even an admin reads a group they are not in.
    expect((await world.api.get(`${base}/${id}/messages`, as(world.admin))).status).toBe(403);
    expect((await world.api.get(`${base}/${id}`, as(world.carol))).status).toBe(403);

    expect((await world.api.post(`${base}/${id}/update/members/add`, { user_ids: [world.carol.id] }, as(world.bob))).status).toBe(403);
    const added = await world.api.post(`${base}/${id}/update/members/add`, { user_ids: [world.carol.id, world.bob.id] }, as(world.alice));
    expect(added.body.map((m: any) => m.user_id)).toEqual([world.carol.id]);
    expect((await world.api.post(`${base}/${id}/update/members/add`, { user_ids: ['no-such-user'] }, as(world.alice))).status).toBe(400);
    await post(id, world.carol, { content: 'thanks for adding me' });
    expect((await world.api.post(`${base}/${id}/update/members/remove`, { user_ids: [world.carol.id] }, as(world.alice))).body).toBe(1);
    expect((await world.api.post(`${base}/${id}/messages/post`, { content: 'still here?' }, as(world.carol))).status).toBe(403);
    const events = world.takeEvents().map((e) => e.event);
    expect(events).toEqual(expect.arrayContaining(['channel.created', 'channel.member_added', 'channel.member_removed']));
  });

  it('counts unread messages by others until the member reads them', async () => {
    const id = (await world.api.post(`${base}/create`, { type: 'group', name: 'Unread', user_ids: [world.bob.id] }, as(world.alice))).body.id;
    await post(id, world.alice, { content: 'one' });
    await post(id, world.alice, { content: 'two' });
    await post(id, world.bob, { content: 'mine' });
    const forBob = (await world.api.get(`${base}/`, as(world.bob))).body.find((c: any) => c.id === id);
    expect(forBob.unread_count).toBe(2);
    expect(forBob.last_message_at).toBeGreaterThan(0);
    expect((await world.api.get(`${base}/${id}`, as(world.alice))).body.unread_count).toBe(1);
  });

  it('opens one direct-message channel per pair, found again from either side', async () => {
    const opened = await world.api.get(`${base}/users/${world.carol.id}`, as(world.bob));
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body.type).toBe('dm');
    const again = await world.api.post(`${base}/create`, { type: 'dm', user_ids: [world.bob.id] }, as(world.carol));
    expect(again.body.id).toBe(opened.body.id);
    const listed = (await world.api.get(`${base}/`, as(world.carol))).body.find((c: any) => c.id === opened.body.id);
    expect(listed.users.map((u: any) => u.name).sort()).toEqual(['Bob', 'Carol']);
    expect((await world.api.get(`${base}/${opened.body.id}/members`, as(world.alice))).status).toBe(403);

    // Hiding it leaves the list; a new message brings it back.
    expect((await world.api.post(`${base}/${opened.body.id}/members/active`, { is_active: false }, as(world.carol))).body).toBe(true);
    expect((await world.api.get(`${base}/`, as(world.carol))).body.map((c: any) => c.id)).not.toContain(opened.body.id);
    await post(opened.body.id, world.bob, { content: 'ping' });
    expect((await world.api.get(`${base}/`, as(world.carol))).body.map((c: any) => c.id)).toContain(opened.body.id);
    expect((await world.api.get(`${base}/users/no-such-user`, as(world.bob))).status).toBe(400);
  });
});

describe('files in messages', () => {
  it('lets the channel read a file its poster may read, and lends nothing else', async () => {
    const id = (await world.api.post(`${base}/create`, { type: 'group', name: 'Files', user_ids: [world.bob.id] }, as(world.alice))).body.id;
    const report = await uploadFile(world.server.url, world.alice, 'report.txt', 'quarterly numbers', 'text/plain', { query: '?process=false' });
    const secret = await uploadFile(world.server.url, world.carol, 'secret.txt', 'not for bob', 'text/plain', { query: '?process=false' });
    expect(report.status).toBe(200);
    expect((await world.api.get(`/api/v1/files/${report.body.id}/content`, as(world.bob))).status).toBe(404);
    // Alice shares her file; Bob names Carol's file, which he cannot read.
    await post(id, world.alice, { content: 'see attached', data: { files: [{ type: 'file', id: report.body.id }] } });
    await post(id, world.bob, { content: 'and this', data: { files: [{ type: 'file', id: secret.body.id }] } });
    const read = await world.api.get(`/api/v1/files/${report.body.id}/content`, as(world.bob));
    expect(read.status).toBe(200);
    expect(read.text).toBe('quarterly numbers');
    expect((await world.api.get(`/api/v1/files/${secret.body.id}/content`, as(world.alice))).status).toBe(404);
    expect((await world.api.get(`/api/v1/files/${report.body.id}/content`, as(world.carol))).status).toBe(404);
  });
});

describe('incoming webhooks', () => {
  it('post messages without a session; a deleted webhook token is refused', async () => {
    const channel = await standardChannel([{ principal_id: world.alice.id, permission: 'read' }]);
    expect((await world.api.post(`${base}/${channel.id}/webhooks/create`, { name: 'CI' }, as(world.alice))).status).toBe(403);
    const webhook = (await world.api.post(`${base}/${channel.id}/webhooks/create`, { name: 'CI' }, as(world.admin))).body;
    expect(webhook).toMatchObject({ name: 'CI', channel_id: channel.id, last_used_at: null });
    expect(webhook.token.length).toBeGreaterThanOrEqual(40);

    const posted = await world.api.post(`${base}/webhooks/${webhook.id}/${webhook.token}`, { content: 'build passed' });
    expect(posted.status, posted.text).toBe(200);
    expect(posted.body).toMatchObject({ success: true });
    const messages = (await world.api.get(`${base}/${channel.id}/messages`, as(world.alice))).body;
    expect(messages[0]).toMatchObject({ content: 'build passed', user: { id: webhook.id, name: 'CI', role: 'webhook' } });
    // A user cannot pass a message off as the webhook's.
    await world.api.post(`${base}/${channel.id}/messages/post`, { content: 'fake', meta: { webhook: { id: webhook.id } } }, as(world.admin));
    const faked = (await world.api.get(`${base}/${channel.id}/messages`, as(world.alice))).body[0];
    expect(faked).toMatchObject({ content: 'fake', user: { id: world.admin.id, role: 'admin' } });
    expect(faked.meta).toEqual({});
    expect(world.takeEvents().find((e) => e.event === 'message.created')).toMatchObject({ source: 'channel_webhook', actor: { type: 'webhook' } });

    expect((await world.api.post(`${base}/webhooks/${webhook.id}/wrong-token`, { content: 'x' })).status).toBe(401);
    const renamed = await world.api.post(`${base}/${channel.id}/webhooks/${webhook.id}/update`, { name: 'Builds' }, as(world.admin));
    expect(renamed.body).toMatchObject({ name: 'Builds', token: webhook.token });
    expect((await world.api.get(`${base}/${channel.id}/webhooks`, as(world.admin))).body[0].last_used_at).toBeGreaterThan(0);
    expect((await world.api.delete(`${base}/${channel.id}/webhooks/${webhook.id}/delete`, as(world.admin))).body).toBe(true);
    expect((await world.api.post(`${base}/webhooks/${webhook.id}/${webhook.token}`, { content: 'again' })).status).toBe(401);
    expect((await world.api.get(`${base}/${channel.id}/messages`, as(world.alice))).body[1].user).toMatchObject({ name: 'Deleted Webhook', role: 'webhook' });
    expect((await world.api.get(`${base}/webhooks/${webhook.id}/profile/image`, as(world.alice))).status).toBe(200);
  });
});

describe('permissions', () => {
  it('answers 403 while channels are off, and 401 without features.channels', async () => {
    await withWorld({ env: { ENABLE_OPENAI_API: 'false', ENABLE_OLLAMA_API: 'false' }, users: { member: 'user' } }, async (off) => {
      expect((await off.api.get(`${base}/`, as(off.member))).status).toBe(403);
      expect((await off.api.get('/api/config', as(off.member))).body.features.enable_channels).toBe(false);
    });
    await withWorld(
      { env: { ENABLE_CHANNELS: 'true', USER_PERMISSIONS_FEATURES_CHANNELS: 'false', ENABLE_OPENAI_API: 'false', ENABLE_OLLAMA_API: 'false' }, users: { member: 'user' } },
      async (limited) => {
        expect((await limited.api.get(`${base}/`, as(limited.member))).status).toBe(401);
        expect((await limited.api.get(`${base}/`, as(limited.admin))).status).toBe(200);
        expect((await limited.api.get('/api/config', as(limited.member))).body.features.enable_channels).toBe(true);
      },
    );
  });
});
