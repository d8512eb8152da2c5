import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { RESOURCE_TYPES } from '../../core/access/grants.js';
import type { AccessService, SharingRule } from '../../core/access/service.js';
import { isAdmin, type UserRecord } from '../../core/auth/user.js';
import { deepFreeze, InvalidatedCache, NOTICED_CACHE } from '../../core/cache.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { ERROR, HttpError, badRequest, forbidden, notFound, unauthorized } from '../../core/http/errors.js';
import type { Realtime } from '../../core/realtime/server.js';
import type { FilesService } from '../files/service.js';
import type { GroupsService } from '../groups/service.js';
import type { ProfileImage } from '../users/profile-image.js';
import type { UsersService } from '../users/service.js';
import type { ChannelForm, CreateChannelForm, MembersQuery, MessageForm, WebhookForm } from './schemas.js';
import { type ChannelRecord, ChannelStore, type MemberRecord, type MessageRecord, type Reaction, type WebhookRecord } from './store.js';

type Json = Record<string, unknown>;

const RESOURCE = RESOURCE_TYPES.channel;
const SHARING: SharingRule = { publicPermission: 'sharing.public_channels' };
/** Page sizes of the reference's routers/channels.py. */
const MEMBERS_PAGE = 30;
const PINNED_PAGE = 20;
/** The socket room of a channel: its members' sockets (join-channels). */
export const channelRoom = (channelId: string) => `channel:${channelId}`;

export interface Author {
  id: string;
  name: string;
  role: string;
}

/** A message as the routes and socket events carry it (MessageResponse). */
export interface MessageView extends MessageRecord {
  user: Author | null;
  reply_to_message: SlimMessage | null;
  latest_reply_at: number | null;
  reply_count: number;
  reactions: Reaction[];
}
type SlimMessage = Omit<MessageRecord, 'data'> & { data: boolean; user: Author | null };

/** What a posted message hands to the model replies (replies.ts). */
export interface PostedMessage {
  user: UserRecord;
  channel: ChannelRecord;
  message: MessageView;
}

const isGroupOrDm = (channel: ChannelRecord) => channel.type === 'group' || channel.type === 'dm';
/** MessageUserSlimResponse: `data` says only whether it holds anything. */
const hasData = (data: Json | null) => data !== null && Object.values(data).some((value) => Boolean(value) && !(typeof value === 'object' && Object.keys(value as object).length === 0));
const authorOf = (user: { id: string; name: string; role: string }): Author => ({ id: user.id, name: user.name, role: user.role });
const fileIdsOf = (data: Json | null): string[] =>
  Array.isArray(data?.files) ? data.files.flatMap((file) => (file && typeof file === 'object' && typeof (file as Json).id === 'string' ? [(file as Json).id as string] : [])) : [];

/** A message as lists show it: `data` only says whether it holds anything. */
type ListedMessage = Omit<MessageView, 'data'> & { data: boolean };

/**
 * Channels (`/api/v1/channels`): standard channels (admins create them; grants say
 * who reads and writes), group and direct-message channels (their members),
 * messages with threads, reactions and pins, read state, and incoming webhooks.
 * Every change reaches the channel's room on the socket (`events:channel`, the
 * reference's payloads), on every instance through the Redis adapter. See docs/channels.md.
 */
export class ChannelsService {
  private lastStamp = 0;
  private readonly postListeners: ((posted: PostedMessage) => void)[] = [];

  /**
   * Channels' pages of messages (`GET /{id}/messages`), read far more often than written (every
   * member opening the channel, every reconnect): kept until a message, reaction, author or
   * webhook changes, here or on another instance. Bounded: a page of 50 is tens of kilobytes.
   */
  private readonly pages = new InvalidatedCache<ListedMessage[]>({ ttlMs: NOTICED_CACHE.ttlMs, maxEntries: 200 });

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
    private readonly groups: GroupsService,
    private readonly files: FilesService,
    private readonly realtime: Realtime,
  ) {
    core.database.onWrite(['message', 'message_reaction', 'user', 'channel_webhook'], () => core.changes.announce('channels'));
    core.changes.on('channels', () => this.pages.invalidate());
  }

  private store(db: Db = this.core.db): ChannelStore {
    return new ChannelStore(db);
  }

  /**
   * Nanoseconds, as the reference stores them, and increasing within the process so
   * messages posted in one millisecond keep their order. Numbers this large step by 256,
   * hence the 1,000 ns between two stamps.
   */
  private stamp(): number {
    this.lastStamp = Math.max(this.core.clock.nowMs() * 1_000_000, this.lastStamp + 1000);
    return this.lastStamp;
  }

  // ---- rules -----------------------------------------------------------------

  /** `channels.enable` (403 when off) and, for a user, `features.channels` (401), as check_channels_access. */
  async requireEnabled(user?: UserRecord): Promise<void> {
    if (!this.core.settings.get<boolean>('channels.enable')) throw forbidden(ERROR.FEATURE_DISABLED('Channels'));
    if (user && !(await this.access.hasPermission(user, 'features.channels'))) throw unauthorized(ERROR.UNAUTHORIZED);
  }

  /** Whether the user may see the channel in their lists and rooms (join-channels). */
  async mayJoinRooms(user: UserRecord): Promise<boolean> {
    return Boolean(this.core.settings.get<boolean>('channels.enable')) && this.access.hasPermission(user, 'features.channels');
  }

  private async isMember(channelId: string, userId: string): Promise<boolean> {
    const member = await this.store().member(channelId, userId);
    return member !== null && member.is_active;
  }

  /** Managers: the channel's creator and active members with the `manager` role. */
  private async isManager(channel: ChannelRecord, userId: string): Promise<boolean> {
    if (channel.user_id === userId) return true;
    const member = await this.store().member(channel.id, userId);
    return member !== null && member.is_active && member.role === 'manager';
  }

  private async hasGrant(user: UserRecord, channel: ChannelRecord, permission: 'read' | 'write'): Promise<boolean> {
    return this.access.hasAccess(user, RESOURCE, channel.id, permission, channel.user_id);
  }

  /** The channel: 404 when missing. */
  private async channel(id: string): Promise<ChannelRecord> {
    const channel = await this.store().byId(id);
    if (!channel) throw notFound(ERROR.NOT_FOUND);
    return channel;
  }

  /**
   * The channel when the user may read it (or post in it): members of group and
   * direct-message channels; for standard channels admins and grant holders. 403 otherwise.
   */
  private async readable(user: UserRecord, id: string, permission: 'read' | 'write' = 'read'): Promise<ChannelRecord> {
    await this.requireEnabled(user);
    const channel = await this.channel(id);
    const allowed = isGroupOrDm(channel) ? await this.isMember(channel.id, user.id) : isAdmin(user) || (await this.hasGrant(user, channel, permission));
    if (!allowed) throw forbidden(ERROR.DEFAULT());
    return channel;
  }

  /** The channel when the user created it or is an admin (update, delete, members). */
  private async owned(user: UserRecord, id: string): Promise<ChannelRecord> {
    await this.requireEnabled(user);
    const channel = await this.channel(id);
    if (channel.user_id !== user.id && !isAdmin(user)) throw forbidden(ERROR.DEFAULT());
    return channel;
  }

  /** The channel when the user manages it (webhooks). */
  private async managed(user: UserRecord, id: string): Promise<ChannelRecord> {
    await this.requireEnabled(user);
    const channel = await this.channel(id);
    if (!isAdmin(user) && !(await this.isManager(channel, user.id))) throw forbidden(ERROR.UNAUTHORIZED);
    return channel;
  }

  /** A message of the channel: 404 when missing, 400 when it belongs to another channel. */
  private async messageOf(channel: ChannelRecord, messageId: string): Promise<MessageRecord> {
    const message = await this.store().message(messageId);
    if (!message) throw notFound(ERROR.NOT_FOUND);
    if (message.channel_id !== channel.id) throw badRequest(ERROR.DEFAULT());
    return message;
  }

  // ---- views -----------------------------------------------------------------

  private async view(channel: ChannelRecord, db?: Db) {
    return { ...channel, access_grants: await this.access.grantsOf(RESOURCE, channel.id, db), archived_at: null, archived_by: null, deleted_at: null, deleted_by: null };
  }

  private async views(channels: ChannelRecord[]) {
    const grants = await this.access.grantsOfMany(
      RESOURCE,
      channels.map((c) => c.id),
    );
    return channels.map((c) => ({ ...c, access_grants: grants.get(c.id) ?? [], archived_at: null, archived_by: null, deleted_at: null, deleted_by: null }));
  }

  private async people(userIds: string[]) {
    const users = await this.users.byIds(userIds);
    return users.map((u) => ({
      id: u.id,
      name: u.name,
      status_emoji: u.status_emoji,
      status_message: u.status_message,
      status_expires_at: u.status_expires_at,
      is_active: this.users.isActive(u),
    }));
  }

  /** Who wrote each message: its webhook (`role: webhook`) or its user (null when gone). */
  private async authors(messages: MessageRecord[]): Promise<Map<string, Author | null>> {
    const webhookIdOf = (m: MessageRecord) => {
      const webhook = m.meta?.webhook as Json | undefined;
      return typeof webhook?.id === 'string' ? webhook.id : null;
    };
    const webhooks = await this.store().webhooksByIds([...new Set(messages.map(webhookIdOf).filter((id): id is string => id !== null))]);
    const users = new Map((await this.users.byIds([...new Set(messages.map((m) => m.user_id))])).map((u) => [u.id, authorOf(u)]));
    return new Map(
      messages.map((m) => {
        const webhookId = webhookIdOf(m);
        if (webhookId) return [m.id, { id: webhookId, name: webhooks.get(webhookId)?.name ?? 'Deleted Webhook', role: 'webhook' }];
        return [m.id, users.get(m.user_id) ?? null];
      }),
    );
  }

  /** Messages with their authors, the messages they reply to, their reactions and thread counts. */
  private async messageViews(messages: MessageRecord[], withReplies = true): Promise<MessageView[]> {
    const store = this.store();
    const replyTo = await store.messagesByIds([...new Set(messages.map((m) => m.reply_to_id).filter((id): id is string => id !== null))]);
    const [authors, reactions, counts] = await Promise.all([
      this.authors([...messages, ...replyTo.values()]),
      store.reactions(messages.map((m) => m.id)),
      withReplies ? store.replyCounts(messages.map((m) => m.id)) : Promise.resolve(new Map<string, { count: number; latest: number }>()),
    ]);
    return messages.map((m) => {
      const target = m.reply_to_id ? replyTo.get(m.reply_to_id) : undefined;
      const count = counts.get(m.id);
      return {
        ...m,
        user: authors.get(m.id) ?? null,
        reply_to_message: target ? { ...target, data: hasData(target.data), user: authors.get(target.id) ?? null } : null,
        latest_reply_at: count?.latest ?? null,
        reply_count: count?.count ?? 0,
        reactions: reactions.get(m.id) ?? [],
      };
    });
  }

  private async messageView(message: MessageRecord): Promise<MessageView> {
    return (await this.messageViews([message]))[0];
  }

  /** List items answer only whether `data` holds anything. */
  private slim(view: MessageView): ListedMessage {
    return { ...view, data: hasData(view.data) };
  }

  // ---- socket ----------------------------------------------------------------

  /** `events:channel` to the channel's room, with the acting user and the channel, as the reference's emits. */
  private async emit(channel: ChannelRecord, messageId: string | null, type: string, data: unknown, actor: Author | null): Promise<void> {
    const payload: Json = { channel_id: channel.id, message_id: messageId, data: { type, data } };
    if (actor) payload.user = actor;
    payload.channel = await this.view(channel);
    this.realtime.emitToRoom(channelRoom(channel.id), 'events:channel', payload);
  }

  /** Puts the sockets of these users into the channel's room and tells them a channel appeared. */
  private async announce(channel: ChannelRecord): Promise<void> {
    const ids = (await this.store().members(channel.id)).map((m) => m.user_id);
    for (const id of ids) this.realtime.emitToUser(id, 'events:channel', { data: { type: 'channel:created' } });
    this.realtime.joinUsersTo(channelRoom(channel.id), ids);
  }

  /** The rooms of the channels a user may read (join-channels). */
  async roomsOf(user: UserRecord): Promise<string[]> {
    if (!(await this.mayJoinRooms(user))) return [];
    return (await this.channelsOf(user)).map((c) => channelRoom(c.id));
  }

  /** The socket's `typing` (relayed to the room) and `last_read_at` (stored) events; only from sockets in the room. */
  async clientEvent(user: UserRecord, channelId: string, messageId: string | null, data: Json): Promise<void> {
    if (data.type === 'typing') {
      this.realtime.emitToRoom(channelRoom(channelId), 'events:channel', { channel_id: channelId, message_id: messageId, data, user: authorOf(user) });
    } else if (data.type === 'last_read_at') {
      await this.store().markRead(channelId, user.id, this.stamp());
    }
  }

  // ---- channels --------------------------------------------------------------

  private async channelsOf(user: UserRecord): Promise<ChannelRecord[]> {
    const subject = { ...(await this.access.subjectOf(user)), bypass: false };
    return this.store().ofUser(user.id, this.access.accessFilter(subject, RESOURCE, 'read', { id: 'channel.id', owner: 'channel.user_id' }));
  }

  /** `GET /`: the user's channels with their latest message time, unread counts, and the people of direct messages. */
  async list(user: UserRecord) {
    await this.requireEnabled(user);
    const channels = await this.channelsOf(user);
    const ids = channels.map((c) => c.id);
    const [views, last, unread] = await Promise.all([this.views(channels), this.store().lastMessageAt(ids), this.store().unreadCounts(user.id, ids)]);
    return Promise.all(
      views.map(async (view) => {
        const userIds = view.type === 'dm' ? (await this.store().members(view.id)).map((m) => m.user_id) : null;
        return { ...view, user_ids: userIds, users: userIds ? await this.people(userIds) : null, last_message_at: last.get(view.id) ?? null, unread_count: unread.get(view.id) ?? 0 };
      }),
    );
  }

  /** `GET /list`: every channel for admins, the user's otherwise. */
  async listAll(user: UserRecord) {
    await this.requireEnabled(user);
    return this.views(isAdmin(user) ? await this.store().all() : await this.channelsOf(user));
  }

  /** `GET /users/{user_id}`: the direct-message channel with that user, opened when there is none. */
  async directWith(user: UserRecord, otherId: string) {
    return this.create(user, { type: 'dm', name: '', user_ids: [otherId] });
  }

  /** `POST /create`: standard channels by admins only; group and direct-message channels by anyone with the feature. */
  async create(user: UserRecord, form: CreateChannelForm) {
    await this.requireEnabled(user);
    const type = form.type || null;
    if (type !== 'group' && type !== 'dm' && !isAdmin(user)) throw unauthorized(ERROR.UNAUTHORIZED);
    const grants = (await this.access.grantsOfForm(user, { access_grants: form.access_grants }, RESOURCE, SHARING)) ?? [];
    const invited = [...new Set(form.user_ids ?? [])];
    const known = new Set((await this.users.byIds(invited)).map((u) => u.id));
    if (invited.some((id) => !known.has(id))) throw badRequest(ERROR.DEFAULT());
    for (const groupId of form.group_ids ?? []) {
      if (!(await this.groups.byId(groupId))) throw badRequest(ERROR.DEFAULT());
    }
    if (type === 'dm') {
      const existing = await this.store().directChannelOf([user.id, ...invited]);
      if (existing) {
        await this.store().setActive(existing.id, user.id, true, this.stamp());
        await this.announce(existing);
        await this.core.events.publish({ event: 'channel.member_active_updated', actor: user, subjectId: existing.id, subjectType: 'channel', data: { is_active: true } });
        return this.view(existing);
      }
    }
    const now = this.stamp();
    const channel: ChannelRecord = {
      id: randomUUID(),
      user_id: user.id,
      type,
      name: (form.name ?? '').toLowerCase(),
      description: form.description ?? null,
      is_private: form.is_private ?? null,
      data: form.data ?? null,
      meta: form.meta ?? null,
      created_at: now,
      updated_at: now,
      updated_by: null,
    };
    const view = await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).insert(channel);
      if (type === 'group' || type === 'dm') await this.store(trx).addMembers(channel.id, await this.peopleOf(user.id, invited, form.group_ids ?? [], trx), user.id, now);
      await this.access.replaceGrants(RESOURCE, channel.id, grants, trx);
      await this.core.events.publish({ event: 'channel.created', actor: user, subjectId: channel.id, subjectType: 'channel', data: { type: channel.type, name: channel.name } }, trx);
      return this.view(channel, trx);
    });
    await this.announce(channel);
    return view;
  }

  /** The inviting user, the named users and the members of the named groups. */
  private async peopleOf(inviter: string, userIds: string[], groupIds: string[], db?: Db): Promise<string[]> {
    const ids = new Set([inviter, ...userIds]);
    for (const groupId of groupIds) for (const id of await this.groups.memberIds(groupId, db)) ids.add(id);
    return [...ids];
  }

  /** `GET /{id}`: the channel with the caller's manager flag, write access, people count and read state. */
  async get(user: UserRecord, id: string) {
    const channel = await this.readable(user, id);
    const store = this.store();
    const [view, member, unread, manager] = await Promise.all([this.view(channel), store.member(channel.id, user.id), store.unreadCounts(user.id, [channel.id]), this.isManager(channel, user.id)]);
    const common = { ...view, is_manager: manager, last_read_at: member?.last_read_at ?? null, unread_count: unread.get(channel.id) ?? 0 };
    if (isGroupOrDm(channel)) {
      const userIds = (await store.members(channel.id)).map((m) => m.user_id);
      return { ...common, user_ids: userIds, users: await this.people(userIds), write_access: true, user_count: userIds.length };
    }
    const readers = await this.access.userIdsWithAccess(RESOURCE, channel.id, 'read');
    const write = isAdmin(user) || (await this.hasGrant(user, channel, 'write'));
    return { ...common, user_ids: null, users: null, write_access: write, user_count: readers.length };
  }

  /** `GET /{id}/members`: the people of the channel, 30 a page (a direct message's all at once). */
  async members(user: UserRecord, id: string, query: MembersQuery) {
    const channel = await this.readable(user, id);
    const store = this.store();
    let ids: string[] | null;
    let page = { skip: (Math.max(1, query.page ?? 1) - 1) * MEMBERS_PAGE, limit: MEMBERS_PAGE };
    if (isGroupOrDm(channel)) {
      ids = (await store.members(channel.id)).map((m) => m.user_id);
      if (channel.type === 'dm') page = { skip: 0, limit: ids.length || 1 };
    } else {
      const grants = await this.access.grantsOf(RESOURCE, channel.id);
      const open = grants.some((g) => g.principal_type === 'user' && g.principal_id === '*' && g.permission === 'read');
      ids = open ? null : [...new Set([channel.user_id, ...(await this.access.userIdsWithAccess(RESOURCE, channel.id, 'read'))])];
    }
    const found = await store.people({ ids, query: channel.type === 'dm' ? undefined : query.query, orderBy: query.order_by, direction: query.direction, ...page });
    const users = new Map((await this.users.byIds(found.ids)).map((u) => [u.id, u]));
    return {
      users: found.ids.flatMap((uid) => {
        const u = users.get(uid);
        return u
          ? [
              {
                id: u.id,
                email: u.email,
                name: u.name,
                role: u.role,
                profile_image_url: u.profile_image_url,
                presence_state: u.presence_state,
                status_emoji: u.status_emoji,
                status_message: u.status_message,
                status_expires_at: u.status_expires_at,
                is_active: this.users.isActive(u),
              },
            ]
          : [];
      }),
      total: found.total,
    };
  }

  /** `POST /{id}/members/active`: the caller hides (or shows again) a channel they are a member of. */
  async setActive(user: UserRecord, id: string, active: boolean): Promise<boolean> {
    await this.requireEnabled(user);
    const channel = await this.channel(id);
    if (!(await this.isMember(channel.id, user.id))) throw notFound(ERROR.NOT_FOUND);
    await this.store().setActive(channel.id, user.id, active, this.stamp());
    await this.core.events.publish({ event: 'channel.member_active_updated', actor: user, subjectId: channel.id, subjectType: 'channel', data: { is_active: active } });
    return true;
  }

  /** `POST /{id}/update/members/add`: users and the members of groups; answers the new memberships. */
  async addMembers(user: UserRecord, id: string, userIds: string[], groupIds: string[]) {
    const channel = await this.owned(user, id);
    const known = new Set((await this.users.byIds(userIds)).map((u) => u.id));
    if (userIds.some((uid) => !known.has(uid))) throw badRequest(ERROR.DEFAULT());
    for (const groupId of groupIds) if (!(await this.groups.byId(groupId))) throw badRequest(ERROR.DEFAULT());
    const added = await this.core.db.transaction().execute(async (trx) => {
      const rows = await this.store(trx).addMembers(channel.id, await this.peopleOf(user.id, userIds, groupIds, trx), user.id, this.stamp());
      await this.core.events.publish({ event: 'channel.member_added', actor: user, subjectId: channel.id, subjectType: 'channel', data: { user_ids: userIds, group_ids: groupIds } }, trx);
      return rows;
    });
    this.realtime.joinUsersTo(
      channelRoom(channel.id),
      added.map((m) => m.user_id),
    );
    return added.map(memberModel);
  }

  /** `POST /{id}/update/members/remove`: answers how many memberships went; their sockets leave the room. */
  async removeMembers(user: UserRecord, id: string, userIds: string[]): Promise<number> {
    const channel = await this.owned(user, id);
    const removed = await this.core.db.transaction().execute(async (trx) => {
      const count = await this.store(trx).removeMembers(channel.id, userIds);
      await this.core.events.publish({ event: 'channel.member_removed', actor: user, subjectId: channel.id, subjectType: 'channel', data: { user_ids: userIds } }, trx);
      return count;
    });
    this.realtime.removeUsersFrom(channelRoom(channel.id), userIds);
    return removed;
  }

  /** `POST /{id}/update`: name, description, privacy, data, meta; grants when the form names them. */
  async update(user: UserRecord, id: string, form: ChannelForm) {
    const channel = await this.owned(user, id);
    const grants = await this.access.grantsOfForm(user, { access_grants: form.access_grants }, RESOURCE, SHARING);
    const fields = { name: form.name ?? '', description: form.description ?? null, is_private: form.is_private ?? null, data: form.data ?? null, meta: form.meta ?? null, updated_by: user.id };
    return this.core.db.transaction().execute(async (trx) => {
      const now = this.stamp();
      if (!(await this.store(trx).update(channel.id, fields, now))) throw notFound(ERROR.NOT_FOUND);
      if (grants) await this.access.replaceGrants(RESOURCE, channel.id, grants, trx);
      const updated = { ...channel, ...fields, updated_at: now };
      await this.core.events.publish({ event: 'channel.updated', actor: user, subjectId: id, subjectType: 'channel', data: { name: updated.name, type: updated.type } }, trx);
      return this.view(updated, trx);
    });
  }

  /** `DELETE /{id}/delete`: the channel with everything in it; its room is emptied. */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    const channel = await this.owned(user, id);
    await this.core.db.transaction().execute(async (trx) => {
      await this.access.deleteGrantsOf(RESOURCE, id, trx);
      await this.store(trx).delete(id);
      await this.core.events.publish({ event: 'channel.deleted', actor: user, subjectId: id, subjectType: 'channel', data: { name: channel.name, type: channel.type } }, trx);
    });
    this.realtime.emptyRoom(channelRoom(id));
    return true;
  }

  // ---- messages --------------------------------------------------------------

  /** `GET /{id}/messages`: top-level messages, newest first; reading a standard channel makes the reader a member (read state). */
  async messages(user: UserRecord, id: string, skip: number, limit: number) {
    const channel = await this.readable(user, id);
    // A write only the first time: later reads find the membership.
    if (!isGroupOrDm(channel) && !(await this.store().member(channel.id, user.id))) await this.store().addMembers(channel.id, [user.id], null, this.stamp());
    // The same page for every reader: who may read it was checked above.
    return this.pages.get(`${channel.id}\n${skip}\n${limit}`, async () =>
      deepFreeze((await this.messageViews(await this.store().messages(channel.id, null, skip, limit))).map((v) => this.slim(v))),
    );
  }

  /** `GET /{id}/messages/pinned`: 20 a page, latest pin first. */
  async pinned(user: UserRecord, id: string, page: number) {
    const channel = await this.readable(user, id);
    const views = await this.messageViews(await this.store().pinned(channel.id, (Math.max(1, page) - 1) * PINNED_PAGE, PINNED_PAGE), false);
    return views.map((v) => this.slim(v));
  }

  /** `GET /{id}/messages/{message_id}`. */
  async message(user: UserRecord, id: string, messageId: string): Promise<MessageView> {
    const channel = await this.readable(user, id);
    return this.messageView(await this.messageOf(channel, messageId));
  }

  /** `GET /{id}/messages/{message_id}/data`. */
  async messageData(user: UserRecord, id: string, messageId: string): Promise<Json | null> {
    const channel = await this.readable(user, id);
    return (await this.messageOf(channel, messageId)).data;
  }

  /** `GET /{id}/messages/{message_id}/thread`: the replies, newest first, and the thread's first message last. */
  async thread(user: UserRecord, id: string, messageId: string, skip: number, limit: number) {
    const channel = await this.readable(user, id);
    const parent = await this.store().message(messageId);
    if (!parent || parent.channel_id !== channel.id) return [];
    const replies = await this.store().messages(channel.id, messageId, skip, limit);
    const views = await this.messageViews(replies.length < limit ? [...replies, parent] : replies, false);
    return views.map((v) => this.slim(v));
  }

  /** `POST /{id}/messages/post`. */
  async post(user: UserRecord, id: string, form: MessageForm): Promise<MessageView> {
    await this.requireEnabled(user);
    const { message, channel } = await this.postMessage(user, id, { ...form, meta: userMeta(form.meta) });
    for (const listener of this.postListeners) listener({ user, channel, message });
    void this.noticeAway(user, channel, message);
    return message;
  }

  /**
   * The reference's notices of a new message to the webhooks of the channel's members who have
   * no socket in its room (user-webhooks.ts): the channel's name and link, then the message.
   */
  private async noticeAway(author: UserRecord, channel: ChannelRecord, message: MessageView): Promise<void> {
    const { userWebhooks } = this.core;
    if (!userWebhooks.enabled()) return;
    try {
      const present = await this.realtime.usersIn(channelRoom(channel.id));
      const away = (await this.store().members(channel.id)).map((m) => m.user_id).filter((id) => id !== author.id && !present.has(id));
      const url = `${this.core.settings.get<string>('webui.url')}/channels/${channel.id}`;
      const notice = { message: `#${channel.name} - ${url}\n\n${message.content}`, data: { action: 'channel', message: message.content, title: channel.name, url } };
      await Promise.all((await this.users.byIds(away)).map((member) => userWebhooks.notify(member, notice)));
    } catch (err) {
      this.core.log.warn({ err, channel: channel.id }, 'the notices of a channel message could not be sent');
    }
  }

  /** Called after each message a user posts (the model replies). */
  onPost(listener: (posted: PostedMessage) => void): void {
    this.postListeners.push(listener);
  }

  /**
   * Stores a message of the user (or of a model answering for them), wakes hidden
   * memberships of a group or DM, and tells the room; a thread reply also updates its parent.
   */
  async postMessage(user: UserRecord, id: string, form: MessageForm): Promise<{ message: MessageView; channel: ChannelRecord }> {
    const channel = await this.readable(user, id, 'write');
    for (const refId of [form.parent_id, form.reply_to_id]) {
      if (!refId) continue;
      const ref = await this.store().message(refId);
      if (!ref || ref.channel_id !== channel.id) throw badRequest(ERROR.DEFAULT());
    }
    // Only files the poster may read become readable by the channel's readers.
    const fileIds: string[] = [];
    for (const fileId of fileIdsOf(form.data ?? null)) if (await this.files.mayAccess(user, fileId, 'read')) fileIds.push(fileId);
    const now = this.stamp();
    const record: MessageRecord = {
      id: randomUUID(),
      user_id: user.id,
      channel_id: channel.id,
      reply_to_id: form.reply_to_id ?? null,
      parent_id: form.parent_id ?? null,
      is_pinned: false,
      pinned_by: null,
      pinned_at: null,
      content: form.content,
      data: form.data ?? null,
      meta: form.meta ?? null,
      created_at: now,
      updated_at: now,
    };
    await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      await store.addMembers(channel.id, [user.id], null, now);
      await store.insertMessage(record);
      if (isGroupOrDm(channel)) await store.reactivateAll(channel.id, now);
      await store.linkFiles(channel.id, record.id, user.id, fileIds, now);
      await this.core.events.publish(
        { event: 'message.created', actor: user, subjectId: record.id, subjectType: 'message', data: { channel_id: channel.id, content_preview: record.content.slice(0, 300) } },
        trx,
      );
    });
    const message = await this.messageView(record);
    await this.emit(channel, message.id, 'message', { temp_id: form.temp_id ?? null, ...message }, authorOf(user));
    if (record.parent_id) await this.emitParent(channel, record.parent_id, authorOf(user));
    return { message, channel };
  }

  private async emitParent(channel: ChannelRecord, parentId: string, actor: Author): Promise<void> {
    const parent = await this.store().message(parentId);
    if (parent) await this.emit(channel, parent.id, 'message:reply', await this.messageView(parent), actor);
  }

  /** `POST /{id}/messages/{message_id}/update`: the author's own (or, in standard channels, a writer's; an admin's anywhere). */
  async updateMessage(user: UserRecord, id: string, messageId: string, form: MessageForm): Promise<MessageRecord> {
    const { channel, message } = await this.editable(user, id, messageId);
    const updated = await this.core.db.transaction().execute(async (trx) => {
      const fields = { content: form.content, data: { ...message.data, ...form.data }, meta: { ...message.meta, ...userMeta(form.meta) } };
      const now = this.stamp();
      if (!(await this.store(trx).updateMessage(message.id, fields, now))) throw notFound(ERROR.NOT_FOUND);
      await this.core.events.publish(
        { event: 'message.updated', actor: user, subjectId: message.id, subjectType: 'message', data: { channel_id: channel.id, content_preview: form.content.slice(0, 300) } },
        trx,
      );
      return { ...message, ...fields, updated_at: now };
    });
    await this.emit(channel, updated.id, 'message:update', await this.messageView(updated), authorOf(user));
    return updated;
  }

  /** Rewrites a model's answer as it streams (replies.ts); `done` marks it finished. Nothing when the message is gone. */
  async streamInto(channel: ChannelRecord, messageId: string, content: string, done: boolean): Promise<boolean> {
    const message = await this.store().message(messageId);
    if (!message || message.channel_id !== channel.id) return false;
    const meta = done ? { ...message.meta, done: true } : message.meta;
    await this.store().updateMessage(messageId, { content, data: message.data, meta }, this.stamp());
    const view = await this.messageView({ ...message, content, meta });
    this.realtime.emitToRoom(channelRoom(channel.id), 'events:channel', { channel_id: channel.id, message_id: messageId, data: { type: 'message:update', data: view } });
    return true;
  }

  /** Who may change a message: in a group or DM its author (or an admin) among the members; elsewhere its author, a writer or an admin. */
  private async editable(user: UserRecord, id: string, messageId: string): Promise<{ channel: ChannelRecord; message: MessageRecord }> {
    await this.requireEnabled(user);
    const channel = await this.channel(id);
    const message = await this.messageOf(channel, messageId);
    if (isGroupOrDm(channel)) {
      if (!(await this.isMember(channel.id, user.id))) throw forbidden(ERROR.DEFAULT());
      if (!isAdmin(user) && message.user_id !== user.id) throw forbidden(ERROR.DEFAULT());
    } else if (!isAdmin(user) && message.user_id !== user.id && !(await this.hasGrant(user, channel, 'write'))) {
      throw forbidden(ERROR.DEFAULT());
    }
    return { channel, message };
  }

  /** `DELETE /{id}/messages/{message_id}/delete`: the message, its thread and reactions. */
  async deleteMessage(user: UserRecord, id: string, messageId: string): Promise<boolean> {
    const { channel, message } = await this.editable(user, id, messageId);
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).deleteMessage(message.id);
      await this.core.events.publish({ event: 'message.deleted', actor: user, subjectId: message.id, subjectType: 'message', data: { channel_id: channel.id } }, trx);
    });
    await this.emit(channel, message.id, 'message:delete', { ...message, user: authorOf(user) }, authorOf(user));
    if (message.parent_id) await this.emitParent(channel, message.parent_id, authorOf(user));
    return true;
  }

  /** `POST /{id}/messages/{message_id}/pin`: pins need write access in standard channels. */
  async pin(user: UserRecord, id: string, messageId: string, pinned: boolean) {
    const channel = await this.readable(user, id, 'write');
    const message = await this.messageOf(channel, messageId);
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).setPinned(message.id, pinned, user.id, this.stamp());
      await this.core.events.publish(
        { event: pinned ? 'message.pinned' : 'message.unpinned', actor: user, subjectId: message.id, subjectType: 'message', data: { channel_id: channel.id } },
        trx,
      );
    });
    const view = this.slim(await this.messageView((await this.store().message(message.id))!));
    await this.emit(channel, message.id, 'message:update', view, authorOf(user));
    return view;
  }

  /** `POST /{id}/messages/{message_id}/reactions/add` and `/remove`. */
  async react(user: UserRecord, id: string, messageId: string, name: string, add: boolean): Promise<boolean> {
    const channel = await this.readable(user, id, 'write');
    const message = await this.messageOf(channel, messageId);
    await this.core.db.transaction().execute(async (trx) => {
      if (add) await this.store(trx).addReaction(message.id, user.id, name, this.stamp());
      else await this.store(trx).removeReaction(message.id, user.id, name);
      await this.core.events.publish(
        { event: add ? 'message.reaction_added' : 'message.reaction_removed', actor: user, subjectId: message.id, subjectType: 'message', data: { channel_id: channel.id, reaction: name } },
        trx,
      );
    });
    const view = await this.messageView(message);
    await this.emit(channel, message.id, add ? 'message:reaction:add' : 'message:reaction:remove', { ...view, name }, authorOf(user));
    return true;
  }

  // ---- webhooks --------------------------------------------------------------

  private checkImage(form: WebhookForm): void {
    if (form.profile_image_url) this.users.assertProfileImageUrl(form.profile_image_url);
  }

  /** `GET /{id}/webhooks`: managers and admins. */
  async webhooks(user: UserRecord, id: string): Promise<WebhookRecord[]> {
    const channel = await this.managed(user, id);
    return this.store().webhooks(channel.id);
  }

  /** `POST /{id}/webhooks/create`: a new webhook with its secret token. */
  async createWebhook(user: UserRecord, id: string, form: WebhookForm): Promise<WebhookRecord> {
    const channel = await this.managed(user, id);
    this.checkImage(form);
    const now = this.stamp();
    const webhook: WebhookRecord = {
      id: randomUUID(),
      channel_id: channel.id,
      user_id: user.id,
      name: form.name,
      profile_image_url: form.profile_image_url ?? null,
      token: randomBytes(32).toString('base64url'),
      last_used_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).insertWebhook(webhook);
      await this.core.events.publish({ event: 'channel.webhook.created', actor: user, subjectId: webhook.id, subjectType: 'channel.webhook', data: { channel_id: channel.id, name: webhook.name } }, trx);
    });
    return webhook;
  }

  private async webhookOf(channel: ChannelRecord, webhookId: string): Promise<WebhookRecord> {
    const webhook = await this.store().webhook(webhookId);
    if (!webhook || webhook.channel_id !== channel.id) throw notFound(ERROR.NOT_FOUND);
    return webhook;
  }

  /** `POST /{id}/webhooks/{webhook_id}/update`: name and image (the token stays). */
  async updateWebhook(user: UserRecord, id: string, webhookId: string, form: WebhookForm): Promise<WebhookRecord> {
    const channel = await this.managed(user, id);
    const webhook = await this.webhookOf(channel, webhookId);
    this.checkImage(form);
    const fields = { name: form.name, profile_image_url: form.profile_image_url ?? null };
    const now = this.stamp();
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).updateWebhook(webhook.id, fields, now);
      await this.core.events.publish({ event: 'channel.webhook.updated', actor: user, subjectId: webhook.id, subjectType: 'channel.webhook', data: { channel_id: channel.id, name: form.name } }, trx);
    });
    return { ...webhook, ...fields, updated_at: now };
  }

  /** `DELETE /{id}/webhooks/{webhook_id}/delete`: its token stops working at once. */
  async deleteWebhook(user: UserRecord, id: string, webhookId: string): Promise<boolean> {
    const channel = await this.managed(user, id);
    const webhook = await this.webhookOf(channel, webhookId);
    return this.core.db.transaction().execute(async (trx) => {
      const deleted = await this.store(trx).deleteWebhook(webhook.id);
      if (deleted) await this.core.events.publish({ event: 'channel.webhook.deleted', actor: user, subjectId: webhook.id, subjectType: 'channel.webhook', data: { channel_id: channel.id } }, trx);
      return deleted;
    });
  }

  /** `GET /webhooks/{webhook_id}/profile/image`: the webhook's image, or the default one. */
  async webhookImage(webhookId: string): Promise<ProfileImage> {
    const webhook = await this.store().webhook(webhookId);
    return this.users.resolveImage(webhook?.profile_image_url ?? null);
  }

  /** `POST /webhooks/{webhook_id}/{token}`: an external system posts without a session; a wrong or revoked token is a 401. */
  async postByWebhook(webhookId: string, token: string, content: string): Promise<{ success: true; message_id: string }> {
    await this.requireEnabled();
    const webhook = await this.store().webhook(webhookId);
    if (!webhook || !tokensMatch(webhook.token, token)) throw unauthorized(ERROR.INVALID_URL);
    const channel = await this.channel(webhook.channel_id);
    const now = this.stamp();
    const record: MessageRecord = {
      id: randomUUID(),
      user_id: webhook.user_id,
      channel_id: channel.id,
      reply_to_id: null,
      parent_id: null,
      is_pinned: false,
      pinned_by: null,
      pinned_at: null,
      content,
      data: null,
      meta: { webhook: { id: webhook.id } },
      created_at: now,
      updated_at: now,
    };
    const actor = { id: webhook.id, name: webhook.name, role: 'webhook' };
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).insertMessage(record);
      await this.store(trx).touchWebhook(webhook.id, now);
      await this.core.events.publish(
        {
          event: 'message.created',
          actor: { ...actor, type: 'webhook' },
          subjectId: record.id,
          subjectType: 'message',
          source: 'channel_webhook',
          data: { channel_id: channel.id, content_preview: content.slice(0, 300) },
        },
        trx,
      );
    });
    await this.emit(channel, record.id, 'message', { ...(await this.messageView(record)), user: actor }, actor);
    return { success: true, message_id: record.id };
  }

  // ---- files -----------------------------------------------------------------

  /** Whether the user may read a file because it was posted in a channel they read (the files area asks). */
  async grantsFileRead(user: UserRecord, fileId: string): Promise<boolean> {
    for (const channelId of await this.store().channelsOfFile(fileId)) {
      try {
        await this.readable(user, channelId);
        return true;
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
      }
    }
    return false;
  }

  /** The channel for the model replies (null when gone). */
  async find(id: string): Promise<ChannelRecord | null> {
    return this.store().byId(id);
  }

  /** A thread's messages, oldest first, with their authors' names (the model's context). */
  async threadHistory(channelId: string, parentId: string, limit: number): Promise<{ message: MessageRecord; author: Author | null }[]> {
    const parent = await this.store().message(parentId);
    if (!parent || parent.channel_id !== channelId) return [];
    const replies = await this.store().messages(channelId, parentId, 0, limit);
    const messages = [parent, ...replies.reverse()];
    const authors = await this.authors(messages);
    return messages.map((message) => ({ message, author: authors.get(message.id) ?? null }));
  }

  /** The latest top-level messages of a channel, oldest first (a model answering in the channel itself). */
  async recentHistory(channelId: string, limit: number): Promise<{ message: MessageRecord; author: Author | null }[]> {
    const messages = (await this.store().messages(channelId, null, 0, limit)).reverse();
    const authors = await this.authors(messages);
    return messages.map((message) => ({ message, author: authors.get(message.id) ?? null }));
  }

  async messageRecord(id: string): Promise<MessageRecord | null> {
    return this.store().message(id);
  }
}

/** A user's `meta` without `webhook`, which would make the message show as a webhook's. */
function userMeta(meta: Json | null | undefined): Json | null | undefined {
  if (!meta || !('webhook' in meta)) return meta;
  const { webhook: _webhook, ...rest } = meta;
  return rest;
}

/** ChannelMemberModel: the stored membership with the reference's fields Parley does not keep. */
function memberModel(member: MemberRecord) {
  return { ...member, is_channel_muted: false, is_channel_pinned: false, data: null, meta: null, left_at: null };
}

/** Compares two tokens in constant time for their length. */
function tokensMatch(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
