import { bool } from '../../config/env.js';
import { checks, defineSetting, parsers, type SettingDefinition } from '../../config/settings.js';
import { ENABLE_USER_STATUS } from '../users/settings.js';

/**
 * The persistent settings the auths routes read and write, with the reference's
 * config keys and environment variables (config.py DEFAULT_CONFIG). The admin
 * forms map their upper-case field names onto these keys.
 */

/** `FOLDER_MAX_FILE_COUNT` and friends: a number, or '' for "no limit". */
const optionalInt = (raw: string): number | string => {
  const n = Number.parseInt(raw, 10);
  return Number.isFinite(n) ? n : '';
};
const optionalIntCheck = (v: unknown) => (v === '' || v === null || Number.isInteger(v) ? null : 'must be an integer or empty');

const stringList = (v: unknown) => (Array.isArray(v) && v.every((item) => typeof item === 'string') ? null : 'must be a list of strings');
const intOrString = (v: unknown) => (Number.isInteger(v) || typeof v === 'string' ? null : 'must be an integer or a string');

const nullable = <T>(definition: SettingDefinition<T | null>) => defineSetting<T | null>(definition);

/** `JWT_EXPIRES_IN`: -1 or 0 (no expiry), or a number with a unit. */
const DURATION_FORMAT = /^(-1|0|(-?\d+(\.\d+)?)(ms|s|m|h|d|w))$/;
export const jwtExpirySetting = defineSetting({
  key: 'auth.jwt_expiry',
  env: 'JWT_EXPIRES_IN',
  default: '4w',
  check: (v) => (typeof v === 'string' && DURATION_FORMAT.test(v) ? null : "must be a duration such as '4w', '12h' or '-1'"),
});
export const enableSignupSetting = defineSetting({ key: 'ui.enable_signup', env: 'ENABLE_SIGNUP', default: true, parse: parsers.bool, check: checks.bool });
export const enableLoginFormSetting = defineSetting({ key: 'ui.enable_login_form', env: 'ENABLE_LOGIN_FORM', default: true, parse: parsers.bool, check: checks.bool });
export const defaultUserRoleSetting = defineSetting({
  key: 'ui.default_user_role',
  env: 'DEFAULT_USER_ROLE',
  default: 'pending',
  check: (v) => (v === 'pending' || v === 'user' || v === 'admin' ? null : "must be 'pending', 'user' or 'admin'"),
});
export const defaultGroupIdSetting = defineSetting({ key: 'ui.default_group_id', env: 'DEFAULT_GROUP_ID', default: '', check: checks.string });
export const showAdminDetailsSetting = defineSetting({ key: 'auth.admin.show', env: 'SHOW_ADMIN_DETAILS', default: true, parse: parsers.bool, check: checks.bool });
export const adminEmailSetting = nullable<string>({ key: 'auth.admin.email', env: 'ADMIN_EMAIL', default: null, check: checks.nullableString });
export const enableApiKeysSetting = defineSetting({ key: 'auth.enable_api_keys', env: 'ENABLE_API_KEYS', default: false, parse: parsers.bool, check: checks.bool });
export const apiKeyRestrictionsSetting = defineSetting({
  key: 'auth.api_key.endpoint_restrictions',
  env: 'ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS',
  default: false,
  parse: parsers.bool,
  check: checks.bool,
});
export const apiKeyAllowedEndpointsSetting = defineSetting({
  key: 'auth.api_key.allowed_endpoints',
  env: 'API_KEYS_ALLOWED_ENDPOINTS',
  default: '',
  check: checks.string,
});
/** POST /admin/config/ldap stores `enable_ldap` as sent, null included. */
export const ldapEnableSetting = defineSetting<boolean | null>({
  key: 'ldap.enable',
  env: 'ENABLE_LDAP',
  default: false,
  parse: parsers.bool,
  check: (v) => (v === null ? null : checks.bool(v)),
});
export const oauthEndSessionEndpointSetting = defineSetting({ key: 'oauth.end_session_endpoint', env: 'OPENID_END_SESSION_ENDPOINT', default: '', check: checks.string });
export const oauthProviderUrlSetting = defineSetting({ key: 'oauth.provider_url', env: 'OPENID_PROVIDER_URL', default: '', check: checks.string });

export const channelResponseModeSetting = defineSetting({
  key: 'channels.model_response_mode',
  env: 'CHANNEL_MODEL_RESPONSE_MODE',
  default: 'thread',
  check: (v) => (v === 'thread' || v === 'channel' ? null : "must be 'thread' or 'channel'"),
});

/** Admin › General form field → setting key (routers/auths.py ADMIN_CONFIG_KEYS). */
export const ADMIN_CONFIG_KEYS = {
  SHOW_ADMIN_DETAILS: showAdminDetailsSetting.key,
  ADMIN_EMAIL: adminEmailSetting.key,
  WEBUI_URL: defineSetting({ key: 'webui.url', env: 'WEBUI_URL', default: '', check: checks.string }).key,
  ENABLE_SIGNUP: enableSignupSetting.key,
  ENABLE_API_KEYS: enableApiKeysSetting.key,
  ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: apiKeyRestrictionsSetting.key,
  API_KEYS_ALLOWED_ENDPOINTS: apiKeyAllowedEndpointsSetting.key,
  DEFAULT_USER_ROLE: defaultUserRoleSetting.key,
  DEFAULT_GROUP_ID: defaultGroupIdSetting.key,
  JWT_EXPIRES_IN: jwtExpirySetting.key,
  ENABLE_COMMUNITY_SHARING: defineSetting({ key: 'ui.enable_community_sharing', env: 'ENABLE_COMMUNITY_SHARING', default: true, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_MESSAGE_RATING: defineSetting({ key: 'ui.enable_message_rating', env: 'ENABLE_MESSAGE_RATING', default: true, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_FOLDERS: defineSetting({ key: 'folders.enable', env: 'ENABLE_FOLDERS', default: true, parse: parsers.bool, check: checks.bool }).key,
  FOLDER_MAX_FILE_COUNT: defineSetting<number | string>({ key: 'folders.max_file_count', env: 'FOLDER_MAX_FILE_COUNT', default: '', parse: optionalInt, check: optionalIntCheck }).key,
  AUTOMATION_MAX_COUNT: defineSetting<number | string>({ key: 'automations.max_count', env: 'AUTOMATION_MAX_COUNT', default: '', parse: optionalInt, check: optionalIntCheck }).key,
  AUTOMATION_MIN_INTERVAL: defineSetting<number | string>({ key: 'automations.min_interval', env: 'AUTOMATION_MIN_INTERVAL', default: '', parse: optionalInt, check: optionalIntCheck }).key,
  ENABLE_AUTOMATIONS: defineSetting({ key: 'automations.enable', env: 'ENABLE_AUTOMATIONS', default: true, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_CHANNELS: defineSetting({ key: 'channels.enable', env: 'ENABLE_CHANNELS', default: false, parse: parsers.bool, check: checks.bool }).key,
  CHANNEL_MODEL_RESPONSE_MODE: channelResponseModeSetting.key,
  ENABLE_CALENDAR: defineSetting({ key: 'calendar.enable', env: 'ENABLE_CALENDAR', default: true, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_MEMORIES: defineSetting({ key: 'memories.enable', env: 'ENABLE_MEMORIES', default: true, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_MEMORY_SYSTEM_CONTEXT: defineSetting({ key: 'memories.system_context.enable', env: 'ENABLE_MEMORY_SYSTEM_CONTEXT', default: true, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_NOTES: defineSetting({ key: 'notes.enable', env: 'ENABLE_NOTES', default: true, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_USER_WEBHOOKS: defineSetting({ key: 'ui.enable_user_webhooks', env: 'ENABLE_USER_WEBHOOKS', default: false, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_USER_STATUS: ENABLE_USER_STATUS.key,
  PENDING_USER_OVERLAY_TITLE: nullable<string>({ key: 'ui.pending_user_overlay_title', env: 'PENDING_USER_OVERLAY_TITLE', default: '', check: checks.nullableString }).key,
  PENDING_USER_OVERLAY_CONTENT: nullable<string>({ key: 'ui.pending_user_overlay_content', env: 'PENDING_USER_OVERLAY_CONTENT', default: '', check: checks.nullableString }).key,
  RESPONSE_WATERMARK: nullable<string>({ key: 'ui.watermark', env: 'RESPONSE_WATERMARK', default: '', check: checks.nullableString }).key,
} as const;

/** Not in the reference's form: upgrade a plain `ldap://` connection with StartTLS before binding. */
export const ldapStartTlsSetting = defineSetting({ key: 'ldap.server.start_tls', env: 'LDAP_START_TLS', default: false, parse: parsers.bool, check: checks.bool });

/** LDAP server form field → setting key (LDAP_SERVER_CONFIG_KEYS). */
export const LDAP_SERVER_CONFIG_KEYS = {
  label: defineSetting({ key: 'ldap.server.label', env: 'LDAP_SERVER_LABEL', default: 'LDAP Server', check: checks.string }).key,
  host: defineSetting({ key: 'ldap.server.host', env: 'LDAP_SERVER_HOST', default: 'localhost', check: checks.string }).key,
  port: nullable<number>({ key: 'ldap.server.port', env: 'LDAP_SERVER_PORT', default: 389, parse: parsers.int, check: checks.nullableInt }).key,
  attribute_for_mail: defineSetting({ key: 'ldap.server.attribute_for_mail', env: 'LDAP_ATTRIBUTE_FOR_MAIL', default: 'mail', check: checks.string }).key,
  attribute_for_username: defineSetting({ key: 'ldap.server.attribute_for_username', env: 'LDAP_ATTRIBUTE_FOR_USERNAME', default: 'uid', check: checks.string }).key,
  app_dn: defineSetting({ key: 'ldap.server.app_dn', env: 'LDAP_APP_DN', default: '', check: checks.string }).key,
  app_dn_password: defineSetting({ key: 'ldap.server.app_password', env: 'LDAP_APP_PASSWORD', default: '', check: checks.string }).key,
  search_base: defineSetting({ key: 'ldap.server.users_dn', env: 'LDAP_SEARCH_BASE', default: '', check: checks.string }).key,
  search_filters: defineSetting({ key: 'ldap.server.search_filter', env: 'LDAP_SEARCH_FILTER', default: '', check: checks.string }).key,
  use_tls: defineSetting({ key: 'ldap.server.use_tls', env: 'LDAP_USE_TLS', default: true, parse: parsers.bool, check: checks.bool }).key,
  certificate_path: nullable<string>({ key: 'ldap.server.ca_cert_file', env: 'LDAP_CA_CERT_FILE', default: '', check: checks.nullableString }).key,
  validate_cert: defineSetting({ key: 'ldap.server.validate_cert', env: 'LDAP_VALIDATE_CERT', default: true, parse: parsers.bool, check: checks.bool }).key,
  ciphers: nullable<string>({ key: 'ldap.server.ciphers', env: 'LDAP_CIPHERS', default: 'ALL', check: checks.nullableString }).key,
  enable_group_management: defineSetting({ key: 'ldap.group.enable_management', env: 'ENABLE_LDAP_GROUP_MANAGEMENT', default: false, parse: parsers.bool, check: checks.bool }).key,
  enable_group_creation: defineSetting({ key: 'ldap.group.enable_creation', env: 'ENABLE_LDAP_GROUP_CREATION', default: false, parse: parsers.bool, check: checks.bool }).key,
  attribute_for_groups: defineSetting({ key: 'ldap.server.attribute_for_groups', env: 'LDAP_ATTRIBUTE_FOR_GROUPS', default: 'memberOf', check: checks.string }).key,
} as const;

const commaList = (raw: string) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** OAuth form field → setting key (OAUTH_CONFIG_KEYS). Comma-list fields are stored as lists. */
export const OAUTH_CONFIG_KEYS = {
  ENABLE_OAUTH: defineSetting({ key: 'oauth.enable', env: 'ENABLE_OAUTH', default: true, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_OAUTH_SIGNUP: defineSetting({ key: 'oauth.enable_signup', env: 'ENABLE_OAUTH_SIGNUP', default: false, parse: parsers.bool, check: checks.bool }).key,
  OAUTH_MERGE_ACCOUNTS_BY_EMAIL: defineSetting({ key: 'oauth.merge_accounts_by_email', env: 'OAUTH_MERGE_ACCOUNTS_BY_EMAIL', default: false, parse: parsers.bool, check: checks.bool }).key,
  OAUTH_AUTO_REDIRECT: defineSetting({ key: 'oauth.auto_redirect', env: 'OAUTH_AUTO_REDIRECT', default: false, parse: parsers.bool, check: checks.bool }).key,
  OAUTH_ALLOWED_DOMAINS: defineSetting<string[]>({ key: 'oauth.allowed_domains', env: 'OAUTH_ALLOWED_DOMAINS', default: ['*'], parse: commaList, check: stringList }).key,
  OAUTH_BLOCKED_GROUPS: defineSetting({ key: 'oauth.blocked_groups', env: 'OAUTH_BLOCKED_GROUPS', default: '[]', check: checks.string }).key,
  ENABLE_OAUTH_ROLE_MANAGEMENT: defineSetting({ key: 'oauth.enable_role_mapping', env: 'ENABLE_OAUTH_ROLE_MANAGEMENT', default: false, parse: parsers.bool, check: checks.bool }).key,
  OAUTH_ROLES_CLAIM: defineSetting({ key: 'oauth.roles_claim', env: 'OAUTH_ROLES_CLAIM', default: 'roles', check: checks.string }).key,
  OAUTH_ADMIN_ROLES: defineSetting<string[]>({ key: 'oauth.admin_roles', env: 'OAUTH_ADMIN_ROLES', default: ['admin'], parse: commaList, check: stringList }).key,
  OAUTH_ALLOWED_ROLES: defineSetting<string[]>({ key: 'oauth.allowed_roles', env: 'OAUTH_ALLOWED_ROLES', default: ['user', 'admin'], parse: commaList, check: stringList }).key,
  ENABLE_OAUTH_GROUP_MANAGEMENT: defineSetting({ key: 'oauth.enable_group_mapping', env: 'ENABLE_OAUTH_GROUP_MANAGEMENT', default: false, parse: parsers.bool, check: checks.bool }).key,
  ENABLE_OAUTH_GROUP_CREATION: defineSetting({ key: 'oauth.enable_group_creation', env: 'ENABLE_OAUTH_GROUP_CREATION', default: false, parse: parsers.bool, check: checks.bool }).key,
  OAUTH_GROUP_CLAIM: defineSetting({ key: 'oauth.group_claim', env: 'OAUTH_GROUPS_CLAIM', default: 'groups', check: checks.string }).key,
  OAUTH_GROUP_DEFAULT_SHARE: defineSetting<boolean | string>({
    key: 'oauth.group_default_share',
    env: 'OAUTH_GROUP_DEFAULT_SHARE',
    default: true,
    parse: (raw) => (raw.trim().toLowerCase() === 'members' ? 'members' : raw.trim().toLowerCase() === 'true'),
    check: (v) => (typeof v === 'boolean' || typeof v === 'string' ? null : 'must be a boolean or a string'),
  }).key,
  OAUTH_PROVIDER_NAME: defineSetting({ key: 'oauth.provider_name', env: 'OAUTH_PROVIDER_NAME', default: 'SSO', check: checks.string }).key,
  OPENID_PROVIDER_URL: oauthProviderUrlSetting.key,
  OAUTH_CLIENT_ID: defineSetting({ key: 'oauth.client_id', env: 'OAUTH_CLIENT_ID', default: '', check: checks.string }).key,
  OAUTH_CLIENT_SECRET: defineSetting({ key: 'oauth.client_secret', env: 'OAUTH_CLIENT_SECRET', default: '', check: checks.string }).key,
  OPENID_REDIRECT_URI: defineSetting({ key: 'oauth.redirect_uri', env: 'OPENID_REDIRECT_URI', default: '', check: checks.string }).key,
  OAUTH_SCOPES: defineSetting({ key: 'oauth.scopes', env: 'OAUTH_SCOPES', default: 'openid email profile', check: checks.string }).key,
  OAUTH_CODE_CHALLENGE_METHOD: nullable<string>({ key: 'oauth.code_challenge_method', env: 'OAUTH_CODE_CHALLENGE_METHOD', default: null, check: checks.nullableString }).key,
  OAUTH_TOKEN_ENDPOINT_AUTH_METHOD: nullable<string>({ key: 'oauth.token_endpoint_auth_method', env: 'OAUTH_TOKEN_ENDPOINT_AUTH_METHOD', default: null, check: checks.nullableString }).key,
  OPENID_END_SESSION_ENDPOINT: oauthEndSessionEndpointSetting.key,
  OAUTH_TIMEOUT: defineSetting<number | string>({ key: 'oauth.timeout', env: 'OAUTH_TIMEOUT', default: '', check: intOrString }).key,
  OAUTH_CLIENT_TIMEOUT: defineSetting<number | string>({ key: 'oauth.client.timeout', env: 'OAUTH_CLIENT_TIMEOUT', default: '', check: intOrString }).key,
  OAUTH_EMAIL_CLAIM: defineSetting({ key: 'oauth.email_claim', env: 'OAUTH_EMAIL_CLAIM', default: 'email', check: checks.string }).key,
  OAUTH_USERNAME_CLAIM: defineSetting({ key: 'oauth.username_claim', env: 'OAUTH_USERNAME_CLAIM', default: 'name', check: checks.string }).key,
  OAUTH_PICTURE_CLAIM: defineSetting({ key: 'oauth.picture_claim', env: 'OAUTH_PICTURE_CLAIM', default: 'picture', check: checks.string }).key,
  OAUTH_SUB_CLAIM: nullable<string>({ key: 'oauth.sub_claim', env: 'OAUTH_SUB_CLAIM', default: null, check: checks.nullableString }).key,
  OAUTH_AUDIENCE: defineSetting({ key: 'oauth.audience', env: 'OAUTH_AUDIENCE', default: '', check: checks.string }).key,
  OAUTH_UPDATE_EMAIL_ON_LOGIN: defineSetting({ key: 'oauth.update_email_on_login', env: 'OAUTH_UPDATE_EMAIL_ON_LOGIN', default: false, parse: parsers.bool, check: checks.bool }).key,
  OAUTH_UPDATE_NAME_ON_LOGIN: defineSetting({ key: 'oauth.update_name_on_login', env: 'OAUTH_UPDATE_NAME_ON_LOGIN', default: false, parse: parsers.bool, check: checks.bool }).key,
  OAUTH_UPDATE_PICTURE_ON_LOGIN: defineSetting({ key: 'oauth.update_picture_on_login', env: 'OAUTH_UPDATE_PICTURE_ON_LOGIN', default: false, parse: parsers.bool, check: checks.bool }).key,
  OAUTH_REFRESH_TOKEN_INCLUDE_SCOPE: defineSetting({
    key: 'oauth.refresh_token.include_scope',
    env: 'OAUTH_REFRESH_TOKEN_INCLUDE_SCOPE',
    default: false,
    parse: parsers.bool,
    check: checks.bool,
  }).key,
} as const;

/** OAuth fields the admin form edits as one comma-separated string but that are stored as lists. */
export const OAUTH_COMMA_LIST_FIELDS = new Set(['OAUTH_ALLOWED_DOMAINS', 'OAUTH_ADMIN_ROLES', 'OAUTH_ALLOWED_ROLES']);

/**
 * Process-level switches of the auth routes, read once from the environment
 * (the reference reads them in env.py and never changes them at run time).
 */
export interface AuthOptions {
  enablePasswordAuth: boolean;
  enableInitialAdminSignup: boolean;
  signoutRedirectUrl: string | null;
  trustedEmailHeader: string | null;
  trustedNameHeader: string | null;
  trustedRoleHeader: string | null;
  trustedGroupsHeader: string | null;
}

export function readAuthOptions(raw: Record<string, string | undefined>): AuthOptions {
  return {
    enablePasswordAuth: bool(raw.ENABLE_PASSWORD_AUTH, true),
    enableInitialAdminSignup: bool(raw.ENABLE_INITIAL_ADMIN_SIGNUP, false),
    signoutRedirectUrl: raw.WEBUI_AUTH_SIGNOUT_REDIRECT_URL || null,
    trustedEmailHeader: raw.WEBUI_AUTH_TRUSTED_EMAIL_HEADER?.toLowerCase() || null,
    trustedNameHeader: raw.WEBUI_AUTH_TRUSTED_NAME_HEADER?.toLowerCase() || null,
    trustedRoleHeader: raw.WEBUI_AUTH_TRUSTED_ROLE_HEADER?.toLowerCase() || null,
    trustedGroupsHeader: raw.WEBUI_AUTH_TRUSTED_GROUPS_HEADER?.toLowerCase() || null,
  };
}
