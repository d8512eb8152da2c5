import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable, Open } from '../../core/http/schema.js';

/** Request and response shapes of `/api/v1/configs` (routers/configs.py). */

/** `field: T | None = <fallback>`: may be absent (then the fallback is filled in) or null. */
const Defaulted = <T extends TSchema>(schema: T, fallback: unknown) =>
  Type.Optional(Type.Union([schema, Type.Null()], { default: fallback }));

export const ImportConfigForm = Type.Object({ config: JsonObject() });

export const NamespaceParams = Type.Object({ namespace: Type.String() });

export const ConnectionsConfigForm = Type.Object({
  ENABLE_DIRECT_CONNECTIONS: Type.Boolean(),
  ENABLE_BASE_MODELS_CACHE: Type.Boolean(),
});
export type ConnectionsConfigForm = Static<typeof ConnectionsConfigForm>;

export const OAuthClientRegistrationForm = Type.Object({
  url: Type.String(),
  client_id: Type.String(),
  client_name: Maybe(Type.String()),
  client_secret: Maybe(Type.String()),
  oauth_server_url: Maybe(Type.String()),
  oauth_scope: Maybe(Type.String()),
});

export const OAuthClientRegistrationQuery = Type.Object({ type: Type.Optional(Type.String()) });

/** `extra='allow'`: fields beyond these are stored as sent. */
export const ToolServerConnection = Open({
  url: Type.String(),
  path: Type.String(),
  type: Defaulted(Type.String(), 'openapi'),
  auth_type: Nullable(Type.String()),
  headers: Type.Optional(Type.Union([JsonObject(), Type.String(), Type.Null()], { default: null })),
  key: Nullable(Type.String()),
  config: Nullable(JsonObject()),
  info: Defaulted(JsonObject(), null),
});
export type ToolServerConnection = Static<typeof ToolServerConnection>;

export const ToolServersConfigForm = Type.Object({ TOOL_SERVER_CONNECTIONS: Type.Array(ToolServerConnection) });

export const TerminalServerConnection = Open({
  id: Defaulted(Type.String(), ''),
  name: Defaulted(Type.String(), ''),
  enabled: Defaulted(Type.Boolean(), true),
  url: Type.String(),
  path: Defaulted(Type.String(), '/openapi.json'),
  key: Defaulted(Type.String(), ''),
  auth_type: Defaulted(Type.String(), 'bearer'),
  config: Defaulted(JsonObject(), null),
  server_type: Defaulted(Type.String(), null),
  policy_id: Defaulted(Type.String(), null),
  policy: Defaulted(JsonObject(), null),
});
export type TerminalServerConnection = Static<typeof TerminalServerConnection>;

export const TerminalServersConfigForm = Type.Object({ TERMINAL_SERVER_CONNECTIONS: Type.Array(TerminalServerConnection) });

const TerminalServerTarget = {
  url: Type.String(),
  key: Defaulted(Type.String(), ''),
  auth_type: Defaulted(Type.String(), 'bearer'),
};

/** Without `policy_data` the policy is read; with it, written (the frontend does both). */
export const TerminalServerPolicyForm = Type.Object({
  ...TerminalServerTarget,
  policy_id: Type.String(),
  policy_data: Maybe(JsonObject()),
});
export type TerminalServerPolicyForm = Static<typeof TerminalServerPolicyForm>;

export const TerminalServerLifecycleForm = Type.Object({
  ...TerminalServerTarget,
  policy_id: Type.String(),
  lifecycle_data: Maybe(JsonObject()),
});
export type TerminalServerLifecycleForm = Static<typeof TerminalServerLifecycleForm>;

export const TerminalServerRefreshForm = Type.Object({
  ...TerminalServerTarget,
  user_id: Maybe(Type.String()),
  policy_id: Maybe(Type.String()),
  only_idle: Type.Optional(Type.Boolean({ default: true })),
  reset: Type.Optional(Type.Boolean({ default: false })),
});
export type TerminalServerRefreshForm = Static<typeof TerminalServerRefreshForm>;

export const CodeInterpreterConfigForm = Type.Object({
  ENABLE_CODE_EXECUTION: Type.Boolean(),
  CODE_EXECUTION_ENGINE: Type.String(),
  CODE_EXECUTION_JUPYTER_URL: Nullable(Type.String()),
  CODE_EXECUTION_JUPYTER_AUTH: Nullable(Type.String()),
  CODE_EXECUTION_JUPYTER_AUTH_TOKEN: Nullable(Type.String()),
  CODE_EXECUTION_JUPYTER_AUTH_PASSWORD: Nullable(Type.String()),
  CODE_EXECUTION_JUPYTER_TIMEOUT: Nullable(Type.Integer()),
  ENABLE_CODE_INTERPRETER: Type.Boolean(),
  CODE_INTERPRETER_ENGINE: Type.String(),
  CODE_INTERPRETER_PROMPT_TEMPLATE: Nullable(Type.String()),
  CODE_INTERPRETER_JUPYTER_URL: Nullable(Type.String()),
  CODE_INTERPRETER_JUPYTER_AUTH: Nullable(Type.String()),
  CODE_INTERPRETER_JUPYTER_AUTH_TOKEN: Nullable(Type.String()),
  CODE_INTERPRETER_JUPYTER_AUTH_PASSWORD: Nullable(Type.String()),
  CODE_INTERPRETER_JUPYTER_TIMEOUT: Nullable(Type.Integer()),
});
export type CodeInterpreterConfigForm = Static<typeof CodeInterpreterConfigForm>;

/** The two dicts default to None when omitted, and are then stored as None (reference behaviour). */
export const ModelsConfigForm = Type.Object({
  DEFAULT_MODELS: Nullable(Type.String()),
  DEFAULT_PINNED_MODELS: Nullable(Type.String()),
  MODEL_ORDER_LIST: Type.Array(Nullable(Type.String())),
  DEFAULT_MODEL_METADATA: Defaulted(JsonObject(), null),
  DEFAULT_MODEL_PARAMS: Defaulted(JsonObject(), null),
});
export type ModelsConfigForm = Static<typeof ModelsConfigForm>;

export const ModelsDefaultsResponse = Type.Object({ DEFAULT_MODEL_METADATA: Nullable(JsonObject()) });
export type ModelsDefaultsResponse = Static<typeof ModelsDefaultsResponse>;

export const SubagentsConfigForm = Type.Object({
  ENABLE_SUBAGENTS: Type.Boolean(),
  SUBAGENTS_BACKGROUND_ENABLED: Type.Boolean(),
  SUBAGENTS_MAX_CONCURRENT: Type.Integer(),
  SUBAGENTS_MAX_ASYNC: Type.Integer(),
  SUBAGENTS_MAX_ITERATIONS: Type.Integer(),
  SUBAGENTS_MAX_OUTPUT: Type.Integer(),
  SUBAGENTS_SYSTEM_PROMPT: Type.String(),
});
export type SubagentsConfigForm = Static<typeof SubagentsConfigForm>;

export const PromptSuggestion = Type.Object({ title: Type.Array(Type.String()), content: Type.String() });
export type PromptSuggestion = Static<typeof PromptSuggestion>;
export const SetDefaultSuggestionsForm = Type.Object({ suggestions: Type.Array(PromptSuggestion) });

export const BannerModel = Type.Object({
  id: Type.String(),
  type: Type.String(),
  title: Defaulted(Type.String(), null),
  content: Type.String(),
  dismissible: Type.Boolean(),
  timestamp: Type.Integer(),
});
export type BannerModel = Static<typeof BannerModel>;
export const SetBannersForm = Type.Object({ banners: Type.Array(BannerModel) });

/** Answers whose shape depends on a remote server (verify, policy, lifecycle, refresh). */
export const AnyObject = JsonObject();
export const Anything = Type.Unknown();
