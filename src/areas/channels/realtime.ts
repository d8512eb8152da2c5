import type { Realtime } from '../../core/realtime/server.js';
import type { UsersService } from '../users/service.js';
import { channelRoom, type ChannelsService } from './service.js';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The channels' client events (socket/main.py): a socket signed in (handshake or
 * `user-join`) and `join-channels {auth: {token}}` put the socket into the room of
 * every channel its user may read; `events:channel`
 * from a socket in the channel's room relays `typing` to the room and stores
 * `last_read_at`. Both acknowledge with nothing, as the reference.
 */
export function connectChannelSockets(deps: { realtime: Realtime; channels: ChannelsService; users: UsersService }): void {
  const { realtime, channels, users } = deps;

  // As the reference's connect and user-join handlers: a socket signed in is in its channels' rooms at once.
  realtime.onUserJoin(async (client) => {
    const user = client.user ? await users.byId(client.user.id) : null;
    if (user) for (const room of await channels.roomsOf(user)) client.join(room);
  });

  realtime.on('join-channels', async (client, data) => {
    const user = await realtime.userOfToken(isObject(data.auth) ? data.auth.token : undefined);
    if (!user) return null;
    for (const room of await channels.roomsOf(user)) client.join(room);
    return null;
  });

  realtime.on('events:channel', async (client, data) => {
    const channelId = data.channel_id;
    if (!client.user || typeof channelId !== 'string' || !isObject(data.data) || !client.inRoom(channelRoom(channelId))) return null;
    const user = await users.byId(client.user.id);
    if (!user) return null;
    const messageId = typeof data.message_id === 'string' ? data.message_id : null;
    // Only the fields the frontend reads are relayed: the rest of a client's payload is not trusted.
    const typing = isObject(data.data.data) ? { typing: data.data.data.typing === true } : {};
    await channels.clientEvent(user, channelId, messageId, { type: data.data.type, data: typing });
    return null;
  });
}
