import { describe, expect, it } from 'vitest';
import {
  FORM_DEFAULTS,
  fillMissing,
  mergePermissions,
  normalizeDefaultPermissions,
  permissionAt,
  permissionsFromEnv,
} from '../../../src/core/access/permissions.js';
import { useServer } from '../../helpers/world.js';

describe('the default tree', () => {
  const tree = permissionsFromEnv({});

  it('has the six sections with the reference defaults and the 0.11.0 additions', () => {
    expect(Object.keys(tree)).toEqual(['workspace', 'sharing', 'access_grants', 'chat', 'features', 'settings']);
    expect(tree.workspace).toMatchObject({ models: false, tools: false, skills_import: false, skills_export: false });
    expect(tree.sharing).toMatchObject({ public_tools: false, public_notes: false, folders: false, public_chats: false, public_calendars: false });
    expect(tree.access_grants).toEqual({ allow_users: true, allow_groups: true });
    expect(tree.chat).toMatchObject({ import: true, controls: true, temporary_enforced: false });
    expect(tree.features).toMatchObject({ api_keys: false, webhooks: false, calendar: true, automations: false, direct_tool_servers: false, notes: true });
    expect(tree.settings).toEqual({ interface: true });
    expect(Object.keys(tree.workspace)).toHaveLength(13);
    expect(Object.keys(tree.chat)).toHaveLength(21);
    expect(Object.keys(tree.features)).toHaveLength(12);
  });

  it('is seeded from USER_PERMISSIONS_* (only "true", any case, is true)', () => {
    const seeded = permissionsFromEnv({
      USER_PERMISSIONS_FEATURES_API_KEYS: 'True',
      USER_PERMISSIONS_CHAT_DELETE: 'yes',
      USER_PERMISSIONS_CHAT_EDIT: '',
      USER_PERMISSIONS_FEATURES_USER_WEBHOOKS: 'true',
      USER_PERMISSIONS_ACCESS_GRANTS_ALLOW_GROUPS: 'false',
    });
    expect(seeded.features.api_keys).toBe(true);
    expect(seeded.features.webhooks).toBe(true);
    expect(seeded.chat.delete).toBe(false);
    expect(seeded.chat.edit).toBe(false);
    expect(seeded.access_grants.allow_groups).toBe(false);
    expect(seeded.chat.call).toBe(true);
  });

  it('takes the admin form defaults for switches left out of a saved tree', () => {
    // Not 0.10.2's true: a save without them must not open public sharing (reference #27716).
    expect(FORM_DEFAULTS.sharing.public_tools).toBe(false);
    expect(FORM_DEFAULTS.sharing.public_notes).toBe(false);
    const result = normalizeDefaultPermissions({ workspace: { tools: true, unknown: true }, sharing: {}, access_grants: {}, chat: {}, features: {}, settings: {}, extra: {} });
    if ('error' in result) throw new Error(result.error);
    expect(result.tree.workspace.tools).toBe(true);
    expect(result.tree.workspace).not.toHaveProperty('unknown');
    expect(result.tree).not.toHaveProperty('extra');
    expect(result.tree.sharing.public_tools).toBe(false);
    expect(result.tree.chat.import).toBe(true);
  });

  it('refuses malformed trees', () => {
    expect(normalizeDefaultPermissions([])).toEqual({ error: 'permissions must be an object' });
    expect(normalizeDefaultPermissions({ workspace: {} })).toEqual({ error: 'permissions.sharing must be an object' });
    const full = Object.fromEntries(Object.keys(FORM_DEFAULTS).map((s) => [s, {}]));
    expect(normalizeDefaultPermissions({ ...full, chat: { call: 'no' } })).toEqual({ error: 'permissions.chat.call must be a boolean' });
  });
});

describe('merging across groups', () => {
  const defaults = { chat: { call: false, edit: true }, features: { api_keys: false }, limits: { max: 0 } };

  it('lets the most permissive value win and keeps defaults for what groups leave out', () => {
    const merged = mergePermissions(defaults, [{ chat: { call: true } }, { chat: { call: false, edit: false } }, null]);
    expect(merged).toEqual({ chat: { call: true, edit: true }, features: { api_keys: false }, limits: { max: 0 } });
  });

  it('merges other values with `or` (the first truthy value, defaults first)', () => {
    expect(mergePermissions(defaults, [{ limits: { max: 5 } }, { limits: { max: 9 } }]).limits).toEqual({ max: 5 });
    expect(mergePermissions({ limits: { max: 3 } }, [{ limits: { max: 9 } }]).limits).toEqual({ max: 3 });
  });

  it('adds keys only groups name, and does not touch its inputs', () => {
    const group = { beta: { feature: true } };
    const merged = mergePermissions(defaults, [group]);
    expect(merged.beta).toEqual({ feature: true });
    expect(defaults).toEqual({ chat: { call: false, edit: true }, features: { api_keys: false }, limits: { max: 0 } });
  });

  it('fills missing keys at any depth', () => {
    expect(fillMissing({ a: { x: true } }, { a: { x: false, y: false }, b: { z: true } })).toEqual({ a: { x: true, y: false }, b: { z: true } });
  });

  it('reads dotted keys, denying missing steps', () => {
    const tree = { chat: { call: true, edit: false }, features: {} };
    expect(permissionAt(tree, 'chat.call')).toBe(true);
    expect(permissionAt(tree, 'chat.edit')).toBe(false);
    expect(permissionAt(tree, 'chat.nope')).toBe(false);
    expect(permissionAt(tree, 'nope.call')).toBe(false);
    expect(permissionAt(tree, 'chat.call.deeper')).toBe(false);
    expect(permissionAt(tree, 'features')).toBe(false);
    expect(permissionAt(tree, 'chat')).toBe(true);
  });
});

describe('AccessService permissions', () => {
  const world = useServer({
    env: { USER_PERMISSIONS_FEATURES_NOTES: 'false', USER_PERMISSIONS_WORKSPACE_TOOLS_ACCESS: 'true' },
    admin: 'Perm Admin',
    users: { member: ['user', 'Perm Member'], loner: ['user', 'Perm Loner'] },
  });

  it('seeds the stored default and the baseline from the environment', () => {
    const access = world.server.parley.services.access;
    expect(access.baselinePermissions().features.notes).toBe(false);
    expect(access.baselinePermissions().workspace.tools).toBe(true);
    expect(access.defaultPermissions().features.notes).toBe(false);
    expect(access.defaultPermissions()).toEqual(access.baselinePermissions());
  });

  it("merges the user's groups into the defaults; admins pass every check", async () => {
    const access = world.server.parley.services.access;
    const api = world.api;
    const a = await api.post('/api/v1/groups/create', { name: 'A', description: '', permissions: { features: { api_keys: true }, chat: { call: false } } }, { token: world.admin.token });
    const b = await api.post('/api/v1/groups/create', { name: 'B', description: '', permissions: { features: { api_keys: false, webhooks: true } } }, { token: world.admin.token });
    for (const g of [a.body, b.body]) await api.post(`/api/v1/groups/id/${g.id}/users/add`, { user_ids: [world.member.id] }, { token: world.admin.token });

    const mine = await access.permissionsOf(await world.record(world.member));
    expect(mine.features).toMatchObject({ api_keys: true, webhooks: true, notes: false });
    expect(mine.chat.call).toBe(true);
    expect(await access.hasPermission(await world.record(world.member), 'features.api_keys')).toBe(true);
    expect(await access.hasPermission(await world.record(world.member), 'features.notes')).toBe(false);

    expect(await access.permissionsOf(await world.record(world.loner))).toEqual(access.defaultPermissions());
    expect(await access.hasPermission(await world.record(world.loner), 'features.api_keys')).toBe(false);
    expect(await access.hasPermission(await world.record(world.loner), 'workspace.tools')).toBe(true);

    const root = await world.record(world.admin);
    expect(await access.hasPermission(root, 'features.api_keys')).toBe(true);
    expect(await access.hasPermission(root, 'anything.at.all')).toBe(true);
    expect(await access.permissionsOf(root)).toEqual(access.defaultPermissions());
  });

  it('stores a new default tree, publishes user.permissions_updated, and every user sees it', async () => {
    const access = world.server.parley.services.access;
    world.events.length = 0;
    const tree = Object.fromEntries(Object.keys(FORM_DEFAULTS).map((s) => [s, {}])) as Record<string, Record<string, boolean>>;
    tree.features = { notes: true, api_keys: true };
    const stored = await access.setDefaultPermissions(await world.record(world.admin), tree);
    expect(stored.features.api_keys).toBe(true);
    expect(stored.sharing.public_tools).toBe(false);
    expect(access.defaultPermissions()).toEqual(stored);
    expect(await access.hasPermission(await world.record(world.loner), 'features.api_keys')).toBe(true);
    expect(access.baselinePermissions().features.api_keys).toBe(false);
    expect(world.events.map((e) => e.event)).toEqual(['user.permissions_updated']);
    expect(world.events[0]).toMatchObject({ actor: { id: world.admin.id }, subject: { type: 'config', id: 'user.permissions' } });

    await expect(access.setDefaultPermissions(await world.record(world.admin), { workspace: {} })).rejects.toMatchObject({ statusCode: 400 });
    expect(access.defaultPermissions()).toEqual(stored);
  });

  it('fills keys a stored tree lacks (saved by an older release) from the baseline', async () => {
    const before = world.server.parley.services.access.defaultPermissions();
    await world.server.parley.core.settings.set({ 'user.permissions': { features: { api_keys: true } } }, 1);
    const filled = world.server.parley.services.access.defaultPermissions();
    expect(filled.features.api_keys).toBe(true);
    expect(filled.features.notes).toBe(false);
    expect(filled.chat.call).toBe(true);
    await world.server.parley.core.settings.set({ 'user.permissions': before }, 1);
  });
});
