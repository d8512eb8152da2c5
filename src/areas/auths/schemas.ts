import { type Static, Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/** Request and response shapes of /api/v1/auths (models/auths.py, routers/auths.py). */

const OptionalWithDefault = <T extends Parameters<typeof Type.Optional>[0]>(schema: T, value: unknown) =>
  Type.Optional({ ...schema, default: value } as T);

export const SignupForm = Type.Object({
  name: Type.String(),
  email: Type.String(),
  password: Type.String(),
  profile_image_url: OptionalWithDefault(Nullable(Type.String()), '/user.png'),
});
export type SignupForm = Static<typeof SignupForm>;

export const Role = Type.Union([Type.Literal('pending'), Type.Literal('user'), Type.Literal('admin')]);

export const AddUserForm = Type.Object({
  name: Type.String(),
  email: Type.String(),
  password: Type.String(),
  profile_image_url: OptionalWithDefault(Nullable(Type.String()), '/user.png'),
  role: OptionalWithDefault(Nullable(Role), 'pending'),
});
export type AddUserForm = Static<typeof AddUserForm>;

export const SigninForm = Type.Object({ email: Type.String(), password: Type.String() });
export type SigninForm = Static<typeof SigninForm>;

export const LdapForm = Type.Object({ user: Type.String(), password: Type.String() });

export const UpdatePasswordForm = Type.Object({ password: Type.String(), new_password: Type.String() });
export type UpdatePasswordForm = Static<typeof UpdatePasswordForm>;

export const UpdateProfileForm = Type.Object({
  profile_image_url: Type.String(),
  name: Type.String(),
  bio: Maybe(Type.String()),
  gender: Maybe(Type.String()),
  date_of_birth: Maybe(Type.String({ format: 'date' })),
});
export type UpdateProfileForm = Static<typeof UpdateProfileForm>;

export const UpdateTimezoneForm = Type.Object({ timezone: Type.String() });

export const TokenExchangeForm = Type.Object({ token: Type.String() });

const IntOrString = Type.Union([Type.Integer(), Type.String()]);

export const AdminConfig = Type.Object({
  SHOW_ADMIN_DETAILS: Type.Boolean(),
  ADMIN_EMAIL: Maybe(Type.String()),
  WEBUI_URL: Type.String(),
  ENABLE_SIGNUP: Type.Boolean(),
  ENABLE_API_KEYS: Type.Boolean(),
  ENABLE_API_KEYS_ENDPOINT_RESTRICTIONS: Type.Boolean(),
  API_KEYS_ALLOWED_ENDPOINTS: Type.String(),
  DEFAULT_USER_ROLE: Type.String(),
  DEFAULT_GROUP_ID: Type.String(),
  JWT_EXPIRES_IN: Type.String(),
  ENABLE_COMMUNITY_SHARING: Type.Boolean(),
  ENABLE_MESSAGE_RATING: Type.Boolean(),
  ENABLE_FOLDERS: Type.Boolean(),
  FOLDER_MAX_FILE_COUNT: Maybe(IntOrString),
  AUTOMATION_MAX_COUNT: Maybe(IntOrString),
  AUTOMATION_MIN_INTERVAL: Maybe(IntOrString),
  ENABLE_AUTOMATIONS: Type.Boolean(),
  ENABLE_CHANNELS: Type.Boolean(),
  CHANNEL_MODEL_RESPONSE_MODE: OptionalWithDefault(Type.String(), 'thread'),
  ENABLE_CALENDAR: Type.Boolean(),
  ENABLE_MEMORIES: Type.Boolean(),
  ENABLE_MEMORY_SYSTEM_CONTEXT: Type.Boolean(),
  ENABLE_NOTES: Type.Boolean(),
  ENABLE_USER_WEBHOOKS: Type.Boolean(),
  ENABLE_USER_STATUS: Type.Boolean(),
  PENDING_USER_OVERLAY_TITLE: Maybe(Type.String()),
  PENDING_USER_OVERLAY_CONTENT: Maybe(Type.String()),
  RESPONSE_WATERMARK: Maybe(Type.String()),
});
export type AdminConfig = Static<typeof AdminConfig>;

export const LdapServerConfig = Type.Object({
  label: Type.String(),
  host: Type.String(),
  port: Maybe(Type.Integer()),
  attribute_for_mail: OptionalWithDefault(Type.String(), 'mail'),
  attribute_for_username: OptionalWithDefault(Type.String(), 'uid'),
  app_dn: Type.String(),
  app_dn_password: Type.String(),
  search_base: Type.String(),
  search_filters: OptionalWithDefault(Type.String(), ''),
  use_tls: OptionalWithDefault(Type.Boolean(), true),
  certificate_path: Maybe(Type.String()),
  validate_cert: OptionalWithDefault(Type.Boolean(), true),
  ciphers: OptionalWithDefault(Nullable(Type.String()), 'ALL'),
  enable_group_management: OptionalWithDefault(Type.Boolean(), false),
  enable_group_creation: OptionalWithDefault(Type.Boolean(), false),
  attribute_for_groups: OptionalWithDefault(Type.String(), 'memberOf'),
});
export type LdapServerConfig = Static<typeof LdapServerConfig>;

export const LdapConfigForm = Type.Object({ enable_ldap: Maybe(Type.Boolean()) });
export const LdapConfigResponse = Type.Object({ ENABLE_LDAP: Nullable(Type.Boolean()) });

const OptionalString = Maybe(Type.String());
const OptionalBool = Maybe(Type.Boolean());

export const OAuthConfigForm = Type.Object({
  ENABLE_OAUTH: OptionalBool,
  ENABLE_OAUTH_SIGNUP: OptionalBool,
  OAUTH_MERGE_ACCOUNTS_BY_EMAIL: OptionalBool,
  OAUTH_AUTO_REDIRECT: OptionalBool,
  OAUTH_ALLOWED_DOMAINS: OptionalString,
  OAUTH_BLOCKED_GROUPS: OptionalString,
  ENABLE_OAUTH_ROLE_MANAGEMENT: OptionalBool,
  OAUTH_ROLES_CLAIM: OptionalString,
  OAUTH_ADMIN_ROLES: OptionalString,
  OAUTH_ALLOWED_ROLES: OptionalString,
  ENABLE_OAUTH_GROUP_MANAGEMENT: OptionalBool,
  ENABLE_OAUTH_GROUP_CREATION: OptionalBool,
  OAUTH_GROUP_CLAIM: OptionalString,
  OAUTH_GROUP_DEFAULT_SHARE: Maybe(Type.Union([Type.Boolean(), Type.String()])),
  OAUTH_PROVIDER_NAME: OptionalString,
  OPENID_PROVIDER_URL: OptionalString,
  OAUTH_CLIENT_ID: OptionalString,
  OAUTH_CLIENT_SECRET: OptionalString,
  OPENID_REDIRECT_URI: OptionalString,
  OAUTH_SCOPES: OptionalString,
  OAUTH_CODE_CHALLENGE_METHOD: OptionalString,
  OAUTH_TOKEN_ENDPOINT_AUTH_METHOD: OptionalString,
  OPENID_END_SESSION_ENDPOINT: OptionalString,
  OAUTH_TIMEOUT: Maybe(IntOrString),
  OAUTH_CLIENT_TIMEOUT: Maybe(IntOrString),
  OAUTH_EMAIL_CLAIM: OptionalString,
  OAUTH_USERNAME_CLAIM: OptionalString,
  OAUTH_PICTURE_CLAIM: OptionalString,
  OAUTH_SUB_CLAIM: OptionalString,
  OAUTH_AUDIENCE: OptionalString,
  OAUTH_UPDATE_EMAIL_ON_LOGIN: OptionalBool,
  OAUTH_UPDATE_NAME_ON_LOGIN: OptionalBool,
  OAUTH_UPDATE_PICTURE_ON_LOGIN: OptionalBool,
  OAUTH_REFRESH_TOKEN_INCLUDE_SCOPE: OptionalBool,
});
export type OAuthConfigForm = Static<typeof OAuthConfigForm>;

const UserProfileImageFields = {
  id: Type.String(),
  name: Type.String(),
  role: Type.String(),
  email: Type.String(),
  profile_image_url: Type.String(),
};

export const UserProfileImageResponse = Type.Object(UserProfileImageFields);
export type UserProfileImageResponse = Static<typeof UserProfileImageResponse>;

export const SigninResponse = Type.Object({ token: Type.String(), token_type: Type.String(), ...UserProfileImageFields });
export type SigninResponse = Static<typeof SigninResponse>;

const SessionUserFields = {
  token: Type.String(),
  token_type: Type.String(),
  expires_at: Nullable(Type.Integer()),
  ...UserProfileImageFields,
  permissions: Nullable(JsonObject()),
};

export const SessionUserResponse = Type.Object(SessionUserFields);
export type SessionUserResponse = Static<typeof SessionUserResponse>;

export const SessionUserInfoResponse = Type.Object({
  ...SessionUserFields,
  bio: Nullable(Type.String()),
  gender: Nullable(Type.String()),
  date_of_birth: Nullable(Type.String()),
  status_emoji: Nullable(Type.String()),
  status_message: Nullable(Type.String()),
  status_expires_at: Nullable(Type.Integer()),
});
export type SessionUserInfoResponse = Static<typeof SessionUserInfoResponse>;

export const SignoutResponse = Type.Object({ status: Type.Boolean(), redirect_url: Type.Optional(Type.String()) });
export type SignoutResponse = Static<typeof SignoutResponse>;

export const AdminDetailsResponse = Type.Object({ name: Nullable(Type.String()), email: Nullable(Type.String()) });

export const ApiKeyResponse = Type.Object({ api_key: Nullable(Type.String()) });

export const ProviderParams = Type.Object({ provider: Type.String() });
