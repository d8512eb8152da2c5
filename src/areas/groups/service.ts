import { randomUUID } from 'node:crypto';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import { NOTICED_CACHE, InvalidatedCache, deepFreeze } from '../../core/cache.js';
import type { Core } from '../../core/context.js';
import { afterCommit, type Db } from '../../core/db/database.js';
import type { UserDirectory } from '../../core/directory.js';
import { ERROR, badRequest, notFound, unauthorized } from '../../core/http/errors.js';
import { type GroupPatch, type GroupRecord, GroupStore, type GroupWithCount } from './store.js';

export type { GroupRecord, GroupWithCount } from './store.js';

export interface GroupForm {
  name: string;
  description: string;
  permissions?: Record<string, unknown> | null;
  data?: Record<string, unknown> | null;
}

export type GroupInfo = Pick<GroupWithCount, 'id' | 'user_id' | 'name' | 'description' | 'member_count' | 'created_at' | 'updated_at'>;

/** A member as `POST /groups/id/{id}/users` lists it (UserInfoResponse built from the bare user). */
export interface GroupMemberInfo {
  id: string;
  name: string;
  email: string;
  role: string;
  bio: string | null;
  groups: unknown[];
  is_active: boolean;
  status_emoji: string | null;
  status_message: string | null;
  status_expires_at: number | null;
}

/**
 * Who may pick a group in a share dialog, from the group's `data.config.share`:
 * everyone (true, or not set), its members only ('members'), or nobody (false).
 */
type ShareSetting = 'anyone' | 'members' | 'nobody' | 'other';

function shareSettingOf(group: GroupRecord): ShareSetting {
  const config = group.data?.config as Record<string, unknown> | undefined;
  const share = config && typeof config === 'object' ? config.share : undefined;
  if (!group.data || share === undefined || share === null) return 'anyone';
  // The reference compares the JSON value as lower-cased text.
  const text = (typeof share === 'string' ? share : JSON.stringify(share)).toLowerCase();
  if (text === 'true' || text === '1') return 'anyone';
  if (text === 'members') return 'members';
  if (text === 'false') return 'nobody';
  return 'other';
}

/** DEFAULT_GROUP_SHARE_PERMISSION: 'members' (default), otherwise true only for "true". */
function defaultShareOf(raw: Record<string, string | undefined>): boolean | 'members' {
  const value = (raw.DEFAULT_GROUP_SHARE_PERMISSION ?? 'members').trim().toLowerCase();
  return value === 'members' ? 'members' : value === 'true';
}

/** User groups: records, memberships and the share rule of the group picker. */
export class GroupsService {
  /** Each user's groups, read on every request (permissions, access checks); dropped on any membership change. */
  private readonly memberships = new InvalidatedCache<GroupRecord[]>(NOTICED_CACHE);

  constructor(
    readonly core: Core,
    private readonly users: UserDirectory,
  ) {
    core.changes.on('identity', () => this.memberships.invalidate());
  }

  private store(db: Db = this.core.db): GroupStore {
    return new GroupStore(db);
  }

  /** Tells every instance that memberships or group permissions changed, once `db`'s transaction commits. */
  private changed(db: Db): void {
    afterCommit(db, () => this.core.changes.announce('identity'));
  }

  /** Ids of the groups the user belongs to. */
  async groupIdsOf(userId: string, db?: Db): Promise<string[]> {
    if (db) return this.store(db).idsOfMember(userId);
    return (await this.groupsOf(userId)).map((group) => group.id);
  }

  /**
   * The groups the user belongs to, newest change first. Outside a transaction
   * they come from memory (frozen: shared by every request).
   */
  async groupsOf(userId: string, db?: Db): Promise<GroupRecord[]> {
    if (db) return this.store(db).ofMember(userId);
    return this.memberships.get(userId, async () => deepFreeze(await this.store().ofMember(userId)));
  }

  /** Group ids of many users at once (user lists). */
  async groupIdsOfUsers(userIds: string[], db?: Db): Promise<Map<string, string[]>> {
    return this.store(db).idsOfMembers(userIds);
  }

  /** Which of `ids` name existing groups. */
  /** The ids of a group's members. */
  async memberIds(groupId: string, db?: Db): Promise<string[]> {
    return this.store(db).memberIds(groupId);
  }

  async existingIds(ids: string[], db?: Db): Promise<string[]> {
    return this.store(db).existingIds([...new Set(ids)]);
  }

  async byId(id: string, db?: Db): Promise<GroupRecord | null> {
    return this.store(db).byId(id);
  }

  /**
   * The group, or the reference's answer for an unknown one (groups.py): 401
   * `NOT_FOUND` on reads, 400 `[ERROR: <what failed>]` on writes.
   */
  private async require(id: string, db?: Db, failed?: string): Promise<GroupRecord> {
    const group = await this.store(db).byId(id);
    if (!group) throw failed ? badRequest(ERROR.DEFAULT(failed)) : unauthorized(ERROR.NOT_FOUND);
    return group;
  }

  private async withCount(group: GroupRecord, db?: Db): Promise<GroupWithCount> {
    return { ...group, member_count: await this.store(db).memberCount(group.id) };
  }

  /**
   * The group list. Admins see every group; other users see their own groups,
   * or, with `share` given, the groups the share dialog offers them (groups.py get_groups).
   */
  async list(user: UserRecord, share?: boolean): Promise<GroupWithCount[]> {
    if (isAdmin(user)) return this.store().listWithCounts();
    if (share === undefined) return this.store().listWithCounts(user.id);
    const groups = await this.store().listWithCounts();
    const memberOf = new Set(await this.groupIdsOf(user.id));
    return groups.filter((group) => {
      const setting = shareSettingOf(group);
      if (!share) return setting === 'nobody';
      return setting === 'anyone' || (setting === 'members' && memberOf.has(group.id));
    });
  }

  /** A new group's record; its share setting defaults to DEFAULT_GROUP_SHARE_PERMISSION. */
  private newGroup(ownerId: string, form: GroupForm): GroupRecord {
    const now = this.core.clock.now();
    const data = { ...(form.data ?? {}) };
    const config = { ...((data.config as Record<string, unknown> | undefined) ?? {}) };
    if (!('share' in config)) config.share = defaultShareOf(this.core.env.raw);
    data.config = config;
    return {
      id: randomUUID(),
      user_id: ownerId,
      name: form.name,
      description: form.description,
      data,
      meta: null,
      permissions: form.permissions ?? null,
      created_at: now,
      updated_at: now,
    };
  }

  async create(actor: UserRecord, form: GroupForm): Promise<GroupWithCount> {
    const group = this.newGroup(actor.id, form);
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).insert(group);
      await this.core.events.publish({ event: 'group.created', actor, subjectId: group.id, subjectType: 'group', data: { name: group.name } }, trx);
    });
    return { ...group, member_count: 0 };
  }

  async get(id: string): Promise<GroupWithCount> {
    return this.withCount(await this.require(id));
  }

  async info(id: string): Promise<GroupInfo> {
    const { id: groupId, user_id, name, description, member_count, created_at, updated_at } = await this.get(id);
    return { id: groupId, user_id, name, description, member_count, created_at, updated_at };
  }

  async export(id: string): Promise<GroupWithCount & { user_ids: string[] }> {
    const group = await this.get(id);
    return { ...group, user_ids: await this.store().memberIds(id) };
  }

  /** An unknown group has no members (the reference answers `[]`). */
  async members(id: string): Promise<GroupMemberInfo[]> {
    const users = await this.users.byIds(await this.store().memberIds(id));
    return users.map((u) => ({
      id: u.id,
      name: u.name,
      email: u.email,
      role: u.role,
      bio: u.bio,
      groups: [],
      is_active: false,
      status_emoji: u.status_emoji,
      status_message: u.status_message,
      status_expires_at: u.status_expires_at,
    }));
  }

  /** Replaces name and description; permissions and data only when given (exclude_none). */
  async update(actor: UserRecord, id: string, form: GroupForm): Promise<GroupWithCount> {
    await this.require(id, undefined, 'Error updating group');
    const patch: GroupPatch & { updated_at: number } = { name: form.name, description: form.description, updated_at: this.core.clock.now() };
    if (form.permissions !== undefined && form.permissions !== null) patch.permissions = form.permissions;
    if (form.data !== undefined && form.data !== null) patch.data = form.data;
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).update(id, patch);
      this.changed(trx);
      await this.core.events.publish({ event: 'group.updated', actor, subjectId: id, subjectType: 'group', data: { name: form.name } }, trx);
    });
    return this.get(id);
  }

  /**
   * Adds the existing users among `userIds` (unknown ids are skipped, as the
   * reference does). `actor` null: a system change (default group on sign-up), no event.
   */
  async addMembers(actor: UserRecord | null, id: string, userIds: string[] | null | undefined, db?: Db): Promise<GroupWithCount> {
    const run = async (trx: Db) => {
      await this.require(id, trx, 'Error adding users to group');
      const valid = userIds?.length ? (await this.users.byIds([...new Set(userIds)], trx)).map((u) => u.id) : [];
      const now = this.core.clock.now();
      await this.store(trx).addMembers(id, valid, now);
      this.changed(trx);
      await this.store(trx).touch([id], now);
      if (actor) {
        // As the reference: the ids actually added, or the form's value when it named none.
        const added = userIds?.length ? valid : (userIds ?? null);
        await this.core.events.publish({ event: 'group.member_added', actor, subjectId: id, subjectType: 'group', data: { user_ids: added } }, trx);
      }
      return this.withCount((await this.store(trx).byId(id)) as GroupRecord, trx);
    };
    return db ? run(db) : this.core.db.transaction().execute(run);
  }

  async removeMembers(actor: UserRecord, id: string, userIds: string[] | null | undefined): Promise<GroupWithCount> {
    return this.core.db.transaction().execute(async (trx) => {
      await this.require(id, trx, 'Error removing users from group');
      if (userIds?.length) {
        await this.store(trx).removeMembers(id, userIds);
        this.changed(trx);
        await this.store(trx).touch([id], this.core.clock.now());
      }
      await this.core.events.publish(
        { event: 'group.member_removed', actor, subjectId: id, subjectType: 'group', data: { user_ids: userIds ?? null } },
        trx,
      );
      return this.withCount((await this.store(trx).byId(id)) as GroupRecord, trx);
    });
  }

  // ---- provisioning: an identity system (LDAP, SCIM) owns the groups; the caller publishes ----

  /** Groups named exactly `name` (names are not unique). */
  async byName(name: string, db?: Db): Promise<GroupRecord[]> {
    return this.store(db).byNames([name]);
  }

  /** A page of every group, oldest first, with the total. */
  async page(skip: number, limit: number): Promise<{ groups: GroupRecord[]; total: number }> {
    return this.store().page(skip, limit);
  }

  /** Creates a group owned by `ownerId`, without event (the caller reports it in its own words). */
  async createProvisioned(ownerId: string, name: string, db: Db): Promise<GroupRecord> {
    const group = this.newGroup(ownerId, { name, description: '' });
    await this.store(db).insert(group);
    return group;
  }

  async rename(id: string, name: string, db: Db): Promise<void> {
    await this.store(db).update(id, { name, updated_at: this.core.clock.now() });
    this.changed(db); // members' cached groups carry the name
  }

  /**
   * Adds and removes members (existing users only; unknown ids are skipped), returning the ids
   * that actually joined or left. `replace`: the group has exactly `userIds` afterwards.
   */
  async changeMembers(id: string, change: { add?: string[]; remove?: string[]; replace?: string[] }, db: Db): Promise<{ added: string[]; removed: string[] }> {
    const store = this.store(db);
    const before = new Set(await store.memberIds(id));
    const wanted = change.replace ?? [...before, ...(change.add ?? [])];
    const existing = new Set((await this.users.byIds([...new Set(wanted)], db)).map((u) => u.id));
    const leaving = new Set(change.remove ?? []);
    const after = new Set(wanted.filter((userId) => existing.has(userId) && !leaving.has(userId)));
    const added = [...after].filter((userId) => !before.has(userId)).sort();
    const removed = [...before].filter((userId) => !after.has(userId)).sort();
    const now = this.core.clock.now();
    await store.addMembers(id, added, now);
    await store.removeMembers(id, removed);
    if (added.length || removed.length) {
      await store.touch([id], now);
      this.changed(db);
    }
    return { added, removed };
  }

  async deleteProvisioned(id: string, db: Db): Promise<boolean> {
    const deleted = await this.store(db).delete(id);
    this.changed(db);
    return deleted;
  }

  /**
   * Makes a user a member of exactly the groups named by an identity provider (an OAuth claim, a
   * trusted header): memberships of other groups end unless `keep` says so (blocked groups), and
   * named groups that do not exist are created by `creatorId` when given, else skipped. A system
   * change: no events, as the reference publishes none.
   */
  async syncMembershipsByName(
    userId: string,
    names: string[],
    options: {
      creatorId?: string | null;
      newGroup?: (name: string) => Pick<GroupRecord, 'description' | 'data' | 'permissions'>;
      keep?: (name: string) => boolean;
      /** Publishes `group.created` for each group made (LDAP does; OAuth, as the reference, does not). */
      announce?: { actor: UserRecord; source: string };
    } = {},
  ): Promise<void> {
    const keep = options.keep ?? (() => false);
    const wanted = [...new Set(names)].filter((name) => !keep(name));
    await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      const now = this.core.clock.now();
      const targets = await store.byNames(wanted);
      if (options.creatorId) {
        for (const name of wanted.filter((n) => !targets.some((g) => g.name === n))) {
          const group: GroupRecord = options.newGroup
            ? { id: randomUUID(), user_id: options.creatorId, name, meta: null, created_at: now, updated_at: now, ...options.newGroup(name) }
            : this.newGroup(options.creatorId, { name, description: '' });
          await store.insert(group);
          targets.push(group);
          const announce = options.announce;
          if (announce) {
            await this.core.events.publish({ event: 'group.created', actor: announce.actor, subjectId: group.id, subjectType: 'group', source: announce.source, data: { name } }, trx);
          }
        }
      }
      const current = await store.ofMember(userId);
      const targetIds = new Set(targets.map((g) => g.id));
      const leaving = current.filter((g) => !targetIds.has(g.id) && !keep(g.name)).map((g) => g.id);
      const joining = [...targetIds].filter((id) => !current.some((g) => g.id === id));
      for (const id of leaving) await store.removeMembers(id, [userId]);
      for (const id of joining) await store.addMembers(id, [userId], now);
      await store.touch([...leaving, ...joining], now);
      if (leaving.length + joining.length > 0) this.changed(trx);
    });
  }

  /**
   * Deletes the group; memberships go by foreign-key cascade. An unknown group
   * is a 404 (the reference answers `true` and announces a deletion that did not happen).
   */
  async delete(actor: UserRecord, id: string): Promise<boolean> {
    await this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).delete(id))) throw notFound();
      this.changed(trx);
      await this.core.events.publish({ event: 'group.deleted', actor, subjectId: id, subjectType: 'group' }, trx);
    });
    return true;
  }
}
