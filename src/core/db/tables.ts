import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * Every table Parley stores, as Kysely sees it. JSON columns are TEXT on both
 * dialects (encoded by the stores with `json.ts`), booleans are 0/1 on SQLite and
 * boolean on PostgreSQL (normalised with `toBool`), timestamps are epoch seconds.
 */
type JsonText = string | null;
type Flag = ColumnType<boolean | number, boolean, boolean>;

export interface UserTable {
  id: string;
  email: string;
  username: string | null;
  role: string;
  name: string;
  profile_image_url: string | null;
  profile_banner_image_url: string | null;
  bio: string | null;
  gender: string | null;
  date_of_birth: string | null;
  timezone: string | null;
  presence_state: string | null;
  status_emoji: string | null;
  status_message: string | null;
  status_expires_at: number | null;
  info: JsonText;
  variables: JsonText;
  settings: JsonText;
  oauth: JsonText;
  scim: JsonText;
  last_active_at: number;
  updated_at: number;
  created_at: number;
}

export interface AuthTable {
  id: string;
  email: string;
  password: string;
  active: Flag;
}

export interface ApiKeyTable {
  id: string;
  user_id: string;
  key: string;
  data: JsonText;
  expires_at: number | null;
  last_used_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface GroupTable {
  id: string;
  user_id: string;
  name: string;
  description: string;
  data: JsonText;
  meta: JsonText;
  permissions: JsonText;
  created_at: number;
  updated_at: number;
}

export interface GroupMemberTable {
  id: string;
  group_id: string;
  user_id: string;
  created_at: number;
  updated_at: number;
}

export interface AccessGrantTable {
  id: string;
  resource_type: string;
  resource_id: string;
  principal_type: string;
  principal_id: string;
  permission: string;
  created_at: number;
}

export interface ConfigTable {
  key: string;
  value: string;
  updated_at: number | null;
}

export interface RevokedTokenTable {
  jti: string;
  expires_at: number;
}

export interface UserSessionCutoffTable {
  user_id: string;
  revoked_at: number;
}

export interface OAuthSessionTable {
  id: string;
  user_id: string;
  provider: string;
  token: string;
  expires_at: number;
  created_at: number;
  updated_at: number;
}

export interface EventWebhookTable {
  id: string;
  name: string;
  url: string;
  enabled: Flag;
  events: string;
  targets: JsonText;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  position: number;
  failing_since: number | null;
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
}

export interface EventOutboxTable {
  id: string;
  event: string;
  payload: string;
  created_at: number;
}

export interface EventDeliveryTable {
  id: string;
  event_id: string;
  webhook_id: string;
  status: string;
  attempts: number;
  next_attempt_ms: number | null;
  lease_owner: string | null;
  lease_expires_ms: number | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface ModelTable {
  id: string;
  user_id: string;
  base_model_id: string | null;
  name: string;
  params: string;
  meta: string;
  is_active: Flag;
  updated_at: number;
  created_at: number;
}

export interface ChatTable {
  id: string;
  user_id: string;
  title: string;
  folder_id: string | null;
  share_id: string | null;
  archived: Flag;
  pinned: Flag;
  internal: Flag;
  current_message_id: string | null;
  last_read_at: number | null;
  created_at: number;
  updated_at: number;
  meta: string;
  variables: JsonText;
  tasks: JsonText;
  summary: string | null;
}

export interface ChatContentTable {
  chat_id: string;
  chat: string;
}

export interface ChatMessageTable {
  chat_id: string;
  id: string;
  user_id: string;
  role: string;
  parent_id: string | null;
  content: string | null;
  model_id: string | null;
  done: Flag;
  usage: JsonText;
  input_tokens: number | null;
  output_tokens: number | null;
  tokens_estimated: Flag;
  created_at: number;
  updated_at: number;
}

export interface TagTable {
  id: string;
  user_id: string;
  name: string;
  meta: JsonText;
}

export interface ChatTagTable {
  chat_id: string;
  tag_id: string;
  user_id: string;
}

export interface SharedChatTable {
  id: string;
  chat_id: string;
  user_id: string;
  title: string;
  created_at: number;
  updated_at: number;
  chat: string;
}

export interface FolderTable {
  id: string;
  parent_id: string | null;
  user_id: string;
  name: string;
  items: JsonText;
  meta: JsonText;
  data: JsonText;
  is_expanded: Flag;
  created_at: number;
  updated_at: number;
}

export interface ToolTable {
  id: string;
  user_id: string;
  name: string;
  content: string;
  specs: string;
  meta: string;
  valves: JsonText;
  version: string;
  updated_at: number;
  created_at: number;
}

export interface PromptTable {
  id: string;
  command: string;
  user_id: string;
  name: string;
  content: string;
  data: JsonText;
  meta: JsonText;
  tags: JsonText;
  is_active: Flag;
  version_id: string | null;
  version: string;
  created_at: number;
  updated_at: number;
}

export interface PromptHistoryTable {
  id: string;
  prompt_id: string;
  seq: number;
  parent_id: string | null;
  snapshot: string;
  user_id: string;
  commit_message: string | null;
  created_at: number;
}

export interface SkillTable {
  id: string;
  user_id: string;
  name: string;
  description: string | null;
  content: string;
  meta: JsonText;
  is_active: Flag;
  updated_at: number;
  created_at: number;
}

export interface NoteTable {
  id: string;
  user_id: string;
  title: string;
  data: JsonText;
  meta: JsonText;
  created_at: number;
  updated_at: number;
}

export interface PinnedNoteTable {
  user_id: string;
  note_id: string;
  created_at: number;
}

/** One stored Yjs update of a note's collaborative document (base64). */
export interface NoteDocumentUpdateTable {
  id: string;
  note_id: string;
  update: string;
  created_at: number;
}

export interface ChannelTable {
  id: string;
  user_id: string;
  type: string | null;
  name: string;
  description: string | null;
  is_private: ColumnType<boolean | number | null, boolean | null, boolean | null>;
  data: JsonText;
  meta: JsonText;
  created_at: number;
  updated_at: number;
  updated_by: string | null;
}

export interface ChannelMemberTable {
  id: string;
  channel_id: string;
  user_id: string;
  role: string | null;
  status: string | null;
  is_active: Flag;
  invited_at: number | null;
  invited_by: string | null;
  joined_at: number | null;
  last_read_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface ChannelWebhookTable {
  id: string;
  channel_id: string;
  user_id: string;
  name: string;
  profile_image_url: string | null;
  token: string;
  last_used_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface ChannelFileTable {
  id: string;
  channel_id: string;
  message_id: string | null;
  file_id: string;
  user_id: string;
  created_at: number;
}

export interface MessageTable {
  id: string;
  user_id: string;
  channel_id: string;
  reply_to_id: string | null;
  parent_id: string | null;
  is_pinned: Flag;
  pinned_at: number | null;
  pinned_by: string | null;
  content: string;
  data: JsonText;
  meta: JsonText;
  created_at: number;
  updated_at: number;
}

export interface MessageReactionTable {
  id: string;
  message_id: string;
  user_id: string;
  name: string;
  created_at: number;
}

export interface MemoryTable {
  id: string;
  user_id: string;
  type: string;
  path: string | null;
  content: string;
  meta: JsonText;
  created_at: number;
  updated_at: number;
}

export interface FunctionTable {
  id: string;
  user_id: string;
  name: string;
  type: string;
  content: string;
  meta: string;
  valves: JsonText;
  traits: JsonText;
  is_active: Flag;
  is_global: Flag;
  updated_at: number;
  created_at: number;
}

export interface FileTable {
  id: string;
  user_id: string;
  hash: string | null;
  filename: string;
  path: string | null;
  data: JsonText;
  meta: JsonText;
  created_at: number;
  updated_at: number;
}

/** A file's content extraction, waiting (`pending`) or claimed (`running`, until `lease_until`). */
export interface FileJobTable {
  file_id: string;
  status: 'pending' | 'running';
  attempts: Generated<number>;
  lease_until: Generated<number>;
  created_at: number;
}

export interface KnowledgeTable {
  id: string;
  user_id: string;
  name: string;
  description: string;
  meta: JsonText;
  created_at: number;
  updated_at: number;
}

/** A folder of a knowledge base; `parent_id` null at the top level. */
export interface KnowledgeDirectoryTable {
  id: string;
  knowledge_id: string;
  parent_id: string | null;
  name: string;
  user_id: string;
  created_at: number;
  updated_at: number;
}

/** A file in a knowledge base, in one of its folders (null: the top level). */
export interface KnowledgeFileTable {
  id: string;
  knowledge_id: string;
  file_id: string;
  directory_id: string | null;
  user_id: string;
  created_at: number;
  updated_at: number;
}

/** A chunk of indexed text (PostgreSQL; SQLite keeps chunks in their own file). `fts` is generated from title and text. */
export interface RetrievalChunkTable {
  id: Generated<number>;
  collection: string;
  file_id: string | null;
  text: string;
  metadata: string;
  /** What the chunk is under (its document's title, its headings), weighed apart in `fts`. */
  title: string;
}

/** A chunk's vector in one vector space (embedding model and dimensions). */
export interface RetrievalVectorTable {
  chunk_id: number;
  space: string;
  dimensions: number;
  collection: string;
  embedding: number[];
}

/** Due work of the scheduler (core/scheduler); times in epoch milliseconds. */
export interface ScheduledJobTable {
  id: string;
  kind: string;
  key: string;
  rule: string | null;
  timezone: string | null;
  next_run_at: number | null;
  lease_owner: string | null;
  lease_until: Generated<number>;
  attempts: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** Timestamps in nanoseconds, as the reference's. */
export interface AutomationTable {
  id: string;
  user_id: string;
  name: string;
  data: string;
  meta: JsonText;
  folder_id: string | null;
  is_active: Flag;
  last_run_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface AutomationRunTable {
  id: string;
  automation_id: string;
  chat_id: string | null;
  status: string;
  error: string | null;
  output: string | null;
  duration_ms: number | null;
  created_at: number;
}

/** Calendars (issue 21); timestamps in nanoseconds, as the reference's. */
export interface CalendarTable {
  id: string;
  user_id: string;
  name: string;
  color: string | null;
  is_default: Flag;
  data: JsonText;
  meta: JsonText;
  feed_token: string | null;
  created_at: number;
  updated_at: number;
}

export interface CalendarEventTable {
  id: string;
  calendar_id: string;
  user_id: string;
  title: string;
  description: string | null;
  start_at: number;
  end_at: number | null;
  all_day: Flag;
  rrule: string | null;
  color: string | null;
  location: string | null;
  data: JsonText;
  meta: JsonText;
  is_cancelled: Flag;
  created_at: number;
  updated_at: number;
}

export interface CalendarEventAttendeeTable {
  id: string;
  event_id: string;
  user_id: string;
  status: string;
  meta: JsonText;
  created_at: number;
  updated_at: number;
}

/** A rating of an answer (models/feedbacks.py); `model_id` mirrors `data.model_id`. */
export interface FeedbackTable {
  id: string;
  user_id: string;
  version: number;
  type: string;
  model_id: string | null;
  data: JsonText;
  meta: JsonText;
  snapshot: JsonText;
  created_at: number;
  updated_at: number;
}

/** Assistant messages and tokens per UTC day (`created_at / 86400`), model ('' for none), user and chat; maintained by triggers. */
export interface MessageRollupTable {
  day: number;
  model_id: string;
  user_id: string;
  chat_id: string;
  messages: number;
  input_tokens: number;
  output_tokens: number;
  /** Of `messages`, those with token counts. */
  token_messages: number;
}

/** A budget an admin set: for one user or every member of a group, per day or month. */
export interface UsageLimitTable {
  id: string;
  scope: string;
  subject_id: string;
  period: string;
  max_requests: number | null;
  max_tokens: number | null;
  max_cost: number | null;
  created_at: number;
  updated_at: number;
}

/** What a user spent in one day or month (`period_start` in epoch seconds, UTC). */
export interface UsageCounterTable {
  user_id: string;
  period: string;
  period_start: number;
  requests: number;
  tokens: number;
  cost: number;
}

export interface Database {
  user: UserTable;
  auth: AuthTable;
  api_key: ApiKeyTable;
  group: GroupTable;
  group_member: GroupMemberTable;
  access_grant: AccessGrantTable;
  config: ConfigTable;
  oauth_session: OAuthSessionTable;
  revoked_token: RevokedTokenTable;
  user_session_cutoff: UserSessionCutoffTable;
  event_webhook: EventWebhookTable;
  event_outbox: EventOutboxTable;
  event_delivery: EventDeliveryTable;
  model: ModelTable;
  chat: ChatTable;
  chat_content: ChatContentTable;
  chat_message: ChatMessageTable;
  tag: TagTable;
  chat_tag: ChatTagTable;
  shared_chat: SharedChatTable;
  folder: FolderTable;
  tool: ToolTable;
  file: FileTable;
  prompt: PromptTable;
  prompt_history: PromptHistoryTable;
  file_job: FileJobTable;
  knowledge: KnowledgeTable;
  knowledge_directory: KnowledgeDirectoryTable;
  knowledge_file: KnowledgeFileTable;
  retrieval_chunk: RetrievalChunkTable;
  retrieval_vector: RetrievalVectorTable;
  note: NoteTable;
  pinned_note: PinnedNoteTable;
  note_document_update: NoteDocumentUpdateTable;
  memory: MemoryTable;
  skill: SkillTable;
  function: FunctionTable;
  feedback: FeedbackTable;
  message_rollup: MessageRollupTable;
  usage_limit: UsageLimitTable;
  usage_counter: UsageCounterTable;
  channel: ChannelTable;
  channel_member: ChannelMemberTable;
  channel_webhook: ChannelWebhookTable;
  channel_file: ChannelFileTable;
  message: MessageTable;
  message_reaction: MessageReactionTable;
  scheduled_job: ScheduledJobTable;
  automation: AutomationTable;
  automation_run: AutomationRunTable;
  calendar: CalendarTable;
  calendar_event: CalendarEventTable;
  calendar_event_attendee: CalendarEventAttendeeTable;
}

export type FunctionRow = Selectable<FunctionTable>;
export type UserRow = Selectable<UserTable>;
export type NewUserRow = Insertable<UserTable>;
export type UserUpdate = Updateable<UserTable>;
export type GroupRow = Selectable<GroupTable>;
export type AccessGrantRow = Selectable<AccessGrantTable>;
export type ApiKeyRow = Selectable<ApiKeyTable>;
export type EventWebhookRow = Selectable<EventWebhookTable>;
export type EventDeliveryRow = Selectable<EventDeliveryTable>;
export type ModelRow = Selectable<ModelTable>;
export type ChatRow = Selectable<ChatTable>;
export type ChatMessageRow = Selectable<ChatMessageTable>;
export type FolderRow = Selectable<FolderTable>;
export type ToolRow = Selectable<ToolTable>;
export type FileRow = Selectable<FileTable>;
export type KnowledgeRow = Selectable<KnowledgeTable>;
export type KnowledgeDirectoryRow = Selectable<KnowledgeDirectoryTable>;
export type PromptRow = Selectable<PromptTable>;
export type PromptHistoryRow = Selectable<PromptHistoryTable>;
export type NoteRow = Selectable<NoteTable>;
export type MemoryRow = Selectable<MemoryTable>;
export type SkillRow = Selectable<SkillTable>;
export type ChannelRow = Selectable<ChannelTable>;
export type ChannelMemberRow = Selectable<ChannelMemberTable>;
export type ChannelWebhookRow = Selectable<ChannelWebhookTable>;
export type MessageRow = Selectable<MessageTable>;

export type ScheduledJobRow = Selectable<ScheduledJobTable>;
export type AutomationRow = Selectable<AutomationTable>;
export type AutomationRunRow = Selectable<AutomationRunTable>;
export type CalendarRow = Selectable<CalendarTable>;
export type CalendarEventRow = Selectable<CalendarEventTable>;
export type CalendarEventAttendeeRow = Selectable<CalendarEventAttendeeTable>;
