import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import type { WebSocket, WebSocketServer } from 'ws';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import type { Realtime } from '../../core/realtime/server.js';
import { clientGone } from '../../core/upstream/relay.js';
import { TerminalRefusal, type TerminalsService } from './service.js';

const TerminalServerList = Type.Array(Type.Object({ id: Type.String(), url: Type.String(), name: Type.String() }));
const ProxyParams = Type.Object({ server_id: Type.String(), '*': Type.String() });

/** The interactive session's websocket (not an HTTP route: it is taken at the upgrade). */
const SOCKET_PATH = /^\/api\/v1\/terminals\/([^/?]+)\/api\/terminals\/([^/?]+)(?:\?.*)?$/;

/** How long a client has to send its `{"type": "auth"}` message. */
const AUTH_TIMEOUT_MS = 10_000;

function refuse(reply: FastifyReply, error: unknown): FastifyReply {
  if (error instanceof TerminalRefusal) return reply.code(error.status).send({ error: error.message });
  throw error;
}

/** `/api/v1/terminals` (0.11.0 routers/terminals.py): the user's terminal servers and the proxy to them. */
async function terminalsRoutes(app: App, ctx: AreaContext<{ terminals: TerminalsService; realtime: Realtime }>): Promise<void> {
  const { terminals, realtime } = ctx.services;
  const tags = ['terminals'];

  app.get('/', { onRequest: ctx.auth.verified, schema: { tags, response: { 200: TerminalServerList } } }, (request) => terminals.list(request.user!));

  await app.register(async (raw) => {
    // The body goes to the terminal server as it was sent.
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', raw.readBody);
    raw.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      url: '/:server_id/*',
      onRequest: ctx.auth.verified,
      config: { bodyClass: 'large' },
      schema: { tags, params: ProxyParams },
      handler: async (request, reply) => {
        const params = request.params as { server_id: string; '*': string };
        const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
        const sessionId = request.headers['x-session-id'];
        try {
          const answer = await terminals.proxy(request.user!, params.server_id, {
            method: request.method,
            path: params['*'],
            query,
            contentType: request.headers['content-type'] ?? null,
            sessionId: typeof sessionId === 'string' && sessionId ? sessionId : null,
            body: Buffer.isBuffer(request.body) ? request.body : null,
            token: request.token,
            cookie: request.headers.cookie ?? null,
            signal: clientGone(reply),
          });
          return reply.code(answer.status).headers(answer.headers).send(answer.body);
        } catch (error) {
          return refuse(reply, error);
        }
      },
    });
  });

  // The websocket server (ws) is loaded at the first terminal session.
  let sockets: Promise<WebSocketServer> | null = null;
  const socketServer = () =>
    (sockets ??= import('ws').then(({ WebSocketServer }) => new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 })).catch((error: unknown) => {
      sockets = null;
      throw error;
    }));

  // Open sessions would hold the server's close: they end with it.
  app.addHook('onClose', async () => {
    if (!sockets) return;
    for (const client of (await sockets).clients) client.terminate();
  });

  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const match = SOCKET_PATH.exec(request.url ?? '');
    if (!match) return;
    let serverId: string;
    let sessionId: string;
    try {
      [serverId, sessionId] = [decodeURIComponent(match[1]), decodeURIComponent(match[2])];
    } catch {
      return void socket.destroy();
    }
    socketServer().then(
      (server) => server.handleUpgrade(request, socket, head, (client) => void session(client, serverId, sessionId).catch(() => client.terminate())),
      () => socket.destroy(),
    );
  });

  /**
   * One interactive session: the client's first message authenticates it, then
   * the terminal server's socket is opened (its key sent first) and every
   * message is relayed both ways until either side closes.
   */
  async function session(client: WebSocket, serverId: string, sessionId: string): Promise<void> {
    const pending: { data: Buffer; binary: boolean }[] = [];
    let upstream: WebSocket | null = null;
    let authenticated: ((message: string | null) => void) | null = null;
    const first = new Promise<string | null>((resolve) => (authenticated = resolve));
    const timer = setTimeout(() => authenticated?.(null), AUTH_TIMEOUT_MS);
    client.on('message', (data: Buffer, binary: boolean) => {
      if (authenticated) {
        const resolve = authenticated;
        authenticated = null;
        resolve(binary ? '' : data.toString('utf8'));
      } else if (upstream?.readyState === 1) upstream.send(data, { binary });
      else pending.push({ data, binary });
    });
    client.on('close', () => {
      authenticated?.(null);
      upstream?.close();
    });
    client.on('error', () => client.terminate());

    const message = await first;
    clearTimeout(timer);
    if (client.readyState !== 1) return;
    let token: unknown;
    try {
      const payload: unknown = JSON.parse(message ?? '');
      if (!payload || typeof payload !== 'object' || (payload as { type?: unknown }).type !== 'auth') return client.close(4001, 'Expected auth message');
      token = (payload as { token?: unknown }).token;
    } catch {
      return client.close(4001, 'Auth timeout or invalid payload');
    }
    const user = await realtime.userOfToken(token).catch(() => null);
    if (!user) return client.close(4001, 'Invalid token');
    let target: Awaited<ReturnType<TerminalsService['socketTarget']>>;
    try {
      target = await terminals.socketTarget(user, serverId, sessionId);
    } catch (error) {
      return client.close(error instanceof TerminalRefusal ? error.closeCode : 1011, error instanceof Error ? error.message.slice(0, 120) : 'Terminal unavailable');
    }
    if (client.readyState !== 1) return;
    const { WebSocket: Socket } = await import('ws');
    const remote = new Socket(target.url, { maxPayload: 16 * 1024 * 1024 });
    upstream = remote;
    let opened = false;
    remote.on('open', () => {
      if (target.firstMessage) remote.send(target.firstMessage);
      opened = true;
      void terminals.sessionEvent(user, 'terminal.session.opened', sessionId, serverId);
      for (const queued of pending.splice(0)) remote.send(queued.data, { binary: queued.binary });
    });
    remote.on('message', (data: Buffer, binary: boolean) => {
      if (client.readyState === 1) client.send(data, { binary });
    });
    remote.on('close', () => {
      if (opened) void terminals.sessionEvent(user, 'terminal.session.closed', sessionId, serverId);
      if (client.readyState === 1) client.close();
    });
    remote.on('error', (error) => {
      ctx.core.log.warn({ server: serverId, err: error.message }, 'Terminal websocket proxy error');
      if (!opened && client.readyState === 1) client.close(1011, 'Terminal unavailable');
      remote.terminate();
    });
    if (client.readyState !== 1) remote.terminate();
  }
}

export const terminalsArea = defineArea('/api/v1/terminals', terminalsRoutes);
