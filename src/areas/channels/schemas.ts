import { type Static, Type } from '@sinclair/typebox';
import { AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/**
 * Channels and their messages (models/channels.py, models/messages.py,
 * routers/channels.py). Timestamps are nanoseconds, as the reference's.
 */

/** The longest message text accepted (characters); longer posts get a 422 and change nothing. */
export const MESSAGE_MAX_LENGTH = 100_000;
const NAME_MAX_LENGTH = 256;

/** ChannelForm (update) and CreateChannelForm (with `type`: absent for a standard channel, `group`, or `dm`). */
const channelFormFields = {
  name: Type.Optional(Type.String({ maxLength: NAME_MAX_LENGTH, default: '' })),
  description: Maybe(Type.String({ maxLength: 10_000 })),
  is_private: Maybe(Type.Boolean()),
  data: Maybe(JsonObject()),
  meta: Maybe(JsonObject()),
  access_grants: Maybe(Type.Array(JsonObject())),
  group_ids: Maybe(Type.Array(Type.String())),
  user_ids: Maybe(Type.Array(Type.String())),
};
export const ChannelForm = Type.Object(channelFormFields);
export type ChannelForm = Static<typeof ChannelForm>;
export const CreateChannelForm = Type.Object({ ...channelFormFields, type: Maybe(Type.String()) });
export type CreateChannelForm = Static<typeof CreateChannelForm>;

export const ChannelParams = Type.Object({ id: Type.String() });
export const UserParams = Type.Object({ user_id: Type.String() });
export const MessageParams = Type.Object({ id: Type.String(), message_id: Type.String() });
export const WebhookParams = Type.Object({ id: Type.String(), webhook_id: Type.String() });
export const WebhookPostParams = Type.Object({ webhook_id: Type.String(), token: Type.String() });

const channelFields = {
  id: Type.String(),
  user_id: Type.String(),
  type: Nullable(Type.String()),
  name: Type.String(),
  description: Nullable(Type.String()),
  is_private: Nullable(Type.Boolean()),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  access_grants: Type.Array(AccessGrantSchema),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
  updated_by: Nullable(Type.String()),
  archived_at: Nullable(Type.Integer()),
  archived_by: Nullable(Type.String()),
  deleted_at: Nullable(Type.Integer()),
  deleted_by: Nullable(Type.String()),
};

/** UserIdNameStatusResponse: the people of a group or direct-message channel. */
const ChannelPerson = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status_emoji: Nullable(Type.String()),
  status_message: Nullable(Type.String()),
  status_expires_at: Nullable(Type.Integer()),
  is_active: Nullable(Type.Boolean()),
});

export const ChannelModel = Type.Object(channelFields);
/** ChannelListItemResponse (`GET /`). */
export const ChannelListItem = Type.Object({
  ...channelFields,
  user_ids: Nullable(Type.Array(Type.String())),
  users: Nullable(Type.Array(ChannelPerson)),
  last_message_at: Nullable(Type.Integer()),
  unread_count: Type.Integer(),
});
/** ChannelFullResponse (`GET /{id}`). */
export const ChannelFull = Type.Object({
  ...channelFields,
  is_manager: Type.Boolean(),
  write_access: Type.Boolean(),
  user_count: Nullable(Type.Integer()),
  user_ids: Nullable(Type.Array(Type.String())),
  users: Nullable(Type.Array(ChannelPerson)),
  last_read_at: Nullable(Type.Integer()),
  unread_count: Type.Integer(),
});

/** `GET /{id}/members`: 30 a page. */
export const MembersQuery = Type.Object({
  query: Type.Optional(Type.String()),
  order_by: Type.Optional(Type.String()),
  direction: Type.Optional(Type.String()),
  page: Type.Optional(Type.Integer({ default: 1 })),
});
export type MembersQuery = Static<typeof MembersQuery>;
/** ChannelMemberListResponse. */
export const MemberList = Type.Object({
  users: Type.Array(
    Type.Object({
      id: Type.String(),
      email: Type.String(),
      name: Type.String(),
      role: Type.String(),
      profile_image_url: Nullable(Type.String()),
      presence_state: Nullable(Type.String()),
      status_emoji: Nullable(Type.String()),
      status_message: Nullable(Type.String()),
      status_expires_at: Nullable(Type.Integer()),
      is_active: Type.Boolean(),
    }),
  ),
  total: Type.Integer(),
});

export const ActiveMemberForm = Type.Object({ is_active: Type.Boolean() });
export const AddMembersForm = Type.Object({ user_ids: Type.Optional(Type.Array(Type.String())), group_ids: Type.Optional(Type.Array(Type.String())) });
export const RemoveMembersForm = Type.Object({ user_ids: Type.Optional(Type.Array(Type.String())) });

/** ChannelMemberModel: what adding members answers. */
export const MemberModel = Type.Object({
  id: Type.String(),
  channel_id: Type.String(),
  user_id: Type.String(),
  role: Nullable(Type.String()),
  status: Nullable(Type.String()),
  is_active: Type.Boolean(),
  is_channel_muted: Type.Boolean(),
  is_channel_pinned: Type.Boolean(),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  invited_at: Nullable(Type.Integer()),
  invited_by: Nullable(Type.String()),
  joined_at: Nullable(Type.Integer()),
  left_at: Nullable(Type.Integer()),
  last_read_at: Nullable(Type.Integer()),
  created_at: Nullable(Type.Integer()),
  updated_at: Nullable(Type.Integer()),
});

// ---- messages ----------------------------------------------------------------

/** MessageForm (post and update). */
export const MessageForm = Type.Object({
  temp_id: Maybe(Type.String()),
  content: Type.String({ maxLength: MESSAGE_MAX_LENGTH }),
  reply_to_id: Maybe(Type.String()),
  parent_id: Maybe(Type.String()),
  data: Maybe(JsonObject()),
  meta: Maybe(JsonObject()),
});
export type MessageForm = Static<typeof MessageForm>;

/** `GET /{id}/messages` and `/thread`: a page by offset, newest first. */
export const MessagePageQuery = Type.Object({
  skip: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
});
export const PinnedQuery = Type.Object({ page: Type.Optional(Type.Integer({ default: 1 })) });
export const PinForm = Type.Object({ is_pinned: Type.Boolean() });
export const ReactionForm = Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) });

const messageFields = {
  id: Type.String(),
  user_id: Type.String(),
  channel_id: Nullable(Type.String()),
  reply_to_id: Nullable(Type.String()),
  parent_id: Nullable(Type.String()),
  is_pinned: Type.Boolean(),
  pinned_by: Nullable(Type.String()),
  pinned_at: Nullable(Type.Integer()),
  content: Type.String(),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
};
/** UserNameResponse, or a webhook's identity (`role: webhook`). */
const MessageAuthor = Nullable(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String() }));
export const ReactionSchema = Type.Object({ name: Type.String(), users: Type.Array(Type.Object({ id: Type.String(), name: Type.String() })), count: Type.Integer() });
/** The slim forms answer only whether `data` holds anything (the full data is at `/data`). */
const slimFields = { ...messageFields, data: Nullable(Type.Boolean()), user: MessageAuthor };
const MessageSlim = Type.Object(slimFields);

export const MessageModel = Type.Object(messageFields);
/** MessageUserResponse of the routers (list and thread). */
export const MessageListItem = Type.Object({
  ...slimFields,
  reply_to_message: Nullable(MessageSlim),
  latest_reply_at: Nullable(Type.Integer()),
  reply_count: Type.Integer(),
  reactions: Type.Array(ReactionSchema),
});
/** MessageWithReactionsResponse (pinned). */
export const PinnedMessage = Type.Object({ ...slimFields, reactions: Type.Array(ReactionSchema) });
/** MessageResponse (`GET /{id}/messages/{message_id}`): the full data. */
export const MessageResponse = Type.Object({
  ...messageFields,
  user: MessageAuthor,
  reply_to_message: Nullable(MessageSlim),
  latest_reply_at: Nullable(Type.Integer()),
  reply_count: Type.Integer(),
  reactions: Type.Array(ReactionSchema),
});

// ---- webhooks ------------------------------------------------------------------

export const WebhookForm = Type.Object({ name: Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH }), profile_image_url: Maybe(Type.String()) });
export type WebhookForm = Static<typeof WebhookForm>;
export const WebhookModel = Type.Object({
  id: Type.String(),
  channel_id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  profile_image_url: Nullable(Type.String()),
  token: Type.String(),
  last_used_at: Nullable(Type.Integer()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
export const WebhookMessageForm = Type.Object({ content: Type.String({ maxLength: MESSAGE_MAX_LENGTH }) });
export const WebhookPostResponse = Type.Object({ success: Type.Boolean(), message_id: Type.String() });
