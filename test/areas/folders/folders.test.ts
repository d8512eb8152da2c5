import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { type Account, addUser, as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { NOT_FOUND, PROHIBITED, UNKNOWN, newChat, setDefaultPermission } from '../chats/fixtures.js';

const world = useServer({
  admin: 'Folder Admin',
  users: { alice: ['user', 'Alice Folders'], bob: ['user', 'Bob Folders'], carol: ['user', 'Carol Folders'] },
  freshEvents: true,
});

let counter = 0;

async function folder(owner: Account, body: Record<string, unknown> = {}) {
  const res = await world.api.post('/api/v1/folders/', { name: `Folder ${++counter}`, ...body }, as(owner));
  expect(res.status, res.text).toBe(200);
  world.takeEvents();
  return res.body;
}

async function share(owner: Account, folderId: string, grants: { principal_id: string; permission: string }[]) {
  const res = await world.api.post(
    `/api/v1/folders/${folderId}/access/update`,
    { access_grants: grants.map((g) => ({ principal_type: 'user', ...g })) },
    as(owner),
  );
  expect(res.status, res.text).toBe(200);
  world.takeEvents();
  return res.body;
}

describe('POST /api/v1/folders/', () => {
  it('creates a folder and publishes folder.created', async () => {
    const res = await world.api.post('/api/v1/folders/', { name: 'Projects', meta: { icon: '📁' }, data: { note: 1 } }, as(world.alice));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      id: expect.any(String),
      parent_id: null,
      user_id: world.alice.id,
      name: 'Projects',
      items: null,
      meta: { icon: '📁' },
      data: { note: 1 },
      is_expanded: false,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    expect(world.takeEvents()).toMatchObject([{ event: 'folder.created', subject: { type: 'folder', id: res.body.id }, data: { name: 'Projects', parent_id: null, owner_id: world.alice.id } }]);
  });

  it('refuses a second folder of the same name (any case) under the same parent', async () => {
    const parent = await folder(world.alice, { name: 'Parent' });
    await folder(world.alice, { name: 'Notes', parent_id: parent.id });
    const dup = await world.api.post('/api/v1/folders/', { name: 'NOTES', parent_id: parent.id }, as(world.alice));
    expect(dup.status).toBe(400);
    expect(dup.body).toEqual({ detail: ERROR.DEFAULT('Folder already exists') });
    expect((await world.api.post('/api/v1/folders/', { name: 'Notes' }, as(world.alice))).status).toBe(200);
    expect((await world.api.post('/api/v1/folders/', { name: 'Parent' }, as(world.bob))).status).toBe(200);
  });

  it('validates the form (422 for missing names and unknown fields) and the parent (404)', async () => {
    expect((await world.api.post('/api/v1/folders/', {}, as(world.alice))).status).toBe(422);
    expect((await world.api.post('/api/v1/folders/', { name: 'x', colour: 'red' }, as(world.alice))).status).toBe(422);
    const res = await world.api.post('/api/v1/folders/', { name: 'x', parent_id: UNKNOWN }, as(world.alice));
    expect(res.status).toBe(404);
    expect(res.body).toEqual(NOT_FOUND);
    expect(world.takeEvents()).toEqual([]);
  });
});

describe('GET /api/v1/folders/ and /api/v1/folders/{id}', () => {
  it('lists the user’s own folders with their icon and unread counts, repairing missing parents', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Folder Lister');
    const top = await folder(user, { name: 'Top', meta: { icon: '⭐', color: 'red' } });
    await folder(user, { name: 'Child', parent_id: top.id });
    const now = Math.floor(Date.now() / 1000);
    await world.server.parley.core.db
      .insertInto('folder')
      .values({ id: 'orphan-folder', parent_id: 'gone', user_id: user.id, name: 'Orphan', items: null, meta: null, data: null, is_expanded: false, created_at: now + 100, updated_at: now + 100 })
      .execute();
    const res = await world.api.get('/api/v1/folders/', as(user));
    expect(res.status).toBe(200);
    const byName = Object.fromEntries(res.body.map((f: { name: string }) => [f.name, f]));
    expect(Object.keys(byName).sort()).toEqual(['Child', 'Orphan', 'Top']);
    expect(byName.Top).toEqual({ id: top.id, name: 'Top', meta: { icon: '⭐' }, parent_id: null, is_expanded: false, unread_count: 0, created_at: top.created_at, updated_at: top.updated_at });
    expect(byName.Child.parent_id).toBe(top.id);
    expect(byName.Orphan.parent_id).toBeNull();
    expect(res.body[2].name).toBe('Orphan');
    expect((await world.api.get('/api/v1/folders/', as(world.bob))).body.map((f: { id: string }) => f.id)).not.toContain(top.id);
  });

  it('brings a folder that closes a parent loop back to the top level, saved, keeping the healthy child below it (reference #28748)', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Loop Lister');
    const projects = await folder(user, { name: 'projects' });
    const year = await folder(user, { name: '2026', parent_id: projects.id });
    const quarter = await folder(user, { name: 'q1', parent_id: year.id });
    // A loop from before the move route refused them: projects under 2026, 2026 under projects.
    await world.server.parley.core.db.updateTable('folder').set({ parent_id: year.id }).where('id', '=', projects.id).execute();

    const listed = (await world.api.get('/api/v1/folders/', as(user))).body as { id: string; parent_id: string | null }[];
    const parentOf = new Map(listed.map((f) => [f.id, f.parent_id]));
    for (const f of listed) {
      let current: string | null | undefined = f.id;
      for (let steps = 0; current && steps <= listed.length; steps++) current = parentOf.get(current);
      expect(current, `${f.id} reaches the top level`).toBeNull();
    }
    expect(parentOf.get(quarter.id)).toBe(year.id);
    const stored = await Promise.all([projects, year].map(async (f) => (await world.api.get(`/api/v1/folders/${f.id}`, as(user))).body.parent_id));
    expect(stored).toContain(null);
    // Moving the repaired top folder into its own subtree stays refused.
    const top = stored[0] === null ? projects : year;
    const looped = await world.api.post(`/api/v1/folders/${top.id}/update/parent`, { parent_id: quarter.id }, as(user));
    expect(looped.status).toBe(400);
  });

  it('returns a folder with its grants to its owner, admins and those it is shared with; 404 to others', async () => {
    const mine = await folder(world.alice);
    const owner = await world.api.get(`/api/v1/folders/${mine.id}`, as(world.alice));
    expect(owner.body).toEqual({ ...mine, access_grants: [] });
    expect((await world.api.get(`/api/v1/folders/${mine.id}`, as(world.admin))).status).toBe(200);
    for (const [id, who] of [[mine.id, world.bob], [UNKNOWN, world.alice]] as const) {
      const res = await world.api.get(`/api/v1/folders/${id}`, as(who));
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    await share(world.alice, mine.id, [{ principal_id: world.bob.id, permission: 'read' }]);
    const shared = await world.api.get(`/api/v1/folders/${mine.id}`, as(world.bob));
    expect(shared.status).toBe(200);
    expect(shared.body.access_grants).toEqual([
      { id: expect.any(String), resource_type: 'folder', resource_id: mine.id, principal_type: 'user', principal_id: world.bob.id, permission: 'read', created_at: expect.any(Number) },
    ]);
  });

  it('is refused (403) while folders are off, and to users without features.folders', async () => {
    const mine = await folder(world.alice);
    await setDefaultPermission(world.api, world.admin, 'features', 'folders', false);
    try {
      const res = await world.api.get('/api/v1/folders/', as(world.alice));
      expect(res.status).toBe(403);
      expect(res.body).toEqual(PROHIBITED);
      expect((await world.api.get(`/api/v1/folders/${mine.id}`, as(world.alice))).status).toBe(403);
      expect((await world.api.get('/api/v1/folders/', as(world.admin))).status).toBe(200);
    } finally {
      await setDefaultPermission(world.api, world.admin, 'features', 'folders', true);
    }
    await world.server.parley.core.settings.set({ 'folders.enable': false }, 0);
    try {
      expect((await world.api.get('/api/v1/folders/', as(world.admin))).status).toBe(403);
      expect((await world.api.post('/api/v1/folders/', { name: 'x' }, as(world.alice))).status).toBe(403);
    } finally {
      await world.server.parley.core.settings.set({ 'folders.enable': true }, 0);
    }
    expect((await world.api.get('/api/v1/folders/')).status).toBe(401);
  });
});

describe('updating folders', () => {
  it('renames and merges data and meta; a taken name is a 400', async () => {
    const target = await folder(world.alice, { name: 'Old', meta: { icon: 'a' }, data: { x: 1 } });
    await folder(world.alice, { name: 'Taken' });
    const res = await world.api.post(`/api/v1/folders/${target.id}/update`, { name: 'New', meta: { color: 'blue' }, data: { y: 2 } }, as(world.alice));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ name: 'New', meta: { icon: 'a', color: 'blue' }, data: { x: 1, y: 2 } });
    expect(world.takeEvents()).toMatchObject([{ event: 'folder.updated', subject: { id: target.id }, data: { name: 'New' } }]);
    const taken = await world.api.post(`/api/v1/folders/${target.id}/update`, { name: 'taken' }, as(world.alice));
    expect(taken.status).toBe(400);
    expect((await world.api.post(`/api/v1/folders/${target.id}/update`, { name: 'NEW' }, as(world.alice))).status).toBe(200);
    expect((await world.api.post(`/api/v1/folders/${target.id}/update`, { icon: 'x' }, as(world.alice))).status).toBe(422);
  });

  it('lets writers of a shared folder update it; readers and strangers get 404', async () => {
    const target = await folder(world.alice, { name: 'Team' });
    await share(world.alice, target.id, [
      { principal_id: world.bob.id, permission: 'write' },
      { principal_id: world.carol.id, permission: 'read' },
    ]);
    expect((await world.api.post(`/api/v1/folders/${target.id}/update`, { name: 'Team 2' }, as(world.bob))).status).toBe(200);
    expect((await world.api.post(`/api/v1/folders/${target.id}/update`, { name: 'Team 3' }, as(world.carol))).status).toBe(404);
    expect((await world.api.get(`/api/v1/folders/${target.id}`, as(world.alice))).body.name).toBe('Team 2');
  });

  it('moves a folder under another of the owner’s, or to the top, never below itself', async () => {
    const a = await folder(world.alice, { name: 'Move A' });
    const b = await folder(world.alice, { name: 'Move B' });
    const child = await folder(world.alice, { name: 'Move child', parent_id: a.id });
    const moved = await world.api.post(`/api/v1/folders/${a.id}/update/parent`, { parent_id: b.id }, as(world.alice));
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.parent_id).toBe(b.id);
    expect(world.takeEvents()).toMatchObject([{ event: 'folder.parent_updated', data: { parent_id: b.id } }]);
    for (const parent of [a.id, child.id]) {
      const res = await world.api.post(`/api/v1/folders/${a.id}/update/parent`, { parent_id: parent }, as(world.alice));
      expect(res.status).toBe(400);
    }
    expect((await world.api.post(`/api/v1/folders/${a.id}/update/parent`, { parent_id: UNKNOWN }, as(world.alice))).status).toBe(404);
    expect((await world.api.post(`/api/v1/folders/${a.id}/update/parent`, { parent_id: null }, as(world.bob))).status).toBe(404);
    const top = await world.api.post(`/api/v1/folders/${a.id}/update/parent`, {}, as(world.alice));
    expect(top.body.parent_id).toBeNull();
    await folder(world.alice, { name: 'Clash', parent_id: b.id });
    const clash = await folder(world.alice, { name: 'Clash' });
    expect((await world.api.post(`/api/v1/folders/${clash.id}/update/parent`, { parent_id: b.id }, as(world.alice))).status).toBe(400);
  });

  it('keeps the expanded state for the owner only, without an event', async () => {
    const target = await folder(world.alice);
    const res = await world.api.post(`/api/v1/folders/${target.id}/update/expanded`, { is_expanded: true }, as(world.alice));
    expect(res.body.is_expanded).toBe(true);
    await share(world.alice, target.id, [{ principal_id: world.bob.id, permission: 'read' }]);
    const reader = await world.api.post(`/api/v1/folders/${target.id}/update/expanded`, { is_expanded: false }, as(world.bob));
    expect(reader.body.is_expanded).toBe(true);
    expect((await world.api.post(`/api/v1/folders/${target.id}/update/expanded`, { is_expanded: false }, as(world.carol))).status).toBe(404);
    expect((await world.api.post(`/api/v1/folders/${target.id}/update/expanded`, {}, as(world.alice))).status).toBe(422);
    expect(world.takeEvents()).toEqual([]);
  });
});

describe('POST /api/v1/folders/{id}/access/update', () => {
  it('replaces the folder’s grants and returns the folder with them', async () => {
    const target = await folder(world.alice);
    const res = await world.api.post(
      `/api/v1/folders/${target.id}/access/update`,
      { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'write' }] },
      as(world.alice),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: target.id, name: target.name, access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'write' }] });
    expect(world.takeEvents()).toMatchObject([{ event: 'folder.access_updated', subject: { type: 'folder', id: target.id }, data: { grant_count: 1 } }]);
    const cleared = await world.api.post(`/api/v1/folders/${target.id}/access/update`, { access_grants: [] }, as(world.alice));
    expect(cleared.body.access_grants).toEqual([]);
  });

  it('lets an owner share with sharing.folders at its default (off, a switch of the web app only), drops public grants for users, and keeps them for admins', async () => {
    const target = await folder(world.alice);
    const permissions = (await world.api.get('/api/v1/auths/', as(world.alice))).body.permissions;
    expect(permissions.sharing.folders).toBe(false);
    const res = await world.api.post(`/api/v1/folders/${target.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] }, as(world.alice));
    expect(res.status, res.text).toBe(200);
    expect(res.body.access_grants).toMatchObject([{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }]);
    expect((await world.api.get(`/api/v1/folders/${target.id}`, as(world.bob))).status).toBe(200);
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    expect((await world.api.post(`/api/v1/folders/${target.id}/access/update`, { access_grants: everyone }, as(world.alice))).body.access_grants).toEqual([]);
    expect((await world.api.post(`/api/v1/folders/${target.id}/access/update`, { access_grants: everyone }, as(world.admin))).body.access_grants).toHaveLength(1);
    expect((await world.api.get(`/api/v1/folders/${target.id}`, as(world.carol))).status).toBe(200);
  });

  it('is for the owner and admins (403 for writers, readers and strangers, changing nothing; 404 unknown, 400/422 bad grants)', async () => {
    const target = await folder(world.alice);
    await share(world.alice, target.id, [
      { principal_id: world.bob.id, permission: 'write' },
      { principal_id: world.carol.id, permission: 'read' },
    ]);
    const grants = { access_grants: [{ principal_type: 'user', principal_id: world.carol.id, permission: 'write' }] };
    expect((await world.api.post(`/api/v1/folders/${target.id}/access/update`, grants, as(world.carol))).status).toBe(403);
    // A writer edits the folder but does not decide who shares it (the reference's 8145774e3).
    expect((await world.api.post(`/api/v1/folders/${target.id}/access/update`, grants, as(world.bob))).status).toBe(403);
    expect((await world.api.post(`/api/v1/folders/${target.id}/access/update`, { access_grants: [] }, as(world.bob))).status).toBe(403);
    expect((await world.api.post(`/api/v1/folders/${target.id}/access/update`, grants, as(world.admin))).status).toBe(200);
    expect((await world.api.post(`/api/v1/folders/${UNKNOWN}/access/update`, grants, as(world.alice))).status).toBe(404);
    expect((await world.api.post(`/api/v1/folders/${target.id}/access/update`, { access_grants: null }, as(world.alice))).status).toBe(422);
    expect((await world.api.post(`/api/v1/folders/${target.id}/access/update`, { access_grants: [{ principal_type: 'user', principal_id: UNKNOWN, permission: 'read' }] }, as(world.alice))).status).toBe(400);
    expect((await world.api.get(`/api/v1/folders/${target.id}`, as(world.alice))).body.access_grants.map((g: { principal_id: string }) => g.principal_id)).toEqual([world.carol.id]);
  });
});

describe('shared folders', () => {
  it('lists folders others shared with the user, with their subfolders, owner and permission', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Shared With');
    const root = await folder(world.alice, { name: 'Shared root' });
    const sub = await folder(world.alice, { name: 'Shared sub', parent_id: root.id });
    const other = await folder(world.bob, { name: 'Bob shares' });
    await share(world.alice, root.id, [{ principal_id: user.id, permission: 'write' }]);
    await share(world.bob, other.id, [{ principal_id: user.id, permission: 'read' }]);
    const res = await world.api.get('/api/v1/folders/shared', as(user));
    expect(res.status).toBe(200);
    const byId = Object.fromEntries(res.body.map((f: { id: string }) => [f.id, f]));
    // Folders an admin opened to every user (earlier tests) are listed too.
    expect(Object.keys(byId)).toEqual(expect.arrayContaining([root.id, sub.id, other.id]));
    expect(byId[root.id]).toEqual({
      id: root.id,
      name: 'Shared root',
      parent_id: null,
      user_id: world.alice.id,
      owner_name: world.alice.name,
      permission: 'write',
      access_grants: [],
      is_expanded: false,
      meta: null,
      created_at: root.created_at,
      updated_at: root.updated_at,
    });
    expect(byId[sub.id]).toMatchObject({ parent_id: root.id, permission: 'write' });
    expect(byId[other.id]).toMatchObject({ owner_name: world.bob.name, permission: 'read' });
  });

  it('lists the folders the owner shared, with their subfolders, under the owner with write; not those kept or unshared', async () => {
    const owner = await addUser(world.api, world.admin, 'user', 'Sharing Owner');
    const member = await addUser(world.api, world.admin, 'user', 'Sharing Member');
    const shared = await folder(owner, { name: 'Harbour' });
    const child = await folder(owner, { name: 'Harbour sub', parent_id: shared.id });
    const kept = await folder(owner, { name: 'Kept' });
    const dropped = await folder(owner, { name: 'Dropped' });
    await share(owner, shared.id, [{ principal_id: member.id, permission: 'read' }]);
    await share(owner, dropped.id, [{ principal_id: member.id, permission: 'read' }]);
    await share(owner, dropped.id, []);

    const listed = async (who: Account) => Object.fromEntries((await world.api.get('/api/v1/folders/shared', as(who))).body.map((f: { id: string }) => [f.id, f]));
    const own = await listed(owner);
    expect(own[shared.id]).toMatchObject({ user_id: owner.id, owner_name: owner.name, permission: 'write' });
    expect(own[child.id]).toMatchObject({ parent_id: shared.id, permission: 'write' });
    expect(Object.keys(own)).not.toContain(kept.id);
    expect(Object.keys(own)).not.toContain(dropped.id);
    const theirs = await listed(member);
    expect(theirs[shared.id]).toMatchObject({ owner_name: owner.name, permission: 'read' });
    expect(theirs[child.id]).toMatchObject({ permission: 'read' });
    expect(Object.keys(theirs)).not.toContain(kept.id);
    expect(Object.keys(theirs)).not.toContain(dropped.id);
  });

  it('lets readers read the chats filed there, writers file chats and subfolders there', async () => {
    const root = await folder(world.alice, { name: 'Workspace' });
    await share(world.alice, root.id, [
      { principal_id: world.bob.id, permission: 'write' },
      { principal_id: world.carol.id, permission: 'read' },
    ]);
    const owned = await newChat(world.api, world.alice, { title: 'Alice filed' }, { folder_id: root.id });
    const filed = await newChat(world.api, world.bob, { title: 'Bob filed' }, { folder_id: root.id });
    expect(filed.folder_id).toBe(root.id);
    expect((await world.api.post('/api/v1/chats/new', { chat: {}, folder_id: root.id }, as(world.carol))).status).toBe(404);
    expect((await world.api.get(`/api/v1/chats/${owned.id}`, as(world.carol))).body.title).toBe('Alice filed');
    expect((await world.api.get(`/api/v1/chats/${owned.id}`, await addUser(world.api, world.admin, 'user', 'Nobody').then(as))).status).toBe(401);

    const sub = await world.api.post('/api/v1/folders/', { name: 'Bob made', parent_id: root.id }, as(world.bob));
    expect(sub.status).toBe(200);
    expect(sub.body.user_id).toBe(world.alice.id);
    const refused = await world.api.post('/api/v1/folders/', { name: 'Carol made', parent_id: root.id }, as(world.carol));
    expect(refused.status).toBe(403);

    const chats = await world.api.get(`/api/v1/folders/${root.id}/shared/chats`, as(world.carol));
    expect(chats.status, chats.text).toBe(200);
    expect(chats.body.folder_permission).toBe('read');
    const rows = Object.fromEntries(chats.body.chats.map((c: { id: string }) => [c.id, c]));
    expect(rows[owned.id]).toEqual({
      id: owned.id,
      title: 'Alice filed',
      user_id: world.alice.id,
      updated_at: owned.updated_at,
      created_at: owned.created_at,
      last_read_at: owned.updated_at,
      owner_name: world.alice.name,
      active: false,
      readonly: true,
    });
    expect(rows[filed.id]).toMatchObject({ owner_name: world.bob.name, readonly: true });
    const paged = await world.api.get(`/api/v1/folders/${root.id}/shared/chats?page=1`, as(world.bob));
    expect(paged.body).toMatchObject({ folder_permission: 'write', total: 2, has_more: false });
    expect(paged.body.chats.find((c: { id: string }) => c.id === filed.id).readonly).toBe(false);
    expect((await world.api.get(`/api/v1/folders/${root.id}/shared/chats`, as(world.admin))).body.folder_permission).toBe('write');
    const stranger = await addUser(world.api, world.admin, 'user', 'Stranger');
    expect((await world.api.get(`/api/v1/folders/${root.id}/shared/chats`, as(stranger))).status).toBe(403);
    expect((await world.api.get(`/api/v1/folders/${UNKNOWN}/shared/chats`, as(world.bob))).status).toBe(404);
  });

  it('marks the reader’s chats in a folder read (owners: the whole subtree)', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Folder Reader');
    const top = await folder(user, { name: 'Read top' });
    const sub = await folder(user, { name: 'Read sub', parent_id: top.id });
    const a = await newChat(world.api, user, {}, { folder_id: top.id });
    const b = await newChat(world.api, user, {}, { folder_id: sub.id });
    await world.api.post(`/api/v1/chats/${a.id}/unread`, undefined, as(user));
    await world.api.post(`/api/v1/chats/${b.id}/unread`, undefined, as(user));
    world.takeEvents();
    const res = await world.api.post(`/api/v1/folders/${top.id}/read`, undefined, as(user));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ folder_id: top.id, folder_ids: [top.id, sub.id], updated_count: 2, folder_unread_counts: { [top.id]: 0, [sub.id]: 0 } });
    expect(world.takeEvents()).toMatchObject([{ event: 'folder.read', subject: { type: 'folder', id: top.id }, data: { folder_ids: [top.id, sub.id], updated_count: 2 } }]);
    expect((await world.api.post(`/api/v1/folders/${top.id}/read`, undefined, as(world.bob))).status).toBe(403);
    expect((await world.api.post(`/api/v1/folders/${UNKNOWN}/read`, undefined, as(user))).status).toBe(404);
  });
});

describe('DELETE /api/v1/folders/{id}', () => {
  it('deletes the folder, its subfolders and the owner’s chats in them; others’ chats move out', async () => {
    const top = await folder(world.alice, { name: 'Doomed' });
    const sub = await folder(world.alice, { name: 'Doomed sub', parent_id: top.id });
    await share(world.alice, top.id, [{ principal_id: world.bob.id, permission: 'write' }]);
    const mine = await newChat(world.api, world.alice, {}, { folder_id: sub.id });
    const theirs = await newChat(world.api, world.bob, {}, { folder_id: top.id });
    const loose = await newChat(world.api, world.alice);
    world.takeEvents();
    const res = await world.api.delete(`/api/v1/folders/${top.id}`, as(world.alice));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toBe(true);
    expect(world.takeEvents()).toMatchObject([{ event: 'folder.deleted', subject: { type: 'folder', id: top.id }, data: { folder_ids: [top.id, sub.id], delete_contents: true } }]);
    expect((await world.api.get(`/api/v1/folders/${sub.id}`, as(world.alice))).status).toBe(404);
    expect((await world.api.get(`/api/v1/chats/${mine.id}`, as(world.alice))).status).toBe(401);
    expect((await world.api.get(`/api/v1/chats/${loose.id}`, as(world.alice))).status).toBe(200);
    expect((await world.api.get(`/api/v1/chats/${theirs.id}`, as(world.bob))).body.folder_id).toBeNull();
    const grants = await world.server.parley.core.db.selectFrom('access_grant').select('id').where('resource_id', '=', top.id).execute();
    expect(grants).toEqual([]);
  });

  it('moves the chats out instead with delete_contents=false', async () => {
    const top = await folder(world.alice, { name: 'Emptied' });
    const chat = await newChat(world.api, world.alice, {}, { folder_id: top.id });
    expect((await world.api.delete(`/api/v1/folders/${top.id}?delete_contents=false`, as(world.alice))).body).toBe(true);
    expect((await world.api.get(`/api/v1/chats/${chat.id}`, as(world.alice))).body.folder_id).toBeNull();
  });

  it('is for the owner and admins (403 others, 404 unknown); deleting chats needs chat.delete', async () => {
    const top = await folder(world.alice, { name: 'Guarded' });
    await share(world.alice, top.id, [{ principal_id: world.bob.id, permission: 'write' }]);
    await newChat(world.api, world.alice, {}, { folder_id: top.id });
    const res = await world.api.delete(`/api/v1/folders/${top.id}`, as(world.bob));
    expect(res.status).toBe(403);
    expect(res.body).toEqual(PROHIBITED);
    expect((await world.api.delete(`/api/v1/folders/${UNKNOWN}`, as(world.alice))).status).toBe(404);
    await setDefaultPermission(world.api, world.admin, 'chat', 'delete', false);
    try {
      expect((await world.api.delete(`/api/v1/folders/${top.id}`, as(world.alice))).status).toBe(403);
      expect((await world.api.get(`/api/v1/folders/${top.id}`, as(world.alice))).status).toBe(200);
    } finally {
      await setDefaultPermission(world.api, world.admin, 'chat', 'delete', true);
    }
    expect((await world.api.delete(`/api/v1/folders/${top.id}`, as(world.admin))).body).toBe(true);
  });

  it('goes with its owner when the user is deleted', async () => {
    const user = await addUser(world.api, world.admin, 'user', 'Folder Leaver');
    const top = await folder(user);
    expect((await world.api.delete(`/api/v1/users/${user.id}`, as(world.admin))).status).toBe(200);
    expect((await world.api.get(`/api/v1/folders/${top.id}`, as(world.admin))).status).toBe(404);
  });
});
