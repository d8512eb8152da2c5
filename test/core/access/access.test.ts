import { beforeAll, describe, expect, it } from 'vitest';
import type { GrantSpec } from '../../../src/core/access/grants.js';
import type { AccessService } from '../../../src/core/access/service.js';
import type { UserRecord } from '../../../src/core/auth/user.js';
import type { Db } from '../../../src/core/db/database.js';
import { withServer } from '../../helpers/server.js';
import { type Account, addUser, signup } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/**
 * The access-grant rules against a real database: who may read and write a
 * resource (owner, admin, direct grant, group grant, public, nobody), the
 * listing helpers, and which grants an actor may give.
 */
const TYPE = 'tool';

const world = useServer({
  admin: 'Access Admin',
  users: {
    owner: ['user', 'Owner'],
    reader: ['user', 'Reader'],
    writer: ['user', 'Writer'],
    groupReader: ['user', 'Group Reader'],
    groupWriter: ['user', 'Group Writer'],
    stranger: ['user', 'Stranger'],
    pending: ['pending', 'Pending'],
  },
});

let access: AccessService;
let db: Db;
let admin: UserRecord;
let owner: UserRecord;
let reader: UserRecord;
let writer: UserRecord;
let groupReader: UserRecord;
let groupWriter: UserRecord;
let stranger: UserRecord;
let pendingUser: UserRecord;
let readGroup: string;
let writeGroup: string;

const g = (principal_type: GrantSpec['principal_type'], principal_id: string, permission: GrantSpec['permission']): GrantSpec => ({
  principal_type,
  principal_id,
  permission,
});

async function groupWith(name: string, members: Account[], permissions: Record<string, unknown> | null = null): Promise<string> {
  const res = await world.api.post('/api/v1/groups/create', { name, description: '', permissions }, { token: world.admin.token });
  await world.api.post(`/api/v1/groups/id/${res.body.id}/users/add`, { user_ids: members.map((m) => m.id) }, { token: world.admin.token });
  return res.body.id;
}

beforeAll(async () => {
  access = world.server.parley.services.access;
  db = world.server.parley.core.db;
  readGroup = await groupWith('Readers', [world.groupReader]);
  writeGroup = await groupWith('Writers', [world.groupWriter]);
  admin = await world.record(world.admin);
  owner = await world.record(world.owner);
  reader = await world.record(world.reader);
  writer = await world.record(world.writer);
  groupReader = await world.record(world.groupReader);
  groupWriter = await world.record(world.groupWriter);
  stranger = await world.record(world.stranger);
  pendingUser = await world.record(world.pending);
});

describe('hasAccess matrix', () => {
  const resource = 'matrix-tool';

  beforeAll(async () => {
    await db.transaction().execute((trx) =>
      access.replaceGrants(
        TYPE,
        resource,
        [g('user', reader.id, 'read'), g('user', writer.id, 'write'), g('group', readGroup, 'read'), g('group', writeGroup, 'write')],
        trx,
      ),
    );
  });

  const cases: [string, () => UserRecord, boolean, boolean][] = [
    // who, user, may read, may write
    ['owner', () => owner, true, true],
    ['admin (bypass on)', () => admin, true, true],
    ['direct read grant', () => reader, true, false],
    ['direct write grant (write implies read)', () => writer, true, true],
    ['group read grant', () => groupReader, true, false],
    ['group write grant', () => groupWriter, true, true],
    ['no grant', () => stranger, false, false],
    ['pending user without grant', () => pendingUser, false, false],
  ];

  for (const [who, user, read, write] of cases) {
    it(`${who}: read ${read}, write ${write}`, async () => {
      expect(await access.hasAccess(user(), TYPE, resource, 'read', owner.id)).toBe(read);
      expect(await access.hasAccess(user(), TYPE, resource, 'write', owner.id)).toBe(write);
    });
  }

  it('ignores grants on other resources and other resource types', async () => {
    expect(await access.hasAccess(reader, TYPE, 'other-tool', 'read', owner.id)).toBe(false);
    expect(await access.hasAccess(reader, 'model', resource, 'read', owner.id)).toBe(false);
  });

  it('counts ownership only when the owner id is given', async () => {
    expect(await access.hasAccess(owner, TYPE, resource, 'read')).toBe(false);
    expect(await access.hasAccess(owner, TYPE, resource, 'read', null)).toBe(false);
  });

  it('uses given group ids instead of looking them up', async () => {
    expect(await access.hasAccess(stranger, TYPE, resource, 'write', owner.id, { groupIds: [writeGroup] })).toBe(true);
    expect(await access.hasAccess(groupWriter, TYPE, resource, 'read', owner.id, { groupIds: [] })).toBe(false);
  });
});

describe('public grants', () => {
  it('public read lets every user read but not write', async () => {
    await access.replaceGrants(TYPE, 'public-read', [g('user', '*', 'read')], db);
    for (const user of [stranger, reader, groupWriter]) {
      expect(await access.hasAccess(user, TYPE, 'public-read', 'read')).toBe(true);
      expect(await access.hasAccess(user, TYPE, 'public-read', 'write')).toBe(false);
    }
  });

  it('public write lets every user write (and read)', async () => {
    await access.replaceGrants(TYPE, 'public-write', [g('user', '*', 'read'), g('user', '*', 'write')], db);
    expect(await access.hasAccess(stranger, TYPE, 'public-write', 'write')).toBe(true);
    expect(await access.hasAccess(stranger, TYPE, 'public-write', 'read')).toBe(true);
  });

  it('an open anyone:* grant is not a signed-in grant; callers ask for it explicitly', async () => {
    await access.replaceGrants('shared_chat', 'open-chat', [g('anyone', '*', 'read')], db);
    expect(await access.hasAccess(stranger, 'shared_chat', 'open-chat', 'read')).toBe(false);
    expect(await access.hasOpenAccess('shared_chat', 'open-chat')).toBe(true);
    expect(await access.hasOpenAccess('shared_chat', 'other-chat')).toBe(false);
  });
});

describe('admins and BYPASS_ADMIN_ACCESS_CONTROL', () => {
  it('without the bypass an admin needs ownership or a grant like anyone else', async () => {
    await withServer({ env: { BYPASS_ADMIN_ACCESS_CONTROL: 'false' } }, async (strict) => {
      const root = await signup(strict.api, 'Strict Admin');
      const rootUser = (await strict.parley.services.users.byId(root.id)) as UserRecord;
      const strictAccess = strict.parley.services.access;
      expect(await strictAccess.hasAccess(rootUser, TYPE, 'x', 'read', 'someone-else')).toBe(false);
      expect(await strictAccess.hasAccess(rootUser, TYPE, 'x', 'read', rootUser.id)).toBe(true);
      await strictAccess.replaceGrants(TYPE, 'x', [g('user', rootUser.id, 'read')], strict.parley.core.db);
      expect(await strictAccess.hasAccess(rootUser, TYPE, 'x', 'read', 'someone-else')).toBe(true);
      expect(await strictAccess.hasAccess(rootUser, TYPE, 'x', 'write', 'someone-else')).toBe(false);
      const subject = await strictAccess.subjectOf(rootUser);
      expect(subject.bypass).toBe(false);
      expect([...(await strictAccess.accessibleIds(subject, TYPE, 'read', ['x', 'y']))]).toEqual(['x']);
    });
  });
});

describe('listing helpers', () => {
  const resources = () => [
    { id: 'list-own', user_id: owner.id },
    { id: 'list-read', user_id: admin.id },
    { id: 'list-write', user_id: admin.id },
    { id: 'list-group', user_id: admin.id },
    { id: 'list-public', user_id: admin.id },
    { id: 'list-none', user_id: admin.id },
  ];

  beforeAll(async () => {
    await db.transaction().execute(async (trx) => {
      await access.replaceGrants(TYPE, 'list-read', [g('user', reader.id, 'read')], trx);
      await access.replaceGrants(TYPE, 'list-write', [g('user', reader.id, 'write')], trx);
      await access.replaceGrants(TYPE, 'list-group', [g('group', readGroup, 'read'), g('group', writeGroup, 'write')], trx);
      await access.replaceGrants(TYPE, 'list-public', [g('user', '*', 'read')], trx);
    });
  });

  it('accessibleIds returns the subset with a grant, in one query', async () => {
    const ids = resources().map((r) => r.id);
    const sorted = async (user: UserRecord, permission: 'read' | 'write') =>
      [...(await access.accessibleIds(await access.subjectOf(user), TYPE, permission, ids))].sort();
    expect(await sorted(reader, 'read')).toEqual(['list-public', 'list-read', 'list-write']);
    expect(await sorted(reader, 'write')).toEqual(['list-write']);
    expect(await sorted(groupReader, 'read')).toEqual(['list-group', 'list-public']);
    expect(await sorted(groupReader, 'write')).toEqual([]);
    expect(await sorted(groupWriter, 'write')).toEqual(['list-group']);
    expect(await sorted(stranger, 'read')).toEqual(['list-public']);
    expect(await sorted(admin, 'write')).toEqual([...ids].sort());
    expect([...(await access.accessibleIds(await access.subjectOf(reader), TYPE, 'read', []))]).toEqual([]);
  });

  it('filterAccessible keeps owned and granted resources in their order', async () => {
    const ids = async (user: UserRecord, permission: 'read' | 'write') =>
      (await access.filterAccessible(await access.subjectOf(user), TYPE, permission, resources())).map((r) => r.id);
    expect(await ids(owner, 'read')).toEqual(['list-own', 'list-public']);
    expect(await ids(owner, 'write')).toEqual(['list-own']);
    expect(await ids(reader, 'read')).toEqual(['list-read', 'list-write', 'list-public']);
    expect(await ids(admin, 'read')).toEqual(resources().map((r) => r.id));
  });

  it('accessFilter narrows another table in SQL (owner or grant)', async () => {
    // The group table has the id/user_id shape of a resource; its rows stand in for tools here.
    const mine = await groupWith('Owned by admin', []);
    await access.replaceGrants('probe', readGroup, [g('user', reader.id, 'read')], db);
    await access.replaceGrants('probe', writeGroup, [g('group', writeGroup, 'write')], db);
    const visible = async (user: UserRecord, permission: 'read' | 'write') => {
      const subject = await access.subjectOf(user);
      const rows = await db
        .selectFrom('group')
        .select('id')
        .where(access.accessFilter(subject, 'probe', permission, { id: 'group.id', owner: 'group.user_id' }))
        .execute();
      return rows.map((r) => r.id).sort();
    };
    expect(await visible(reader, 'read')).toEqual([readGroup]);
    expect(await visible(reader, 'write')).toEqual([]);
    expect(await visible(groupWriter, 'read')).toEqual([writeGroup]);
    expect(await visible(stranger, 'read')).toEqual([]);
    const all = (await db.selectFrom('group').select('id').execute()).map((r) => r.id).sort();
    expect(await visible(admin, 'write')).toEqual(all);
    expect(all).toContain(mine);
    // Without the owner column only grants count.
    const subject = await access.subjectOf(reader);
    const byGrant = await db.selectFrom('group').select('id').where(access.accessFilter(subject, 'probe', 'read', { id: 'group.id' })).execute();
    expect(byGrant.map((r) => r.id)).toEqual([readGroup]);
  });

  it('userIdsWithAccess expands groups and the public grant', async () => {
    expect((await access.userIdsWithAccess(TYPE, 'list-group', 'read')).sort()).toEqual([groupReader.id, groupWriter.id].sort());
    expect(await access.userIdsWithAccess(TYPE, 'list-group', 'write')).toEqual([groupWriter.id]);
    expect(await access.userIdsWithAccess(TYPE, 'list-none', 'read')).toEqual([]);
    const everyone = await access.userIdsWithAccess(TYPE, 'list-public', 'read');
    expect(everyone).toContain(stranger.id);
    expect(everyone).not.toContain(pendingUser.id);
  });
});

describe('storing grants', () => {
  it('replaceGrants replaces every grant of the resource and only that resource', async () => {
    await access.replaceGrants(TYPE, 'store-a', [g('user', reader.id, 'read'), g('group', readGroup, 'write')], db);
    await access.replaceGrants(TYPE, 'store-b', [g('user', reader.id, 'read')], db);
    const replaced = await access.replaceGrants(TYPE, 'store-a', [g('user', writer.id, 'write')], db);
    expect(replaced).toHaveLength(1);
    expect(replaced[0]).toMatchObject({ resource_type: TYPE, resource_id: 'store-a', principal_type: 'user', principal_id: writer.id, permission: 'write' });
    expect(typeof replaced[0].id).toBe('string');
    expect(typeof replaced[0].created_at).toBe('number');
    expect((await access.grantsOf(TYPE, 'store-a')).map((x) => x.principal_id)).toEqual([writer.id]);
    expect(await access.grantsOf(TYPE, 'store-b')).toHaveLength(1);
    const many = await access.grantsOfMany(TYPE, ['store-a', 'store-b', 'store-none']);
    expect([...many.keys()]).toEqual(['store-a', 'store-b', 'store-none']);
    expect(many.get('store-none')).toEqual([]);
  });

  it("replaceGrants joins the caller's transaction (a rollback keeps the old grants)", async () => {
    await access.replaceGrants(TYPE, 'store-tx', [g('user', reader.id, 'read')], db);
    await expect(
      db.transaction().execute(async (trx) => {
        await access.replaceGrants(TYPE, 'store-tx', [g('user', writer.id, 'write')], trx);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect((await access.grantsOf(TYPE, 'store-tx')).map((x) => x.principal_id)).toEqual([reader.id]);
  });

  it('grant is idempotent; revoke, deleteGrantsOf and revokePrincipal remove', async () => {
    await access.grant(TYPE, 'store-c', g('user', reader.id, 'read'));
    await access.grant(TYPE, 'store-c', g('user', reader.id, 'read'));
    await access.grant(TYPE, 'store-c', g('group', readGroup, 'read'));
    expect(await access.grantsOf(TYPE, 'store-c')).toHaveLength(2);
    expect(await access.revoke(TYPE, 'store-c', g('user', reader.id, 'read'))).toBe(true);
    expect(await access.revoke(TYPE, 'store-c', g('user', reader.id, 'read'))).toBe(false);
    expect(await access.hasAccess(reader, TYPE, 'store-c', 'read')).toBe(false);

    await access.grant(TYPE, 'store-d', g('group', readGroup, 'read'));
    expect(await access.revokePrincipal('group', readGroup)).toBeGreaterThanOrEqual(2);
    expect(await access.grantsOf(TYPE, 'store-d')).toEqual([]);

    await access.grant(TYPE, 'store-e', g('user', reader.id, 'read'));
    await access.grant(TYPE, 'store-e', g('user', writer.id, 'write'));
    expect(await access.deleteGrantsOf(TYPE, 'store-e')).toBe(2);
    expect(await access.grantsOf(TYPE, 'store-e')).toEqual([]);
  });
});

describe('prepareGrants: what an actor may give', () => {
  const rule = { publicPermission: 'sharing.public_tools' };
  const requested = () => [
    { principal_type: 'user', principal_id: '*', permission: 'read' },
    { principal_type: 'user', principal_id: reader.id, permission: 'read' },
    { principal_type: 'group', principal_id: writeGroup, permission: 'write' },
  ];

  it('admins give anything except open grants without an open permission', async () => {
    const grants = await access.prepareGrants(admin, [...requested(), { principal_type: 'anyone', principal_id: '*', permission: 'read' }], rule);
    expect(grants).toEqual(requested());
    const chats = await access.prepareGrants(admin, [{ principal_type: 'anyone', principal_id: '*', permission: 'read' }], {
      publicPermission: 'sharing.public_chats',
      openPermission: 'sharing.open_chats',
    });
    expect(chats).toEqual([g('anyone', '*', 'read')]);
  });

  it('users lose the public grant without sharing.public_<type>, keep user and group grants by default', async () => {
    expect(await access.prepareGrants(stranger, requested(), rule)).toEqual(requested().slice(1));
  });

  it('users with the sharing permission through a group keep the public grant', async () => {
    const sharer = await addUser(world.api, world.admin, 'user', 'Sharer');
    await groupWith('Public sharers', [sharer], { sharing: { public_tools: true, open_chats: true } });
    const user = await world.record(sharer);
    expect(await access.prepareGrants(user, requested(), rule)).toEqual(requested());
    expect(
      await access.prepareGrants(user, [{ principal_type: 'anyone', principal_id: '*', permission: 'read' }], {
        publicPermission: 'sharing.public_chats',
        openPermission: 'sharing.open_chats',
      }),
    ).toEqual([g('anyone', '*', 'read')]);
    expect(await access.prepareGrants(stranger, [{ principal_type: 'anyone', principal_id: '*', permission: 'read' }], { publicPermission: 'sharing.public_chats', openPermission: 'sharing.open_chats' })).toEqual([]);
  });

  it('users lose user and group grants when access_grants.allow_users / allow_groups are off', async () => {
    const restricted = await addUser(world.api, world.admin, 'user', 'Restricted');
    const user = await world.record(restricted);
    const saved = access.defaultPermissions();
    await world.server.parley.core.settings.set(
      { 'user.permissions': { ...saved, access_grants: { allow_users: false, allow_groups: false } } },
      world.server.parley.core.clock.now(),
    );
    try {
      expect(await access.prepareGrants(user, requested(), rule)).toEqual([]);
      expect(await access.prepareGrants(admin, requested(), rule)).toEqual(requested());
      await groupWith('Group sharers', [restricted], { access_grants: { allow_groups: true } });
      expect(await access.prepareGrants(user, requested(), rule)).toEqual([g('group', writeGroup, 'write')]);
    } finally {
      await world.server.parley.core.settings.set({ 'user.permissions': saved }, world.server.parley.core.clock.now());
    }
  });

  it('refuses unknown users and groups with 400, naming them', async () => {
    await expect(access.prepareGrants(admin, [g('user', 'no-such-user', 'read')], rule)).rejects.toMatchObject({
      statusCode: 400,
      detail: 'Access grant names unknown user(s): no-such-user',
    });
    await expect(access.prepareGrants(admin, [g('group', 'no-such-group', 'write')], rule)).rejects.toMatchObject({
      statusCode: 400,
      detail: 'Access grant names unknown group(s): no-such-group',
    });
  });

  it('refuses malformed forms with 400', async () => {
    await expect(access.prepareGrants(admin, [{ principal_type: 'role', principal_id: 'x', permission: 'read' }], rule)).rejects.toMatchObject({
      statusCode: 400,
      detail: "access_grants[0].principal_type must be 'user' or 'group'",
    });
    await expect(access.prepareGrants(admin, 'everyone', rule)).rejects.toMatchObject({ statusCode: 400 });
  });

  it('converts legacy access_control through the same rules', async () => {
    expect(await access.prepareAccessControl(stranger, null, TYPE, rule)).toEqual([]);
    expect(await access.prepareAccessControl(admin, null, TYPE, rule)).toEqual([g('user', '*', 'read')]);
    expect(await access.prepareAccessControl(admin, null, 'file', rule)).toEqual([]);
    expect(await access.prepareAccessControl(stranger, {}, TYPE, rule)).toEqual([]);
    expect(
      await access.prepareAccessControl(stranger, { read: { user_ids: [reader.id] }, write: { group_ids: [writeGroup] } }, TYPE, rule),
    ).toEqual([g('user', reader.id, 'read'), g('group', writeGroup, 'write')]);
    await expect(access.prepareAccessControl(admin, { read: { user_ids: ['ghost'] } }, TYPE, rule)).rejects.toMatchObject({ statusCode: 400 });
    await expect(access.prepareAccessControl(admin, { read: 'all' }, TYPE, rule)).rejects.toMatchObject({ statusCode: 400 });
  });
});

describe('previewUser', () => {
  it("lists what a user owns or reaches through grants, and their groups", async () => {
    const catalog = [
      { id: 'pv-own', name: 'Own', user_id: reader.id },
      { id: 'pv-granted', name: 'Granted', user_id: admin.id },
      { id: 'pv-hidden', name: 'Hidden', user_id: admin.id },
    ];
    access.registerPreviewCatalog('knowledge', { resourceType: 'knowledge', list: async () => catalog });
    await access.replaceGrants('knowledge', 'pv-granted', [g('user', reader.id, 'read')], db);
    const preview = await access.previewUser(reader);
    expect(preview.user).toEqual({ id: reader.id, name: reader.name });
    expect(preview.groups).toEqual([]);
    expect(preview.knowledge).toEqual({ items: [{ id: 'pv-own', name: 'Own' }, { id: 'pv-granted', name: 'Granted' }], total: 3 });
    expect(preview.models).toEqual({ items: [], total: 0 });
    const writerPreview = await access.previewUser(groupWriter);
    expect(writerPreview.groups).toEqual([{ id: writeGroup, name: 'Writers' }]);
  });
});
