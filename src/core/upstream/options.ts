import { bool } from '../../config/env.js';

/**
 * Process-level rules for calls to model providers, read once from the
 * environment with the reference's variable names (env.py). Every call has a
 * deadline: where the reference allows "no limit" (an empty value), Parley keeps
 * the default instead, so that a silent provider can never hold a request forever.
 */
export interface UpstreamOptions {
  /** Whole exchange, headers and body (AIOHTTP_CLIENT_TIMEOUT, seconds, default 300). */
  timeoutMs: number;
  /** Longest silence between two chunks of a streamed answer (AIOHTTP_CLIENT_STREAM_IDLE_TIMEOUT, default: the whole-exchange limit). */
  streamIdleTimeoutMs: number;
  /** Model lists and connection checks (AIOHTTP_CLIENT_TIMEOUT_MODEL_LIST, seconds, default 10). */
  modelListTimeoutMs: number;
  /** How long provider model lists are reused (MODELS_CACHE_TTL, seconds, default 1; empty: until changed or refreshed). */
  modelsCacheTtlMs: number | null;
  /** Connections kept open per provider origin (AIOHTTP_POOL_CONNECTIONS_PER_HOST; default unlimited). */
  connectionsPerOrigin: number | null;
  /** Every user reaches every model (BYPASS_MODEL_ACCESS_CONTROL). */
  bypassModelAccessControl: boolean;
  /** The deprecated `/openai/{path}` pass-through (ENABLE_OPENAI_API_PASSTHROUGH). */
  openaiPassthrough: boolean;
  /** User identity sent to providers (ENABLE_FORWARD_USER_INFO_HEADERS and the header names). */
  forwardUserInfo: {
    enabled: boolean;
    name: string;
    id: string;
    email: string;
    role: string;
    chatId: string;
    messageId: string;
    jwtHeader: string;
    jwtSecret: string | null;
    jwtExpiresSeconds: number;
  };
}

function seconds(raw: string | undefined, fallback: number): number {
  const value = Number.parseInt(raw?.trim() ?? '', 10);
  return (Number.isFinite(value) && value > 0 ? value : fallback) * 1000;
}

export function readUpstreamOptions(env: Record<string, string | undefined>): UpstreamOptions {
  const timeoutMs = seconds(env.AIOHTTP_CLIENT_TIMEOUT, 300);
  const ttlRaw = env.MODELS_CACHE_TTL ?? '1';
  const ttl = Number.parseInt(ttlRaw, 10);
  const perOrigin = Number.parseInt(env.AIOHTTP_POOL_CONNECTIONS_PER_HOST ?? '', 10);
  return {
    timeoutMs,
    streamIdleTimeoutMs: seconds(env.AIOHTTP_CLIENT_STREAM_IDLE_TIMEOUT, timeoutMs / 1000),
    modelListTimeoutMs: seconds(env.AIOHTTP_CLIENT_TIMEOUT_MODEL_LIST ?? env.AIOHTTP_CLIENT_TIMEOUT_OPENAI_MODEL_LIST, 10),
    modelsCacheTtlMs: ttlRaw.trim() === '' ? null : Number.isFinite(ttl) && ttl >= 0 ? ttl * 1000 : 1000,
    connectionsPerOrigin: Number.isFinite(perOrigin) && perOrigin > 0 ? perOrigin : null,
    bypassModelAccessControl: bool(env.BYPASS_MODEL_ACCESS_CONTROL, false),
    openaiPassthrough: bool(env.ENABLE_OPENAI_API_PASSTHROUGH, false),
    forwardUserInfo: {
      enabled: bool(env.ENABLE_FORWARD_USER_INFO_HEADERS, false),
      name: env.FORWARD_USER_INFO_HEADER_USER_NAME ?? 'X-OpenWebUI-User-Name',
      id: env.FORWARD_USER_INFO_HEADER_USER_ID ?? 'X-OpenWebUI-User-Id',
      email: env.FORWARD_USER_INFO_HEADER_USER_EMAIL ?? 'X-OpenWebUI-User-Email',
      role: env.FORWARD_USER_INFO_HEADER_USER_ROLE ?? 'X-OpenWebUI-User-Role',
      chatId: env.FORWARD_SESSION_INFO_HEADER_CHAT_ID ?? 'X-OpenWebUI-Chat-Id',
      messageId: env.FORWARD_SESSION_INFO_HEADER_MESSAGE_ID ?? 'X-OpenWebUI-Message-Id',
      jwtHeader: env.FORWARD_USER_INFO_HEADER_JWT ?? 'X-OpenWebUI-User-Jwt',
      jwtSecret: env.FORWARD_USER_INFO_HEADER_JWT_SECRET?.trim() || null,
      jwtExpiresSeconds: Number.parseInt(env.FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS ?? '', 10) || 300,
    },
  };
}
