import { type AccessGrant, grantsToAccessControl } from '../../core/access/grants.js';
import type { AccessService, AccessSubject, SharingRule } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { type Db, isUniqueViolation } from '../../core/db/database.js';
import { ERROR, HttpError, badRequest, notFound, unauthorized } from '../../core/http/errors.js';
import { PluginError } from '../../core/python/errors.js';
import {
  type PythonHost,
  type ToolCallContext,
  type ToolCallResult,
  type ToolExtraction,
  type ValvesKind,
  rewriteImports,
} from '../../core/python/host.js';
import type { UsersService } from '../users/service.js';
import { ToolSourceFetcher, parseHttpUrl } from './load-url.js';
import { type ToolsOptions, toolsOptionsFromEnv } from './options.js';
import { PYTHON_IDENTIFIER, pluginUser, sealedUserValves, settingsWithUserValves, sourceLoadFailure, valvesHostFailure, valvesValidationFailure } from './plugin-rules.js';
import type { ToolAccessGrantsForm, ToolForm } from './schemas.js';
import { ToolRenderings } from './renderings.js';
import { type ToolRecord, ToolStore } from './store.js';
import { ValvesCipher } from './valves-crypto.js';

type Json = Record<string, unknown>;

export const TOOL_ERROR = {
  INVALID_ID: 'Only alphanumeric characters and underscores are allowed in the id',
  UPDATE_VALVES: '[ERROR: Error updating tool valves]',
  UPDATE_USER_VALVES: '[ERROR: Error updating tool user valves]',
} as const;

const RESOURCE = 'tool';
const [OPEN_LIST, COMMA, CLOSE_LIST] = ['[', ',', ']'].map((text) => Buffer.from(text));
/** The grants part of a `GET /` entry for a private tool. */
const NO_GRANTS = Buffer.from('[],"access_control":{}');
const SHARING: SharingRule = { publicPermission: 'sharing.public_tools' };

export interface ToolOwner {
  id: string;
  name: string;
  role: string;
  email: string;
}

/** A tool as records return it (ToolModel): the record without its valves, with its grants. */
export interface ToolView extends Omit<ToolRecord, 'valves'> {
  access_grants: AccessGrant[];
  access_control: ReturnType<typeof grantsToAccessControl>;
}

/** What the chat layer passes to `callTool`: the host's call context, with the caller as a user record. */
export interface ToolCallOptions extends Omit<ToolCallContext, 'user' | 'userValves' | 'caller'> {
  /** The calling user: becomes `__user__`, and their stored user valves apply. */
  user?: UserRecord | null;
}

/**
 * Tools (`/api/v1/tools`): Python sources run by the plugin host, their specs,
 * access grants and valves; and `callTool` for the chat layer. See docs/tools.md.
 */
/** The configured tool servers a user may select, as `GET /` entries (`server:<id>`, `server:mcp:<id>`). */
export interface ToolServerListing {
  listed(user: UserRecord): Promise<Record<string, unknown>[]>;
}

export class ToolsService {
  private servers: ToolServerListing | null = null;
  private readonly cipher: ValvesCipher;
  private readonly fetcher: ToolSourceFetcher;
  private readonly renderings = new ToolRenderings();

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
    private readonly python: PythonHost,
    options: ToolsOptions = toolsOptionsFromEnv(core.env.raw),
  ) {
    this.cipher = new ValvesCipher(core.env.secretKey, options.valveEncryption, (reason) =>
      core.log.warn({ reason }, 'Stored tool valves could not be decrypted; tool defaults apply'),
    );
    this.fetcher = new ToolSourceFetcher(options.loadUrl);
    python.setToolResolver(async (id) => {
      const tool = await this.store().byId(id);
      return tool ? { content: tool.content, valves: this.cipher.open(tool.valves), owner: tool.user_id } : null;
    });
    access.registerPreviewCatalog('tools', { resourceType: RESOURCE, list: (db) => new ToolStore(db).names() });
  }

  private store(db: Db = this.core.db): ToolStore {
    return new ToolStore(db);
  }

  /** Tool servers join the tool list once the chat layer that runs them exists. */
  connectServers(servers: ToolServerListing): void {
    this.servers = servers;
  }

  async close(): Promise<void> {
    await this.fetcher.close();
  }

  // ---- rules ---------------------------------------------------------------

  /** Admins, owners and write-grant holders, whatever BYPASS_ADMIN_ACCESS_CONTROL says (the reference's routes). */
  private async canWrite(user: UserRecord, tool: ToolRecord): Promise<boolean> {
    return isAdmin(user) || (await this.access.hasAccess(user, RESOURCE, tool.id, 'write', tool.user_id));
  }

  private async canRead(user: UserRecord, tool: ToolRecord): Promise<boolean> {
    return isAdmin(user) || (await this.access.hasAccess(user, RESOURCE, tool.id, 'read', tool.user_id));
  }

  /** Writing Python (create, a content change) needs `workspace.tools` or `workspace.tools_import`. */
  private async mayAuthor(user: UserRecord): Promise<boolean> {
    return (await this.access.hasPermission(user, 'workspace.tools')) || (await this.access.hasPermission(user, 'workspace.tools_import'));
  }

  private async require(id: string, missingStatus: 401 | 404): Promise<ToolRecord> {
    const tool = await this.store().byId(id);
    if (!tool) throw new HttpError(missingStatus, ERROR.NOT_FOUND);
    return tool;
  }

  /** Loads the source in the plugin host; a source that does not load is the caller's 400 with the Python message. */
  private async extract(user: UserRecord, id: string, content: string): Promise<ToolExtraction> {
    try {
      return await this.python.extract(id, content, user.id);
    } catch (error) {
      throw sourceLoadFailure(error);
    }
  }

  private view(tool: ToolRecord, grants: AccessGrant[]): ToolView {
    return {
      id: tool.id,
      user_id: tool.user_id,
      name: tool.name,
      content: tool.content,
      specs: tool.specs,
      meta: tool.meta,
      access_grants: grants,
      access_control: grantsToAccessControl(grants),
      updated_at: tool.updated_at,
      created_at: tool.created_at,
    };
  }

  private async owners(userIds: string[]): Promise<Map<string, ToolOwner>> {
    const users = await this.users.byIds([...new Set(userIds)]);
    return new Map(users.map((u) => [u.id, { id: u.id, name: u.name, role: u.role, email: u.email }]));
  }

  /** Tools the subject may read (rendered), with their grants and owners. */
  private async readable(subject: AccessSubject) {
    const filter = subject.bypass ? null : this.access.accessFilter(subject, RESOURCE, 'read', { id: 'tool.id', owner: 'tool.user_id' });
    const heads = await this.store().heads(filter);
    const tools = await this.renderings.of(heads, (stale) => this.store().listed(stale));
    if (subject.bypass) this.renderings.retain(heads);
    const [grants, owners] = await Promise.all([
      this.access.grantsOfMany(
        RESOURCE,
        tools.map((t) => t.id),
      ),
      this.owners(tools.map((t) => t.user_id)),
    ]);
    return { tools, grants, owners };
  }

  // ---- listings --------------------------------------------------------------

  /**
   * `GET /`: the tools the user may read (admins with BYPASS_ADMIN_ACCESS_CONTROL:
   * all), newest change first, as a JSON array already serialised (UTF-8): only
   * the grants and the owner are written per request, the rest is rendered once
   * per version of a tool.
   */
  async listBody(user: UserRecord): Promise<Buffer> {
    if (!this.core.env.enablePlugins) return Buffer.from('[]');
    const { tools, grants, owners } = await this.readable(await this.access.subjectOf(user));
    const ownerJson = new Map<string, Buffer>();
    const parts: Buffer[] = [OPEN_LIST];
    for (const [index, tool] of tools.entries()) {
      const toolGrants = grants.get(tool.id);
      const access = toolGrants?.length
        ? Buffer.from(`${JSON.stringify(toolGrants)},"access_control":${JSON.stringify(grantsToAccessControl(toolGrants))}`)
        : NO_GRANTS;
      let owner = ownerJson.get(tool.user_id);
      if (!owner) ownerJson.set(tool.user_id, (owner = Buffer.from(JSON.stringify(owners.get(tool.user_id) ?? null))));
      if (index > 0) parts.push(COMMA);
      parts.push(tool.head, access, tool.middle, owner, tool.tail);
    }
    // As the reference's `GET /`: the configured servers the user may use, after the tools.
    for (const entry of (await this.servers?.listed(user)) ?? []) {
      if (parts.length > 1) parts.push(COMMA);
      parts.push(Buffer.from(JSON.stringify(entry)));
    }
    parts.push(CLOSE_LIST);
    return Buffer.concat(parts);
  }

  /** `GET /list` (the workspace page): the same tools with `write_access`. */
  async list(user: UserRecord) {
    if (!this.core.env.enablePlugins) return [];
    const subject = await this.access.subjectOf(user);
    const { tools, grants, owners } = await this.readable(subject);
    return tools.map((tool) => {
      const toolGrants = grants.get(tool.id) ?? [];
      return {
        id: tool.id,
        user_id: tool.user_id,
        name: tool.name,
        meta: tool.meta,
        access_grants: toolGrants,
        access_control: grantsToAccessControl(toolGrants),
        updated_at: tool.updated_at,
        created_at: tool.created_at,
        user: owners.get(tool.user_id) ?? null,
        has_user_valves: tool.meta.has_user_valves,
        write_access: subject.bypass || tool.user_id === user.id || toolGrants.some((g) => g.permission === 'write' && this.names(subject, g)),
        specs: tool.specs,
      };
    });
  }

  /** Whether a grant names the subject: public, the user, or one of their groups. */
  private names(subject: AccessSubject, grant: AccessGrant): boolean {
    if (grant.principal_type === 'user') return grant.principal_id === '*' || grant.principal_id === subject.userId;
    return grant.principal_type === 'group' && subject.groupIds.includes(grant.principal_id);
  }

  /** `GET /export`: whole records of the tools the user may read (admins with the bypass: all). */
  async export(user: UserRecord): Promise<ToolView[]> {
    if (!(await this.access.hasPermission(user, 'workspace.tools_export'))) throw unauthorized(ERROR.UNAUTHORIZED);
    const subject = await this.access.subjectOf(user);
    const tools = await this.store().records(
      subject.bypass ? null : this.access.accessFilter(subject, RESOURCE, 'read', { id: 'tool.id', owner: 'tool.user_id' }),
    );
    const grants = await this.access.grantsOfMany(
      RESOURCE,
      tools.map((t) => t.id),
    );
    return tools.map((tool) => this.view(tool, grants.get(tool.id) ?? []));
  }

  // ---- records -------------------------------------------------------------

  /** `POST /create`: checks, loads the source, stores the tool with its specs and grants. */
  async create(user: UserRecord, form: ToolForm) {
    if (!(await this.mayAuthor(user))) throw unauthorized(ERROR.UNAUTHORIZED);
    if (!PYTHON_IDENTIFIER.test(form.id)) throw badRequest(TOOL_ERROR.INVALID_ID);
    const id = form.id.toLowerCase();
    if (await this.store().exists(id)) throw badRequest(ERROR.ID_TAKEN);
    const grants = (await this.access.grantsOfForm(user, form, RESOURCE, SHARING)) ?? [];
    const content = rewriteImports(form.content);
    const extraction = await this.extract(user, id, content);
    const now = this.core.clock.now();
    const tool: ToolRecord = {
      id,
      user_id: user.id,
      name: form.name,
      content,
      specs: extraction.specs as unknown as Json[],
      meta: { description: form.meta.description ?? null, manifest: extraction.manifest, has_user_valves: extraction.hasUserValves },
      valves: null,
      updated_at: now,
      created_at: now,
    };
    const view = await this.core.db
      .transaction()
      .execute(async (trx) => {
        await this.store(trx).insert(tool);
        const stored = await this.access.replaceGrants(RESOURCE, id, grants, trx);
        await this.core.events.publish({ event: 'tool.created', actor: user, subjectId: id, subjectType: 'tool', data: { name: tool.name } }, trx);
        return this.view(tool, stored);
      })
      .catch((error: unknown) => {
        // Another create of the same id got there first.
        if (isUniqueViolation(error)) throw badRequest(ERROR.ID_TAKEN);
        throw error;
      });
    const { content: _content, specs: _specs, ...response } = view;
    return response;
  }

  /** `GET /id/{id}`: admins, owners and readers; the source only for those who may change it. */
  async get(user: UserRecord, id: string) {
    const tool = await this.require(id, 404);
    if (!(await this.canRead(user, tool))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    const write = await this.access.hasAccess(user, RESOURCE, id, 'write', tool.user_id);
    const { content, ...view } = this.view(tool, await this.access.grantsOf(RESOURCE, id));
    return { ...view, user: null, has_user_valves: tool.meta.has_user_valves, write_access: write, ...(write ? { content } : {}) };
  }

  /**
   * `POST /id/{id}/update`: the path names the tool (the body's id is ignored).
   * The source is loaded again even when unchanged; changing it needs the
   * authoring permission. Grants change only when the form names them.
   */
  async update(user: UserRecord, id: string, form: ToolForm): Promise<ToolView> {
    const tool = await this.require(id, 401);
    if (!(await this.canWrite(user, tool))) throw unauthorized(ERROR.UNAUTHORIZED);
    if (form.content !== tool.content && !(await this.mayAuthor(user))) throw unauthorized(ERROR.UNAUTHORIZED);
    const grants = await this.access.grantsOfForm(user, form, RESOURCE, SHARING);
    const content = rewriteImports(form.content);
    const extraction = await this.extract(user, id, content);
    const now = this.core.clock.now();
    const fields = {
      name: form.name,
      content,
      specs: extraction.specs as unknown as Json[],
      meta: { description: form.meta.description ?? null, manifest: extraction.manifest, has_user_valves: extraction.hasUserValves },
    };
    return this.core.db.transaction().execute(async (trx) => {
      // Deleted meanwhile: answer as for a missing tool.
      if (!(await this.store(trx).update(id, fields, now))) throw unauthorized(ERROR.NOT_FOUND);
      const stored = grants ? await this.access.replaceGrants(RESOURCE, id, grants, trx) : await this.access.grantsOf(RESOURCE, id, trx);
      await this.core.events.publish({ event: 'tool.updated', actor: user, subjectId: id, subjectType: 'tool', data: { name: fields.name } }, trx);
      return this.view({ ...tool, ...fields, updated_at: now }, stored);
    });
  }

  /** `POST /id/{id}/access/update`: replaces the grants (an empty list makes the tool private). */
  async updateAccess(user: UserRecord, id: string, form: ToolAccessGrantsForm): Promise<ToolView> {
    const tool = await this.require(id, 404);
    if (!(await this.canWrite(user, tool))) throw unauthorized(ERROR.UNAUTHORIZED);
    const grants = await this.access.prepareGrants(user, form.access_grants, SHARING);
    return this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).exists(id))) throw notFound();
      const stored = await this.access.replaceGrants(RESOURCE, id, grants, trx);
      await this.core.events.publish({ event: 'tool.access_updated', actor: user, subjectId: id, subjectType: 'tool', data: { name: tool.name } }, trx);
      return this.view(tool, stored);
    });
  }

  /** `DELETE /id/{id}/delete`: the tool and its grants (user valves stay in users' settings, as in the reference). */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    const tool = await this.require(id, 401);
    if (!(await this.canWrite(user, tool))) throw unauthorized(ERROR.UNAUTHORIZED);
    const deleted = await this.core.db.transaction().execute(async (trx) => {
      await this.access.deleteGrantsOf(RESOURCE, id, trx);
      const removed = await this.store(trx).delete(id);
      if (removed) await this.core.events.publish({ event: 'tool.deleted', actor: user, subjectId: id, subjectType: 'tool', data: { name: tool.name } }, trx);
      return removed;
    });
    this.python.forget(id);
    this.renderings.forget(id);
    return deleted;
  }

  /** `POST /load/url` (admins): a tool's source fetched for the create page; nothing is stored. */
  loadUrl(url: string): Promise<{ name: string; content: string }> {
    return this.fetcher.load(parseHttpUrl(url));
  }

  // ---- valves ----------------------------------------------------------------

  /** `GET /id/{id}/valves`: the stored admin valves; null when none were ever set. */
  async valves(user: UserRecord, id: string): Promise<Json | null> {
    const tool = await this.require(id, 404);
    if (!(await this.canWrite(user, tool))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    return this.cipher.open(tool.valves);
  }

  /** `GET /id/{id}/valves/spec` and `/valves/user/spec`: the class's JSON schema, null without the class. */
  async valvesSpec(user: UserRecord, id: string, kind: ValvesKind): Promise<Json | null> {
    const tool = await this.require(id, 404);
    const allowed = kind === 'valves' ? await this.canWrite(user, tool) : await this.canRead(user, tool);
    if (!allowed) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    try {
      return await this.python.valvesSpec(this.hostTool(tool), kind, pluginUser(user), user.id);
    } catch (error) {
      throw valvesHostFailure(error);
    }
  }

  /**
   * `POST /id/{id}/valves/update`: the keys sent (nulls dropped), validated and
   * coerced by the tool's `Valves`, replace the stored valves.
   */
  async updateValves(user: UserRecord, id: string, body: Json): Promise<Json> {
    const tool = await this.require(id, 401);
    if (!(await this.canWrite(user, tool))) throw badRequest(ERROR.ACCESS_PROHIBITED);
    const valves = await this.validate(user, tool, 'valves', body);
    const now = this.core.clock.now();
    await this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).setValves(id, this.cipher.seal(valves), now))) throw unauthorized(ERROR.NOT_FOUND);
      await this.core.events.publish({ event: 'tool.valves_updated', actor: user, subjectId: id, subjectType: 'tool' }, trx);
    });
    return valves;
  }

  /** `GET /id/{id}/valves/user`: the caller's own valves for the tool; null when they never set any. */
  async userValves(user: UserRecord, id: string): Promise<Json | null> {
    const tool = await this.require(id, 404);
    if (!(await this.canRead(user, tool))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    return this.storedUserValves(user, id);
  }

  /** `POST /id/{id}/valves/user/update`: stored in the caller's settings (`settings.tools.valves[id]`). */
  async updateUserValves(user: UserRecord, id: string, body: Json): Promise<Json> {
    const tool = await this.require(id, 404);
    if (!(await this.canRead(user, tool))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    const valves = await this.validate(user, tool, 'user', body);
    await this.core.db.transaction().execute(async (trx) => {
      const current = await this.users.byId(user.id, trx);
      if (!current) throw badRequest(ERROR.USER_NOT_FOUND);
      const settings = settingsWithUserValves(current.settings, 'tools', id, this.cipher.seal(valves));
      await this.users.update(user.id, { settings }, trx);
      await this.core.events.publish(
        { event: 'tool.valves_updated', actor: user, subjectId: id, subjectType: 'tool', data: { scope: 'user' } },
        trx,
      );
    });
    return valves;
  }

  private storedUserValves(user: UserRecord, id: string): Json | null {
    return this.cipher.open(sealedUserValves(user, 'tools', id));
  }

  private async validate(user: UserRecord, tool: ToolRecord, kind: ValvesKind, body: Json): Promise<Json> {
    try {
      return await this.python.validateValves(this.hostTool(tool), kind, body, user.id);
    } catch (error) {
      throw valvesValidationFailure(error, kind, TOOL_ERROR);
    }
  }

  /** What the plugin host runs: the source, the admin valves, and the owner its workers are keyed by. */
  private hostTool(tool: ToolRecord) {
    return { id: tool.id, content: tool.content, valves: this.cipher.open(tool.valves), owner: tool.user_id };
  }

  // ---- execution ---------------------------------------------------------------

  /**
   * Calls one function of a stored tool, with the tool's admin valves and the
   * calling user's user valves applied (for the chat layer, which checks that the
   * user may use the tool). Fails with PluginError (`tool_not_found`,
   * `function_not_found`, `python_error`, `timeout`, ...).
   */
  async callTool(toolId: string, functionName: string, args: Json, options: ToolCallOptions = {}): Promise<ToolCallResult> {
    const tool = await this.store().byId(toolId);
    if (!tool) throw new PluginError('tool_not_found', `Tool not found: ${toolId}`);
    const { user, ...context } = options;
    return this.python.callTool(this.hostTool(tool), functionName, args, {
      ...context,
      // The tool's calls into Parley (the open_webui package) run as this user, during this call only.
      caller: user ?? null,
      user: user ? pluginUser(user) : null,
      userValves: user ? this.storedUserValves(user, toolId) : null,
    });
  }
}
