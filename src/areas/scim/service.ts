import { timingSafeEqual } from 'node:crypto';
import type { Filter } from 'scim2-parse-filter';
import type { AccessService } from '../../core/access/service.js';
import type { UserRecord } from '../../core/auth/user.js';
import { bool } from '../../config/env.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { ERROR, HttpError } from '../../core/http/errors.js';
import type { AuthsService } from '../auths/service.js';
import type { GroupRecord, GroupsService } from '../groups/service.js';
import type { UsersService } from '../users/service.js';
import { SCIM, type ScimGroup, type ScimGroupCreate, type ScimListQuery, type ScimPatch, type ScimUser, type ScimUserCreate } from './schemas.js';

/** `ENABLE_SCIM` (or `SCIM_ENABLED`), `SCIM_TOKEN`, `SCIM_AUTH_PROVIDER`: read once at start, as the reference. */
export interface ScimOptions {
  enabled: boolean;
  token: string;
  /** The key under which a user's `externalId` is kept (the reference's OAuth provider name). */
  provider: string;
}

export function readScimOptions(raw: Record<string, string | undefined>): ScimOptions {
  return {
    enabled: bool(raw.ENABLE_SCIM ?? raw.SCIM_ENABLED, false),
    token: raw.SCIM_TOKEN ?? '',
    provider: raw.SCIM_AUTH_PROVIDER || 'scim',
  };
}

/** RFC 7644 §3.12 error types. */
export type ScimType = 'invalidFilter' | 'invalidSyntax' | 'invalidPath' | 'invalidValue' | 'noTarget' | 'uniqueness' | 'mutability';

/** An error answered in the SCIM format (`schemas`, `status`, `scimType`, `detail`). */
export class ScimError extends HttpError {
  constructor(
    statusCode: number,
    detail: string,
    readonly scimType?: ScimType,
  ) {
    super(statusCode, detail);
  }
}

/** The page size when the client names none, and the most one page holds (the reference's). */
const DEFAULT_COUNT = 20;
const MAX_COUNT = 100;

interface Page<T> {
  totalResults: number;
  itemsPerPage: number;
  startIndex: number;
  Resources: T[];
}

type Member = { value: string };

const iso = (epochSeconds: number) => new Date(epochSeconds * 1000).toISOString();

/** SCIM booleans as some IdPs send them in PATCH values (Entra: "False"). */
function booleanOf(value: unknown, path: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw new ScimError(400, `${path} must be a boolean`, 'invalidValue');
}

function stringOf(value: unknown, path: string): string {
  if (typeof value === 'string') return value;
  throw new ScimError(400, `${path} must be a string`, 'invalidValue');
}

function membersOf(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value];
  return list.map((member) => {
    if (member && typeof member === 'object' && typeof (member as Member).value === 'string') return (member as Member).value;
    throw new ScimError(400, 'members must be a list of {"value": "<user id>"}', 'invalidValue');
  });
}

/**
 * SCIM 2.0 provisioning (RFC 7643/7644; routers/scim.py): an identity provider creates, updates,
 * deactivates and deletes accounts and groups with a bearer token of its own.
 */
export class ScimService {
  readonly options: ScimOptions;

  constructor(
    private readonly core: Core,
    private readonly users: UsersService,
    private readonly groups: GroupsService,
    private readonly auths: AuthsService,
    private readonly access: AccessService,
  ) {
    this.options = readScimOptions(core.env.raw);
  }

  /** The `Authorization: Bearer <SCIM_TOKEN>` check, in constant time; 401 otherwise. */
  checkToken(authorization: string | undefined): void {
    if (!authorization) throw new ScimError(401, 'Authorization header required');
    const [scheme, token, ...rest] = authorization.trim().split(/\s+/);
    if (rest.length > 0 || !token || scheme.toLowerCase() !== 'bearer') throw new ScimError(401, 'Invalid authorization format. Expected: Bearer <token>');
    const expected = Buffer.from(this.options.token);
    const given = Buffer.from(token);
    if (!this.options.token || expected.length !== given.length || !timingSafeEqual(expected, given)) throw new ScimError(401, 'Invalid SCIM token');
  }

  // ---- discovery ----------------------------------------------------------------

  serviceProviderConfig() {
    return {
      schemas: [SCIM.SERVICE_PROVIDER_CONFIG],
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults: MAX_COUNT },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: false },
      authenticationSchemes: [{ type: 'oauthbearertoken', name: 'OAuth Bearer Token', description: 'Authentication using the SCIM_TOKEN as a bearer token', primary: true }],
      meta: { resourceType: 'ServiceProviderConfig', location: '/api/v1/scim/v2/ServiceProviderConfig' },
    };
  }

  resourceTypes(base: string) {
    return [
      { id: 'User', name: 'User', endpoint: '/Users', schema: SCIM.USER },
      { id: 'Group', name: 'Group', endpoint: '/Groups', schema: SCIM.GROUP },
    ].map((type) => ({ schemas: [SCIM.RESOURCE_TYPE], ...type, meta: { location: `${base}/ResourceTypes/${type.id}`, resourceType: 'ResourceType' } }));
  }

  schemas() {
    const attribute = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
      name,
      type,
      multiValued: false,
      required: false,
      caseExact: false,
      mutability: 'readWrite',
      returned: 'default',
      uniqueness: 'none',
      ...extra,
    });
    return [
      {
        schemas: [SCIM.SCHEMA],
        id: SCIM.USER,
        name: 'User',
        description: 'User Account',
        attributes: [
          attribute('userName', 'string', { required: true, uniqueness: 'server' }),
          attribute('externalId', 'string', { caseExact: true }),
          attribute('name', 'complex'),
          attribute('displayName', 'string'),
          attribute('emails', 'complex', { multiValued: true }),
          attribute('photos', 'complex', { multiValued: true }),
          attribute('active', 'boolean'),
          attribute('groups', 'complex', { multiValued: true, mutability: 'readOnly' }),
        ],
      },
      {
        schemas: [SCIM.SCHEMA],
        id: SCIM.GROUP,
        name: 'Group',
        description: 'Group',
        attributes: [attribute('displayName', 'string', { required: true }), attribute('members', 'complex', { multiValued: true })],
      },
    ];
  }

  // ---- representations ------------------------------------------------------------

  private externalIdOf(user: UserRecord): string | undefined {
    const linked = user.scim?.[this.options.provider] as { external_id?: unknown } | undefined;
    return typeof linked?.external_id === 'string' ? linked.external_id : undefined;
  }

  private toScimUser(user: UserRecord, groups: GroupRecord[], base: string): ScimUser {
    const [givenName, ...rest] = user.name.split(' ');
    const externalId = this.externalIdOf(user);
    const image = user.profile_image_url;
    return {
      schemas: [SCIM.USER],
      id: user.id,
      ...(externalId === undefined ? {} : { externalId }),
      userName: user.email,
      name: { formatted: user.name, givenName: givenName ?? '', familyName: rest.join(' ') },
      displayName: user.name,
      emails: [{ value: user.email, type: 'work', primary: true }],
      active: user.role !== 'pending',
      ...(image && !image.startsWith('data:') ? { photos: [{ value: image, type: 'photo', primary: true }] } : {}),
      groups: groups.map((group) => ({ value: group.id, display: group.name, $ref: `${base}/Groups/${group.id}`, type: 'direct' })),
      meta: { resourceType: 'User', created: iso(user.created_at), lastModified: iso(user.updated_at), location: `${base}/Users/${user.id}` },
    };
  }

  private async userResource(user: UserRecord, base: string, db?: Db): Promise<ScimUser> {
    return this.toScimUser(user, await this.groups.groupsOf(user.id, db), base);
  }

  private async groupResource(group: GroupRecord, base: string, db?: Db): Promise<ScimGroup> {
    const members = await this.users.byIds(await this.groups.memberIds(group.id, db), db);
    return {
      schemas: [SCIM.GROUP],
      id: group.id,
      displayName: group.name,
      members: members.map((user) => ({ value: user.id, display: user.name, $ref: `${base}/Users/${user.id}`, type: 'User' })),
      meta: { resourceType: 'Group', created: iso(group.created_at), lastModified: iso(group.updated_at), location: `${base}/Groups/${group.id}` },
    };
  }

  // ---- lists and filters ----------------------------------------------------------------

  private async parseFilter(text: string): Promise<Filter> {
    const { parse } = await import('scim2-parse-filter');
    try {
      return parse(text);
    } catch (error) {
      throw new ScimError(400, `The filter cannot be parsed: ${(error as Error).message}`, 'invalidFilter');
    }
  }

  /** `attr eq "value"`, the filter IdPs send to find one resource: the attribute (lower-cased) and value. */
  private static equality(filter: Filter): { attribute: string; value: string } | null {
    if (filter.op !== 'eq' || typeof filter.compValue !== 'string') return null;
    return { attribute: filter.attrPath.toLowerCase(), value: filter.compValue };
  }

  /** Anything else is tested on each resource's representation (scim2-parse-filter's evaluator). */
  private static async matching<T>(filter: Filter, resources: T[]): Promise<T[]> {
    const { filter: evaluator } = await import('scim2-parse-filter');
    return resources.filter(evaluator(filter) as (resource: T) => boolean);
  }

  private static page<T>(query: ScimListQuery, all: T[] | null, total?: number, pageOnly?: T[]): Page<T> {
    const { startIndex, count } = ScimService.window(query);
    const Resources = pageOnly ?? (all ?? []).slice(startIndex - 1, startIndex - 1 + count);
    return { totalResults: total ?? (all ?? []).length, itemsPerPage: Resources.length, startIndex, Resources };
  }

  /** RFC 7644 §3.4.2.4: startIndex below 1 is 1, count below 0 is 0. */
  private static window(query: ScimListQuery): { startIndex: number; count: number } {
    return { startIndex: Math.max(1, query.startIndex ?? 1), count: Math.max(0, Math.min(MAX_COUNT, query.count ?? DEFAULT_COUNT)) };
  }

  private async userByExternalId(externalId: string): Promise<UserRecord | null> {
    const [linked] = await this.users.byLinkedIdentity('scim', this.options.provider, 'external_id', externalId);
    if (linked) return linked;
    // An account that signed in through the same provider first: its OAuth subject is the IdP's id.
    const [bySubject] = await this.users.byLinkedIdentity('oauth', this.options.provider, 'sub', externalId);
    return bySubject ?? null;
  }

  async listUsers(query: ScimListQuery, base: string): Promise<Page<ScimUser>> {
    if (!query.filter) {
      const { startIndex, count } = ScimService.window(query);
      const { users, total } = await this.users.list({ orderBy: 'created_at', direction: 'asc', skip: startIndex - 1, limit: count });
      return ScimService.page(query, null, total, await Promise.all(users.map((user) => this.userResource(user, base))));
    }
    const filter = await this.parseFilter(query.filter);
    const equality = ScimService.equality(filter);
    let found: UserRecord | null | undefined;
    if (equality?.attribute === 'username' || equality?.attribute === 'emails.value' || equality?.attribute === 'emails') {
      found = await this.users.byEmail(equality.value);
    } else if (equality?.attribute === 'externalid') found = await this.userByExternalId(equality.value);
    else if (equality?.attribute === 'id') found = await this.users.byId(equality.value);
    if (found !== undefined) return ScimService.page(query, found ? [await this.userResource(found, base)] : []);
    const { users } = await this.users.list({ orderBy: 'created_at', direction: 'asc' });
    const resources = await Promise.all(users.map((user) => this.userResource(user, base)));
    return ScimService.page(query, await ScimService.matching(filter, resources));
  }

  async listGroups(query: ScimListQuery, base: string): Promise<Page<ScimGroup>> {
    if (!query.filter) {
      const { startIndex, count } = ScimService.window(query);
      const { groups, total } = await this.groups.page(startIndex - 1, count);
      return ScimService.page(query, null, total, await Promise.all(groups.map((group) => this.groupResource(group, base))));
    }
    const filter = await this.parseFilter(query.filter);
    const equality = ScimService.equality(filter);
    let found: GroupRecord[] | undefined;
    if (equality?.attribute === 'displayname') found = await this.groups.byName(equality.value);
    else if (equality?.attribute === 'id') found = [await this.groups.byId(equality.value)].filter((group): group is GroupRecord => group !== null);
    if (found) return ScimService.page(query, await Promise.all(found.map((group) => this.groupResource(group, base))));
    const { groups } = await this.groups.page(0, Number.MAX_SAFE_INTEGER);
    const resources = await Promise.all(groups.map((group) => this.groupResource(group, base)));
    return ScimService.page(query, await ScimService.matching(filter, resources));
  }

  // ---- users ------------------------------------------------------------------------------

  private async requireUser(id: string, db?: Db): Promise<UserRecord> {
    const user = await this.users.byId(id, db);
    if (!user) throw new ScimError(404, `User ${id} not found`);
    return user;
  }

  async getUser(id: string, base: string): Promise<ScimUser> {
    return this.userResource(await this.requireUser(id), base);
  }

  /** The address a SCIM user is known by: the primary e-mail, else the first, else `userName`. */
  private static emailOf(form: ScimUserCreate): string {
    const emails = form.emails ?? [];
    return (emails.find((email) => email.primary) ?? emails[0])?.value ?? form.userName;
  }

  private static nameOf(form: ScimUserCreate): string {
    const composed = [form.name?.givenName, form.name?.familyName].filter(Boolean).join(' ');
    return form.name?.formatted || composed || form.displayName || form.userName;
  }

  /** A photo URL Parley accepts as a profile image, or null (others are dropped, not refused). */
  private photoOf(form: { photos?: { value: string }[] | null }): string | null {
    const url = form.photos?.[0]?.value;
    return url && !this.users.profileImageUrlProblem(url) ? url : null;
  }

  private scimLink(user: UserRecord | null, externalId: string | null): Record<string, unknown> {
    const links = { ...(user?.scim ?? {}) };
    if (externalId === null) delete links[this.options.provider];
    else links[this.options.provider] = { external_id: externalId };
    return links;
  }

  async createUser(form: ScimUserCreate, base: string): Promise<ScimUser> {
    if (form.externalId && (await this.userByExternalId(form.externalId))) {
      throw new ScimError(409, `User with externalId ${form.externalId} already exists`, 'uniqueness');
    }
    // Otherwise the first provisioned account would become the admin, with a password nobody knows.
    if ((await this.users.count()) === 0) throw new ScimError(409, 'No account exists yet: create the first (admin) account before provisioning users');
    const email = ScimService.emailOf(form).toLowerCase();
    if (await this.users.byEmail(email)) throw new ScimError(409, `User with email ${email} already exists`, 'uniqueness');
    const user = await this.asScimError(() =>
      this.auths.provisionAccount({
        email,
        name: ScimService.nameOf(form),
        profileImageUrl: this.photoOf(form),
        role: form.active === false ? 'pending' : 'user',
        source: 'scim',
        eventData: { email, external_id: form.externalId ?? null },
        ...(form.externalId ? { scim: this.scimLink(null, form.externalId) } : {}),
      }),
    );
    return this.userResource(user, base);
  }

  /** The auths area's refusals (e-mail format, e-mail taken) in the SCIM format. */
  private async asScimError<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof HttpError) || error instanceof ScimError || error.statusCode !== 400) throw error;
      const taken = error.detail === ERROR.EMAIL_TAKEN;
      throw new ScimError(taken ? 409 : 400, String(error.detail), taken ? 'uniqueness' : 'invalidValue');
    }
  }

  /**
   * Applies field changes to a user in one transaction, reports `user.updated` (source `scim`), and
   * signs the user out everywhere when the change deactivates them. An admin is never demoted by
   * `active` (as the reference: a routine sync must not lock the instance out).
   */
  private async changeUser(
    user: UserRecord,
    change: { email?: string; name?: string; active?: boolean; photo?: string | null; externalId?: string | null },
    base: string,
  ): Promise<ScimUser> {
    const patch: Partial<Pick<UserRecord, 'email' | 'name' | 'role' | 'profile_image_url' | 'scim'>> = {};
    const email = change.email?.toLowerCase();
    if (email !== undefined && email !== user.email) patch.email = email;
    if (change.name !== undefined && change.name !== user.name) patch.name = change.name;
    if (change.active !== undefined && user.role !== 'admin') {
      const role = change.active ? (user.role === 'pending' ? 'user' : user.role) : 'pending';
      if (role !== user.role) patch.role = role;
    }
    if (change.photo) patch.profile_image_url = change.photo;
    if (change.externalId !== undefined) patch.scim = this.scimLink(user, change.externalId);
    const deactivated = patch.role === 'pending';
    const updated = await this.core.db.transaction().execute(async (trx) => {
      if (patch.email) {
        const holder = await this.users.byEmail(patch.email, trx);
        if (holder && holder.id !== user.id) throw new ScimError(409, `User with email ${patch.email} already exists`, 'uniqueness');
        await this.auths.setEmail(user.id, patch.email, trx);
      }
      const result = Object.keys(patch).length > 0 ? await this.users.update(user.id, patch, trx) : user;
      await this.core.events.publish(
        { event: 'user.updated', actor: null, subjectId: user.id, subjectType: 'user', source: 'scim', data: { updated_fields: Object.keys(patch) } },
        trx,
      );
      return result ?? user;
    });
    if (deactivated) await this.core.revokedTokens.revokeUserSessions(user.id);
    return this.userResource(updated, base);
  }

  async replaceUser(id: string, form: ScimUserCreate, base: string): Promise<ScimUser> {
    const user = await this.requireUser(id);
    return this.changeUser(
      user,
      {
        email: ScimService.emailOf(form),
        name: ScimService.nameOf(form),
        active: form.active ?? true,
        photo: this.photoOf(form),
        externalId: form.externalId ?? null,
      },
      base,
    );
  }

  /**
   * RFC 7644 §3.5.2 for the attributes Parley keeps: `active`, `userName`, `displayName`, `name.*`,
   * `emails[...].value`, `externalId`, `photos`; others (enterprise extension, titles) are ignored, as
   * the reference. An operation without path carries an object of attributes (Okta, Entra).
   */
  async patchUser(id: string, form: ScimPatch, base: string): Promise<ScimUser> {
    const user = await this.requireUser(id);
    const change: Parameters<ScimService['changeUser']>[1] = {};
    const [given, ...family] = user.name.split(' ');
    const nameParts = { givenName: given ?? '', familyName: family.join(' ') };
    let partsChanged = false;
    const apply = (op: string, rawPath: string, value: unknown) => {
      const path = rawPath.toLowerCase();
      if (op === 'remove') {
        if (path === 'externalid') change.externalId = null;
        return;
      }
      if (path === 'active') change.active = booleanOf(value, 'active');
      else if (path === 'username' || (path.startsWith('emails') && (path.endsWith('.value') || path === 'emails'))) {
        change.email = path === 'emails' ? ScimService.primaryOf(value) : stringOf(value, rawPath);
      } else if (path === 'displayname' || path === 'name.formatted') change.name = stringOf(value, rawPath);
      else if (path === 'name.givenname') {
        nameParts.givenName = stringOf(value, rawPath);
        partsChanged = true;
      } else if (path === 'name.familyname') {
        nameParts.familyName = stringOf(value, rawPath);
        partsChanged = true;
      } else if (path === 'externalid') change.externalId = stringOf(value, rawPath);
      else if (path === 'photos' || path.startsWith('photos[')) {
        const url = path === 'photos' ? membersOf(value)[0] : stringOf(value, rawPath);
        change.photo = this.photoOf({ photos: [{ value: url }] });
      } else if (path === 'name' && value && typeof value === 'object') {
        for (const [key, part] of Object.entries(value)) apply(op, `name.${key}`, part);
      }
    };
    for (const operation of form.Operations) {
      const op = ScimService.opOf(operation.op);
      if (operation.path) apply(op, operation.path, operation.value);
      else if (op !== 'remove' && operation.value && typeof operation.value === 'object' && !Array.isArray(operation.value)) {
        for (const [path, value] of Object.entries(operation.value)) apply(op, path, value);
      } else throw new ScimError(400, `A ${op} operation without path needs an object value`, op === 'remove' ? 'noTarget' : 'invalidValue');
    }
    if (partsChanged && change.name === undefined) change.name = [nameParts.givenName, nameParts.familyName].filter(Boolean).join(' ');
    return this.changeUser(user, change, base);
  }

  /** The primary entry's value of a multi-valued attribute sent whole (`emails`), else the first's. */
  private static primaryOf(value: unknown): string {
    const values = membersOf(value);
    const list = (Array.isArray(value) ? value : [value]) as { primary?: unknown }[];
    const chosen = values[list.findIndex((entry) => entry.primary === true)] ?? values[0];
    if (chosen === undefined) throw new ScimError(400, 'emails needs at least one entry', 'invalidValue');
    return chosen;
  }

  private static opOf(op: string): 'add' | 'replace' | 'remove' {
    const lower = op.toLowerCase();
    if (lower === 'add' || lower === 'replace' || lower === 'remove') return lower;
    throw new ScimError(400, `Unknown PATCH operation '${op}': expected add, replace or remove`, 'invalidSyntax');
  }

  /** Deletes the user and what is theirs, as an admin's deletion; their tokens stop working with them. */
  async deleteUser(id: string): Promise<void> {
    const user = await this.requireUser(id);
    if (await this.users.isPrimaryAdmin(id)) throw new ScimError(403, 'The first admin account cannot be deleted through SCIM');
    await this.core.db.transaction().execute(async (trx) => {
      await this.access.revokePrincipal('user', id, trx);
      await this.users.delete(id, trx);
      await this.core.events.publish({ event: 'user.deleted', actor: null, subjectId: id, subjectType: 'user', source: 'scim', data: { email: user.email } }, trx);
    });
  }

  // ---- groups ------------------------------------------------------------------------------

  private async requireGroup(id: string, db?: Db): Promise<GroupRecord> {
    const group = await this.groups.byId(id, db);
    if (!group) throw new ScimError(404, `Group ${id} not found`);
    return group;
  }

  async getGroup(id: string, base: string): Promise<ScimGroup> {
    return this.groupResource(await this.requireGroup(id), base);
  }

  private async publishMembership(groupId: string, change: { added: string[]; removed: string[] }, db: Db): Promise<void> {
    const subject = { actor: null, subjectId: groupId, subjectType: 'group', source: 'scim' };
    if (change.added.length) await this.core.events.publish({ event: 'group.member_added', ...subject, data: { member_ids: change.added, count: change.added.length } }, db);
    if (change.removed.length) {
      await this.core.events.publish({ event: 'group.member_removed', ...subject, data: { member_ids: change.removed, count: change.removed.length } }, db);
    }
  }

  /** Groups are owned by the first admin, as the reference (a SCIM client is no user). */
  async createGroup(form: ScimGroupCreate, base: string): Promise<ScimGroup> {
    const ownerId = await this.users.store().firstUserId();
    if (!ownerId) throw new ScimError(409, 'No admin account exists yet: create the first account before provisioning groups');
    const group = await this.core.db.transaction().execute(async (trx) => {
      const created = await this.groups.createProvisioned(ownerId, form.displayName, trx);
      const change = await this.groups.changeMembers(created.id, { replace: membersOf(form.members ?? []) }, trx);
      await this.core.events.publish(
        { event: 'group.created', actor: null, subjectId: created.id, subjectType: 'group', source: 'scim', data: { name: created.name, member_ids: change.added, member_count: change.added.length } },
        trx,
      );
      await this.publishMembership(created.id, change, trx);
      return created;
    });
    return this.getGroup(group.id, base);
  }

  async replaceGroup(id: string, form: ScimGroupCreate, base: string): Promise<ScimGroup> {
    await this.core.db.transaction().execute(async (trx) => {
      await this.requireGroup(id, trx);
      await this.groups.rename(id, form.displayName, trx);
      const change = form.members ? await this.groups.changeMembers(id, { replace: membersOf(form.members) }, trx) : { added: [], removed: [] };
      const fields = form.members ? ['name', 'members'] : ['name'];
      await this.core.events.publish({ event: 'group.updated', actor: null, subjectId: id, subjectType: 'group', source: 'scim', data: { updated_fields: fields } }, trx);
      await this.publishMembership(id, change, trx);
    });
    return this.getGroup(id, base);
  }

  /** The member id a path such as `members[value eq "<id>"]` names, or null for plain `members`. */
  private async memberOfPath(path: string): Promise<string | null> {
    if (path.toLowerCase() === 'members') return null;
    const filter = await this.parseFilter(path).catch(() => {
      throw new ScimError(400, `Unsupported path ${path}`, 'invalidPath');
    });
    const inner = filter.op === '[]' && filter.attrPath.toLowerCase() === 'members' ? ScimService.equality(filter.valFilter) : null;
    if (!inner || inner.attribute !== 'value') throw new ScimError(400, `Unsupported path ${path}: expected members or members[value eq "<id>"]`, 'invalidPath');
    return inner.value;
  }

  async patchGroup(id: string, form: ScimPatch, base: string): Promise<ScimGroup> {
    await this.requireGroup(id);
    // Validated before any write, so a malformed operation changes nothing.
    type Step = { rename: string } | { add?: string[]; remove?: string[]; replace?: string[] };
    const steps: Step[] = [];
    for (const operation of form.Operations) {
      const op = ScimService.opOf(operation.op);
      const path = operation.path ?? '';
      const lower = path.toLowerCase();
      if (!path) {
        if (op === 'remove') throw new ScimError(400, 'A remove operation needs a path', 'noTarget');
        const value = operation.value;
        if (!value || typeof value !== 'object' || Array.isArray(value)) throw new ScimError(400, `A ${op} operation without path needs an object value`, 'invalidValue');
        for (const [key, item] of Object.entries(value)) {
          if (key.toLowerCase() === 'displayname') steps.push({ rename: stringOf(item, key) });
          else if (key.toLowerCase() === 'members') steps.push(op === 'add' ? { add: membersOf(item) } : { replace: membersOf(item) });
        }
      } else if (lower === 'displayname') {
        if (op === 'remove') throw new ScimError(400, 'displayName is required and cannot be removed', 'mutability');
        steps.push({ rename: stringOf(operation.value, path) });
      } else if (lower.startsWith('members')) {
        const member = await this.memberOfPath(path);
        // `remove` of `members` itself, without value, empties the group (RFC 7644 §3.5.2.2).
        if (op === 'remove') steps.push(member ? { remove: [member] } : operation.value === undefined ? { replace: [] } : { remove: membersOf(operation.value) });
        else if (op === 'add') steps.push({ add: membersOf(operation.value) });
        else steps.push({ replace: membersOf(operation.value) });
      } else if (lower !== 'externalid') throw new ScimError(400, `Unsupported path ${path}`, 'invalidPath');
    }
    await this.core.db.transaction().execute(async (trx) => {
      const total = { added: new Set<string>(), removed: new Set<string>() };
      for (const step of steps) {
        if ('rename' in step) await this.groups.rename(id, step.rename, trx);
        else {
          const change = await this.groups.changeMembers(id, step, trx);
          for (const userId of change.added) (total.removed.delete(userId), total.added.add(userId));
          for (const userId of change.removed) (total.added.delete(userId), total.removed.add(userId));
        }
      }
      await this.core.events.publish(
        { event: 'group.updated', actor: null, subjectId: id, subjectType: 'group', source: 'scim', data: { operation_count: form.Operations.length } },
        trx,
      );
      await this.publishMembership(id, { added: [...total.added].sort(), removed: [...total.removed].sort() }, trx);
    });
    return this.getGroup(id, base);
  }

  async deleteGroup(id: string): Promise<void> {
    await this.core.db.transaction().execute(async (trx) => {
      const group = await this.requireGroup(id, trx);
      await this.groups.deleteProvisioned(id, trx);
      await this.core.events.publish({ event: 'group.deleted', actor: null, subjectId: id, subjectType: 'group', source: 'scim', data: { name: group.name } }, trx);
    });
  }
}
