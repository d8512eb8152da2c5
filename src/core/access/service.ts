import { type Expression, type SqlBool, sql } from 'kysely';
import { type UserRecord, isAdmin } from '../auth/user.js';
import { deepFreeze } from '../cache.js';
import type { Core } from '../context.js';
import type { Db } from '../db/database.js';
import type { GroupDirectory, UserDirectory } from '../directory.js';
import { badRequest, notFound } from '../http/errors.js';
import {
  type AccessGrant,
  type GrantPermission,
  type GrantSpec,
  accessControlToGrants,
  isGroupGrant,
  isOpenGrant,
  isPublicGrant,
  isUserGrant,
  parseGrants,
} from './grants.js';
import {
  type PermissionsTree,
  fillMissing,
  mergePermissions,
  normalizeDefaultPermissions,
  permissionAt,
  permissionsFromEnv,
} from './permissions.js';
import { USER_PERMISSIONS } from './settings.js';
import { AccessGrantStore, type Principals, grantExists, grantsAdmit } from './store.js';

/** A user as access checks see them, resolved once for a listing. */
export interface AccessSubject extends Principals {
  userId: string;
  groupIds: string[];
  /** Admin while BYPASS_ADMIN_ACCESS_CONTROL is on: every check passes. */
  bypass: boolean;
}

/** What the sharing filter checks for a resource type. */
export interface SharingRule {
  /** The permission that allows public `user:*` grants, e.g. `sharing.public_tools`. */
  publicPermission: string;
  /** The permission that allows open `anyone:*` grants; without it they are always dropped. */
  openPermission?: string;
}

/** Resources of one type as the admin access previews list them. */
export interface PreviewCatalog {
  resourceType: string;
  /** Every resource the preview counts (for models: the active ones). */
  list(db: Db): Promise<{ id: string; name: string; user_id: string }[]>;
}

export interface PreviewSection {
  items: { id: string; name: string }[];
  total: number;
}

/** The resource kinds the admin access previews show. */
export type PreviewSectionName = 'models' | 'knowledge' | 'tools';
const PREVIEW_SECTIONS: PreviewSectionName[] = ['models', 'knowledge', 'tools'];
export type PreviewSections = Record<PreviewSectionName, PreviewSection>;

/**
 * Permissions (the default tree merged across a user's groups) and access grants
 * for every resource type. See docs/access.md.
 */
export class AccessService {
  private readonly previewCatalogs = new Map<PreviewSectionName, PreviewCatalog>();
  private baseline: PermissionsTree | undefined;
  private defaults: { stored: unknown; tree: PermissionsTree } | undefined;
  private readonly merged = new WeakMap<object, { defaults: PermissionsTree; tree: PermissionsTree }>();

  constructor(
    readonly core: Core,
    readonly groups: GroupDirectory,
    private readonly users: UserDirectory,
  ) {
    // Grants naming a deleted group go with it, in the transaction that deletes it (groups API or SCIM).
    core.events.subscribe(async (event, db) => {
      if (event.event === 'group.deleted' && event.subject?.id) await this.revokePrincipal('group', event.subject.id, db ?? undefined);
    });
  }

  private store(db: Db = this.core.db): AccessGrantStore {
    return new AccessGrantStore(db);
  }

  // ---- permissions -------------------------------------------------------

  /** The default tree as the environment seeds it (GET /users/default/permissions/defaults). */
  baselinePermissions(): PermissionsTree {
    // The environment does not change while the process runs; the tree is built once and never mutated.
    this.baseline ??= permissionsFromEnv(this.core.env.raw);
    return this.baseline;
  }

  /** The stored default tree of every user, with keys added since it was saved filled in. */
  defaultPermissions(): PermissionsTree {
    const stored = this.core.settings.get(USER_PERMISSIONS) ?? {};
    // Rebuilt only when the stored tree changes (the settings store hands out a new object on write).
    if (this.defaults?.stored !== stored) this.defaults = { stored, tree: fillMissing(stored, this.baselinePermissions()) as PermissionsTree };
    return this.defaults.tree;
  }

  /**
   * Replaces the default tree (POST /users/default/permissions): known sections and
   * switches only, left-out switches at the admin form's defaults. Returns what was stored.
   */
  async setDefaultPermissions(actor: UserRecord, tree: unknown): Promise<PermissionsTree> {
    const normalized = normalizeDefaultPermissions(tree);
    if ('error' in normalized) throw badRequest(normalized.error);
    await this.core.db.transaction().execute(async (trx) => {
      await this.core.settings.set({ [USER_PERMISSIONS.key]: normalized.tree }, this.core.clock.now(), trx);
      await this.core.events.publish(
        { event: 'user.permissions_updated', actor, subjectId: USER_PERMISSIONS.key, subjectType: 'config' },
        trx,
      );
    });
    return normalized.tree;
  }

  /**
   * The user's effective tree: the defaults with each of the user's groups'
   * permissions combined in, the most permissive value winning. Admins get the
   * same tree the reference gives them; use `hasPermission` for checks, which
   * lets admins through.
   */
  async permissionsOf(user: UserRecord): Promise<PermissionsTree> {
    const groups = await this.groups.groupsOf(user.id);
    const defaults = this.defaultPermissions();
    // The groups' list is the same object while the membership cache holds it, so the merge is kept with it.
    const known = this.merged.get(groups);
    if (known?.defaults === defaults) return known.tree;
    const tree = deepFreeze(mergePermissions(defaults, groups.map((g) => g.permissions)));
    this.merged.set(groups, { defaults, tree });
    return tree;
  }

  /** Whether the user holds a dotted permission such as `features.api_keys`; admins hold all. */
  async hasPermission(user: UserRecord, key: string): Promise<boolean> {
    if (isAdmin(user)) return true;
    return permissionAt(await this.permissionsOf(user), key);
  }

  // ---- access checks -------------------------------------------------------

  private bypasses(user: UserRecord): boolean {
    return isAdmin(user) && this.core.env.bypassAdminAccessControl;
  }

  /**
   * Whether the user may read or write a resource: its owner, an admin while
   * BYPASS_ADMIN_ACCESS_CONTROL is on, or the holder of a matching grant (public
   * `user:*`, the user, or one of their groups). A write grant also allows
   * reading. Routes where the reference lets admins in regardless of the bypass
   * setting check `isAdmin` themselves.
   */
  async hasAccess(
    user: UserRecord,
    resourceType: string,
    resourceId: string,
    permission: GrantPermission,
    ownerId?: string | null,
    options: { groupIds?: string[]; db?: Db } = {},
  ): Promise<boolean> {
    if (ownerId && ownerId === user.id) return true;
    if (this.bypasses(user)) return true;
    return this.store(options.db).matches(resourceType, resourceId, permission, { userId: user.id, groupIds: options.groupIds });
  }

  /** Whether a resource carries the open `anyone:*` read grant (no sign-in needed; callers opt in). */
  async hasOpenAccess(resourceType: string, resourceId: string, db?: Db): Promise<boolean> {
    return this.store(db).hasOpenGrant(resourceType, resourceId);
  }

  /** Resolves the user's groups once, for listings that check many resources. */
  async subjectOf(user: UserRecord, db?: Db): Promise<AccessSubject> {
    return { userId: user.id, groupIds: await this.groups.groupIdsOf(user.id, db), bypass: this.bypasses(user) };
  }

  /** The ids among `resourceIds` the subject holds a grant for (ownership not considered), in one query. */
  async accessibleIds(subject: AccessSubject, resourceType: string, permission: GrantPermission, resourceIds: string[], db?: Db): Promise<Set<string>> {
    if (subject.bypass) return new Set(resourceIds);
    return this.store(db).matchingIds(resourceType, permission, subject, resourceIds);
  }

  /** The resources the subject owns or holds a grant for, in their order (one query). */
  async filterAccessible<T extends { id: string; user_id: string }>(
    subject: AccessSubject,
    resourceType: string,
    permission: GrantPermission,
    resources: T[],
    db?: Db,
  ): Promise<T[]> {
    if (subject.bypass) return resources;
    const others = resources.filter((r) => r.user_id !== subject.userId).map((r) => r.id);
    const granted = await this.store(db).matchingIds(resourceType, permission, subject, others);
    return resources.filter((r) => r.user_id === subject.userId || granted.has(r.id));
  }

  /**
   * A condition for another area's own listing query: owner or grant (or always
   * true for a bypassing admin). `columns` name the row's id and owner columns,
   * e.g. `{ id: 'tool.id', owner: 'tool.user_id' }`.
   */
  accessFilter(subject: AccessSubject, resourceType: string, permission: GrantPermission, columns: { id: string; owner?: string }): Expression<SqlBool> {
    if (subject.bypass) return sql<SqlBool>`1 = 1`;
    const granted = grantExists(resourceType, permission, subject, columns.id);
    return columns.owner ? sql<SqlBool>`(${sql.ref(columns.owner)} = ${subject.userId} or ${granted})` : granted;
  }

  /** `accessFilter` on a resource whose owner and grants are already in memory (a cached listing). */
  admits(subject: AccessSubject, permission: GrantPermission, ownerId: string, grants: readonly AccessGrant[]): boolean {
    return subject.bypass || ownerId === subject.userId || grantsAdmit(grants, permission, subject);
  }

  /** Ids of the users holding `permission` on a resource through grants (public means every active user). */
  async userIdsWithAccess(resourceType: string, resourceId: string, permission: GrantPermission, db: Db = this.core.db): Promise<string[]> {
    const holders = await this.store(db).holders(resourceType, resourceId, permission);
    if (holders.some((h) => h.principal_type === 'user' && h.principal_id === '*')) {
      const rows = await db.selectFrom('user').select('id').where('role', '!=', 'pending').execute();
      return rows.map((r) => r.id);
    }
    const ids = new Set(holders.filter((h) => h.principal_type === 'user').map((h) => h.principal_id));
    const groupIds = holders.filter((h) => h.principal_type === 'group').map((h) => h.principal_id);
    if (groupIds.length > 0) {
      const members = await db.selectFrom('group_member').select('user_id').where('group_id', 'in', groupIds).execute();
      for (const m of members) ids.add(m.user_id);
    }
    return [...ids];
  }

  // ---- grants ------------------------------------------------------------

  async grantsOf(resourceType: string, resourceId: string, db?: Db): Promise<AccessGrant[]> {
    return this.store(db).ofResource(resourceType, resourceId);
  }

  /** Grants of many resources in one query, keyed by resource id. */
  async grantsOfMany(resourceType: string, resourceIds: string[], db?: Db): Promise<Map<string, AccessGrant[]>> {
    return this.store(db).ofResources(resourceType, resourceIds);
  }

  /**
   * Turns a form's `access_grants` into the grants the actor may give
   * (filter_allowed_access_grants): malformed entries are refused (400); grants
   * the actor lacks the sharing permission for are dropped, as the reference
   * does; named users and groups must exist (400). Call before `replaceGrants`.
   */
  async prepareGrants(actor: UserRecord, input: unknown, rule: SharingRule, db?: Db): Promise<GrantSpec[]> {
    const parsed = parseGrants(input);
    if ('error' in parsed) throw badRequest(parsed.error);
    return this.allowedGrants(actor, parsed.grants, rule, db);
  }

  /**
   * The grants a resource form asks for, filtered by what the actor may give: `access_grants`
   * when present (null entries skipped), else the legacy `access_control`; null when the form
   * names neither (an update then keeps the grants).
   */
  async grantsOfForm(
    actor: UserRecord,
    form: { access_grants?: unknown[] | null; access_control?: unknown },
    resourceType: string,
    rule: SharingRule,
  ): Promise<GrantSpec[] | null> {
    if (form.access_grants !== undefined && form.access_grants !== null) {
      return this.prepareGrants(
        actor,
        form.access_grants.filter((grant) => grant !== null),
        rule,
      );
    }
    if ('access_control' in form) return this.prepareAccessControl(actor, form.access_control, resourceType, rule);
    return null;
  }

  /** The same for a legacy `access_control` object (null = public read, {} = private). */
  async prepareAccessControl(actor: UserRecord, accessControl: unknown, resourceType: string, rule: SharingRule, db?: Db): Promise<GrantSpec[]> {
    const converted = accessControlToGrants(accessControl, resourceType);
    if ('error' in converted) throw badRequest(converted.error);
    return this.allowedGrants(actor, converted.grants, rule, db);
  }

  private async allowedGrants(actor: UserRecord, requested: GrantSpec[], rule: SharingRule, db?: Db): Promise<GrantSpec[]> {
    let grants = requested;
    const admin = isAdmin(actor);
    if (grants.some(isOpenGrant) && (!rule.openPermission || !(await this.hasPermission(actor, rule.openPermission)))) {
      grants = grants.filter((g) => !isOpenGrant(g));
    }
    if (!admin) {
      if (grants.some(isPublicGrant) && !(await this.hasPermission(actor, rule.publicPermission))) grants = grants.filter((g) => !isPublicGrant(g));
      if (grants.some(isUserGrant) && !(await this.hasPermission(actor, 'access_grants.allow_users'))) grants = grants.filter((g) => !isUserGrant(g));
      if (grants.some(isGroupGrant) && !(await this.hasPermission(actor, 'access_grants.allow_groups'))) grants = grants.filter((g) => !isGroupGrant(g));
    }
    await this.requirePrincipals(grants, db);
    return grants;
  }

  private async requirePrincipals(grants: GrantSpec[], db?: Db): Promise<void> {
    const userIds = [...new Set(grants.filter(isUserGrant).map((g) => g.principal_id))];
    const groupIds = [...new Set(grants.filter(isGroupGrant).map((g) => g.principal_id))];
    if (userIds.length > 0) {
      const found = new Set((await this.users.byIds(userIds, db)).map((u) => u.id));
      const missing = userIds.filter((id) => !found.has(id));
      if (missing.length > 0) throw badRequest(`Access grant names unknown user(s): ${missing.join(', ')}`);
    }
    if (groupIds.length > 0) {
      const found = new Set(await this.groups.existingIds(groupIds, db));
      const missing = groupIds.filter((id) => !found.has(id));
      if (missing.length > 0) throw badRequest(`Access grant names unknown group(s): ${missing.join(', ')}`);
    }
  }

  /** Replaces every grant of a resource with `grants` (from `prepareGrants`), inside the caller's transaction. */
  async replaceGrants(resourceType: string, resourceId: string, grants: GrantSpec[], db: Db): Promise<AccessGrant[]> {
    const store = this.store(db);
    await store.deleteResource(resourceType, resourceId);
    return store.insert(resourceType, resourceId, grants, this.core.clock.now());
  }

  /** Adds one grant; an existing identical grant is kept. */
  async grant(resourceType: string, resourceId: string, grant: GrantSpec, db?: Db): Promise<void> {
    await this.store(db).insert(resourceType, resourceId, [grant], this.core.clock.now());
  }

  /** Removes one grant; false when there was none. */
  async revoke(resourceType: string, resourceId: string, grant: GrantSpec, db?: Db): Promise<boolean> {
    return this.store(db).deleteOne(resourceType, resourceId, grant);
  }

  /** Removes every grant of a resource (call when deleting it). */
  async deleteGrantsOf(resourceType: string, resourceId: string, db?: Db): Promise<number> {
    return this.store(db).deleteResource(resourceType, resourceId);
  }

  /** Removes every grant naming a principal (a deleted user or group). */
  async revokePrincipal(principalType: 'user' | 'group', principalId: string, db?: Db): Promise<number> {
    return this.store(db).deletePrincipal(principalType, principalId);
  }

  // ---- admin access previews -------------------------------------------------

  /** Lets an area's resources appear in the admin access previews (the area's service calls this once). */
  registerPreviewCatalog(section: PreviewSectionName, catalog: PreviewCatalog): void {
    this.previewCatalogs.set(section, catalog);
  }

  private async previewSections(who: Principals & { ownerId?: string }): Promise<PreviewSections> {
    const sections = {} as PreviewSections;
    for (const section of PREVIEW_SECTIONS) {
      const catalog = this.previewCatalogs.get(section);
      if (!catalog) {
        sections[section] = { items: [], total: 0 };
        continue;
      }
      const all = await catalog.list(this.core.db);
      const others = all.filter((r) => !who.ownerId || r.user_id !== who.ownerId).map((r) => r.id);
      const granted = await this.store().matchingIds(catalog.resourceType, 'read', who, others);
      sections[section] = {
        items: all.filter((r) => (who.ownerId && r.user_id === who.ownerId) || granted.has(r.id)).map((r) => ({ id: r.id, name: r.name })),
        total: all.length,
      };
    }
    return sections;
  }

  /** `GET /groups/id/{id}/preview`: what members reach through this group's grants (and public ones). */
  async previewGroup(groupId: string): Promise<PreviewSections & { group: { id: string; name: string }; permissions: Record<string, unknown> }> {
    const group = await this.groups.byId(groupId);
    if (!group) throw notFound();
    const sections = await this.previewSections({ userId: null, groupIds: [group.id] });
    return { group: { id: group.id, name: group.name }, ...sections, permissions: group.permissions ?? {} };
  }

  /** `GET /users/{id}/preview`: what a user reaches, owned or granted through any of their groups. */
  async previewUser(
    user: UserRecord,
  ): Promise<PreviewSections & { user: { id: string; name: string }; groups: { id: string; name: string }[] }> {
    const groups = await this.groups.groupsOf(user.id);
    const sections = await this.previewSections({ userId: user.id, groupIds: groups.map((g) => g.id), ownerId: user.id });
    return { user: { id: user.id, name: user.name }, groups: groups.map((g) => ({ id: g.id, name: g.name })), ...sections };
  }
}
