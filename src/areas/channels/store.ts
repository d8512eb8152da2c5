import { randomUUID } from 'node:crypto';
import { type Expression, type SqlBool, sql } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toBool, toJson } from '../../core/db/json.js';
import { containsPattern } from '../../core/db/like.js';
import type { ChannelFileTable, ChannelMemberRow, ChannelRow, ChannelWebhookRow, MessageRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

/** A channel with its JSON columns decoded (ChannelModel without grants). */
export interface ChannelRecord {
  id: string;
  user_id: string;
  type: string | null;
  name: string;
  description: string | null;
  is_private: boolean | null;
  data: Json | null;
  meta: Json | null;
  created_at: number;
  updated_at: number;
  updated_by: string | null;
}

export type ChannelWrite = Pick<ChannelRecord, 'name' | 'description' | 'is_private' | 'data' | 'meta' | 'updated_by'>;

export interface MemberRecord {
  id: string;
  channel_id: string;
  user_id: string;
  role: string | null;
  status: string | null;
  is_active: boolean;
  invited_at: number | null;
  invited_by: string | null;
  joined_at: number | null;
  last_read_at: number | null;
  created_at: number;
  updated_at: number;
}

export type WebhookRecord = ChannelWebhookRow;

/** A message (MessageModel). */
export interface MessageRecord {
  id: string;
  user_id: string;
  channel_id: string;
  reply_to_id: string | null;
  parent_id: string | null;
  is_pinned: boolean;
  pinned_by: string | null;
  pinned_at: number | null;
  content: string;
  data: Json | null;
  meta: Json | null;
  created_at: number;
  updated_at: number;
}

/** A reaction as the messages carry it: its name, who reacted, how many. */
export interface Reaction {
  name: string;
  users: { id: string; name: string }[];
  count: number;
}

/** A page of people (members listing). */
export interface PeopleQuery {
  /** null: every user that is not pending. */
  ids: string[] | null;
  query?: string;
  orderBy?: string;
  direction?: string;
  skip: number;
  limit: number;
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const jsonObject = (text: string | null): Json | null => {
  const value = fromJson<unknown>(text, null);
  return isObject(value) ? value : null;
};
const num = (value: number | string | null): number | null => (value === null ? null : Number(value));

function toChannel(row: ChannelRow): ChannelRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    type: row.type,
    name: row.name,
    description: row.description,
    is_private: row.is_private === null ? null : toBool(row.is_private),
    data: jsonObject(row.data),
    meta: jsonObject(row.meta),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
    updated_by: row.updated_by,
  };
}

function toMember(row: ChannelMemberRow): MemberRecord {
  return {
    ...row,
    is_active: toBool(row.is_active),
    invited_at: num(row.invited_at),
    joined_at: num(row.joined_at),
    last_read_at: num(row.last_read_at),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

function toWebhook(row: ChannelWebhookRow): WebhookRecord {
  return { ...row, last_used_at: num(row.last_used_at), created_at: Number(row.created_at), updated_at: Number(row.updated_at) };
}

function toMessage(row: MessageRow): MessageRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    channel_id: row.channel_id,
    reply_to_id: row.reply_to_id,
    parent_id: row.parent_id,
    is_pinned: toBool(row.is_pinned),
    pinned_by: row.pinned_by,
    pinned_at: num(row.pinned_at),
    content: row.content,
    data: jsonObject(row.data),
    meta: jsonObject(row.meta),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** Standard channels: neither group nor direct-message (an empty or absent type included). */
const standardType = sql<SqlBool>`(channel.type is null or channel.type not in ('group', 'dm'))`;

export class ChannelStore {
  constructor(private readonly db: Db) {}

  // ---- channels --------------------------------------------------------------

  async byId(id: string): Promise<ChannelRecord | null> {
    const row = await this.db.selectFrom('channel').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toChannel(row) : null;
  }

  async insert(channel: ChannelRecord): Promise<void> {
    await this.db
      .insertInto('channel')
      .values({ ...channel, data: toJson(channel.data), meta: toJson(channel.meta) })
      .execute();
  }

  async update(id: string, fields: ChannelWrite, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('channel')
      .set({ ...fields, data: toJson(fields.data), meta: toJson(fields.meta), updated_at: now })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** The channel and, by cascade, its members, webhooks, files, messages and reactions. */
  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('channel').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async all(): Promise<ChannelRecord[]> {
    return (await this.db.selectFrom('channel').selectAll().orderBy('created_at').orderBy('id').execute()).map(toChannel);
  }

  /** The group and direct-message channels the user is an active member of, and the standard channels `access` lets through. */
  async ofUser(userId: string, access: Expression<SqlBool>): Promise<ChannelRecord[]> {
    const joined = await this.db
      .selectFrom('channel')
      .innerJoin('channel_member', 'channel_member.channel_id', 'channel.id')
      .selectAll('channel')
      .where('channel.type', 'in', ['group', 'dm'])
      .where('channel_member.user_id', '=', userId)
      .where('channel_member.is_active', '=', true)
      .orderBy('channel.created_at')
      .execute();
    const standard = await this.db.selectFrom('channel').selectAll().where(standardType).where(access).orderBy('created_at').execute();
    return [...joined, ...standard].map(toChannel);
  }

  /** The direct-message channel whose members are exactly these users. */
  async directChannelOf(userIds: string[]): Promise<ChannelRecord | null> {
    const ids = [...new Set(userIds)];
    const row = await this.db
      .selectFrom('channel')
      .selectAll()
      .where('type', '=', 'dm')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('channel_member')
          .select('channel_id')
          .groupBy('channel_id')
          .having((h) => h.fn.countAll(), '=', ids.length)
          .having(sql`sum(case when user_id in (${sql.join(ids)}) then 1 else 0 end)`, '=', ids.length),
      )
      .limit(1)
      .executeTakeFirst();
    return row ? toChannel(row) : null;
  }

  // ---- members ---------------------------------------------------------------

  async members(channelId: string): Promise<MemberRecord[]> {
    return (await this.db.selectFrom('channel_member').selectAll().where('channel_id', '=', channelId).orderBy('created_at').execute()).map(toMember);
  }

  async member(channelId: string, userId: string): Promise<MemberRecord | null> {
    const row = await this.db.selectFrom('channel_member').selectAll().where('channel_id', '=', channelId).where('user_id', '=', userId).executeTakeFirst();
    return row ? toMember(row) : null;
  }

  /** Adds the users not yet members (joined, active, read up to now); returns the new memberships. */
  async addMembers(channelId: string, userIds: string[], invitedBy: string | null, now: number): Promise<MemberRecord[]> {
    const rows = [...new Set(userIds)].map((userId) => ({
      id: randomUUID(),
      channel_id: channelId,
      user_id: userId,
      role: null,
      status: 'joined',
      is_active: true,
      invited_at: invitedBy ? now : null,
      invited_by: invitedBy,
      joined_at: now,
      last_read_at: now,
      created_at: now,
      updated_at: now,
    }));
    if (rows.length === 0) return [];
    const added = await this.db
      .insertInto('channel_member')
      .values(rows)
      .onConflict((oc) => oc.columns(['channel_id', 'user_id']).doNothing())
      .returningAll()
      .execute();
    return added.map(toMember);
  }

  /** A membership as another install stored it, id kept (`parley import-openwebui`). */
  async insertMember(member: MemberRecord): Promise<void> {
    await this.db.insertInto('channel_member').values(member).onConflict((oc) => oc.columns(['channel_id', 'user_id']).doNothing()).execute();
  }

  async removeMembers(channelId: string, userIds: string[]): Promise<number> {
    if (userIds.length === 0) return 0;
    const result = await this.db.deleteFrom('channel_member').where('channel_id', '=', channelId).where('user_id', 'in', userIds).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async setActive(channelId: string, userId: string, active: boolean, now: number): Promise<boolean> {
    return this.updateMember(channelId, userId, { is_active: active, updated_at: now });
  }

  /** Every inactive member of the channel made active again (a new message in a group or DM). */
  async reactivateAll(channelId: string, now: number): Promise<void> {
    await this.db.updateTable('channel_member').set({ is_active: true, updated_at: now }).where('channel_id', '=', channelId).where('is_active', '=', false).execute();
  }

  async markRead(channelId: string, userId: string, now: number): Promise<boolean> {
    return this.updateMember(channelId, userId, { last_read_at: now, updated_at: now });
  }

  private async updateMember(channelId: string, userId: string, fields: { is_active?: boolean; last_read_at?: number; updated_at: number }): Promise<boolean> {
    const result = await this.db
      .updateTable('channel_member')
      .set(fields)
      .where('channel_id', '=', channelId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** A page of users among `ids` (or all but pending ones), by name or e-mail, with the total. */
  async people(query: PeopleQuery): Promise<{ ids: string[]; total: number }> {
    if (query.ids !== null && query.ids.length === 0) return { ids: [], total: 0 };
    let select = this.db.selectFrom('user');
    select = query.ids === null ? select.where('role', '!=', 'pending') : select.where('id', 'in', query.ids);
    if (query.query) {
      const pattern = containsPattern(query.query);
      select = select.where((eb) => eb.or([sql<SqlBool>`lower(name) like ${pattern} escape '\\'`, sql<SqlBool>`lower(email) like ${pattern} escape '\\'`]));
    }
    const counted = await select.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    const column = query.orderBy === 'email' ? 'email' : query.orderBy === 'created_at' ? 'created_at' : query.orderBy === 'last_active_at' ? 'last_active_at' : 'name';
    const rows = await select
      .select('id')
      .orderBy(column, query.direction === 'desc' ? 'desc' : 'asc')
      .orderBy('id')
      .offset(query.skip)
      .limit(query.limit)
      .execute();
    return { ids: rows.map((r) => r.id), total: Number(counted?.n ?? 0) };
  }

  // ---- webhooks ----------------------------------------------------------------

  async webhooks(channelId: string): Promise<WebhookRecord[]> {
    return (await this.db.selectFrom('channel_webhook').selectAll().where('channel_id', '=', channelId).orderBy('created_at').execute()).map(toWebhook);
  }

  async webhook(id: string): Promise<WebhookRecord | null> {
    const row = await this.db.selectFrom('channel_webhook').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toWebhook(row) : null;
  }

  async webhooksByIds(ids: string[]): Promise<Map<string, WebhookRecord>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.selectFrom('channel_webhook').selectAll().where('id', 'in', ids).execute();
    return new Map(rows.map((r) => [r.id, toWebhook(r)]));
  }

  async insertWebhook(webhook: WebhookRecord): Promise<void> {
    await this.db.insertInto('channel_webhook').values(webhook).execute();
  }

  async updateWebhook(id: string, fields: { name: string; profile_image_url: string | null }, now: number): Promise<void> {
    await this.db
      .updateTable('channel_webhook')
      .set({ ...fields, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  async touchWebhook(id: string, now: number): Promise<void> {
    await this.db.updateTable('channel_webhook').set({ last_used_at: now }).where('id', '=', id).execute();
  }

  async deleteWebhook(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('channel_webhook').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  // ---- messages ----------------------------------------------------------------

  async insertMessage(message: MessageRecord): Promise<void> {
    await this.db
      .insertInto('message')
      .values({ ...message, data: toJson(message.data), meta: toJson(message.meta) })
      .execute();
  }

  async message(id: string): Promise<MessageRecord | null> {
    const row = await this.db.selectFrom('message').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toMessage(row) : null;
  }

  async messagesByIds(ids: string[]): Promise<Map<string, MessageRecord>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.selectFrom('message').selectAll().where('id', 'in', ids).execute();
    return new Map(rows.map((r) => [r.id, toMessage(r)]));
  }

  /** A channel's top-level messages (`parentId` null) or a thread's replies, newest first. */
  async messages(channelId: string, parentId: string | null, skip: number, limit: number): Promise<MessageRecord[]> {
    const rows = await this.db
      .selectFrom('message')
      .selectAll()
      .where('channel_id', '=', channelId)
      .where('parent_id', parentId === null ? 'is' : '=', parentId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(skip)
      .limit(limit)
      .execute();
    return rows.map(toMessage);
  }

  async pinned(channelId: string, skip: number, limit: number): Promise<MessageRecord[]> {
    const rows = await this.db
      .selectFrom('message')
      .selectAll()
      .where('channel_id', '=', channelId)
      .where('is_pinned', '=', true)
      .orderBy('pinned_at', 'desc')
      .offset(skip)
      .limit(limit)
      .execute();
    return rows.map(toMessage);
  }

  async updateMessage(id: string, fields: Pick<MessageRecord, 'content' | 'data' | 'meta'>, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('message')
      .set({ content: fields.content, data: toJson(fields.data), meta: toJson(fields.meta), updated_at: now })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async setPinned(id: string, pinned: boolean, by: string, now: number): Promise<void> {
    await this.db
      .updateTable('message')
      .set({ is_pinned: pinned, pinned_at: pinned ? now : null, pinned_by: pinned ? by : null })
      .where('id', '=', id)
      .execute();
  }

  /** The message, its replies and (by cascade) their reactions. */
  async deleteMessage(id: string): Promise<void> {
    await this.db.deleteFrom('message').where('parent_id', '=', id).execute();
    await this.db.deleteFrom('message').where('id', '=', id).execute();
  }

  /** Reply count and latest reply time of each message that has replies. */
  async replyCounts(ids: string[]): Promise<Map<string, { count: number; latest: number }>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('message')
      .select((eb) => ['parent_id', eb.fn.countAll<number>().as('n'), eb.fn.max('created_at').as('latest')])
      .where('parent_id', 'in', ids)
      .groupBy('parent_id')
      .execute();
    return new Map(rows.map((r) => [r.parent_id as string, { count: Number(r.n), latest: Number(r.latest) }]));
  }

  /** Latest message time of each channel that has messages. */
  async lastMessageAt(channelIds: string[]): Promise<Map<string, number>> {
    if (channelIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('message')
      .select((eb) => ['channel_id', eb.fn.max('created_at').as('latest')])
      .where('channel_id', 'in', channelIds)
      .groupBy('channel_id')
      .execute();
    return new Map(rows.map((r) => [r.channel_id, Number(r.latest)]));
  }

  /** Top-level messages by others after the user's `last_read_at`, per channel the user is a member of. */
  async unreadCounts(userId: string, channelIds: string[]): Promise<Map<string, number>> {
    if (channelIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('message')
      .innerJoin('channel_member', (join) => join.onRef('channel_member.channel_id', '=', 'message.channel_id').on('channel_member.user_id', '=', userId))
      .select((eb) => ['message.channel_id', eb.fn.countAll<number>().as('n')])
      .where('message.channel_id', 'in', channelIds)
      .where('message.parent_id', 'is', null)
      .where('message.user_id', '!=', userId)
      .where(sql<SqlBool>`message.created_at > coalesce(channel_member.last_read_at, 0)`)
      .groupBy('message.channel_id')
      .execute();
    return new Map(rows.map((r) => [r.channel_id, Number(r.n)]));
  }

  // ---- reactions -----------------------------------------------------------------

  /** Adds the reaction unless the user already gave it. */
  async addReaction(messageId: string, userId: string, name: string, now: number): Promise<void> {
    await this.db
      .insertInto('message_reaction')
      .values({ id: randomUUID(), message_id: messageId, user_id: userId, name, created_at: now })
      .onConflict((oc) => oc.columns(['message_id', 'user_id', 'name']).doNothing())
      .execute();
  }

  /** A reaction as another install stored it, id kept (`parley import-openwebui`). */
  async insertReaction(reaction: { id: string; message_id: string; user_id: string; name: string; created_at: number }): Promise<void> {
    await this.db.insertInto('message_reaction').values(reaction).onConflict((oc) => oc.columns(['message_id', 'user_id', 'name']).doNothing()).execute();
  }

  async removeReaction(messageId: string, userId: string, name: string): Promise<void> {
    await this.db.deleteFrom('message_reaction').where('message_id', '=', messageId).where('user_id', '=', userId).where('name', '=', name).execute();
  }

  /** The reactions of each message, grouped by name in the order first given (users that still exist). */
  async reactions(messageIds: string[]): Promise<Map<string, Reaction[]>> {
    const grouped = new Map<string, Reaction[]>();
    if (messageIds.length === 0) return grouped;
    const rows = await this.db
      .selectFrom('message_reaction')
      .innerJoin('user', 'user.id', 'message_reaction.user_id')
      .select(['message_reaction.message_id', 'message_reaction.name', 'user.id as user_id', 'user.name as user_name'])
      .where('message_reaction.message_id', 'in', messageIds)
      .orderBy('message_reaction.created_at')
      .orderBy('message_reaction.id')
      .execute();
    for (const row of rows) {
      const list = grouped.get(row.message_id) ?? [];
      let reaction = list.find((r) => r.name === row.name);
      if (!reaction) {
        reaction = { name: row.name, users: [], count: 0 };
        list.push(reaction);
      }
      reaction.users.push({ id: row.user_id, name: row.user_name });
      reaction.count += 1;
      grouped.set(row.message_id, list);
    }
    return grouped;
  }

  // ---- files -----------------------------------------------------------------------

  /** Links files to the channel and the message that carried them (a file already linked keeps its first message). */
  async linkFiles(channelId: string, messageId: string, userId: string, fileIds: string[], now: number): Promise<void> {
    if (fileIds.length === 0) return;
    await this.db
      .insertInto('channel_file')
      .values(fileIds.map((fileId) => ({ id: randomUUID(), channel_id: channelId, message_id: messageId, file_id: fileId, user_id: userId, created_at: now })))
      .onConflict((oc) => oc.columns(['channel_id', 'file_id']).doNothing())
      .execute();
  }

  /** A link of a file to a channel (and its message) as it was elsewhere (an import), id kept. */
  async insertFile(link: ChannelFileTable): Promise<void> {
    await this.db.insertInto('channel_file').values(link).execute();
  }

  /** The channels a file was posted in. */
  async channelsOfFile(fileId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('channel_file').select('channel_id').where('file_id', '=', fileId).execute();
    return rows.map((r) => r.channel_id);
  }
}
