import type { Server as HttpServer } from 'node:http';
import type { Redis } from 'ioredis';
import { Server, type Socket } from 'socket.io';
import type { TokenService } from '../auth/tokens.js';
import type { UserRecord } from '../auth/user.js';
import type { RealtimeOptions } from './options.js';
import { connectRedis, disconnectRedis } from './redis.js';

/**
 * The socket.io server the web frontend keeps open (`/ws/socket.io`, the
 * reference's socket/main.py). A socket whose handshake token names a verified
 * user joins the room `user:{id}`; every chat event for that user goes to that
 * room, so each of their tabs sees it. Each socket is also alone in the room
 * named by its id (the frontend's `session_id`), which tools reach through
 * `callSession`. With Redis, every instance shares the rooms (the Redis adapter).
 */
export interface RealtimeUser {
  id: string;
  name: string;
  role: string;
}

/** A connected socket as handlers see it. */
export interface RealtimeClient {
  sessionId: string;
  /** The verified user of the handshake or of a later `user-join`; null while anonymous. */
  user: RealtimeUser | null;
  join(room: string): void;
  leave(room: string): void;
  /** Whether this socket is in the room (rooms it joined on this instance). */
  inRoom(room: string): boolean;
  /** The rooms this socket is in on this instance. */
  rooms(): string[];
  /** Sends to this socket only. */
  emit(event: string, payload: unknown): void;
  /** Sends to every other socket in the room, on every instance (socket.io's `skip_sid`). */
  broadcast(room: string, event: string, payload: unknown): void;
}

export type ClientEventHandler = (client: RealtimeClient, data: Record<string, unknown>) => unknown;

export interface RealtimeDeps {
  tokens: TokenService;
  userById(id: string): Promise<UserRecord | null>;
  /** A heartbeat marks the user active. */
  touch(user: UserRecord): void;
  log: { warn(details: object, message: string): void; debug(details: object, message: string): void };
}

/** How long a `usage` report keeps a model "in use" (the reference's TIMEOUT_DURATION). */
const USAGE_TTL_MS = 3000;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

export class Realtime {
  private io: Server | null = null;
  private redis: { pub: Redis; sub: Redis } | null = null;
  private readonly handlers = new Map<string, ClientEventHandler>();
  private readonly disconnectHandlers: ((client: RealtimeClient) => void)[] = [];
  /** Events a socket of this instance sends on a channel of its own (a direct connection's stream), by channel. */
  private readonly relays = new Map<string, { socketId: string; data: (value: unknown) => void; end: () => void }>();
  private readonly userJoinHandlers: ((client: RealtimeClient) => Promise<void>)[] = [];
  /** Model id → socket id → last `usage` report (ms): the models this instance's clients are waiting on. */
  private readonly usage = new Map<string, Map<string, number>>();

  constructor(
    private readonly options: RealtimeOptions,
    private readonly deps: RealtimeDeps,
  ) {}

  /** A token that names a verified user (user or admin), as the reference's get_verified_user_by_token; API keys are not accepted. */
  async userOfToken(token: unknown): Promise<UserRecord | null> {
    if (typeof token !== 'string' || !token || token.startsWith('sk-')) return null;
    const claims = await this.deps.tokens.verify(token);
    if (!claims) return null;
    const user = await this.deps.userById(claims.id);
    return user && (user.role === 'user' || user.role === 'admin') ? user : null;
  }

  /** Registers what a client event does (areas add theirs: `events:chat`, ...). The handler's result is the ack. */
  on(event: string, handler: ClientEventHandler): void {
    this.handlers.set(event, handler);
  }

  /** Registers what happens when a socket is signed in (handshake token or `user-join`): areas join it to their rooms. */
  onUserJoin(handler: (client: RealtimeClient) => Promise<void>): void {
    this.userJoinHandlers.push(handler);
  }

  private async userJoined(socket: Socket): Promise<void> {
    const client = this.client(socket);
    for (const handler of this.userJoinHandlers) {
      try {
        await handler(client);
      } catch (error) {
        this.deps.log.warn({ err: error instanceof Error ? error.message : String(error) }, 'Socket user-join handler failed');
      }
    }
  }

  /** Registers what happens when a socket goes away (its rooms are still listed on the client). */
  onDisconnect(handler: (client: RealtimeClient) => void): void {
    this.disconnectHandlers.push(handler);
  }

  /** Starts serving on the HTTP server's upgrade path. */
  async attach(server: HttpServer): Promise<void> {
    const origins = this.options.corsOrigins;
    const io = new Server(server, {
      path: '/ws/socket.io',
      transports: this.options.websocket ? ['websocket'] : ['polling'],
      allowUpgrades: this.options.websocket,
      pingInterval: this.options.pingIntervalMs,
      pingTimeout: this.options.pingTimeoutMs,
      cors: { origin: origins.includes('*') ? '*' : origins, credentials: !origins.includes('*') },
      serveClient: false,
      maxHttpBufferSize: 16 * 1024 * 1024,
    });
    if (this.options.redisUrl) {
      const { createAdapter } = await import('@socket.io/redis-adapter');
      const pub = await connectRedis(this.options.redisUrl, this.deps.log, 'socket-pub');
      const sub = await connectRedis(this.options.redisUrl, this.deps.log, 'socket-sub');
      this.redis = { pub, sub };
      const key = `${this.options.redisKeyPrefix}:socket.io`;
      io.adapter(createAdapter(pub, sub, { key, publishOnSpecificResponseChannel: true }));
      // The adapter subscribes without telling when it is done: the same subscription, answered after
      // its own on that connection, says so. Until then another instance's broadcasts would be missed.
      await sub.psubscribe(`${key}#/#*`);
    }
    // The handshake's token is checked before the connection is acknowledged, so the socket is in its
    // user's room by the time the client sees `connect`. Connections are never refused (`always_connect`).
    io.use((socket, next) => {
      const auth = isObject(socket.handshake.auth) ? socket.handshake.auth : {};
      this.userOfToken(auth.token).then(
        (user) => {
          if (user) socket.data.user = this.socketUser(user);
          next();
        },
        (error: unknown) => {
          this.deps.log.warn({ err: String(error) }, 'Socket handshake check failed');
          next();
        },
      );
    });
    io.on('connection', (socket) => this.connected(socket));
    this.io = io;
  }

  private client(socket: Socket): RealtimeClient {
    return {
      sessionId: socket.id,
      user: (socket.data.user as RealtimeUser | undefined) ?? null,
      join: (room) => void socket.join(room),
      leave: (room) => void socket.leave(room),
      inRoom: (room) => socket.rooms.has(room),
      rooms: () => [...socket.rooms],
      emit: (event, payload) => void socket.emit(event, payload),
      broadcast: (room, event, payload) => void socket.to(room).emit(event, payload),
    };
  }

  private socketUser(user: UserRecord): RealtimeUser {
    return { id: user.id, name: user.name, role: user.role };
  }

  private connected(socket: Socket): void {
    const user = socket.data.user as RealtimeUser | undefined;
    if (user) {
      void socket.join(`user:${user.id}`);
      void this.userJoined(socket);
    }
    socket.onAny((event: string, ...args: unknown[]) => {
      const relay = this.relays.get(event);
      if (relay && relay.socketId === socket.id) return relay.data(args[0]);
      const ack = typeof args.at(-1) === 'function' ? (args.pop() as (value: unknown) => void) : null;
      const data = isObject(args[0]) ? args[0] : {};
      this.dispatch(socket, event, data).then(
        (result) => ack?.(result ?? null),
        (error: unknown) => {
          this.deps.log.warn({ event, err: error instanceof Error ? error.message : String(error) }, 'Socket event failed');
          ack?.(null);
        },
      );
    });
    socket.on('disconnecting', () => {
      const client = this.client(socket);
      for (const handler of this.disconnectHandlers) handler(client);
    });
    socket.on('disconnect', () => {
      for (const relay of this.relays.values()) if (relay.socketId === socket.id) relay.end();
      for (const [model, sessions] of this.usage) {
        sessions.delete(socket.id);
        if (sessions.size === 0) this.usage.delete(model);
      }
    });
  }

  private async dispatch(socket: Socket, event: string, data: Record<string, unknown>): Promise<unknown> {
    switch (event) {
      case 'user-join': {
        const user = await this.userOfToken(isObject(data.auth) ? data.auth.token : undefined);
        if (!user) return null;
        socket.data.user = this.socketUser(user);
        await socket.join(`user:${user.id}`);
        await this.userJoined(socket);
        return { id: user.id, name: user.name };
      }
      case 'heartbeat': {
        const current = socket.data.user as RealtimeUser | undefined;
        const user = current ? await this.deps.userById(current.id) : null;
        if (user) this.deps.touch(user);
        return null;
      }
      case 'usage': {
        if (!socket.data.user || typeof data.model !== 'string') return null;
        const sessions = this.usage.get(data.model) ?? new Map<string, number>();
        sessions.set(socket.id, Date.now());
        this.usage.set(data.model, sessions);
        return null;
      }
      default: {
        const handler = this.handlers.get(event);
        return handler ? handler(this.client(socket), data) : null;
      }
    }
  }

  /** Models some client of this instance is waiting on (reported by `usage` within the last 3 s). */
  modelsInUse(): string[] {
    const since = Date.now() - USAGE_TTL_MS;
    return [...this.usage].filter(([, sessions]) => [...sessions.values()].some((at) => at >= since)).map(([model]) => model);
  }

  /** Sends `event` to every socket of a user, on every instance. */
  emitToUser(userId: string, event: string, payload: unknown): void {
    this.io?.to(`user:${userId}`).emit(event, payload);
  }

  emitToRoom(room: string, event: string, payload: unknown): void {
    this.io?.to(room).emit(event, payload);
  }

  /** Puts every socket of these users (on every instance) into a room: a channel they were added to. */
  joinUsersTo(room: string, userIds: string[]): void {
    if (this.io && userIds.length > 0) this.io.in(userIds.map((id) => `user:${id}`)).socketsJoin(room);
  }

  /** Takes every socket of these users (on every instance) out of a room. */
  removeUsersFrom(room: string, userIds: string[]): void {
    if (this.io && userIds.length > 0) this.io.in(userIds.map((id) => `user:${id}`)).socketsLeave(room);
  }

  /** Takes every socket out of a room (a deleted channel). */
  emptyRoom(room: string): void {
    this.io?.in(room).socketsLeave(room);
  }

  /** The ids of the sockets in a room, on every instance. */
  async socketsIn(room: string): Promise<string[]> {
    if (!this.io) return [];
    return (await this.io.in(room).fetchSockets()).map((socket) => socket.id);
  }

  /**
   * Takes what one socket of this instance sends on `channel` (the reference's `sio.on(channel)`
   * of a direct connection): each value to `data`, and `end` when the socket goes. Returns the
   * function that stops it; null when the socket is not on this instance.
   */
  relay(sessionId: string, channel: string, data: (value: unknown) => void, end: () => void): (() => void) | null {
    if (!this.io?.sockets.sockets.has(sessionId)) return null;
    this.relays.set(channel, { socketId: sessionId, data, end });
    return () => this.relays.delete(channel);
  }

  /** The users with a socket in a room, on every instance. */
  async usersIn(room: string): Promise<Set<string>> {
    if (!this.io) return new Set();
    const sockets = await this.io.in(room).fetchSockets();
    return new Set(sockets.flatMap((socket) => ((socket.data.user as RealtimeUser | undefined)?.id ? [(socket.data.user as RealtimeUser).id] : [])));
  }

  /** The user a socket (on any instance) is signed in as; null when it is gone or anonymous. */
  async sessionOwner(sessionId: string): Promise<string | null> {
    if (!this.io) return null;
    const sockets = await this.io.in(sessionId).fetchSockets();
    const user = sockets[0]?.data.user as RealtimeUser | undefined;
    return user?.id ?? null;
  }

  /**
   * Sends `event` to one socket and waits for its acknowledgement (the
   * reference's `sio.call`, for `__event_call__`): only to a socket of
   * `userId`. Failures come back as `{error}` as the reference's do.
   */
  async callSession(sessionId: string, userId: string, event: string, payload: unknown): Promise<unknown> {
    if (!this.io || (await this.sessionOwner(sessionId)) !== userId) return { error: 'Client session disconnected.' };
    const target = this.io.to(sessionId);
    try {
      const timeout = this.options.eventCallTimeoutMs;
      const replies: unknown[] = timeout === null ? await target.timeout(2 ** 31 - 1).emitWithAck(event, payload) : await target.timeout(timeout).emitWithAck(event, payload);
      return replies.length > 0 ? replies[0] : { error: 'Client session disconnected.' };
    } catch {
      return { error: 'Event call timed out. The browser tab may be inactive or closed.' };
    }
  }

  async close(): Promise<void> {
    const io = this.io;
    this.io = null;
    if (io) {
      io.local.disconnectSockets(true);
      // Not io.close(): that also closes the HTTP server, which Fastify owns.
      io.engine.close();
      await io.of('/').adapter.close();
    }
    if (this.redis) {
      await Promise.all([disconnectRedis(this.redis.pub), disconnectRedis(this.redis.sub)]);
      this.redis = null;
    }
  }
}
