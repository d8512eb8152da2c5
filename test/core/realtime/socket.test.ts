import { io } from 'socket.io-client';
import { describe, expect, it } from 'vitest';
import { openBrowser } from '../../areas/completions/setup.js';
import { useServer } from '../../helpers/world.js';

/**
 * The socket server's handshake (socket/main.py): every connection is
 * accepted; only a verified user's token joins the user's room, in the
 * handshake or with `user-join`; other areas' events reach that room.
 */
describe('socket.io server', () => {
  const world = useServer({ env: { ENABLE_OLLAMA_API: 'false', ENABLE_OPENAI_API: 'false' }, admin: 'Socket Admin', users: { pending: ['pending', 'Socket Pending'] } });

  const realtime = () => world.server.parley.services.realtime;

  it('accepts anonymous sockets but puts them in no room; user-join signs them in', async () => {
    const browser = await openBrowser(world.server.url);
    try {
      realtime().emitToUser(world.admin.id, 'events', { chat_id: 'c', message_id: 'm', data: { type: 'ping' } });
      expect(await browser.socket.timeout(2000).emitWithAck('user-join', { auth: { token: 'not-a-token' } })).toBeNull();
      expect(await browser.socket.timeout(2000).emitWithAck('user-join', { auth: { token: world.pending.token } })).toBeNull();
      expect(await browser.socket.timeout(2000).emitWithAck('user-join', {})).toBeNull();
      expect(browser.received).toEqual([]);
      expect(await browser.socket.timeout(2000).emitWithAck('user-join', { auth: { token: world.admin.token } })).toEqual({ id: world.admin.id, name: world.admin.name });
      realtime().emitToUser(world.admin.id, 'events', { chat_id: 'c', message_id: 'm', data: { type: 'ping', data: 1 } });
      expect(await browser.next((e) => e.type === 'ping')).toMatchObject({ chat_id: 'c', message_id: 'm', data: 1 });
      expect(await realtime().sessionOwner(browser.socket.id!)).toBe(world.admin.id);
    } finally {
      browser.close();
    }
  });

  it('joins the room from the handshake token, for every tab of the user', async () => {
    const tabs = [await openBrowser(world.server.url, world.admin.token), await openBrowser(world.server.url, world.admin.token)];
    try {
      realtime().emitToUser(world.admin.id, 'events', { chat_id: 'c', data: { type: 'chat:list', data: {} } });
      for (const tab of tabs) await tab.next((e) => e.type === 'chat:list');
      // The other client events are accepted.
      for (const event of ['join-channels', 'join-note', 'events:channel']) {
        expect(await tabs[0].socket.timeout(2000).emitWithAck(event, { auth: { token: world.admin.token }, note_id: 'x', channel_id: 'y', data: { type: 'typing' } })).toBeNull();
      }
    } finally {
      for (const tab of tabs) tab.close();
    }
  });

  it('calls a session and waits for its answer, only for its own user', async () => {
    const browser = await openBrowser(world.server.url, world.admin.token);
    try {
      browser.socket.on('events', (payload: any, ack?: (value: unknown) => void) => ack?.({ confirmed: payload.data.type === 'confirmation' }));
      expect(await realtime().callSession(browser.socket.id!, world.admin.id, 'events', { chat_id: 'c', message_id: 'm', data: { type: 'confirmation' } })).toEqual({ confirmed: true });
      expect(await realtime().callSession(browser.socket.id!, world.pending.id, 'events', { data: { type: 'confirmation' } })).toEqual({ error: 'Client session disconnected.' });
      expect(await realtime().callSession('no-such-socket', world.admin.id, 'events', {})).toEqual({ error: 'Client session disconnected.' });
    } finally {
      browser.close();
    }
  });

  it('serves the websocket transport only', async () => {
    const polling = io(world.server.url, { path: '/ws/socket.io', transports: ['polling'], reconnection: false, forceNew: true });
    const error = await new Promise<Error>((resolve) => polling.once('connect_error', resolve));
    expect(error).toBeInstanceOf(Error);
    polling.close();
    const res = await fetch(`${world.server.url}/ws/socket.io/?EIO=4&transport=polling`);
    expect(res.status).toBe(400);
  });
});
