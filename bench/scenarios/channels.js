import { randomUUID } from 'node:crypto';
import path from 'node:path';
import Database from 'better-sqlite3';
import { connectSocket, everyoneReceives, fanoutRows } from '../lib/sockets.js';

const STORED_MESSAGES = 100_000;
const MEMBERS = 200;
const POSTS = 100;
const FANOUT_NAME = `channel message fan-out to ${MEMBERS} members`;

/** Channels are off by default (as the reference): the admin turns them on, as in Admin › General. */
async function enableChannels(ctx, token) {
  const config = await ctx.get('/api/v1/auths/admin/config', { token });
  if (!config.ENABLE_CHANNELS) await ctx.post('/api/v1/auths/admin/config', { ...config, ENABLE_CHANNELS: true }, { token });
}

/**
 * A channel's first page of messages with 100,000 stored (issue 20): what the
 * frontend asks when a channel opens (`skip=0&limit=50`), with authors, reply
 * counts and reactions. The messages are written straight into the SQLite file
 * (posting 100,000 through the API would take minutes of the bench); one is
 * posted through the API first, so the rows follow what Parley writes.
 */
export const channelMessages = {
  name: `GET /api/v1/channels/{id}/messages (${STORED_MESSAGES.toLocaleString('en')} messages)`,
  rpsRatioTarget: 0.3,
  async setup(ctx) {
    const admin = await ctx.admin();
    await enableChannels(ctx, admin.token);
    const channel = await ctx.post('/api/v1/channels/create', { name: 'bench-history', access_grants: [] }, { token: admin.token });
    const first = await ctx.post(`/api/v1/channels/${channel.id}/messages/post`, { content: 'first' }, { token: admin.token });
    const db = new Database(path.join(ctx.parley.dataDir, 'webui.db'));
    db.pragma('busy_timeout = 10000');
    const insert = db.prepare(
      'insert into message (id, user_id, channel_id, reply_to_id, parent_id, is_pinned, pinned_at, pinned_by, content, data, meta, created_at, updated_at) ' +
        'values (?, ?, ?, null, null, 0, null, null, ?, null, null, ?, ?)',
    );
    const text = 'lorem ipsum dolor sit amet '.repeat(8);
    db.transaction(() => {
      for (let i = 0; i < STORED_MESSAGES; i++) {
        const at = first.created_at - (STORED_MESSAGES - i) * 1_000_000_000;
        insert.run(randomUUID(), admin.id, channel.id, `${text}${i}`, at, at);
      }
    })();
    db.close();
    return { method: 'GET', path: `/api/v1/channels/${channel.id}/messages?skip=0&limit=50`, headers: { authorization: `Bearer ${admin.token}` } };
  },
};

/**
 * A message reaching everyone in a busy room (issue 20): 200 members of a group
 * channel each have one socket open (`join-channels`); one member posts 100
 * messages over HTTP, one at a time. Each is timed from the request until the
 * last of the 200 sockets has its `events:channel` `message`. Reports p50 and
 * p99 of that time, and Parley's CPU per message.
 */
export const channelFanout = {
  name: FANOUT_NAME,
  async setup(ctx) {
    const admin = await ctx.admin();
    await enableChannels(ctx, admin.token);
    const members = [];
    await ctx.repeat(
      MEMBERS - 1,
      async (i) => {
        const user = await ctx.post('/api/v1/auths/add', { name: `Member ${i}`, email: `channel-member-${i}@bench.local`, password: 'Bench-password-1', role: 'user' }, { token: admin.token });
        members.push({ id: user.id, token: user.token });
      },
      { concurrency: 4 },
    );
    const channel = await ctx.post('/api/v1/channels/create', { type: 'group', name: 'bench-room', user_ids: members.map((m) => m.id) }, { token: admin.token });
    return { channelId: channel.id, tokens: [admin.token, ...members.map((m) => m.token)], poster: admin.token };
  },
  async measure(ctx, { channelId, tokens, poster }) {
    const sockets = [];
    const latencies = [];
    let cpuSeconds = NaN;
    try {
      for (const token of tokens) {
        const socket = await connectSocket(ctx.url, token);
        await socket.timeout(10_000).emitWithAck('join-channels', { auth: { token } });
        sockets.push(socket);
      }
      const cpuBefore = ctx.parley.cpuSeconds();
      for (let i = 0; i < POSTS; i++) {
        const content = `fan-out ${i}`;
        const received = everyoneReceives(sockets, 'events:channel', (event) => event.data?.type === 'message' && event.data.data?.content === content);
        const started = performance.now();
        await ctx.post(`/api/v1/channels/${channelId}/messages/post`, { content }, { token: poster });
        await received;
        latencies.push(performance.now() - started);
      }
      cpuSeconds = ctx.parley.cpuSeconds() - cpuBefore;
    } finally {
      for (const socket of sockets) socket.close();
    }
    return { rows: fanoutRows(FANOUT_NAME, latencies, cpuSeconds, 'message'), details: { members: sockets.length, posts: latencies.length, latencies } };
  },
};
