import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { withServer } from '../../helpers/server.js';
import { type Account, addUser, signup } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { createGroup, createTool, grantAuthoring, simpleTool, toolBody, TOOLS_ENV } from './helpers.js';

/**
 * Who may do what with a tool (tools.md §6–7): the owner, an admin, holders of a
 * read grant, a write grant or a group grant, everyone through a public grant,
 * and a user with none of these. Parley lets a write grant read too (docs/access.md).
 */
const world = useServer({
  env: TOOLS_ENV,
  admin: 'Matrix Admin',
  users: { owner: ['user', 'Olive Owner'], reader: ['user', 'Rita Reader'], writer: ['user', 'Walt Writer'], member: ['user', 'Greta Group'], stranger: ['user', 'Stan Stranger'] },
});
let group: { id: string };

type Who = 'owner' | 'admin' | 'reader' | 'writer' | 'group' | 'public' | 'none';

/** The principal and the tool they act on: `public` is the stranger on a tool with a `user:*` read grant. */
const actors = (): Record<Who, { account: Account; tool: string }> => ({
  owner: { account: world.owner, tool: 'matrix' },
  admin: { account: world.admin, tool: 'matrix' },
  reader: { account: world.reader, tool: 'matrix' },
  writer: { account: world.writer, tool: 'matrix' },
  group: { account: world.member, tool: 'matrix' },
  public: { account: world.stranger, tool: 'matrix_public' },
  none: { account: world.stranger, tool: 'matrix' },
});
const WHO: Who[] = ['owner', 'admin', 'reader', 'writer', 'group', 'public', 'none'];

const grantsOf = (tool: string) =>
  tool === 'matrix'
    ? [
        { principal_type: 'user', principal_id: world.reader.id, permission: 'read' },
        { principal_type: 'user', principal_id: world.writer.id, permission: 'write' },
        { principal_type: 'group', principal_id: group.id, permission: 'read' },
      ]
    : [{ principal_type: 'user', principal_id: '*', permission: 'read' }];

beforeAll(async () => {
  await grantAuthoring(world.server, world.admin, [world.owner], { sharing: { public_tools: true } });
  group = await createGroup(world.server, world.admin, [world.member]);
  await createTool(world.server, world.owner, 'matrix', { access_grants: grantsOf('matrix') });
  await createTool(world.server, world.owner, 'matrix_public', { access_grants: grantsOf('matrix_public') });
});


type Expectation = number | [number, string];
const ok = 200;
const prohibited: Expectation = [401, ERROR.ACCESS_PROHIBITED];
const unauthorized: Expectation = [401, ERROR.UNAUTHORIZED];

/** One row per route: the expected answer for each principal. Mutations send what is already stored, so the table holds for every row. */
const ROUTES: { name: string; call: (account: Account, tool: string) => Promise<{ status: number; body: any }>; expect: Record<Who, Expectation> }[] = [
  {
    name: 'GET /id/{id}',
    call: (a, t) => world.api.get(`/api/v1/tools/id/${t}`, { token: a.token }),
    expect: { owner: ok, admin: ok, reader: ok, writer: ok, group: ok, public: ok, none: prohibited },
  },
  {
    name: 'POST /id/{id}/update (same source)',
    call: (a, t) => world.api.post(`/api/v1/tools/id/${t}/update`, toolBody(t, { name: `Tool ${t}` }), { token: a.token }),
    expect: { owner: ok, admin: ok, reader: unauthorized, writer: ok, group: unauthorized, public: unauthorized, none: unauthorized },
  },
  {
    name: 'POST /id/{id}/access/update',
    call: (a, t) => world.api.post(`/api/v1/tools/id/${t}/access/update`, { access_grants: grantsOf(t) }, { token: a.token }),
    expect: { owner: ok, admin: ok, reader: unauthorized, writer: ok, group: unauthorized, public: unauthorized, none: unauthorized },
  },
  {
    name: 'GET /id/{id}/valves',
    call: (a, t) => world.api.get(`/api/v1/tools/id/${t}/valves`, { token: a.token }),
    expect: { owner: ok, admin: ok, reader: prohibited, writer: ok, group: prohibited, public: prohibited, none: prohibited },
  },
  {
    name: 'GET /id/{id}/valves/spec',
    call: (a, t) => world.api.get(`/api/v1/tools/id/${t}/valves/spec`, { token: a.token }),
    expect: { owner: ok, admin: ok, reader: prohibited, writer: ok, group: prohibited, public: prohibited, none: prohibited },
  },
  {
    name: 'POST /id/{id}/valves/update',
    call: (a, t) => world.api.post(`/api/v1/tools/id/${t}/valves/update`, { priority: 1 }, { token: a.token }),
    // The reference answers a refusal here with 400.
    expect: {
      owner: ok,
      admin: ok,
      reader: [400, ERROR.ACCESS_PROHIBITED],
      writer: ok,
      group: [400, ERROR.ACCESS_PROHIBITED],
      public: [400, ERROR.ACCESS_PROHIBITED],
      none: [400, ERROR.ACCESS_PROHIBITED],
    },
  },
  {
    name: 'GET /id/{id}/valves/user',
    call: (a, t) => world.api.get(`/api/v1/tools/id/${t}/valves/user`, { token: a.token }),
    expect: { owner: ok, admin: ok, reader: ok, writer: ok, group: ok, public: ok, none: prohibited },
  },
  {
    name: 'GET /id/{id}/valves/user/spec',
    call: (a, t) => world.api.get(`/api/v1/tools/id/${t}/valves/user/spec`, { token: a.token }),
    expect: { owner: ok, admin: ok, reader: ok, writer: ok, group: ok, public: ok, none: prohibited },
  },
  {
    name: 'POST /id/{id}/valves/user/update',
    call: (a, t) => world.api.post(`/api/v1/tools/id/${t}/valves/user/update`, { nickname: a.name }, { token: a.token }),
    expect: { owner: ok, admin: ok, reader: ok, writer: ok, group: ok, public: ok, none: prohibited },
  },
];

describe('access matrix', () => {
  for (const route of ROUTES) {
    it(route.name, async () => {
      const seen: Record<string, unknown> = {};
      const wanted: Record<string, unknown> = {};
      for (const who of WHO) {
        const { account, tool } = actors()[who];
        const res = await route.call(account, tool);
        const expected = route.expect[who];
        seen[who] = typeof expected === 'number' ? res.status : [res.status, res.body?.detail];
        wanted[who] = expected;
      }
      expect(seen).toEqual(wanted);
    });
  }

  it('the source and write_access on GET /id/{id} follow write permission', async () => {
    const shown: Record<string, unknown> = {};
    for (const who of WHO.filter((w) => w !== 'none')) {
      const { account, tool } = actors()[who];
      const body = (await world.api.get(`/api/v1/tools/id/${tool}`, { token: account.token })).body;
      shown[who] = { write: body.write_access, content: 'content' in body };
    }
    const yes = { write: true, content: true };
    const no = { write: false, content: false };
    expect(shown).toEqual({ owner: yes, admin: yes, reader: no, writer: yes, group: no, public: no });
  });

  it('GET / and GET /list show each principal the tools they may read; write_access as the grants say', async () => {
    const listed: Record<string, unknown> = {};
    for (const who of WHO) {
      const { account } = actors()[who];
      if (listed[who] !== undefined) continue;
      const all = (await world.api.get('/api/v1/tools/', { token: account.token })).body.map((t: { id: string }) => t.id).sort();
      const list = (await world.api.get('/api/v1/tools/list', { token: account.token })).body;
      expect(list.map((t: { id: string }) => t.id).sort()).toEqual(all);
      listed[who] = Object.fromEntries(list.map((t: { id: string; write_access: boolean }) => [t.id, t.write_access]));
    }
    const both = (matrix: boolean) => ({ matrix, matrix_public: false });
    expect(listed).toEqual({
      owner: { matrix: true, matrix_public: true },
      admin: { matrix: true, matrix_public: true },
      reader: both(false),
      writer: both(true),
      group: both(false),
      public: { matrix_public: false },
      none: { matrix_public: false },
    });
  });

  it('DELETE /id/{id}/delete: owner, admin and writers; others 401', async () => {
    const results: Record<string, unknown> = {};
    for (const who of WHO) {
      const { account, tool } = actors()[who];
      const id = `${tool}_del_${who}`;
      await createTool(world.server, world.owner, id, { access_grants: grantsOf(tool) });
      const res = await world.api.delete(`/api/v1/tools/id/${id}/delete`, { token: account.token });
      results[who] = res.status === 200 ? res.body : [res.status, res.body.detail];
    }
    expect(results).toEqual({
      owner: true,
      admin: true,
      reader: [401, ERROR.UNAUTHORIZED],
      writer: true,
      group: [401, ERROR.UNAUTHORIZED],
      public: [401, ERROR.UNAUTHORIZED],
      none: [401, ERROR.UNAUTHORIZED],
    });
  });

  it('a changed source needs workspace.tools even for holders of a write grant', async () => {
    const res = await world.api.post('/api/v1/tools/id/matrix/update', toolBody('matrix', { content: simpleTool('writer') }), { token: world.writer.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: ERROR.UNAUTHORIZED });
  });

  it('group write grants count like user write grants', async () => {
    const writers = await createGroup(world.server, world.admin, [world.stranger]);
    await createTool(world.server, world.owner, 'group_written', { access_grants: [{ principal_type: 'group', principal_id: writers.id, permission: 'write' }] });
    expect((await world.api.post('/api/v1/tools/id/group_written/valves/update', { priority: 3 }, { token: world.stranger.token })).status).toBe(200);
    expect((await world.api.get('/api/v1/tools/id/group_written', { token: world.stranger.token })).body.write_access).toBe(true);
  });

  it("the admin group preview lists the tools the group's grants (and public ones) reach", async () => {
    const preview = await world.api.get(`/api/v1/groups/id/${group.id}/preview`, { token: world.admin.token });
    expect(preview.status, preview.text).toBe(200);
    const ids = preview.body.tools.items.map((t: { id: string }) => t.id);
    expect(ids).toEqual(expect.arrayContaining(['matrix', 'matrix_public']));
    expect(ids).not.toContain('group_written');
    expect(preview.body.tools.total).toBeGreaterThanOrEqual(2);
  });

  it('pending users and missing tokens get 401 on every route', async () => {
    const pending = await addUser(world.api, world.admin, 'pending', 'Penny Pending');
    const paths: [string, string][] = [
      ['GET', '/'],
      ['GET', '/list'],
      ['GET', '/export'],
      ['POST', '/create'],
      ['POST', '/load/url'],
      ['GET', '/id/matrix'],
      ['POST', '/id/matrix/update'],
      ['POST', '/id/matrix/access/update'],
      ['DELETE', '/id/matrix/delete'],
      ['GET', '/id/matrix/valves'],
      ['GET', '/id/matrix/valves/spec'],
      ['POST', '/id/matrix/valves/update'],
      ['GET', '/id/matrix/valves/user'],
      ['GET', '/id/matrix/valves/user/spec'],
      ['POST', '/id/matrix/valves/user/update'],
    ];
    for (const [method, path] of paths) {
      const body = method === 'POST' ? {} : undefined;
      const asPending = await world.api.request(method, `/api/v1/tools${path}`, body, { token: pending.token });
      expect([path, asPending.status, asPending.body.detail]).toEqual([path, 401, ERROR.ACCESS_PROHIBITED]);
      const anonymous = await world.api.request(method, `/api/v1/tools${path}`, body);
      expect([path, anonymous.status]).toEqual([path, 401]);
    }
    expect((await world.api.get('/api/v1/tools/id/matrix', { token: world.admin.token })).status).toBe(200);
  });
});

describe('sharing rules for grants given by users', () => {
  it('public grants need sharing.public_tools; user grants need access_grants.allow_users', async () => {
    // The writer lacks sharing.public_tools: the public grant is dropped, the rest kept.
    const res = await world.api.post(
      '/api/v1/tools/id/matrix/access/update',
      { access_grants: [...grantsOf('matrix'), { principal_type: 'user', principal_id: '*', permission: 'read' }] },
      { token: world.writer.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.access_grants.some((g: { principal_id: string }) => g.principal_id === '*')).toBe(false);
    expect(res.body.access_grants).toHaveLength(3);

    // The owner's group grants sharing.public_tools.
    const asOwner = await world.api.post('/api/v1/tools/id/matrix_public/access/update', { access_grants: grantsOf('matrix_public') }, { token: world.owner.token });
    expect(asOwner.body.access_grants).toMatchObject([{ principal_id: '*' }]);

    const defaults = (await world.api.get('/api/v1/users/default/permissions', { token: world.admin.token })).body;
    const saved = await world.api.post(
      '/api/v1/users/default/permissions',
      { ...defaults, access_grants: { ...defaults.access_grants, allow_users: false } },
      { token: world.admin.token },
    );
    expect(saved.status, saved.text).toBe(200);
    try {
      const withoutUsers = await world.api.post('/api/v1/tools/id/matrix/access/update', { access_grants: grantsOf('matrix') }, { token: world.writer.token });
      expect(withoutUsers.body.access_grants).toMatchObject([{ principal_type: 'group', principal_id: group.id }]);
      // Admins are never filtered.
      const asAdmin = await world.api.post('/api/v1/tools/id/matrix/access/update', { access_grants: grantsOf('matrix') }, { token: world.admin.token });
      expect(asAdmin.body.access_grants).toHaveLength(3);
    } finally {
      await world.api.post('/api/v1/users/default/permissions', defaults, { token: world.admin.token });
    }
  });
});

describe('with BYPASS_ADMIN_ACCESS_CONTROL=false', () => {
  it('admins still open and change any tool, but lists show them only their own and granted tools', async () => {
    await withServer({ env: { ...TOOLS_ENV, BYPASS_ADMIN_ACCESS_CONTROL: 'false' } }, async (strict) => {
      const root = await signup(strict.api, 'Strict Admin');
      const author = await addUser(strict.api, root, 'user', 'Ann Author');
      await grantAuthoring(strict, root, [author]);
      await createTool(strict, author, 'private_tool');
      expect((await strict.api.get('/api/v1/tools/', { token: root.token })).body).toEqual([]);
      expect((await strict.api.get('/api/v1/tools/list', { token: root.token })).body).toEqual([]);
      expect((await strict.api.get('/api/v1/tools/export', { token: root.token })).body).toEqual([]);
      const shown = await strict.api.get('/api/v1/tools/id/private_tool', { token: root.token });
      expect(shown.status).toBe(200);
      expect(shown.body.write_access).toBe(false);
      expect(shown.body).not.toHaveProperty('content');
      expect((await strict.api.post('/api/v1/tools/id/private_tool/valves/update', { priority: 2 }, { token: root.token })).status).toBe(200);
      expect((await strict.api.delete('/api/v1/tools/id/private_tool/delete', { token: root.token })).body).toBe(true);
    });
  });
});
