import { randomUUID } from 'node:crypto';
import type { AccessGrant, GrantPermission } from '../../core/access/grants.js';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { ERROR, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import { ADMIN_CONFIG_KEYS } from '../auths/settings.js';
import type { UsersService } from '../users/service.js';
import { type FolderPatch, type FolderRecord, FolderStore } from './store.js';

export type { FolderRecord } from './store.js';

type Json = Record<string, unknown>;

const RESOURCE = 'folder';

/**
 * Only admins may open a folder to every user: the reference names no public
 * permission for folders, so no user holds this one.
 */
const PUBLIC_FOLDERS_PERMISSION = 'sharing.public_folders';

export interface FolderForm {
  name: string;
  data?: Json | null;
  meta?: Json | null;
  parent_id?: string | null;
}

export interface FolderUpdateForm {
  name?: string | null;
  data?: Json | null;
  meta?: Json | null;
}

/** FolderNameIdResponse: the sidebar's view of a folder. */
export interface FolderNameId {
  id: string;
  name: string;
  meta: { icon: unknown } | null;
  parent_id: string | null;
  is_expanded: boolean;
  unread_count: number;
  created_at: number;
  updated_at: number;
}

export type FolderWithGrants = FolderRecord & { access_grants: AccessGrant[] };

/** SharedFolderResponse: a folder someone else shared with the user. */
export interface SharedFolder {
  id: string;
  name: string;
  parent_id: string | null;
  user_id: string;
  owner_name: string | null;
  permission: GrantPermission;
  access_grants: AccessGrant[];
  is_expanded: boolean;
  meta: Json | null;
  created_at: number;
  updated_at: number;
}

/** A chat in a shared folder as `GET /folders/{id}/shared/chats` lists it. */
export interface FolderChat {
  id: string;
  title: string;
  user_id: string;
  updated_at: number;
  created_at: number;
  last_read_at: number | null;
  owner_name: string;
  active: boolean;
  readonly: boolean;
}

export interface FolderChatsPage {
  chats: FolderChat[];
  total: number;
}

/** What folders need of chats; the chats service provides it (connected in app.ts). */
export interface FolderChats {
  countInFolders(ownerId: string, folderIds: string[], db?: Db): Promise<number>;
  deleteInFolders(ownerId: string, folderIds: string[], db: Db): Promise<void>;
  moveOutOfFolders(ownerId: string, folderIds: string[], db: Db): Promise<void>;
  markReadInFolders(userId: string, folderIds: string[], db?: Db): Promise<number>;
  unreadByFolder(userId: string, folderIds: string[], db?: Db): Promise<Map<string, number>>;
  /** Every user's chats filed in a folder, as `reader` sees them. */
  folderChats(reader: UserRecord, folderId: string, options: { offset: number; limit: number; sortBy: string; sortDir: string; withTotal: boolean }): Promise<FolderChatsPage>;
}

const normalizeName = (name: string) => name.replace(/[\s_]+/g, ' ').trim().toLowerCase();

/**
 * Folders: a user's tree of chat folders, shared with others through access
 * grants (resource type `folder`; a grant on a folder reaches its subfolders).
 */
export class FoldersService {
  private chatsOfFolders: FolderChats | null = null;

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
  ) {}

  /** Chats and folders need each other; the chats service is connected once both exist. */
  connect(chats: FolderChats): void {
    this.chatsOfFolders = chats;
  }

  private get chats(): FolderChats {
    if (!this.chatsOfFolders) throw new Error('FoldersService used before the chats service was connected');
    return this.chatsOfFolders;
  }

  private store(db: Db = this.core.db): FolderStore {
    return new FolderStore(db);
  }

  /** The folders feature is on and the user may use it (check_folders_permission): 403 otherwise. */
  async requireFeature(user: UserRecord): Promise<void> {
    if (this.core.settings.get<boolean>(ADMIN_CONFIG_KEYS.ENABLE_FOLDERS) === false) throw forbidden(ERROR.ACCESS_PROHIBITED);
    if (!(await this.access.hasPermission(user, 'features.folders'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  byId(id: string, db?: Db): Promise<FolderRecord | null> {
    return this.store(db).byId(id);
  }

  private async require(id: string, db?: Db): Promise<FolderRecord> {
    const folder = await this.store(db).byId(id);
    if (!folder) throw notFound();
    return folder;
  }

  // ---- access ------------------------------------------------------------

  /** The folder and its ancestors, nearest first (a missing or looping parent ends the chain). */
  private async chainOf(folder: FolderRecord, db?: Db): Promise<FolderRecord[]> {
    const chain = [folder];
    if (!folder.parent_id) return chain;
    const byId = new Map((await this.store(db).ofUser(folder.user_id)).map((f) => [f.id, f]));
    let parent = folder.parent_id ? byId.get(folder.parent_id) : undefined;
    while (parent && !chain.includes(parent)) {
      chain.push(parent);
      parent = parent.parent_id ? byId.get(parent.parent_id) : undefined;
    }
    return chain;
  }

  /** Owner, or a grant on the folder or any ancestor (has_folder_access; admins are not implied). */
  async hasAccess(user: UserRecord, folder: FolderRecord, permission: GrantPermission, db?: Db): Promise<boolean> {
    if (folder.user_id === user.id) return true;
    const chain = await this.chainOf(folder, db);
    const subject = { ...(await this.access.subjectOf(user, db)), bypass: false };
    const granted = await this.access.accessibleIds(subject, RESOURCE, permission, chain.map((f) => f.id), db);
    return granted.size > 0;
  }

  /** Whether the user may file a chat in this folder: their own, or one shared with them for writing. */
  async canFileIn(user: UserRecord, folderId: string, db?: Db): Promise<boolean> {
    const folder = await this.store(db).byId(folderId);
    return folder !== null && (folder.user_id === user.id || (await this.hasAccess(user, folder, 'write', db)));
  }

  /** Whether the user may read the chats filed in this folder. */
  async canRead(user: UserRecord, folderId: string, db?: Db): Promise<boolean> {
    const folder = await this.store(db).byId(folderId);
    return folder !== null && (await this.hasAccess(user, folder, 'read', db));
  }

  /** Which of `ids` are folders of the user. */
  async ownIds(userId: string, ids: string[], db?: Db): Promise<Set<string>> {
    const folders = await this.store(db).byIds([...new Set(ids)]);
    return new Set(folders.filter((f) => f.user_id === userId).map((f) => f.id));
  }

  /** A folder of its owner and every folder below it, the folder first. */
  async subtreeIds(ownerId: string, folderId: string, db?: Db): Promise<string[]> {
    const folders = await this.store(db).ofUser(ownerId);
    return subtree(folders, folderId);
  }

  /** Folders of the user whose names match any of `names` (`_` and spaces alike, any case), with their subfolders. */
  async idsByNames(userId: string, names: string[]): Promise<string[]> {
    const wanted = new Set(names.map(normalizeName));
    if (wanted.size === 0) return [];
    const folders = await this.store().ofUser(userId);
    const ids = new Set<string>();
    for (const folder of folders) if (wanted.has(normalizeName(folder.name))) for (const id of subtree(folders, folder.id)) ids.add(id);
    return [...ids];
  }

  /** Unread chats per folder of the user, each folder counting its subfolders' too. */
  async unreadCounts(userId: string, db?: Db): Promise<Record<string, number>> {
    const folders = await this.store(db).ofUser(userId);
    const parentOf = new Map(folders.map((f) => [f.id, f.parent_id]));
    const counts: Record<string, number> = Object.fromEntries(folders.map((f) => [f.id, 0]));
    const direct = await this.chats.unreadByFolder(userId, [...parentOf.keys()], db);
    for (const [folderId, unread] of direct) {
      const seen = new Set<string>();
      let current: string | null | undefined = folderId;
      while (current && !seen.has(current)) {
        seen.add(current);
        if (current in counts) counts[current] += unread;
        current = parentOf.get(current);
      }
    }
    return counts;
  }

  // ---- routes --------------------------------------------------------------

  /** `GET /folders/`: the user's folders with unread counts; a missing parent is cleared, as the reference repairs it. */
  async list(user: UserRecord): Promise<FolderNameId[]> {
    await this.requireFeature(user);
    const folders = await this.store().ofUser(user.id);
    const ids = new Set(folders.map((f) => f.id));
    // A folder whose parent is gone, or that closes a parent loop (data from before the move route
    // refused loops, the reference's #28748), would never show: it goes back to the top level, saved.
    const detached = [...folders.filter((f) => f.parent_id && !ids.has(f.parent_id)), ...loopClosers(folders)];
    for (const folder of detached) {
      folder.parent_id = null;
      folder.updated_at = this.core.clock.now();
      await this.store().update(folder.id, { parent_id: null, updated_at: folder.updated_at });
    }
    const unread = await this.unreadCounts(user.id);
    return folders.map((f) => ({
      id: f.id,
      name: f.name,
      meta: f.meta ? { icon: f.meta.icon ?? null } : null,
      parent_id: f.parent_id,
      is_expanded: f.is_expanded,
      unread_count: unread[f.id] ?? 0,
      created_at: f.created_at,
      updated_at: f.updated_at,
    }));
  }

  /**
   * `POST /folders/`. A subfolder of a folder shared with the user for writing
   * belongs to that folder's owner, so the tree stays in one owner's hands.
   */
  async create(user: UserRecord, form: FolderForm): Promise<FolderRecord> {
    await this.requireFeature(user);
    const parentId = form.parent_id ?? null;
    let ownerId = user.id;
    if (parentId) {
      const parent = await this.require(parentId);
      if (parent.user_id !== user.id) {
        if (!isAdmin(user) && !(await this.hasAccess(user, parent, 'write'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
        ownerId = parent.user_id;
      }
    }
    const now = this.core.clock.now();
    const folder: FolderRecord = {
      id: randomUUID(),
      parent_id: parentId,
      user_id: ownerId,
      name: form.name,
      items: null,
      meta: form.meta ?? null,
      data: form.data ?? null,
      is_expanded: false,
      created_at: now,
      updated_at: now,
    };
    await this.core.db.transaction().execute(async (trx) => {
      if (await this.store(trx).sibling(ownerId, parentId, form.name)) throw badRequest(ERROR.DEFAULT('Folder already exists'));
      await this.store(trx).insert(folder);
      await this.core.events.publish(
        { event: 'folder.created', actor: user, subjectId: folder.id, subjectType: 'folder', data: { name: folder.name, parent_id: folder.parent_id, owner_id: folder.user_id } },
        trx,
      );
    });
    return folder;
  }

  /**
   * `GET /folders/shared`: folders others shared with the user, with the best
   * permission held, then the folders the user shared (write: they own them),
   * each with its subfolders. The web app skips the folders it already lists as
   * the user's own; the owner's entries let it mark them shared (reference ce18eca34).
   */
  async shared(user: UserRecord): Promise<SharedFolder[]> {
    await this.requireFeature(user);
    const subject = { ...(await this.access.subjectOf(user)), bypass: false };
    const sharedWith = await this.store().sharedWith(user.id, this.access.accessFilter(subject, RESOURCE, 'read', { id: 'folder.id' }));
    const own = await this.store().ofUser(user.id);
    const ownGrants = await this.access.grantsOfMany(RESOURCE, own.map((f) => f.id));
    const sharedBy = own.filter((f) => (ownGrants.get(f.id) ?? []).length > 0);
    const roots = [...sharedWith, ...sharedBy];
    const writable = new Set([...(await this.access.accessibleIds(subject, RESOURCE, 'write', sharedWith.map((f) => f.id))), ...sharedBy.map((f) => f.id)]);
    const owners = new Map((await this.users.byIds([...new Set(roots.map((f) => f.user_id))])).map((u) => [u.id, u.name]));
    const result = new Map<string, SharedFolder>();
    const add = (folder: FolderRecord, permission: GrantPermission) => {
      if (result.has(folder.id)) return;
      result.set(folder.id, {
        id: folder.id,
        name: folder.name,
        parent_id: folder.parent_id,
        user_id: folder.user_id,
        owner_name: owners.get(folder.user_id) ?? 'Unknown',
        permission,
        access_grants: [],
        is_expanded: folder.is_expanded,
        meta: folder.meta,
        created_at: folder.created_at,
        updated_at: folder.updated_at,
      });
    };
    for (const root of roots) add(root, writable.has(root.id) ? 'write' : 'read');
    const treeOf = new Map<string, FolderRecord[]>([[user.id, own]]);
    for (const root of roots) {
      const tree = treeOf.get(root.user_id) ?? (await this.store().ofUser(root.user_id));
      treeOf.set(root.user_id, tree);
      const byId = new Map(tree.map((f) => [f.id, f]));
      for (const id of subtree(tree, root.id)) {
        const child = byId.get(id);
        if (child) add(child, writable.has(root.id) ? 'write' : 'read');
      }
    }
    return [...result.values()];
  }

  /** `GET /folders/{id}`: the folder and its grants, for its owner, admins and those it is shared with. */
  async get(user: UserRecord, id: string): Promise<FolderWithGrants> {
    await this.requireFeature(user);
    const folder = await this.require(id);
    if (folder.user_id !== user.id && !isAdmin(user) && !(await this.hasAccess(user, folder, 'read'))) throw notFound();
    return { ...folder, access_grants: await this.access.grantsOf(RESOURCE, id) };
  }

  /** `POST /folders/{id}/update`: name, and `data`/`meta` merged into the stored ones; owner, admins and writers. */
  async update(user: UserRecord, id: string, form: FolderUpdateForm): Promise<FolderRecord> {
    await this.requireFeature(user);
    const folder = await this.require(id);
    if (folder.user_id !== user.id && !isAdmin(user) && !(await this.hasAccess(user, folder, 'write'))) throw notFound();
    const patch: FolderPatch = { updated_at: this.core.clock.now() };
    if (form.name !== undefined && form.name !== null) patch.name = form.name;
    if (form.data !== undefined && form.data !== null) patch.data = { ...(folder.data ?? {}), ...form.data };
    if (form.meta !== undefined && form.meta !== null) patch.meta = { ...(folder.meta ?? {}), ...form.meta };
    return this.core.db.transaction().execute(async (trx) => {
      if (patch.name !== undefined) {
        const existing = await this.store(trx).sibling(folder.user_id, folder.parent_id, patch.name);
        if (existing && existing.id !== id) throw badRequest(ERROR.DEFAULT('Folder already exists'));
      }
      await this.store(trx).update(id, patch);
      const updated = { ...folder, ...patch };
      await this.core.events.publish({ event: 'folder.updated', actor: user, subjectId: id, subjectType: 'folder', data: { name: updated.name } }, trx);
      return updated;
    });
  }

  /**
   * `POST /folders/{id}/update/parent` (owner only): moves the folder under
   * another of the owner's folders, or to the top. A folder cannot move below itself.
   */
  async setParent(user: UserRecord, id: string, parentId: string | null): Promise<FolderRecord> {
    await this.requireFeature(user);
    const folder = await this.require(id);
    if (folder.user_id !== user.id) throw notFound();
    return this.core.db.transaction().execute(async (trx) => {
      if (parentId !== null) {
        const parent = await this.store(trx).byId(parentId);
        if (!parent || parent.user_id !== user.id) throw notFound();
        if ((await this.subtreeIds(user.id, id, trx)).includes(parentId)) throw badRequest(ERROR.DEFAULT('A folder cannot be moved into itself or its subfolders'));
      }
      const existing = await this.store(trx).sibling(user.id, parentId, folder.name);
      if (existing && existing.id !== id) throw badRequest(ERROR.DEFAULT('Folder already exists'));
      const patch = { parent_id: parentId, updated_at: this.core.clock.now() };
      await this.store(trx).update(id, patch);
      await this.core.events.publish({ event: 'folder.parent_updated', actor: user, subjectId: id, subjectType: 'folder', data: { parent_id: parentId } }, trx);
      return { ...folder, ...patch };
    });
  }

  /** `POST /folders/{id}/update/expanded`: the owner's own view; readers get the folder unchanged. No event, as the reference. */
  async setExpanded(user: UserRecord, id: string, expanded: boolean): Promise<FolderRecord> {
    await this.requireFeature(user);
    const folder = await this.require(id);
    if (folder.user_id !== user.id) {
      if (isAdmin(user) || (await this.hasAccess(user, folder, 'read'))) return folder;
      throw notFound();
    }
    const patch = { is_expanded: expanded, updated_at: this.core.clock.now() };
    await this.store().update(id, patch);
    return { ...folder, ...patch };
  }

  /**
   * `POST /folders/{id}/access/update`: replaces the folder's grants; owner and
   * admins only (writers edit the folder, not who shares it: the reference's
   * 8145774e3); grants they may not give are dropped. `sharing.folders`
   * (off by default) only shows the web app's share control: the route does not
   * read it, as the reference's does not, so an owner may share at the default.
   */
  async updateAccess(user: UserRecord, id: string, accessGrants: unknown[]): Promise<FolderWithGrants> {
    await this.requireFeature(user);
    const folder = await this.require(id);
    if (!isAdmin(user) && folder.user_id !== user.id) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const grants = await this.access.prepareGrants(user, accessGrants, { publicPermission: PUBLIC_FOLDERS_PERMISSION });
    return this.core.db.transaction().execute(async (trx) => {
      const access_grants = await this.access.replaceGrants(RESOURCE, id, grants, trx);
      await this.core.events.publish(
        { event: 'folder.access_updated', actor: user, subjectId: id, subjectType: 'folder', data: { grant_count: access_grants.length } },
        trx,
      );
      return { ...folder, access_grants };
    });
  }

  /** `GET /folders/{id}/shared/chats`: every user's chats in the folder, read-only where not the reader's. */
  async sharedChats(user: UserRecord, id: string, query: { page?: number; sort_by?: string; sort_dir?: string }) {
    await this.requireFeature(user);
    const folder = await this.require(id);
    const canWrite = folder.user_id === user.id || isAdmin(user) || (await this.hasAccess(user, folder, 'write'));
    if (!canWrite && !(await this.hasAccess(user, folder, 'read'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const paged = query.page !== undefined;
    const limit = paged ? 10 : 60;
    const offset = paged ? (query.page! - 1) * limit : 0;
    const { chats, total } = await this.chats.folderChats(user, id, {
      offset,
      limit,
      sortBy: query.sort_by ?? 'unread_updated_at',
      sortDir: query.sort_dir ?? 'desc',
      withTotal: paged,
    });
    const folder_permission: GrantPermission = canWrite ? 'write' : 'read';
    return paged ? { chats, folder_permission, total, has_more: offset + limit < total } : { chats, folder_permission };
  }

  /** `POST /folders/{id}/read`: marks the reader's chats in the folder (owners and admins: its whole subtree) read. */
  async markRead(user: UserRecord, id: string) {
    await this.requireFeature(user);
    const folder = await this.require(id);
    const whole = folder.user_id === user.id || isAdmin(user);
    if (!whole && !(await this.hasAccess(user, folder, 'read'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const folderIds = whole ? await this.subtreeIds(folder.user_id, id) : [id];
    return this.core.db.transaction().execute(async (trx) => {
      const updated_count = await this.chats.markReadInFolders(user.id, folderIds, trx);
      await this.core.events.publish(
        { event: 'folder.read', actor: user, subjectId: id, subjectType: 'folder', data: { folder_ids: folderIds, updated_count } },
        trx,
      );
      return { folder_id: id, folder_ids: folderIds, updated_count, folder_unread_counts: await this.unreadCounts(user.id, trx) };
    });
  }

  /**
   * `DELETE /folders/{id}`: the folder and its subfolders, with the owner's chats
   * in them (or those moved out, `delete_contents=false`). Owner or admin; a user
   * deleting chats needs `chat.delete`.
   */
  async delete(user: UserRecord, id: string, deleteContents: boolean): Promise<boolean> {
    await this.requireFeature(user);
    const folder = await this.require(id);
    if (folder.user_id !== user.id && !isAdmin(user)) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const ownerId = folder.user_id;
    const folderIds = await this.subtreeIds(ownerId, id);
    if (deleteContents && !isAdmin(user) && (await this.chats.countInFolders(ownerId, folderIds)) > 0) {
      if (!(await this.access.hasPermission(user, 'chat.delete'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    }
    await this.core.db.transaction().execute(async (trx) => {
      if (deleteContents) await this.chats.deleteInFolders(ownerId, folderIds, trx);
      else await this.chats.moveOutOfFolders(ownerId, folderIds, trx);
      for (const folderId of folderIds) await this.access.deleteGrantsOf(RESOURCE, folderId, trx);
      await this.store(trx).delete(folderIds);
      await this.core.events.publish(
        { event: 'folder.deleted', actor: user, subjectId: id, subjectType: 'folder', data: { folder_ids: folderIds, delete_contents: deleteContents } },
        trx,
      );
    });
    return true;
  }
}

/**
 * One folder of each parent loop in `folders`: walking up from each folder in
 * order, the first folder met twice. Detaching it makes the loop a tree again,
 * keeping the folders below it where they are.
 */
function loopClosers(folders: FolderRecord[]): FolderRecord[] {
  const byId = new Map(folders.map((f) => [f.id, f]));
  const rooted = new Set<string>();
  const closers: FolderRecord[] = [];
  for (const start of folders) {
    const path: string[] = [];
    let current: FolderRecord | undefined = start;
    while (current && !rooted.has(current.id) && !path.includes(current.id)) {
      path.push(current.id);
      current = current.parent_id ? byId.get(current.parent_id) : undefined;
    }
    if (current && path.includes(current.id)) closers.push(current);
    for (const id of path) rooted.add(id);
  }
  return closers;
}

/** `rootId` and every folder below it in `folders`, breadth first (loops are cut). */
function subtree(folders: FolderRecord[], rootId: string): string[] {
  if (!folders.some((f) => f.id === rootId)) return [];
  const children = new Map<string, string[]>();
  for (const f of folders) if (f.parent_id) children.set(f.parent_id, [...(children.get(f.parent_id) ?? []), f.id]);
  const ids = [rootId];
  const seen = new Set(ids);
  for (let i = 0; i < ids.length; i++) {
    for (const child of children.get(ids[i]) ?? []) {
      if (!seen.has(child)) {
        seen.add(child);
        ids.push(child);
      }
    }
  }
  return ids;
}
