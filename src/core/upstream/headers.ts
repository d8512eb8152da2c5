import { SignJWT } from 'jose';
import type { UserRecord } from '../auth/user.js';
import type { Connection } from './connections.js';
import type { UpstreamOptions } from './options.js';

/**
 * Who a provider call is made for and what it belongs to: the user (for the
 * forwarded identity headers and `session` auth), the chat it serves, and the
 * signal that cancels it when the client goes away.
 */
export interface CallContext {
  user?: UserRecord | null;
  /** The caller's own credential, for connections with `auth_type: session`. */
  token?: string | null;
  cookie?: string | null;
  userAgent?: string | null;
  groupNames?: () => Promise<{ id: string; name: string }[]>;
  metadata?: { chat_id?: string; message_id?: string; [key: string]: unknown } | null;
  signal?: AbortSignal;
}

/** The user's identity for a provider (ENABLE_FORWARD_USER_INFO_HEADERS): a signed JWT, or one header per field. */
export async function userInfoHeaders(options: UpstreamOptions['forwardUserInfo'], user: UserRecord): Promise<Record<string, string>> {
  if (options.jwtSecret) {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ sub: user.id, email: user.email, name: user.name, role: user.role, iss: 'open-webui' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt(now)
      .setExpirationTime(now + options.jwtExpiresSeconds)
      .sign(new TextEncoder().encode(options.jwtSecret));
    return { [options.jwtHeader]: token };
  }
  return {
    [options.name]: encodeURIComponent(user.name.trim()).replace(/%20/g, ' '),
    [options.id]: user.id,
    [options.email]: user.email.trim(),
    [options.role]: user.role,
  };
}

/** The user's identity headers when ENABLE_FORWARD_USER_INFO_HEADERS is on (also sent to OpenAI-compatible speech providers), else none. */
export async function forwardedUserHeaders(options: UpstreamOptions['forwardUserInfo'], user: UserRecord | null): Promise<Record<string, string>> {
  return options.enabled && user ? userInfoHeaders(options, user) : {};
}

/** Admin-set headers with their `{{...}}` placeholders filled in (utils/headers.get_custom_headers): of a connection, or of the external document loader. */
export async function customHeaders(templates: Record<string, unknown>, context: CallContext): Promise<Record<string, string>> {
  const metadata = context.metadata ?? {};
  const needsGroups = Object.values(templates).some((v) => /\{\{USER_GROUP(S|_IDS)\}\}/.test(String(v)));
  const groups = needsGroups && context.groupNames ? await context.groupNames() : [];
  const user = context.user;
  const values: Record<string, string> = {
    '{{CHAT_ID}}': String(metadata.chat_id ?? ''),
    '{{MESSAGE_ID}}': String(metadata.message_id ?? ''),
    '{{FILE_ID}}': String(metadata.file_id ?? ''),
    '{{FILE_NAME}}': String(metadata.file_name ?? ''),
    '{{FILE_CONTENT_TYPE}}': String(metadata.file_content_type ?? ''),
    '{{USER_ID}}': user?.id ?? '',
    '{{USER_NAME}}': user?.name.trim() ?? '',
    '{{USER_EMAIL}}': user?.email.trim() ?? '',
    '{{USER_ROLE}}': user?.role ?? '',
    '{{USER_GROUPS}}': groups.map((g) => g.name.trim()).join(','),
    '{{USER_GROUP_IDS}}': groups.map((g) => g.id).join(','),
    '{{USER_AGENT}}': context.userAgent ?? '',
  };
  const out: Record<string, string> = {};
  for (const [name, template] of Object.entries(templates)) {
    let value = typeof template === 'string' ? template : String(template);
    for (const [token, replacement] of Object.entries(values)) value = value.split(token).join(replacement);
    out[name] = value;
  }
  return out;
}

/**
 * The headers of a call to a connection: JSON, the connection's credential
 * (bearer by default; `none`; `session` forwards the caller's own token), the
 * user's identity when forwarding is on, Azure's `api-key`, then the admin's
 * custom headers, which win.
 */
export async function connectionHeaders(connection: Connection, context: CallContext, options: UpstreamOptions): Promise<Record<string, string>> {
  let headers: Record<string, string> = { 'content-type': 'application/json' };
  if (connection.url.includes('openrouter.ai')) Object.assign(headers, { 'HTTP-Referer': 'https://openwebui.com/', 'X-Title': 'Open WebUI' });
  if (options.forwardUserInfo.enabled && context.user) {
    headers = { ...headers, ...(await userInfoHeaders(options.forwardUserInfo, context.user)) };
    if (context.metadata?.chat_id) headers[options.forwardUserInfo.chatId] = String(context.metadata.chat_id);
  }
  const config = connection.config;
  const authType = connection.provider === 'openai' ? (config.auth_type ?? 'bearer') : 'bearer';
  let token: string | null = null;
  if (authType === 'bearer') token = connection.key || null;
  else if (authType === 'session') {
    token = context.token ?? null;
    if (context.cookie) headers.cookie = context.cookie;
  }
  if (token) headers.authorization = `Bearer ${token}`;
  if (connection.provider === 'openai' && isAzure(connection) && !['azure_ad', 'microsoft_entra_id'].includes(String(authType))) {
    headers['api-key'] = connection.key;
  }
  if (config.headers && typeof config.headers === 'object' && !Array.isArray(config.headers)) {
    Object.assign(headers, await customHeaders(config.headers, context));
  }
  return headers;
}

export function isAzure(connection: Connection): boolean {
  return connection.config.azure === true || connection.config.provider === 'azure';
}

export function isAnthropicUrl(url: string): boolean {
  return url.includes('api.anthropic.com');
}
