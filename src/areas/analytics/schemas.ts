import { type Static, Type } from '@sinclair/typebox';
import { Json, JsonObject, Nullable } from '../../core/http/schema.js';

/** Analytics (routers/analytics.py, 0.11.0): admin-only, read-only aggregates of stored chat messages. */

const Epoch = Type.Integer({ minimum: 0 });

export const ScopeQuery = Type.Object({ start_date: Type.Optional(Epoch), end_date: Type.Optional(Epoch), group_id: Type.Optional(Type.String()) });
export type ScopeQuery = Static<typeof ScopeQuery>;

export const UsersQuery = Type.Object({ ...ScopeQuery.properties, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })) });
export type UsersQuery = Static<typeof UsersQuery>;

export const DailyQuery = Type.Object({ ...ScopeQuery.properties, granularity: Type.Optional(Type.String({ default: 'daily' })) });
export type DailyQuery = Static<typeof DailyQuery>;

export const MessagesQuery = Type.Object({
  model_id: Type.Optional(Type.String()),
  user_id: Type.Optional(Type.String()),
  chat_id: Type.Optional(Type.String()),
  start_date: Type.Optional(Epoch),
  end_date: Type.Optional(Epoch),
  skip: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
});
export type MessagesQuery = Static<typeof MessagesQuery>;

export const ModelChatsQuery = Type.Object({
  start_date: Type.Optional(Epoch),
  end_date: Type.Optional(Epoch),
  skip: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  order_by: Type.Optional(Type.String({ default: 'updated_at' })),
  direction: Type.Optional(Type.String({ default: 'desc' })),
});
export type ModelChatsQuery = Static<typeof ModelChatsQuery>;

export const ModelOverviewQuery = Type.Object({ days: Type.Optional(Type.Integer({ minimum: 0, maximum: 3660, default: 30 })) });
export const ModelParams = Type.Object({ model_id: Type.String() });

export const ModelAnalyticsResponse = Type.Object({
  models: Type.Array(Type.Object({ model_id: Type.String(), count: Type.Integer(), unique_users: Type.Integer(), unique_chats: Type.Integer() })),
});

export const UserAnalyticsResponse = Type.Object({
  users: Type.Array(
    Type.Object({
      user_id: Type.String(),
      name: Nullable(Type.String()),
      email: Nullable(Type.String()),
      count: Type.Integer(),
      input_tokens: Type.Integer(),
      output_tokens: Type.Integer(),
      total_tokens: Type.Integer(),
    }),
  ),
});

/** ChatMessageModel: the stored columns, the rest null (Parley keeps files, sources and output in the chat). */
export const ChatMessageModel = Type.Object({
  id: Type.String(),
  chat_id: Type.String(),
  user_id: Type.String(),
  role: Type.String(),
  parent_id: Nullable(Type.String()),
  content: Json,
  output: Nullable(Type.Array(Json)),
  model_id: Nullable(Type.String()),
  files: Nullable(Type.Array(Json)),
  sources: Nullable(Type.Array(Json)),
  embeds: Nullable(Type.Array(Json)),
  done: Type.Boolean(),
  status_history: Nullable(Type.Array(Json)),
  error: Json,
  usage: Nullable(JsonObject()),
  context_summary: Nullable(Type.String()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
export type ChatMessageModel = Static<typeof ChatMessageModel>;

export const SummaryResponse = Type.Object({ total_messages: Type.Integer(), total_chats: Type.Integer(), total_models: Type.Integer(), total_users: Type.Integer() });

export const DailyStatsResponse = Type.Object({ data: Type.Array(Type.Object({ date: Type.String(), models: Type.Record(Type.String(), Type.Integer()) })) });
export type DailyStatsResponse = Static<typeof DailyStatsResponse>;

export const TokenUsageResponse = Type.Object({
  models: Type.Array(
    Type.Object({ model_id: Type.String(), input_tokens: Type.Integer(), output_tokens: Type.Integer(), total_tokens: Type.Integer(), message_count: Type.Integer() }),
  ),
  total_input_tokens: Type.Integer(),
  total_output_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
});
export type TokenUsageResponse = Static<typeof TokenUsageResponse>;

export const ModelChatsResponse = Type.Object({
  chats: Type.Array(
    Type.Object({ chat_id: Type.String(), user_id: Nullable(Type.String()), user_name: Nullable(Type.String()), first_message: Nullable(Type.String()), updated_at: Type.Integer() }),
  ),
  total: Type.Integer(),
});

export const ModelOverviewResponse = Type.Object({
  history: Type.Array(Type.Object({ date: Type.String(), won: Type.Integer(), lost: Type.Integer() })),
  tags: Type.Array(Type.Object({ tag: Type.String(), count: Type.Integer() })),
});
