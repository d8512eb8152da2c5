import { bool, int } from '../../config/env.js';

/** The socket server's settings (the reference's env.py WEBSOCKET_* constants), read once. */
export interface RealtimeOptions {
  /** ENABLE_WEBSOCKET_SUPPORT: websocket transport only (default); false: long-polling only. */
  websocket: boolean;
  pingIntervalMs: number;
  pingTimeoutMs: number;
  /** WEBSOCKET_EVENT_CALLER_TIMEOUT: how long a tool's `__event_call__` waits for the browser (null: no limit). */
  eventCallTimeoutMs: number | null;
  /** WEBSOCKET_REDIS_URL, else REDIS_URL: instances sharing rooms through Redis; null: this process alone. */
  redisUrl: string | null;
  /** REDIS_KEY_PREFIX: every Redis key and channel Parley uses starts with it. */
  redisKeyPrefix: string;
  corsOrigins: string[];
}

export function readRealtimeOptions(raw: Record<string, string | undefined>, corsOrigins: string[]): RealtimeOptions {
  const callTimeout = int(raw.WEBSOCKET_EVENT_CALLER_TIMEOUT, 0);
  return {
    websocket: bool(raw.ENABLE_WEBSOCKET_SUPPORT, true),
    pingIntervalMs: int(raw.WEBSOCKET_SERVER_PING_INTERVAL, 25) * 1000,
    pingTimeoutMs: int(raw.WEBSOCKET_SERVER_PING_TIMEOUT, 20) * 1000,
    eventCallTimeoutMs: callTimeout > 0 ? callTimeout * 1000 : null,
    redisUrl: raw.WEBSOCKET_REDIS_URL || raw.REDIS_URL || null,
    redisKeyPrefix: raw.REDIS_KEY_PREFIX || 'open-webui',
    corsOrigins,
  };
}
