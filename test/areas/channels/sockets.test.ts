import { io, type Socket } from 'socket.io-client';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeModel } from '../../helpers/fake-model.js';
import { startRedis } from '../../helpers/redis.js';
import { type Account, as } from '../../helpers/users.js';
import { type ServerWorld, useServer } from '../../helpers/world.js';

/**
 * Channels on the socket (socket/main.py): `join-channels` puts a member's
 * sockets into their channels' rooms; `events:channel` carries messages,
 * thread replies, reactions, typing and model answers to members only, on every
 * instance with Redis.
 */
interface ChannelEvent {
  channel_id: string;
  message_id: string | null;
  data: { type: string; data: any };
  user?: { id: string; name: string; role: string };
}

class Member {
  readonly received: ChannelEvent[] = [];
  constructor(readonly socket: Socket) {
    socket.on('events:channel', (payload: ChannelEvent) => this.received.push(payload));
  }

  static async open(url: string, account: Account, joinChannels = true): Promise<Member> {
    const socket = io(url, { path: '/ws/socket.io', transports: ['websocket'], auth: { token: account.token }, reconnection: false, forceNew: true });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
    const member = new Member(socket);
    if (joinChannels) expect(await socket.timeout(5000).emitWithAck('join-channels', { auth: { token: account.token } })).toBeNull();
    return member;
  }

  async next(check: (event: ChannelEvent) => boolean, what: string, timeoutMs = 5000): Promise<ChannelEvent> {
    const start = Date.now();
    for (;;) {
      const found = this.received.find(check);
      if (found) return found;
      if (Date.now() - start > timeoutMs) throw new Error(`Timed out waiting for ${what}; got ${JSON.stringify(this.received.map((e) => e.data.type))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  close(): void {
    this.socket.close();
  }
}

const opened: Member[] = [];
afterEach(() => {
  for (const member of opened.splice(0)) member.close();
});
async function member(url: string, account: Account): Promise<Member> {
  const m = await Member.open(url, account);
  opened.push(m);
  return m;
}

const base = '/api/v1/channels';
const channelsEnv = { ENABLE_CHANNELS: 'true' };

async function groupOf(world: ServerWorld, owner: Account, others: Account[], name = 'Room'): Promise<string> {
  const res = await world.api.post(`${base}/create`, { type: 'group', name, user_ids: others.map((o) => o.id) }, as(owner));
  expect(res.status, res.text).toBe(200);
  return res.body.id;
}

describe('channel events', () => {
  const world = useServer({
    env: { ...channelsEnv, ENABLE_OPENAI_API: 'false', ENABLE_OLLAMA_API: 'false' },
    admin: 'Socket Channel Admin',
    users: { alice: ['user', 'Alice'], bob: ['user', 'Bob'], eve: ['user', 'Eve'] },
  });

  it('reaches members only: messages, thread replies, reactions, edits and deletions', async () => {
    const channelId = await groupOf(world, world.alice, [world.bob]);
    const [alice, bob, eve] = [await member(world.server.url, world.alice), await member(world.server.url, world.bob), await member(world.server.url, world.eve)];

    const posted = (await world.api.post(`${base}/${channelId}/messages/post`, { content: 'hello room', temp_id: 't1' }, as(world.alice))).body;
    const seen = await bob.next((e) => e.data.type === 'message', 'the message');
    expect(seen).toMatchObject({ channel_id: channelId, message_id: posted.id, user: { id: world.alice.id, name: 'Alice' } });
    expect(seen.data.data).toMatchObject({ temp_id: 't1', content: 'hello room', user: { name: 'Alice' } });
    await alice.next((e) => e.data.type === 'message', 'the message (author)');

    await world.api.post(`${base}/${channelId}/messages/post`, { content: 'in thread', parent_id: posted.id }, as(world.bob));
    const reply = await alice.next((e) => e.data.type === 'message:reply', 'the parent update');
    expect(reply.data.data).toMatchObject({ id: posted.id, reply_count: 1 });

    await world.api.post(`${base}/${channelId}/messages/${posted.id}/reactions/add`, { name: 'tada' }, as(world.bob));
    const reaction = await alice.next((e) => e.data.type === 'message:reaction:add', 'the reaction');
    expect(reaction.data.data).toMatchObject({ name: 'tada', reactions: [{ name: 'tada', count: 1 }] });

    await world.api.post(`${base}/${channelId}/messages/${posted.id}/update`, { content: 'hello, room' }, as(world.alice));
    expect((await bob.next((e) => e.data.type === 'message:update', 'the edit')).data.data.content).toBe('hello, room');
    await world.api.delete(`${base}/${channelId}/messages/${posted.id}/delete`, as(world.alice));
    await bob.next((e) => e.data.type === 'message:delete' && e.message_id === posted.id, 'the deletion');

    // Eve is in no room of this channel: she heard nothing, and cannot type into it.
    eve.socket.emit('events:channel', { channel_id: channelId, data: { type: 'typing', data: { typing: true } } });
    await new Promise((r) => setTimeout(r, 200));
    expect(eve.received).toEqual([]);
    expect(alice.received.some((e) => e.data.type === 'typing')).toBe(false);
  });

  it('puts a signed-in socket into its channels without join-channels (handshake and user-join)', async () => {
    const channelId = await groupOf(world, world.alice, [world.bob]);
    const handshake = await Member.open(world.server.url, world.bob, false);
    opened.push(handshake);
    const anonymous = io(world.server.url, { path: '/ws/socket.io', transports: ['websocket'], reconnection: false, forceNew: true });
    const later = new Member(anonymous);
    opened.push(later);
    await new Promise<void>((resolve) => anonymous.once('connect', () => resolve()));
    expect(await anonymous.timeout(5000).emitWithAck('user-join', { auth: { token: world.bob.token } })).toMatchObject({ id: world.bob.id });
    await new Promise((r) => setTimeout(r, 100));
    await world.api.post(`${base}/${channelId}/messages/post`, { content: 'no join needed' }, as(world.alice));
    for (const socket of [handshake, later]) await socket.next((e) => e.data.data?.content === 'no join needed', 'the message');
  });

  it('relays typing to the room and stores read receipts', async () => {
    const channelId = await groupOf(world, world.alice, [world.bob]);
    await world.api.post(`${base}/${channelId}/messages/post`, { content: 'unread' }, as(world.alice));
    const [alice, bob] = [await member(world.server.url, world.alice), await member(world.server.url, world.bob)];
    bob.socket.emit('events:channel', { channel_id: channelId, message_id: null, data: { type: 'typing', data: { typing: true, extra: 'dropped' } } });
    const typing = await alice.next((e) => e.data.type === 'typing', 'typing');
    expect(typing).toMatchObject({ channel_id: channelId, data: { type: 'typing', data: { typing: true } }, user: { id: world.bob.id, name: 'Bob' } });
    expect(typing.data.data.extra).toBeUndefined();

    expect((await world.api.get(`${base}/${channelId}`, as(world.bob))).body.unread_count).toBe(1);
    expect(await bob.socket.timeout(5000).emitWithAck('events:channel', { channel_id: channelId, data: { type: 'last_read_at' } })).toBeNull();
    expect((await world.api.get(`${base}/${channelId}`, as(world.bob))).body.unread_count).toBe(0);
  });

  it('puts connected members into a new channel and removed ones out of it; a deleted channel goes quiet', async () => {
    const [alice, bob] = [await member(world.server.url, world.alice), await member(world.server.url, world.bob)];
    const channelId = await groupOf(world, world.alice, [world.bob], 'Fresh');
    await bob.next((e) => e.data.type === 'channel:created', 'the new channel');
    await world.api.post(`${base}/${channelId}/messages/post`, { content: 'first words' }, as(world.alice));
    await bob.next((e) => e.channel_id === channelId && e.data.type === 'message', 'a message of the new channel');

    await world.api.post(`${base}/${channelId}/update/members/remove`, { user_ids: [world.bob.id] }, as(world.alice));
    await world.api.post(`${base}/${channelId}/messages/post`, { content: 'bob is gone' }, as(world.alice));
    await alice.next((e) => e.data.data?.content === 'bob is gone', 'the later message');
    expect(bob.received.some((e) => e.data.data?.content === 'bob is gone')).toBe(false);

    await world.api.delete(`${base}/${channelId}/delete`, as(world.alice));
    await world.api.post(`${base}/${channelId}/messages/post`, { content: 'into the void' }, as(world.alice));
    expect((await world.api.get(`${base}/${channelId}/messages`, as(world.alice))).status).toBe(404);
  });
});

describe('model replies', () => {
  const world = useServer({
    fakes: fakeModel(['fake-model']),
    env: { ...channelsEnv, BYPASS_MODEL_ACCESS_CONTROL: 'true' },
    admin: 'Model Channel Admin',
    users: { alice: ['user', 'Alice'], bob: ['user', 'Bob'] },
  });

  it('answers a mention in a thread under the message, streamed into a new message', async () => {
    world.model.script = (body) => ({ text: `Seen ${body.messages.length} messages: ${body.messages[1].content}`, delayMs: 20 });
    const channelId = await groupOf(world, world.alice, [world.bob]);
    const bob = await member(world.server.url, world.bob);
    const asked = (await world.api.post(`${base}/${channelId}/messages/post`, { content: 'hey <@M:fake-model|Fake> what now?' }, as(world.alice))).body;

    const done = await bob.next((e) => e.data.type === 'message:update' && e.data.data.meta?.done === true, 'the finished answer', 10_000);
    expect(done.data.data).toMatchObject({ parent_id: asked.id, meta: { model_id: 'fake-model', model_name: 'fake-model', done: true } });
    expect(done.data.data.content).toBe('Seen 2 messages: Alice: hey Fake what now?');
    const system = world.model.requests.at(-1).messages[0].content;
    expect(system).toContain('You are fake-model');
    expect(system).toContain('Alice: hey Fake what now?');
    const thread = (await world.api.get(`${base}/${channelId}/messages/${asked.id}/thread`, as(world.bob))).body;
    expect(thread.map((m: any) => m.content)).toEqual(['Seen 2 messages: Alice: hey Fake what now?', 'hey <@M:fake-model|Fake> what now?']);
    // A mention of an unknown model, or no mention, asks nothing.
    const before = world.model.requests.length;
    await world.api.post(`${base}/${channelId}/messages/post`, { content: 'hi <@M:no-such-model|Nobody>' }, as(world.alice));
    await new Promise((r) => setTimeout(r, 200));
    expect(world.model.requests.length).toBe(before);
  });

  it('answers in the channel itself when CHANNEL_MODEL_RESPONSE_MODE is channel, and ends a failure with its error', async () => {
    const config = (await world.api.get('/api/v1/auths/admin/config', as(world.admin))).body;
    expect((await world.api.post('/api/v1/auths/admin/config', { ...config, CHANNEL_MODEL_RESPONSE_MODE: 'channel' }, as(world.admin))).status).toBe(200);
    try {
      world.model.script = () => ({ text: 'In the open.' });
      const channelId = await groupOf(world, world.alice, [world.bob]);
      const bob = await member(world.server.url, world.bob);
      await world.api.post(`${base}/${channelId}/messages/post`, { content: '<@M:fake-model|Fake> speak up' }, as(world.alice));
      const done = await bob.next((e) => e.data.type === 'message:update' && e.data.data.meta?.done === true, 'the answer', 10_000);
      expect(done.data.data).toMatchObject({ parent_id: null, content: 'In the open.' });

      world.model.script = () => ({ status: 500, error: 'model exploded' });
      await world.api.post(`${base}/${channelId}/messages/post`, { content: '<@M:fake-model|Fake> again' }, as(world.alice));
      const failed = await bob.next((e) => e.data.type === 'message:update' && e.data.data.meta?.done === true && e.data.data.content.startsWith('Error:'), 'the failure', 10_000);
      expect(failed.data.data.content).toContain('model exploded');
    } finally {
      await world.api.post('/api/v1/auths/admin/config', { ...config, CHANNEL_MODEL_RESPONSE_MODE: 'thread' }, as(world.admin));
    }
  });
});

describe('two instances over Redis', () => {
  const world = useServer({
    fakes: {
      async start() {
        const redis = await startRedis();
        return { redis: { url: redis.url, close: async () => redis.stop() } };
      },
      env: ({ redis }) => ({ REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'parley-channels-test' }),
    },
    env: { ...channelsEnv, ENABLE_OPENAI_API: 'false', ENABLE_OLLAMA_API: 'false' },
    admin: 'Redis Channel Admin',
    users: { alice: ['user', 'Alice'], bob: ['user', 'Bob'] },
  });

  it('delivers a message posted on one instance to a member connected to the other', async () => {
    const second = await world.addInstance();
    const bob = await member(second.url, world.bob);
    const channelId = await groupOf(world, world.alice, [world.bob]);
    await bob.next((e) => e.data.type === 'channel:created', 'the new channel (other instance)');
    await world.api.post(`${base}/${channelId}/messages/post`, { content: 'across instances' }, as(world.alice));
    expect((await bob.next((e) => e.data.type === 'message', 'the message')).data.data.content).toBe('across instances');
    const alice = await member(world.server.url, world.alice);
    bob.socket.emit('events:channel', { channel_id: channelId, data: { type: 'typing', data: { typing: true } } });
    expect((await alice.next((e) => e.data.type === 'typing', 'typing from the other instance')).user?.id).toBe(world.bob.id);
  });
});
