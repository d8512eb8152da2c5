import { randomBytes } from 'node:crypto';
import type { AccessService } from '../../core/access/service.js';
import { type PublicUser, type UserRecord, publicUser } from '../../core/auth/user.js';
import { NOTICED_CACHE, InvalidatedCache, deepFreeze } from '../../core/cache.js';
import type { Core } from '../../core/context.js';
import { afterCommit, type Db, isUniqueViolation } from '../../core/db/database.js';
import type { GroupDirectory } from '../../core/directory.js';
import { ERROR, HttpError, badRequest, forbidden } from '../../core/http/errors.js';
import { profileImageUrlProblem, resolveProfileImage, type ProfileImage } from './profile-image.js';
import type { ListUsersQuery, OAuthSessionList, UserStatusForm, UserUpdateForm, UserUsageQuery, UserUsageResponse } from './schemas.js';
import { ENABLE_USER_STATUS, profileImagePolicy, type ProfileImagePolicy } from './settings.js';
import { UserStore, type UserListFilter, type UserPatch } from './store.js';
import { dailyHeatmap, dateLabeler, usagePeriod, usageReport } from './usage.js';
import { normaliseUserVariables, validateUserVariables } from './variables.js';

export interface NewUser {
  email: string;
  name: string;
  role: string;
  profile_image_url?: string | null;
  oauth?: Record<string, unknown> | null;
  id?: string;
}

/** What users needs of the credentials' owner (the auths service provides it). */
export interface UserCredentials {
  /** The user's OAuth sessions, without their tokens. */
  oauthSessionsOf(userId: string): Promise<OAuthSessionList>;
  setPassword(userId: string, password: string, db: Db): Promise<unknown>;
  setEmail(userId: string, email: string, db: Db): Promise<void>;
}

/**
 * The services users consult, each built from users: app.ts connects them once all
 * exist. Users sees groups and credentials only through these interfaces.
 */
export interface UserCollaborators {
  groups: GroupDirectory;
  access: AccessService;
  auths: UserCredentials;
}

/**
 * Time-ordered ids (RFC 9562 UUIDv7, monotonic within the process). Timestamps are
 * whole seconds, so the id breaks ties: "the first user ever created" (the primary
 * admin) stays exact when accounts are created within the same second.
 */
let lastIdMs = -1;
let idSequence = 0;
export function timeOrderedId(nowMs: number): string {
  let ms = Math.max(Math.floor(nowMs), lastIdMs);
  if (ms === lastIdMs) {
    idSequence += 1;
    if (idSequence > 0xfff) {
      ms += 1;
      idSequence = 0;
    }
  } else {
    idSequence = 0;
  }
  lastIdMs = ms;
  const time = ms.toString(16).padStart(12, '0');
  const random = randomBytes(8);
  random[0] = (random[0] & 0x3f) | 0x80;
  const tail = random.toString('hex');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${idSequence.toString(16).padStart(3, '0')}-${tail.slice(0, 4)}-${tail.slice(4)}`;
}

/** How often a user's `last_active_at` is written at most (the reference throttles it too). */
const TOUCH_INTERVAL_SECONDS = 60;
/** A user seen within this window counts as active (online). */
const ACTIVE_WINDOW_SECONDS = 180;
const PAGE_SIZE = 30;

/** The rules of user records. Other areas reach users through this service. */
export class UsersService {
  private readonly lastTouched = new Map<string, number>();
  private readonly imagePolicy: ProfileImagePolicy;
  private collaborators: UserCollaborators | null = null;

  private readonly sessions = new InvalidatedCache<UserRecord | null>(NOTICED_CACHE);

  constructor(private readonly core: Core) {
    this.imagePolicy = profileImagePolicy(core.env.raw);
    core.changes.on('identity', () => this.sessions.invalidate());
  }

  connect(collaborators: UserCollaborators): void {
    this.collaborators = collaborators;
  }

  private get peers(): UserCollaborators {
    if (!this.collaborators) throw new Error('UsersService used before its collaborators were connected');
    return this.collaborators;
  }

  store(db: Db = this.core.db): UserStore {
    return new UserStore(db);
  }

  byId(id: string, db?: Db) {
    return this.store(db).byId(id);
  }

  /**
   * The user a session belongs to, read on every request: from memory until a
   * change to any user (frozen: shared by every request). Reads before a write
   * use `byId`.
   */
  sessionUser(id: string): Promise<UserRecord | null> {
    return this.sessions.get(id, async () => deepFreeze(await this.store().byId(id)));
  }

  /** `sessionUser` when the cache holds it, without waiting; undefined otherwise. */
  cachedSessionUser(id: string): UserRecord | null | undefined {
    return this.sessions.peek(id);
  }

  /** Tells every instance that user records changed, once `db`'s transaction commits. */
  private changed(db: Db = this.core.db): void {
    afterCommit(db, () => this.core.changes.announce('identity'));
  }

  byIds(ids: string[], db?: Db) {
    return this.store(db).byIds(ids);
  }

  byEmail(email: string, db?: Db) {
    return this.store(db).byEmail(email);
  }

  /** The user bound to an identity provider's subject (OAuth sign-in). */
  byOAuthSub(provider: string, sub: string, db?: Db) {
    return this.store(db).byOAuthSub(provider, sub);
  }

  /** Users linked to an identity system's id, e.g. `('scim', 'microsoft', 'external_id', id)` or `('oauth', 'oidc', 'sub', id)`. */
  byLinkedIdentity(column: 'scim' | 'oauth', provider: string, field: string, value: string) {
    return this.store().byLinkedIdentity(column, provider, field, value);
  }

  byApiKey(key: string) {
    return this.store().byApiKey(key);
  }

  count(db?: Db) {
    return this.store(db).count();
  }

  async isPrimaryAdmin(id: string, db?: Db): Promise<boolean> {
    return (await this.store(db).firstUserId()) === id;
  }

  /** Why a URL may not be a profile image, or null (validate_profile_image_url). */
  profileImageUrlProblem(url: string): string | null {
    return profileImageUrlProblem(url, this.imagePolicy);
  }

  /** Refuses a profile image URL the way the reference's form validator does: a 422 on the body field. */
  assertProfileImageUrl(url: string, loc: (string | number)[] = ['body', 'profile_image_url']): void {
    const problem = this.profileImageUrlProblem(url);
    if (problem) throw new HttpError(422, [{ type: 'value_error', loc, msg: `Value error, ${problem}`, input: url, ctx: { error: {} } }]);
  }

  /** Creates the user record (credentials are the auths area's). Call inside the caller's transaction. */
  async create(input: NewUser, db: Db): Promise<UserRecord> {
    const now = this.core.clock.now();
    const id = input.id ?? timeOrderedId(this.core.clock.nowMs());
    // An unusable image falls back to the default avatar rather than failing the sign-up, as the reference does.
    const image = input.profile_image_url && !this.profileImageUrlProblem(input.profile_image_url) ? input.profile_image_url : null;
    const user: UserRecord = {
      id,
      email: input.email.toLowerCase(),
      username: null,
      role: input.role,
      name: input.name,
      profile_image_url: image || `/api/v1/users/${id}/profile/image`,
      profile_banner_image_url: null,
      bio: null,
      gender: null,
      date_of_birth: null,
      timezone: null,
      presence_state: null,
      status_emoji: null,
      status_message: null,
      status_expires_at: null,
      info: null,
      variables: {},
      settings: null,
      oauth: input.oauth ?? null,
      scim: null,
      last_active_at: now,
      updated_at: now,
      created_at: now,
    };
    await this.store(db).insert(user);
    return user;
  }

  async update(id: string, patch: UserPatch, db?: Db): Promise<UserRecord | null> {
    const updated = await this.store(db).update(id, { ...patch, updated_at: this.core.clock.now() });
    this.changed(db);
    return updated;
  }

  async delete(id: string, db?: Db): Promise<boolean> {
    this.lastTouched.delete(id);
    const deleted = await this.store(db).delete(id);
    this.changed(db);
    return deleted;
  }

  /** Records activity without a write on every request. */
  touch(user: UserRecord): void {
    const now = this.core.clock.now();
    const last = this.lastTouched.get(user.id) ?? user.last_active_at;
    if (now - last < TOUCH_INTERVAL_SECONDS) return;
    this.lastTouched.set(user.id, now);
    this.store()
      .touch(user.id, now)
      .catch((err) => this.core.log.warn({ err }, 'could not record user activity'));
  }

  isActive(user: Pick<UserRecord, 'last_active_at'>): boolean {
    return Boolean(user.last_active_at) && user.last_active_at >= this.core.clock.now() - ACTIVE_WINDOW_SECONDS;
  }

  /** How many users are active now (`GET /api/usage`). */
  activeCount(): Promise<number> {
    return this.countActiveSince(this.core.clock.now() - ACTIVE_WINDOW_SECONDS);
  }

  /** Users seen since `since` (epoch seconds). */
  countActiveSince(since: number): Promise<number> {
    return this.store().countActiveSince(since);
  }

  /** A page of full records, for callers that show each as their viewer may see it (the plugin API). */
  list(filter: UserListFilter) {
    return this.store().list(filter);
  }

  private async existing(id: string, status = 400): Promise<UserRecord> {
    const user = await this.byId(id);
    if (!user) throw new HttpError(status, ERROR.USER_NOT_FOUND);
    return user;
  }

  // ---- Lists ----

  private static filterOf(query: ListUsersQuery): UserListFilter {
    const page = Math.max(1, query.page ?? 1);
    return { query: query.query, orderBy: query.order_by, direction: query.direction, skip: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE };
  }

  /** The admin list: a page of full records, each with the ids of its groups. */
  async listWithGroupIds(query: ListUsersQuery) {
    const { users, total } = await this.store().list(UsersService.filterOf(query));
    const groupIds = await this.peers.groups.groupIdsOfUsers(users.map((user) => user.id));
    return { users: users.map((user) => ({ ...publicUser(user), group_ids: groupIds.get(user.id) ?? [] })), total };
  }

  /**
   * Public cards (UserInfoResponse) of a page of users, or of all of them. As in the
   * reference, list cards carry no groups and `is_active` false: they are for finding people.
   */
  async search(query: ListUsersQuery | null) {
    const { users, total } = await this.store().list(query ? UsersService.filterOf(query) : {});
    return { users: users.map((user) => ({ ...this.cardOf(user), groups: [], is_active: false })), total };
  }

  private cardOf(user: UserRecord) {
    const { id, name, email, role, bio, status_emoji, status_message, status_expires_at } = user;
    return { id, name, email, role, bio, status_emoji, status_message, status_expires_at };
  }

  private async groupNamesOf(userId: string) {
    const groups = await this.peers.groups.groupsOf(userId);
    return groups.map((group) => ({ id: group.id, name: group.name }));
  }

  // ---- One user ----

  /** `GET /{id}` (admin): the record, its groups and whether the user is online. */
  async profileWithGroups(id: string) {
    const user = await this.existing(id);
    return { ...publicUser(user), groups: await this.groupNamesOf(id), is_active: this.isActive(user) };
  }

  /** `GET /{id}/info`: the public card with groups and online state. */
  async info(id: string) {
    const user = await this.existing(id);
    return { ...this.cardOf(user), groups: await this.groupNamesOf(id), is_active: this.isActive(user) };
  }

  /** Unknown users are simply not active. */
  async activeStatus(id: string): Promise<{ active: boolean }> {
    const user = await this.byId(id);
    return { active: user ? this.isActive(user) : false };
  }

  /** A user's OAuth sessions without their tokens; none at all answers 400, as the reference. */
  async oauthSessions(userId: string) {
    const sessions = await this.peers.auths.oauthSessionsOf(userId);
    if (sessions.length === 0) throw badRequest(ERROR.USER_NOT_FOUND);
    return sessions;
  }

  /** What an image route answers for a stored image URL (another area's profile images: channel webhooks). */
  resolveImage(url: string | null): ProfileImage {
    return resolveProfileImage(url, this.imagePolicy);
  }

  async profileImage(id: string): Promise<ProfileImage> {
    const user = await this.existing(id);
    return resolveProfileImage(user.profile_image_url, this.imagePolicy);
  }

  /** `GET /{id}/preview`: what the user can reach through ownership and grants (the access service's catalogs). */
  async accessPreview(id: string) {
    return this.peers.access.previewUser(await this.existing(id, 404));
  }

  // ---- Admin writes ----

  /**
   * `POST /{id}/update` (admin). The primary admin (the first account) can be
   * changed only by themselves and never loses the admin role.
   */
  async updateByAdmin(actor: UserRecord, id: string, form: UserUpdateForm): Promise<PublicUser> {
    if (form.profile_image_url != null) this.assertProfileImageUrl(form.profile_image_url);
    if (await this.isPrimaryAdmin(id)) {
      if (actor.id !== id) throw forbidden(ERROR.ACTION_PROHIBITED);
      if (form.role != null && form.role !== 'admin') throw forbidden(ERROR.ACTION_PROHIBITED);
    }
    const user = await this.existing(id);
    const email = form.email?.toLowerCase();
    try {
      return await this.core.db.transaction().execute(async (trx) => {
        if (email !== undefined && email !== user.email && (await this.byEmail(email, trx))) throw badRequest(ERROR.EMAIL_TAKEN);
        if (form.password) await this.peers.auths.setPassword(id, form.password, trx);

        const patch: UserPatch = {};
        if (form.role != null) patch.role = form.role;
        if (form.name != null) patch.name = form.name;
        if (email !== undefined) {
          patch.email = email;
          await this.peers.auths.setEmail(id, email, trx);
        }
        if (form.profile_image_url != null) patch.profile_image_url = form.profile_image_url;
        const updated = Object.keys(patch).length > 0 ? await this.update(id, patch, trx) : user;
        if (!updated) throw badRequest(ERROR.USER_NOT_FOUND);

        const subject = { actor, subjectId: id, subjectType: 'user' };
        if (updated.role !== user.role) {
          await this.core.events.publish({ event: 'user.role_updated', ...subject, data: { role: updated.role } }, trx);
        } else {
          await this.core.events.publish({ event: 'user.updated', ...subject, data: { updated_fields: Object.keys(patch) } }, trx);
        }
        if (form.password) await this.core.events.publish({ event: 'auth.password_changed', ...subject, source: 'admin' }, trx);
        return publicUser(updated);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw badRequest(ERROR.EMAIL_TAKEN);
      throw error;
    }
  }

  /**
   * `DELETE /{id}` (admin): the user and everything that is theirs (credentials,
   * keys, memberships, OAuth sessions by cascade; access grants naming them here).
   * Their tokens stop working because they name a user that no longer exists.
   */
  async deleteByAdmin(actor: UserRecord, id: string): Promise<boolean> {
    if (await this.isPrimaryAdmin(id)) throw forbidden(ERROR.ACTION_PROHIBITED);
    if (actor.id === id) throw forbidden(ERROR.ACTION_PROHIBITED);
    await this.core.db.transaction().execute(async (trx) => {
      await this.peers.access.revokePrincipal('user', id, trx);
      // Deleting an unknown id changes nothing and answers true, as the reference; only a real deletion is an event.
      if (await this.delete(id, trx)) {
        await this.core.events.publish({ event: 'user.deleted', actor, subjectId: id, subjectType: 'user' }, trx);
      }
    });
    return true;
  }

  // ---- The signed-in user's own data ----

  /**
   * `POST /user/settings/update`: merges top-level keys, and `ui` field by field
   * (as the reference since 0.11.1, #27766: a page that saves only its own key, the
   * shortcuts' `keybindings`, no longer wipes the interface settings); some keys need
   * a permission to be kept.
   */
  async updateSettings(user: UserRecord, form: Record<string, unknown>): Promise<Record<string, unknown>> {
    const admin = user.role === 'admin';
    const allowed = (key: string) => (admin ? Promise.resolve(true) : this.peers.access.hasPermission(user, key));
    if (!(await allowed('settings.interface'))) throw forbidden(ERROR.ACCESS_PROHIBITED);

    const settings: Record<string, unknown> = { ...form, ui: form.ui ?? {} };
    const ui = isObject(settings.ui) ? { ...settings.ui } : null;
    if (ui) settings.ui = ui;
    if (ui && 'toolServers' in ui && !(await allowed('features.direct_tool_servers'))) delete ui.toolServers;
    const notifications = ui && isObject(ui.notifications) ? { ...ui.notifications } : null;
    if (('notifications' in settings || (notifications && 'webhook_url' in notifications)) && !(await allowed('features.webhooks'))) {
      delete settings.notifications;
      if (ui && notifications) {
        delete notifications.webhook_url;
        ui.notifications = notifications;
      }
    }

    return this.core.db.transaction().execute(async (trx) => {
      const current = await this.store(trx).byId(user.id);
      if (!current) throw badRequest(ERROR.USER_NOT_FOUND);
      const stored = current.settings ?? {};
      const merged = { ...stored, ...settings, ui: { ...(isObject(stored.ui) ? stored.ui : {}), ...(settings.ui as Record<string, unknown>) } };
      const updated = await this.update(user.id, { settings: merged }, trx);
      await this.core.events.publish({ event: 'user.settings_updated', actor: updated, subjectId: user.id, subjectType: 'user' }, trx);
      return merged;
    });
  }

  private ensureStatusEnabled(): void {
    if (!this.core.settings.get(ENABLE_USER_STATUS)) throw forbidden(ERROR.ACTION_PROHIBITED);
  }

  statusOf(user: UserRecord): PublicUser {
    this.ensureStatusEnabled();
    return publicUser(user);
  }

  /** Sets the status fields given (nulls leave a field as it is). */
  async updateStatus(user: UserRecord, form: UserStatusForm): Promise<PublicUser> {
    this.ensureStatusEnabled();
    const patch: UserPatch = {};
    for (const key of ['status_emoji', 'status_message', 'status_expires_at'] as const) {
      if (form[key] != null) (patch as Record<string, unknown>)[key] = form[key];
    }
    return this.core.db.transaction().execute(async (trx) => {
      const updated = await this.update(user.id, patch, trx);
      if (!updated) throw badRequest(ERROR.USER_NOT_FOUND);
      await this.core.events.publish({ event: 'user.status_updated', actor: user, subjectId: user.id, subjectType: 'user' }, trx);
      return publicUser(updated);
    });
  }

  /** `POST /user/info/update`: a shallow merge into the user's info. */
  async updateInfo(user: UserRecord, fields: Record<string, unknown>): Promise<Record<string, unknown> | null> {
    return this.core.db.transaction().execute(async (trx) => {
      const current = await this.store(trx).byId(user.id);
      if (!current) throw badRequest(ERROR.USER_NOT_FOUND);
      const updated = await this.update(user.id, { info: { ...(current.info ?? {}), ...fields } }, trx);
      return updated?.info ?? null;
    });
  }

  variablesOf(user: UserRecord): { variables: Record<string, string> } {
    return { variables: normaliseUserVariables(user.variables) };
  }

  /** Replaces the user's variables with a checked set. */
  async updateVariables(user: UserRecord, variables: Record<string, unknown>): Promise<{ variables: Record<string, string> }> {
    const valid = validateUserVariables(variables);
    await this.core.db.transaction().execute(async (trx) => {
      const updated = await this.update(user.id, { variables: valid }, trx);
      if (!updated) throw badRequest(ERROR.USER_NOT_FOUND);
      // 0.11.0 operation; the event says which user, never the values.
      await this.core.events.publish({ event: 'user.variables_updated', actor: user, subjectId: user.id, subjectType: 'user' }, trx);
    });
    return { variables: valid };
  }

  async usage(user: UserRecord, query: UserUsageQuery): Promise<UserUsageResponse> {
    const now = this.core.clock.now();
    const period = usagePeriod(query, user.created_at, now);
    const store = this.store();
    const [messages, lifetime] = await Promise.all([store.messagesBetween(user.id, period.start, period.end), store.lifetimeTokens(user.id)]);
    return usageReport(period, dailyHeatmap(period, user.timezone, now), messages, dateLabeler(user.timezone, now), lifetime);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
