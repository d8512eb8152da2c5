/**
 * Open WebUI databases for the importer's tests, with the reference's schema: the tables
 * as its alembic migrations leave them (backend/open_webui/migrations/versions at
 * ecd48e2f7 for 0.10.2, and at v0.6.0), in DDL that SQLite and PostgreSQL both take.
 * Only the tables and columns the importer reads or reports are written out, without foreign keys (tests
 * seed rows whose owner is missing). No imports: the bench (bench/scenarios/import.js) builds its
 * source database from this file too.
 */
export type SchemaVersion = '0.10.2' | '0.6.0';

export const REVISION: Record<SchemaVersion, string> = { '0.10.2': '42e2978c7933', '0.6.0': '3781e22d8b01' };

const SHARED_TABLES = `
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY);
CREATE TABLE auth (id VARCHAR(255) NOT NULL PRIMARY KEY, email VARCHAR(255), password TEXT, active BOOLEAN);
CREATE TABLE chat (id VARCHAR(255) NOT NULL PRIMARY KEY, user_id VARCHAR(255), title TEXT, chat JSON, created_at BIGINT, updated_at BIGINT,
  share_id TEXT UNIQUE, archived BOOLEAN, pinned BOOLEAN, meta JSON DEFAULT '{}', folder_id TEXT %CHAT_EXTRA%);
CREATE TABLE tag (id VARCHAR(255) NOT NULL, name VARCHAR(255), user_id VARCHAR(255), meta JSON, PRIMARY KEY (id, user_id));
CREATE TABLE folder (id TEXT NOT NULL, parent_id TEXT, user_id TEXT NOT NULL, name TEXT, items JSON, meta JSON, data JSON, is_expanded BOOLEAN,
  created_at BIGINT, updated_at BIGINT, PRIMARY KEY (id, user_id));
CREATE TABLE model (id TEXT NOT NULL PRIMARY KEY, user_id TEXT, base_model_id TEXT, name TEXT, params JSON, meta JSON, is_active BOOLEAN,
  updated_at BIGINT, created_at BIGINT %ACCESS%);
CREATE TABLE tool (id VARCHAR(255) NOT NULL PRIMARY KEY, user_id VARCHAR(255), name TEXT, content TEXT, specs JSON, meta JSON, valves JSON,
  updated_at BIGINT, created_at BIGINT %ACCESS%);
CREATE TABLE function (id VARCHAR(255) NOT NULL PRIMARY KEY, user_id VARCHAR(255), name TEXT, type TEXT, content TEXT, meta JSON, valves JSON,
  is_active BOOLEAN, is_global BOOLEAN, updated_at BIGINT, created_at BIGINT);
CREATE TABLE memory (id VARCHAR(255) NOT NULL PRIMARY KEY, user_id VARCHAR(255), content TEXT, updated_at BIGINT, created_at BIGINT %MEMORY_EXTRA%);
CREATE TABLE feedback (id TEXT NOT NULL PRIMARY KEY, user_id TEXT, version BIGINT, type TEXT, data JSON, meta JSON, snapshot JSON,
  created_at BIGINT, updated_at BIGINT);
CREATE TABLE note (id TEXT NOT NULL PRIMARY KEY, user_id TEXT, title TEXT, data JSON, meta JSON, created_at BIGINT, updated_at BIGINT %ACCESS%);
CREATE TABLE file (id VARCHAR(255) NOT NULL PRIMARY KEY, user_id VARCHAR(255), hash TEXT, filename TEXT, path TEXT, data JSON, meta JSON,
  created_at BIGINT, updated_at BIGINT %ACCESS%);
CREATE TABLE knowledge (id TEXT NOT NULL PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, description TEXT, data JSON, meta JSON,
  created_at BIGINT NOT NULL, updated_at BIGINT %ACCESS%);
CREATE TABLE channel (id TEXT NOT NULL PRIMARY KEY, user_id TEXT, type TEXT, name TEXT, description TEXT, data JSON, meta JSON,
  created_at BIGINT, updated_at BIGINT %ACCESS% %CHANNEL_EXTRA%);
CREATE TABLE message (id TEXT NOT NULL PRIMARY KEY, user_id TEXT, channel_id TEXT, parent_id TEXT, content TEXT, data JSON, meta JSON,
  created_at BIGINT, updated_at BIGINT %MESSAGE_EXTRA%);
CREATE TABLE message_reaction (id TEXT NOT NULL PRIMARY KEY, user_id TEXT NOT NULL, message_id TEXT NOT NULL, name TEXT NOT NULL, created_at BIGINT);
`;

export const SCHEMA: Record<SchemaVersion, string> = {
  '0.10.2':
    SHARED_TABLES.replace('%CHAT_EXTRA%', ', tasks JSON, summary TEXT, last_read_at BIGINT')
      .replace(/ %ACCESS%/g, '')
      .replace('%MEMORY_EXTRA%', ", type VARCHAR(255) DEFAULT 'context', path TEXT, meta JSON")
      .replace('%CHANNEL_EXTRA%', ', is_private BOOLEAN, updated_by TEXT, archived_at BIGINT, archived_by TEXT, deleted_at BIGINT, deleted_by TEXT')
      .replace('%MESSAGE_EXTRA%', ', reply_to_id TEXT, is_pinned BOOLEAN, pinned_by TEXT, pinned_at BIGINT') +
    `
CREATE TABLE "user" (id VARCHAR(255) NOT NULL PRIMARY KEY, email VARCHAR(255) UNIQUE, username VARCHAR(50), role VARCHAR(255), name VARCHAR(255),
  profile_image_url TEXT, profile_banner_image_url TEXT, bio TEXT, gender TEXT, date_of_birth DATE, timezone VARCHAR(255), presence_state VARCHAR(255),
  status_emoji VARCHAR(255), status_message TEXT, status_expires_at BIGINT, info JSON, settings JSON, oauth JSON, scim JSON,
  last_active_at BIGINT, updated_at BIGINT, created_at BIGINT);
CREATE TABLE api_key (id TEXT NOT NULL PRIMARY KEY, user_id TEXT NOT NULL, key TEXT NOT NULL UNIQUE, data JSON, expires_at BIGINT,
  last_used_at BIGINT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL);
CREATE TABLE "group" (id TEXT NOT NULL PRIMARY KEY, user_id TEXT, name TEXT, description TEXT, data JSON, meta JSON, permissions JSON,
  created_at BIGINT, updated_at BIGINT);
CREATE TABLE group_member (id TEXT NOT NULL PRIMARY KEY, group_id TEXT NOT NULL, user_id TEXT NOT NULL, created_at BIGINT, updated_at BIGINT,
  UNIQUE (group_id, user_id));
CREATE TABLE shared_chat (id TEXT NOT NULL PRIMARY KEY, chat_id TEXT NOT NULL, user_id TEXT NOT NULL, title TEXT, chat JSON,
  created_at BIGINT, updated_at BIGINT);
CREATE TABLE prompt (id TEXT NOT NULL PRIMARY KEY, command VARCHAR(255) UNIQUE, user_id VARCHAR(255), name TEXT, content TEXT, data JSON,
  meta JSON, tags JSON, is_active BOOLEAN, version_id TEXT, created_at BIGINT, updated_at BIGINT);
CREATE TABLE access_grant (id TEXT NOT NULL PRIMARY KEY, resource_type TEXT NOT NULL, resource_id TEXT NOT NULL, principal_type TEXT NOT NULL,
  principal_id TEXT NOT NULL, permission TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE TABLE config (key TEXT NOT NULL PRIMARY KEY, value JSON NOT NULL, updated_at BIGINT);
CREATE TABLE skill (id VARCHAR(255) NOT NULL PRIMARY KEY, user_id VARCHAR(255), name TEXT UNIQUE, description TEXT, content TEXT, meta JSON,
  is_active BOOLEAN, updated_at BIGINT, created_at BIGINT);
CREATE TABLE knowledge_file (id TEXT NOT NULL PRIMARY KEY, knowledge_id TEXT NOT NULL, file_id TEXT NOT NULL, directory_id TEXT,
  user_id TEXT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, UNIQUE (knowledge_id, file_id));
CREATE TABLE channel_member (id TEXT NOT NULL PRIMARY KEY, channel_id TEXT NOT NULL, user_id TEXT NOT NULL, role TEXT, status TEXT,
  is_active BOOLEAN NOT NULL, is_channel_muted BOOLEAN NOT NULL, is_channel_pinned BOOLEAN NOT NULL, data JSON, meta JSON, invited_at BIGINT,
  invited_by TEXT, joined_at BIGINT, left_at BIGINT, last_read_at BIGINT, created_at BIGINT, updated_at BIGINT);
CREATE TABLE knowledge_directory (id TEXT NOT NULL PRIMARY KEY, knowledge_id TEXT NOT NULL, parent_id TEXT, name TEXT NOT NULL, user_id TEXT NOT NULL,
  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, UNIQUE (knowledge_id, parent_id, name));
CREATE TABLE chat_file (id TEXT NOT NULL PRIMARY KEY, user_id TEXT NOT NULL, chat_id TEXT NOT NULL, file_id TEXT NOT NULL, message_id TEXT,
  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, UNIQUE (chat_id, file_id));
CREATE TABLE channel_file (id TEXT NOT NULL PRIMARY KEY, user_id TEXT NOT NULL, channel_id TEXT NOT NULL, file_id TEXT NOT NULL,
  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, message_id TEXT, UNIQUE (channel_id, file_id));
CREATE TABLE prompt_history (id TEXT NOT NULL PRIMARY KEY, prompt_id TEXT NOT NULL, parent_id TEXT, snapshot JSON NOT NULL, user_id TEXT NOT NULL,
  commit_message TEXT, created_at BIGINT NOT NULL);
CREATE TABLE automation (id TEXT NOT NULL PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, data JSON NOT NULL, meta JSON, is_active BOOLEAN NOT NULL,
  last_run_at BIGINT, next_run_at BIGINT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL);
CREATE TABLE automation_run (id TEXT NOT NULL PRIMARY KEY, automation_id TEXT NOT NULL, chat_id TEXT, status TEXT NOT NULL, error TEXT, created_at BIGINT NOT NULL);
CREATE TABLE calendar (id TEXT NOT NULL PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, color TEXT, is_default BOOLEAN NOT NULL, data JSON, meta JSON,
  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL);
CREATE TABLE calendar_event (id TEXT NOT NULL PRIMARY KEY, calendar_id TEXT NOT NULL, user_id TEXT NOT NULL, title TEXT NOT NULL, description TEXT,
  start_at BIGINT NOT NULL, end_at BIGINT, all_day BOOLEAN NOT NULL, rrule TEXT, color TEXT, location TEXT, data JSON, meta JSON, is_cancelled BOOLEAN NOT NULL,
  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL);
CREATE TABLE calendar_event_attendee (id TEXT NOT NULL PRIMARY KEY, event_id TEXT NOT NULL, user_id TEXT NOT NULL, status TEXT NOT NULL, meta JSON,
  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, UNIQUE (event_id, user_id));
CREATE TABLE pinned_note (id TEXT NOT NULL PRIMARY KEY, user_id TEXT NOT NULL, note_id TEXT NOT NULL, created_at BIGINT NOT NULL, UNIQUE (user_id, note_id));
`,
  '0.6.0':
    SHARED_TABLES.replace(' %CHAT_EXTRA%', '')
      .replace(/ %ACCESS%/g, ', access_control JSON')
      .replace(' %MEMORY_EXTRA%', '')
      .replace(' %CHANNEL_EXTRA%', '')
      .replace(' %MESSAGE_EXTRA%', '') +
    `
CREATE TABLE "user" (id VARCHAR(255) NOT NULL PRIMARY KEY, name VARCHAR(255), email VARCHAR(255), role VARCHAR(255), profile_image_url TEXT,
  last_active_at BIGINT, updated_at BIGINT, created_at BIGINT, api_key VARCHAR(255) UNIQUE, settings JSON, info JSON, oauth_sub TEXT UNIQUE);
CREATE TABLE "group" (id TEXT NOT NULL PRIMARY KEY, user_id TEXT, name TEXT, description TEXT, data JSON, meta JSON, permissions JSON,
  user_ids JSON, created_at BIGINT, updated_at BIGINT);
CREATE TABLE prompt (command VARCHAR(255) NOT NULL PRIMARY KEY, user_id VARCHAR(255), title TEXT, content TEXT, timestamp BIGINT, access_control JSON);
CREATE TABLE config (id INTEGER NOT NULL PRIMARY KEY, data JSON NOT NULL, version INTEGER NOT NULL, created_at TIMESTAMP, updated_at TIMESTAMP);
`,
};

export type FixtureRow = Record<string, unknown>;

/** A chat's JSON as Open WebUI stores it: a linear history of `turns` user/assistant pairs. */
export function chatJson(id: string, title: string, turns: number, model = 'gpt-test'): FixtureRow {
  const messages: Record<string, FixtureRow> = {};
  let parent: string | null = null;
  const list: FixtureRow[] = [];
  for (let i = 0; i < turns * 2; i++) {
    const messageId = `${id}-m${i}`;
    const user = i % 2 === 0;
    const message: FixtureRow = {
      id: messageId,
      parentId: parent,
      childrenIds: i + 1 < turns * 2 ? [`${id}-m${i + 1}`] : [],
      role: user ? 'user' : 'assistant',
      content: user ? `Question ${i / 2 + 1} of ${title}` : `Answer ${(i - 1) / 2 + 1} of ${title}`,
      timestamp: 1_700_000_000 + i,
      ...(user ? { models: [model] } : { model, done: true }),
    };
    messages[messageId] = message;
    list.push(message);
    parent = messageId;
  }
  return { id: '', title, models: [model], history: { messages, currentId: parent }, messages: list, tags: [], timestamp: 1_700_000_000_000 };
}
