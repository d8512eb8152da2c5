import { bool } from '../../config/env.js';

/**
 * The process-level OAuth variables (the reference reads them from the environment at start and
 * never changes them): the fixed providers' clients, the separators of role and group claims, the
 * session limits and switches. The generic OpenID provider and every rule an admin edits are
 * persistent settings (auths/settings.ts, OAUTH_CONFIG_KEYS).
 */
export interface OAuthOptions {
  google: { clientId: string; clientSecret: string; scope: string; redirectUri: string; authorizeParams: Record<string, string> };
  microsoft: { clientId: string; clientSecret: string; tenantId: string; loginBaseUrl: string; pictureUrl: string; scope: string; redirectUri: string };
  github: { clientId: string; clientSecret: string; scope: string; redirectUri: string };
  /** Extra parameters of every authorization request (OAUTH_AUTHORIZE_PARAMS, a JSON object). */
  authorizeParams: Record<string, string>;
  rolesSeparator: string;
  groupsSeparator: string;
  /** ENABLE_OAUTH_EMAIL_FALLBACK: `<provider>@<sub>.local` when the provider gives no e-mail. */
  emailFallback: boolean;
  /** ENABLE_OAUTH_ID_TOKEN_COOKIE: the legacy `oauth_id_token` cookie. */
  idTokenCookie: boolean;
  /** OAUTH_SESSION_TOKEN_ENCRYPTION_KEY (default WEBUI_SECRET_KEY): the provider tokens' key at rest. */
  sessionTokenKey: string;
  maxSessionsPerUser: number;
  enableTokenExchange: boolean;
  enableBackchannelLogout: boolean;
  /** OAUTH_ACCESS_TOKEN_REQUEST_INCLUDE_CLIENT_ID: the client id in the code exchange's body too. */
  tokenRequestIncludesClientId: boolean;
}

/** A JSON object of string values, or {} (the reference ignores anything else with a warning). */
function jsonParams(raw: string | undefined): Record<string, string> {
  if (!raw) return {};
  try {
    const value: unknown = JSON.parse(raw);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)]));
  } catch {
    return {};
  }
}

export function readOAuthOptions(raw: Record<string, string | undefined>, secretKey: string): OAuthOptions {
  const maxSessions = Number.parseInt(raw.OAUTH_MAX_SESSIONS_PER_USER ?? '', 10);
  return {
    google: {
      clientId: raw.GOOGLE_CLIENT_ID ?? '',
      clientSecret: raw.GOOGLE_CLIENT_SECRET ?? '',
      scope: raw.GOOGLE_OAUTH_SCOPE || 'openid email profile',
      redirectUri: raw.GOOGLE_REDIRECT_URI ?? '',
      authorizeParams: jsonParams(raw.GOOGLE_OAUTH_AUTHORIZE_PARAMS),
    },
    microsoft: {
      clientId: raw.MICROSOFT_CLIENT_ID ?? '',
      clientSecret: raw.MICROSOFT_CLIENT_SECRET ?? '',
      tenantId: raw.MICROSOFT_CLIENT_TENANT_ID ?? '',
      loginBaseUrl: raw.MICROSOFT_CLIENT_LOGIN_BASE_URL || 'https://login.microsoftonline.com',
      pictureUrl: raw.MICROSOFT_CLIENT_PICTURE_URL || 'https://graph.microsoft.com/v1.0/me/photo/$value',
      scope: raw.MICROSOFT_OAUTH_SCOPE || 'openid email profile',
      redirectUri: raw.MICROSOFT_REDIRECT_URI ?? '',
    },
    github: {
      clientId: raw.GITHUB_CLIENT_ID ?? '',
      clientSecret: raw.GITHUB_CLIENT_SECRET ?? '',
      scope: raw.GITHUB_CLIENT_SCOPE || 'user:email',
      redirectUri: raw.GITHUB_CLIENT_REDIRECT_URI ?? '',
    },
    authorizeParams: jsonParams(raw.OAUTH_AUTHORIZE_PARAMS),
    rolesSeparator: raw.OAUTH_ROLES_SEPARATOR ?? ',',
    groupsSeparator: raw.OAUTH_GROUPS_SEPARATOR ?? ';',
    emailFallback: bool(raw.ENABLE_OAUTH_EMAIL_FALLBACK, false),
    idTokenCookie: bool(raw.ENABLE_OAUTH_ID_TOKEN_COOKIE, true),
    sessionTokenKey: raw.OAUTH_SESSION_TOKEN_ENCRYPTION_KEY || secretKey,
    maxSessionsPerUser: Number.isInteger(maxSessions) && maxSessions > 0 ? maxSessions : 10,
    enableTokenExchange: bool(raw.ENABLE_OAUTH_TOKEN_EXCHANGE, false),
    enableBackchannelLogout: bool(raw.ENABLE_OAUTH_BACKCHANNEL_LOGOUT, false),
    tokenRequestIncludesClientId: bool(raw.OAUTH_ACCESS_TOKEN_REQUEST_INCLUDE_CLIENT_ID, false),
  };
}
