import { type Static, type TProperties, Type } from '@sinclair/typebox';
import { FORM_DEFAULTS, type PermissionsTree as AccessPermissionsTree } from '../../core/access/permissions.js';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';
import { Budget } from '../limits/schemas.js';

/**
 * The users area's forms and responses (the reference's models/users.py and
 * routers/users.py). User responses list their fields explicitly and never allow
 * extra ones, so the record's `variables` can never be serialised by accident.
 */

export const UserIdParams = Type.Object({ user_id: Type.String() });

const Int = Type.Integer();

const statusFields = {
  status_emoji: Nullable(Type.String()),
  status_message: Nullable(Type.String()),
  status_expires_at: Nullable(Int),
};

/** `UserSettings`: `ui` plus whatever else the frontend stores. */
export const UserSettings = Type.Object({ ui: Maybe(JsonObject()) }, { additionalProperties: true });

const userFields = {
  id: Type.String(),
  email: Type.String(),
  username: Nullable(Type.String()),
  role: Type.String(),
  name: Type.String(),
  profile_image_url: Nullable(Type.String()),
  profile_banner_image_url: Nullable(Type.String()),
  bio: Nullable(Type.String()),
  gender: Nullable(Type.String()),
  date_of_birth: Nullable(Type.String()),
  timezone: Nullable(Type.String()),
  presence_state: Nullable(Type.String()),
  ...statusFields,
  info: Nullable(JsonObject()),
  settings: Nullable(UserSettings),
  oauth: Nullable(JsonObject()),
  scim: Nullable(JsonObject()),
  last_active_at: Int,
  updated_at: Int,
  created_at: Int,
} satisfies TProperties;

/** `UserModel`: the user record as every route returns it (without `variables`). */
export const UserModel = Type.Object(userFields, { additionalProperties: false });

export const UserGroupIdsListResponse = Type.Object({
  users: Type.Array(Type.Object({ ...userFields, group_ids: Type.Array(Type.String()) }, { additionalProperties: false })),
  total: Int,
});

const GroupIdName = Type.Object({ id: Type.String(), name: Type.String() });

/** `UserInfoResponse`: the public card of a user (search results, `/{id}/info`). */
export const UserInfoResponse = Type.Object(
  {
    ...statusFields,
    id: Type.String(),
    name: Type.String(),
    email: Type.String(),
    role: Type.String(),
    bio: Nullable(Type.String()),
    groups: Nullable(Type.Array(GroupIdName)),
    is_active: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const UserInfoListResponse = Type.Object({ users: Type.Array(UserInfoResponse), total: Int });

/** `UserActiveResponse` (`GET /{id}`): the record plus its groups and whether the user is online. */
export const UserActiveResponse = Type.Object(
  { ...userFields, groups: Nullable(Type.Array(GroupIdName)), is_active: Type.Boolean() },
  { additionalProperties: false },
);

export const ListUsersQuery = Type.Object({
  query: Type.Optional(Type.String()),
  order_by: Type.Optional(Type.String()),
  direction: Type.Optional(Type.String()),
  page: Type.Optional(Int),
});
export type ListUsersQuery = Static<typeof ListUsersQuery>;

export const UserUpdateForm = Type.Object({
  role: Maybe(Type.String()),
  name: Maybe(Type.String()),
  email: Maybe(Type.String()),
  profile_image_url: Maybe(Type.String()),
  password: Maybe(Type.String()),
});
export type UserUpdateForm = Static<typeof UserUpdateForm>;

export const UserStatusForm = Type.Object({
  status_emoji: Maybe(Type.String()),
  status_message: Maybe(Type.String()),
  status_expires_at: Maybe(Int),
});
export type UserStatusForm = Static<typeof UserStatusForm>;

export const UserVariablesForm = Type.Object({ variables: Type.Optional(JsonObject({ default: {} })) });
export const UserVariablesResponse = Type.Object({ variables: Type.Record(Type.String(), Type.String()) });

export const ActiveResponse = Type.Object({ active: Type.Boolean() });

export const OAuthSessionList = Type.Array(
  Type.Object({
    id: Type.String(),
    user_id: Type.String(),
    provider: Type.String(),
    expires_at: Int,
    created_at: Int,
    updated_at: Int,
  }),
);
export type OAuthSessionList = Static<typeof OAuthSessionList>;

const IdName = Type.Object({ id: Type.String(), name: Type.String() });
const PreviewResources = Type.Object({ items: Type.Array(IdName), total: Int });

/** The admin access preview: which models, knowledge bases and tools the user reaches. */
export const UserPreviewResponse = Type.Object({
  user: IdName,
  groups: Type.Array(IdName),
  models: PreviewResources,
  knowledge: PreviewResources,
  tools: PreviewResources,
});

// ---- Permissions: the tree and its admin form belong to the access service ----

/** `UserPermissions` as the default-permissions routes return it: every known switch, nothing else. */
export const UserPermissionsResponse = Type.Unsafe<AccessPermissionsTree>(
  Type.Object(
    Object.fromEntries(
      Object.entries(FORM_DEFAULTS).map(([section, switches]) => [
        section,
        Type.Object(Object.fromEntries(Object.keys(switches).map((key) => [key, Type.Boolean()]))),
      ]),
    ),
  ),
);

/** A user's effective permissions: the same sections, open to whatever groups add. */
export const PermissionsTree = Type.Record(Type.String(), JsonObject());

// ---- Usage (0.11.0): activity derived from the user's chat messages ----

const UsageDay = Type.Object({
  date: Type.String(),
  messages: Int,
  chats: Int,
  tokens: Int,
  models: Type.Record(Type.String(), Int),
});

export const UserUsageQuery = Type.Object({
  days: Type.Optional(Type.Integer({ minimum: 7, maximum: 732 })),
  start_date: Type.Optional(Int),
  end_date: Type.Optional(Int),
});
export type UserUsageQuery = Static<typeof UserUsageQuery>;

export const UserUsageResponse = Type.Object({
  totals: Type.Object({
    lifetime_tokens: Int,
    input_tokens: Int,
    output_tokens: Int,
    /** Of the tokens, those the tokenizer counted because the provider reported no usage. */
    estimated_tokens: Int,
    peak_daily_tokens: Int,
    longest_chat_seconds: Int,
    current_streak: Int,
    longest_streak: Int,
    total_chats: Int,
    active_days: Int,
    models_used: Int,
    messages: Int,
    user_messages: Int,
    assistant_messages: Int,
  }),
  heatmap: Type.Array(UsageDay),
  weekly_heatmap: Type.Array(UsageDay),
  cumulative_heatmap: Type.Array(UsageDay),
  insights: Type.Object({
    most_used_model: Nullable(Type.String()),
    average_tokens_per_chat: Type.Number(),
    average_messages_per_active_day: Type.Number(),
    user_message_share: Type.Number(),
    assistant_message_share: Type.Number(),
  }),
  top_models: Type.Array(
    Type.Object({ model_id: Type.String(), messages: Int, input_tokens: Int, output_tokens: Int, total_tokens: Int }),
  ),
  top_tools: Type.Array(Type.Object({ name: Type.String(), count: Int })),
  period: Type.Object({ start_date: Int, end_date: Int, days: Int }),
  /** The usage budgets that apply to the user, with what was used of each (docs/evaluations.md). */
  limits: Type.Optional(Type.Array(Budget)),
});
export type UserUsageResponse = Static<typeof UserUsageResponse>;
export type UsageDay = Static<typeof UsageDay>;
