import { type AccessGrant, RESOURCE_TYPES } from '../../core/access/grants.js';
import type { AccessService, SharingRule } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { type Db, isUniqueViolation } from '../../core/db/database.js';
import { workspaceSearch } from '../../core/db/workspace-search.js';
import { ERROR, badRequest, notFound, unauthorized } from '../../core/http/errors.js';
import type { WorkspaceListQuery } from '../../core/http/schema.js';
import type { UsersService } from '../users/service.js';
import type { SkillForm } from './schemas.js';
import { type SkillRecord, SkillStore, type SkillWrite, skillMeta } from './store.js';

const RESOURCE = RESOURCE_TYPES.skill;
const SHARING: SharingRule = { publicPermission: 'sharing.public_skills' };

export interface SkillView extends SkillRecord {
  access_grants: AccessGrant[];
}

interface SkillOwner {
  id: string;
  name: string;
  role: string;
  email: string;
}

/**
 * Skills (`/api/v1/skills`): named instructions with access grants, which a chat
 * brings into the model's context (`skillsForChat`). See docs/skills.md.
 */
export class SkillsService {
  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
  ) {}

  private store(db: Db = this.core.db): SkillStore {
    return new SkillStore(db);
  }

  // ---- rules ---------------------------------------------------------------

  /** Admins (whatever BYPASS_ADMIN_ACCESS_CONTROL says, as the reference's routes), owners and grant holders. */
  private async may(user: UserRecord, skill: SkillRecord, permission: 'read' | 'write'): Promise<boolean> {
    return isAdmin(user) || (await this.access.hasAccess(user, RESOURCE, skill.id, permission, skill.user_id));
  }

  /** The skill, when the user may change it: 404 when missing, 401 without write access. */
  private async requireWritable(user: UserRecord, id: string): Promise<SkillRecord> {
    const skill = await this.store().byId(id);
    if (!skill) throw notFound();
    if (!(await this.may(user, skill, 'write'))) throw unauthorized(ERROR.UNAUTHORIZED);
    return skill;
  }

  private async views(skills: SkillRecord[]): Promise<SkillView[]> {
    const grants = await this.access.grantsOfMany(
      RESOURCE,
      skills.map((s) => s.id),
    );
    return skills.map((s) => ({ ...s, access_grants: grants.get(s.id) ?? [] }));
  }

  private async owners(skills: SkillRecord[]): Promise<Map<string, SkillOwner>> {
    const users = await this.users.byIds([...new Set(skills.map((s) => s.user_id))]);
    return new Map(users.map((u) => [u.id, { id: u.id, name: u.name, role: u.role, email: u.email }]));
  }

  /** Owned or granted `read` (all for an admin with the bypass), newest change first. */
  private async readable(user: UserRecord): Promise<SkillRecord[]> {
    const subject = await this.access.subjectOf(user);
    return this.store().all(subject.bypass ? null : this.access.accessFilter(subject, RESOURCE, 'read', { id: 'skill.id', owner: 'skill.user_id' }));
  }

  private fields(form: SkillForm): SkillWrite {
    return {
      name: form.name,
      description: form.description ?? null,
      content: form.content,
      meta: skillMeta(form.meta),
      is_active: form.is_active ?? true,
    };
  }

  // ---- listings --------------------------------------------------------------

  /** `GET /`: the readable skills with their owners. */
  async list(user: UserRecord) {
    const skills = await this.readable(user);
    const [views, owners] = await Promise.all([this.views(skills), this.owners(skills)]);
    return views.map((skill) => ({ ...skill, user: owners.get(skill.user_id) ?? null }));
  }

  /** `GET /list`: 30 a page, searched by name, description, id and owner, with `write_access`. */
  async search(user: UserRecord, query: WorkspaceListQuery) {
    const subject = await this.access.subjectOf(user);
    const result = await this.store().search(workspaceSearch(query, this.access.accessFilter(subject, RESOURCE, 'read', { id: 'skill.id', owner: 'skill.user_id' }), user.id));
    const [views, owners, writable] = await Promise.all([
      this.views(result.items),
      this.owners(result.items),
      this.access.accessibleIds(
        subject,
        RESOURCE,
        'write',
        result.items.map((s) => s.id),
      ),
    ]);
    const items = views.map(({ content: _content, ...skill }) => ({
      ...skill,
      user: owners.get(skill.user_id) ?? null,
      write_access: skill.user_id === user.id || writable.has(skill.id),
    }));
    return { items, total: result.total };
  }

  /** `GET /export`: admin or `workspace.skills_export`; the readable skills (all for an admin with the bypass). */
  async export(user: UserRecord): Promise<SkillView[]> {
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'workspace.skills_export'))) throw unauthorized(ERROR.UNAUTHORIZED);
    return this.views(await this.readable(user));
  }

  // ---- records ---------------------------------------------------------------

  /**
   * `POST /create`: admin, `workspace.skills` or `workspace.skills_import`. The id is
   * lower-cased with spaces as dashes; one in use is `ID_TAKEN` (also when a
   * concurrent create wins the race), a name in use the reference's create error.
   */
  async create(user: UserRecord, form: SkillForm): Promise<SkillView> {
    const allowed =
      isAdmin(user) || (await this.access.hasPermission(user, 'workspace.skills')) || (await this.access.hasPermission(user, 'workspace.skills_import'));
    if (!allowed) throw unauthorized(ERROR.UNAUTHORIZED);
    if (form.id.trim() === '') throw badRequest('The id must not be empty');
    const id = form.id.toLowerCase().replaceAll(' ', '-');
    if (await this.store().byId(id)) throw badRequest(ERROR.ID_TAKEN);
    const grants = (await this.access.grantsOfForm(user, form, RESOURCE, SHARING)) ?? [];
    const now = this.core.clock.now();
    const skill: SkillRecord = { id, user_id: user.id, ...this.fields(form), updated_at: now, created_at: now };
    return this.core.db
      .transaction()
      .execute(async (trx) => {
        await this.store(trx).insert(skill);
        const stored = await this.access.replaceGrants(RESOURCE, id, grants, trx);
        await this.core.events.publish({ event: 'skill.created', actor: user, subjectId: id, subjectType: 'skill', data: { name: skill.name } }, trx);
        return { ...skill, access_grants: stored };
      })
      .catch(async (error: unknown) => {
        if (!isUniqueViolation(error)) throw error;
        throw badRequest((await this.store().byId(id)) ? ERROR.ID_TAKEN : ERROR.DEFAULT('Error creating skill'));
      });
  }

  /** `GET /id/{id}`: admins, owners and readers (else 401); `user` is null as in the reference. */
  async get(user: UserRecord, id: string) {
    const skill = await this.store().byId(id);
    if (!skill) throw notFound();
    if (!(await this.may(user, skill, 'read'))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    const write = await this.access.hasAccess(user, RESOURCE, id, 'write', skill.user_id);
    const [view] = await this.views([skill]);
    return { ...view, user: null, write_access: write };
  }

  /** `POST /id/{id}/update`: every field of the form (`is_active` defaults to true, as the reference); grants only when named. */
  async update(user: UserRecord, id: string, form: SkillForm): Promise<SkillView> {
    await this.requireWritable(user, id);
    const grants = await this.access.grantsOfForm(user, form, RESOURCE, SHARING);
    const fields = this.fields(form);
    const now = this.core.clock.now();
    return this.core.db
      .transaction()
      .execute(async (trx) => {
        if (!(await this.store(trx).update(id, fields, now))) throw notFound();
        if (grants) await this.access.replaceGrants(RESOURCE, id, grants, trx);
        await this.core.events.publish({ event: 'skill.updated', actor: user, subjectId: id, subjectType: 'skill', data: { name: fields.name } }, trx);
        const [view] = await this.viewsIn(trx, id);
        return view;
      })
      .catch((error: unknown) => {
        if (isUniqueViolation(error)) throw badRequest(ERROR.DEFAULT('Error updating skill'));
        throw error;
      });
  }

  private async viewsIn(db: Db, id: string): Promise<SkillView[]> {
    const skill = await this.store(db).byId(id);
    if (!skill) throw notFound();
    return [{ ...skill, access_grants: await this.access.grantsOf(RESOURCE, id, db) }];
  }

  /** `POST /id/{id}/access/update`: replaces the grants (an empty list makes the skill private). */
  async updateAccess(user: UserRecord, id: string, accessGrants: unknown[]): Promise<SkillView> {
    const skill = await this.requireWritable(user, id);
    const grants = await this.access.prepareGrants(user, accessGrants, SHARING);
    return this.core.db.transaction().execute(async (trx) => {
      const stored = await this.access.replaceGrants(RESOURCE, id, grants, trx);
      await this.core.events.publish(
        { event: 'skill.updated', actor: user, subjectId: id, subjectType: 'skill', data: { access_updated: true, name: skill.name } },
        trx,
      );
      return { ...skill, access_grants: stored };
    });
  }

  /** `POST /id/{id}/toggle`: an inactive skill stays listed but no chat uses it. */
  async toggle(user: UserRecord, id: string): Promise<SkillView> {
    const skill = await this.requireWritable(user, id);
    const isActive = !skill.is_active;
    const now = this.core.clock.now();
    return this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).update(id, { is_active: isActive }, now))) throw notFound();
      await this.core.events.publish(
        { event: isActive ? 'skill.enabled' : 'skill.disabled', actor: user, subjectId: id, subjectType: 'skill', data: { name: skill.name } },
        trx,
      );
      const [view] = await this.viewsIn(trx, id);
      return view;
    });
  }

  /** `DELETE /id/{id}/delete`: the skill and its grants. */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    const skill = await this.requireWritable(user, id);
    return this.core.db.transaction().execute(async (trx) => {
      await this.access.deleteGrantsOf(RESOURCE, id, trx);
      const removed = await this.store(trx).delete(id);
      if (removed) await this.core.events.publish({ event: 'skill.deleted', actor: user, subjectId: id, subjectType: 'skill', data: { name: skill.name } }, trx);
      return removed;
    });
  }

  // ---- for the chat ------------------------------------------------------------

  /** The active skills among `ids` the user owns or may read, in the order asked (unknown ids are skipped). */
  async forChat(user: UserRecord, ids: string[]): Promise<SkillRecord[]> {
    const found = new Map((await this.store().byIds([...new Set(ids)])).map((s) => [s.id, s]));
    const skills: SkillRecord[] = [];
    for (const id of new Set(ids)) {
      const skill = found.get(id);
      if (skill?.is_active && (await this.access.hasAccess(user, RESOURCE, id, 'read', skill.user_id))) skills.push(skill);
    }
    return skills;
  }

  /** One skill for the `view_skill` tool: the same rule. */
  async viewForChat(user: UserRecord, idOrName: string): Promise<SkillRecord | null> {
    const [skill] = await this.forChat(user, [idOrName]);
    return skill ?? null;
  }
}
