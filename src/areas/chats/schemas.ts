import { type Static, Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

const Int = Type.Integer();
const Tasks = Nullable(Type.Array(Type.Unknown()));

// ---- forms -----------------------------------------------------------------

/** ChatForm: the frontend's chat JSON, the chat's variables (0.11.0) and its folder. */
export const ChatForm = Type.Object(
  {
    chat: JsonObject(),
    variables: Maybe(JsonObject()),
    folder_id: Maybe(Type.String()),
  },
  { additionalProperties: true },
);
export type ChatForm = Static<typeof ChatForm>;

/** ChatImportForm: a chat with its record fields, as exported (0.11.0 adds `current_message_id`). */
export const ChatImportForm = Type.Object(
  {
    chat: JsonObject(),
    variables: Maybe(JsonObject()),
    folder_id: Maybe(Type.String()),
    meta: Maybe(JsonObject()),
    pinned: Maybe(Type.Boolean()),
    current_message_id: Maybe(Type.String()),
    created_at: Maybe(Int),
    updated_at: Maybe(Int),
  },
  { additionalProperties: true },
);
export type ChatImportForm = Static<typeof ChatImportForm>;

export const ChatsImportForm = Type.Object({ chats: Type.Array(ChatImportForm) });

export const ChatConfigForm = Type.Object({
  CONTEXT_COMPACTION_MODEL: Type.Optional(Nullable(Type.String({ default: '' }))),
  ENABLE_CONTEXT_COMPACTION: Type.Boolean(),
  CONTEXT_COMPACTION_TOKEN_THRESHOLD: Int,
  CONTEXT_COMPACTION_TOKEN_CAP: Maybe(Int),
  CONTEXT_COMPACTION_RETENTION_PERCENTAGE: Type.Optional(Type.Integer({ default: 40 })),
  CONTEXT_COMPACTION_PROMPT_TEMPLATE: Type.String(),
});
export type ChatConfigForm = Static<typeof ChatConfigForm>;

export const ChatConfigResponse = Type.Object({
  CONTEXT_COMPACTION_MODEL: Nullable(Type.String()),
  ENABLE_CONTEXT_COMPACTION: Type.Boolean(),
  CONTEXT_COMPACTION_TOKEN_THRESHOLD: Int,
  CONTEXT_COMPACTION_TOKEN_CAP: Nullable(Int),
  CONTEXT_COMPACTION_RETENTION_PERCENTAGE: Int,
  CONTEXT_COMPACTION_PROMPT_TEMPLATE: Type.String(),
});

export const CompactChatForm = Nullable(Type.Object({ model: Maybe(Type.String()) }, { additionalProperties: true }));
export const ForkForm = Nullable(Type.Object({ message_id: Maybe(Type.String()) }, { additionalProperties: true }));
export const CloneForm = Type.Object({ title: Maybe(Type.String()) }, { additionalProperties: true });
export const MessageForm = Type.Object({ content: Type.String() }, { additionalProperties: true });
export const EventForm = Type.Object({ type: Type.String(), data: JsonObject() }, { additionalProperties: true });
export type EventForm = Static<typeof EventForm>;
export const TagForm = Type.Object({ name: Type.String() }, { additionalProperties: true });
export const TagFilterForm = Type.Object(
  { name: Type.String(), skip: Maybe(Type.Integer({ default: 0 })), limit: Maybe(Type.Integer({ default: 50 })) },
  { additionalProperties: true },
);
export const ChatFolderIdForm = Type.Object({ folder_id: Maybe(Type.String()) }, { additionalProperties: true });
/** ChatAccessGrantsForm: the grants of a shared chat; entries are checked by the access service. */
export const ChatAccessGrantsForm = Type.Object({ access_grants: Type.Array(JsonObject()) }, { additionalProperties: true });

// ---- query strings ---------------------------------------------------------

export const ChatListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1 })),
  include_pinned: Type.Optional(Type.Boolean({ default: false })),
  include_folders: Type.Optional(Type.Boolean({ default: false })),
  sort_by: Type.Optional(Type.String({ default: 'updated_at' })),
  sort_dir: Type.Optional(Type.String({ default: 'desc' })),
});
export type ChatListQuery = Static<typeof ChatListQuery>;

/** `query` (title), `order_by` and `direction` of the archived, shared and per-user lists. */
export const FilteredListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1 })),
  query: Type.Optional(Type.String()),
  order_by: Type.Optional(Type.String()),
  direction: Type.Optional(Type.String()),
});
export type FilteredListQuery = Static<typeof FilteredListQuery>;

export const SearchQuery = Type.Object({ text: Type.String(), page: Type.Optional(Type.Integer({ minimum: 1 })) });
export const FolderChatsQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
  sort_by: Type.Optional(Type.String({ default: 'unread_updated_at' })),
  sort_dir: Type.Optional(Type.String({ default: 'desc' })),
});
export const UsageStatsQuery = Type.Object({
  items_per_page: Type.Optional(Type.Integer({ minimum: 1, default: 50 })),
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
});
export const StatsExportQuery = Type.Object({
  updated_at: Type.Optional(Int),
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
  stream: Type.Optional(Type.Boolean({ default: false })),
});

export const FolderIdParams = Type.Object({ folder_id: Type.String() });
export const ShareIdParams = Type.Object({ share_id: Type.String() });
export const ChatIdParams = Type.Object({ chat_id: Type.String() });
export const UserIdParams = Type.Object({ user_id: Type.String() });
export const MessageParams = Type.Object({ id: Type.String(), message_id: Type.String() });

// ---- responses -------------------------------------------------------------

const ContextUsage = Nullable(JsonObject());

/** ChatResponse: the chat record as the frontend loads it (0.11.0: variables, current_message_id, context_usage). */
export const ChatResponse = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  title: Type.String(),
  chat: JsonObject(),
  updated_at: Int,
  created_at: Int,
  share_id: Nullable(Type.String()),
  archived: Type.Boolean(),
  pinned: Nullable(Type.Boolean()),
  meta: JsonObject(),
  variables: JsonObject(),
  folder_id: Nullable(Type.String()),
  tasks: Tasks,
  summary: Nullable(Type.String()),
  current_message_id: Nullable(Type.String()),
  context_usage: ContextUsage,
});
export type ChatResponse = Static<typeof ChatResponse>;

/** ChatTitleIdResponse: a row of every chat list. */
export const ChatTitleIdResponse = Type.Object({
  id: Type.String(),
  title: Type.String(),
  updated_at: Int,
  created_at: Int,
  last_read_at: Nullable(Int),
  snippet: Nullable(Type.String()),
  active: Type.Boolean(),
});
export type ChatTitleIdResponse = Static<typeof ChatTitleIdResponse>;

export const TagModel = Type.Object({ id: Type.String(), name: Type.String(), user_id: Type.String(), meta: Nullable(JsonObject()) });

export const SharedChatResponse = Type.Object({
  id: Type.String(),
  chat_id: Type.String(),
  title: Type.String(),
  share_id: Nullable(Type.String()),
  updated_at: Int,
  created_at: Int,
});

export const ShareGrantResponse = Type.Object({ id: Type.String(), principal_type: Type.String(), principal_id: Type.String(), permission: Type.String() });

export const ReadResponse = Type.Object({ updated_count: Int, folder_unread_counts: Type.Record(Type.String(), Int) });
export const UnreadResponse = Type.Object({
  chat_id: Type.String(),
  last_read_at: Nullable(Int),
  folder_id: Nullable(Type.String()),
  folder_unread_counts: Type.Record(Type.String(), Int),
});

/** The result of `POST /chats/{id}/compact` (open: `reason`, counts and `context_usage` depend on what happened). */
export const CompactResponse = Type.Object(
  {
    ok: Type.Boolean(),
    compacted: Type.Boolean(),
    reason: Type.Optional(Type.String()),
    dropped_messages: Type.Optional(Int),
    kept_messages: Type.Optional(Int),
    summary_chars: Type.Optional(Int),
    context_usage: ContextUsage,
  },
  { additionalProperties: true },
);
export type CompactResponse = Static<typeof CompactResponse>;

const MessageStats = Type.Object({
  id: Type.String(),
  role: Type.String(),
  model: Nullable(Type.String()),
  content_length: Int,
  token_count: Nullable(Int),
  timestamp: Nullable(Int),
  rating: Nullable(Int),
  tags: Nullable(Type.Array(Nullable(Type.String()))),
});

/** ChatStatsExport: a chat's message statistics, without its text. */
export const ChatStatsExport = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  created_at: Int,
  updated_at: Int,
  tags: Type.Array(Type.String()),
  stats: Type.Object({
    average_response_time: Type.Number(),
    average_user_message_content_length: Type.Number(),
    average_assistant_message_content_length: Type.Number(),
    models: Type.Record(Type.String(), Int),
    message_count: Int,
    history_models: Type.Record(Type.String(), Int),
    history_message_count: Int,
    history_user_message_count: Int,
    history_assistant_message_count: Int,
  }),
  chat: Type.Object({ history: Type.Object({ messages: Type.Record(Type.String(), MessageStats), currentId: Nullable(Type.String()) }) }),
});

export type ChatStatsExport = Static<typeof ChatStatsExport>;

export const ChatStatsExportList = Type.Object({ type: Type.String(), items: Type.Array(ChatStatsExport), total: Int, page: Int });

/** ChatUsageStatsResponse (experimental in the reference; extra fields allowed). */
export const ChatUsageStats = Type.Object(
        {
          id: Type.String(),
          models: JsonObject(),
          message_count: Int,
          history_models: JsonObject(),
          history_message_count: Int,
          history_user_message_count: Int,
          history_assistant_message_count: Int,
          average_response_time: Type.Number(),
          average_user_message_content_length: Type.Number(),
          average_assistant_message_content_length: Type.Number(),
          tags: Type.Array(Type.String()),
          last_message_at: Int,
          updated_at: Int,
          created_at: Int,
        },
        { additionalProperties: true },
      );
export type ChatUsageStats = Static<typeof ChatUsageStats>;

export const ChatUsageStatsList = Type.Object({ items: Type.Array(ChatUsageStats), total: Int }, { additionalProperties: true });
