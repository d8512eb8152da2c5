import { beforeAll, describe, expect, it } from 'vitest';
import { TOOL_ERROR } from '../../../src/areas/tools/service.js';
import { ERROR } from '../../../src/core/http/errors.js';
import { expectedExtraction, toolSource } from '../../core/python/helpers.js';
import { addUser } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';
import { createGroup, createTool, grantAuthoring, simpleTool, toolBody, TOOLS_ENV } from './helpers.js';

const world = useServer({
  env: TOOLS_ENV,
  admin: 'Tools Admin',
  users: { alice: ['user', 'Alice Author'], bob: ['user', 'Bob Plain'], pending: ['pending', 'Pat Pending'] },
  freshEvents: true,
});
beforeAll(async () => {
  await grantAuthoring(world.server, world.admin, [world.alice]);
});

const RESPONSE_KEYS = ['id', 'user_id', 'name', 'meta', 'access_grants', 'access_control', 'updated_at', 'created_at'];
const MODEL_KEYS = ['id', 'user_id', 'name', 'content', 'specs', 'meta', 'access_grants', 'access_control', 'updated_at', 'created_at'];

async function expectAbsent(id: string) {
  expect((await world.api.get(`/api/v1/tools/id/${id}`, { token: world.admin.token })).status).toBe(404);
  const listed = await world.api.get('/api/v1/tools/', { token: world.admin.token });
  expect(listed.body.map((t: { id: string }) => t.id)).not.toContain(id);
}

describe('POST /api/v1/tools/create', () => {
  it.each([
    ['example1_weather', 'weather_example'],
    ['example2_search', 'search_example'],
    ['example3_notes', 'notes_example'],
  ])('stores the specs and manifest of %s as the reference derives them', async (source, id) => {
    const expected = expectedExtraction(source);
    const res = await world.api.post('/api/v1/tools/create', { id, name: source, content: toolSource(source), meta: { description: 'd' } }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(RESPONSE_KEYS);
    expect(res.body.meta).toEqual({ description: 'd', manifest: expected.frontmatter, has_user_valves: expected.has_user_valves });

    const stored = await world.api.get(`/api/v1/tools/id/${id}`, { token: world.admin.token });
    // Byte for byte, key order included.
    expect(JSON.stringify(stored.body.specs)).toBe(JSON.stringify(expected.specs));
    expect(stored.body.content).toBe(toolSource(source));
  });

  it('gives example 1 the worked example of tools.md §4.6', async () => {
    const res = await world.api.get('/api/v1/tools/id/weather_example', { token: world.admin.token });
    expect(res.body.meta.manifest).toEqual({
      title: 'Weather Tool',
      author: 'jane',
      version: '0.1.0',
      requirements: 'requests, pytz',
      description: 'Gets the weather',
    });
    expect(res.body.meta.has_user_valves).toBe(true);
    expect(res.body.specs).toEqual([
      { name: 'get_time', description: 'Return the current server time.', parameters: { properties: {}, type: 'object' } },
      {
        name: 'get_weather',
        description: 'Get the weather forecast for a city.',
        parameters: {
          properties: {
            city: { description: 'Name of the city', type: 'string' },
            days: { default: 1, description: 'Number of days to forecast', type: 'integer' },
          },
          required: ['city'],
          type: 'object',
        },
      },
    ]);
  });

  it('returns a ToolResponse owned by the caller and publishes tool.created', async () => {
    const res = await world.api.post('/api/v1/tools/create', toolBody('first_tool', { meta: { description: 'First', manifest: { ignored: true } } }), { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id: 'first_tool',
      user_id: world.alice.id,
      name: 'Tool first_tool',
      // The manifest comes from the source's frontmatter, whatever the client sent.
      meta: { description: 'First', manifest: { title: 'Simple one', version: '1.0' }, has_user_valves: true },
      access_grants: [],
      access_control: {},
    });
    expect(res.body.created_at).toBe(res.body.updated_at);
    expect(world.events.map((e) => e.event)).toEqual(['tool.created']);
    expect(world.events[0]).toMatchObject({
      actor: { id: world.alice.id },
      subject: { type: 'tool', id: 'first_tool' },
      data: { name: 'Tool first_tool' },
      source: 'api',
    });
  });

  it('lower-cases the id and refuses ids that are not Python identifiers', async () => {
    const created = await createTool(world.server, world.admin, 'Mixed_Case_Id');
    expect(created.id).toBe('mixed_case_id');
    expect((await createTool(world.server, world.admin, 'café_outil')).id).toBe('café_outil');
    expect((await world.api.get('/api/v1/tools/id/café_outil', { token: world.admin.token })).body.id).toBe('café_outil');
    for (const id of ['my-tool', '1tool', '', 'two words', 'dotted.id', 'semi;colon']) {
      const res = await world.api.post('/api/v1/tools/create', toolBody(id), { token: world.admin.token });
      expect(res.status, id).toBe(400);
      expect(res.body).toEqual({ detail: TOOL_ERROR.INVALID_ID });
    }
    expect(world.events.filter((e) => e.event === 'tool.created')).toHaveLength(2);
  });

  it('refuses a taken id, whatever its case, and keeps the first tool', async () => {
    await createTool(world.server, world.alice, 'taken_id', { name: 'Original' });
    for (const id of ['taken_id', 'TAKEN_ID']) {
      const res = await world.api.post('/api/v1/tools/create', toolBody(id, { name: 'Impostor', content: simpleTool('two') }), { token: world.admin.token });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: ERROR.ID_TAKEN });
    }
    const stored = await world.api.get('/api/v1/tools/id/taken_id', { token: world.admin.token });
    expect(stored.body).toMatchObject({ name: 'Original', user_id: world.alice.id });
    expect(stored.body.content).toBe(simpleTool());
  });

  it('answers concurrent creates of one id with one tool and ID_TAKEN for the rest', async () => {
    const results = await Promise.all(
      ['race_id', 'race_id', 'Race_Id'].map((id, i) => world.api.post('/api/v1/tools/create', toolBody(id, { content: simpleTool(`r${i}`) }), { token: world.admin.token })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    for (const loser of results.filter((r) => r.status === 400)) expect(loser.body).toEqual({ detail: ERROR.ID_TAKEN });
    expect(world.events.filter((e) => e.event === 'tool.created')).toHaveLength(1);
  });

  it.each([
    ['syntax_error', 'SyntaxError: '],
    ['import_error', "ModuleNotFoundError: No module named 'module_that_does_not_exist_anywhere'"],
    ['no_tools_class', 'No Tools class found in the module'],
    ['init_error', 'RuntimeError: cannot start'],
  ])('answers Python that does not load (%s) with 400 and the Python message, storing nothing', async (name, message) => {
    const id = `broken_${name}`;
    const res = await world.api.post('/api/v1/tools/create', toolBody(id, { content: toolSource(`broken/${name}`) }), { token: world.admin.token });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain(message);
    expect(res.body.detail).toMatch(/^\[ERROR: .+\]$/s);
    await expectAbsent(id);
    expect(world.events).toEqual([]);
  });

  it('rewrites the legacy imports before storing (replace_imports)', async () => {
    const content = `${simpleTool()}\nNOTE = "from utils.misc import x; from config import y"\n`;
    await createTool(world.server, world.admin, 'rewritten', { content });
    const stored = await world.api.get('/api/v1/tools/id/rewritten', { token: world.admin.token });
    expect(stored.body.content).toContain('NOTE = "from open_webui.utils.misc import x; from open_webui.config import y"');
  });

  it('needs workspace.tools or workspace.tools_import (401), a verified user and a token', async () => {
    const refused = await world.api.post('/api/v1/tools/create', toolBody('bobs_tool'), { token: world.bob.token });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ detail: ERROR.UNAUTHORIZED });
    const asPending = await world.api.post('/api/v1/tools/create', toolBody('bobs_tool'), { token: world.pending.token });
    expect(asPending.status).toBe(401);
    expect(asPending.body).toEqual({ detail: ERROR.ACCESS_PROHIBITED });
    expect((await world.api.post('/api/v1/tools/create', toolBody('bobs_tool'))).status).toBe(401);
    await expectAbsent('bobs_tool');

    const importer = await addUser(world.api, world.admin, 'user', 'Ivy Importer');
    await createGroup(world.server, world.admin, [importer], { workspace: { tools_import: true } });
    expect((await createTool(world.server, importer, 'imported_tool')).user_id).toBe(importer.id);
  });

  it('validates the form as the reference does (422)', async () => {
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{ id: 'x', name: 'x', meta: {} }, ['body', 'content']],
      [{ id: 'x', content: 'x', meta: {} }, ['body', 'name']],
      [{ id: 'x', name: 'x', content: 'x' }, ['body', 'meta']],
      [{ ...toolBody('x'), access_grants: null }, ['body', 'access_grants']],
      [{ ...toolBody('x'), access_grants: ['read'] }, ['body', 'access_grants', 0]],
      [{ ...toolBody('x'), meta: { has_user_valves: null } }, ['body', 'meta', 'has_user_valves']],
      [{ ...toolBody('x'), access_control: 'public' }, ['body', 'access_control']],
    ];
    for (const [body, loc] of cases) {
      const res = await world.api.post('/api/v1/tools/create', body, { token: world.admin.token });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail.map((d: { loc: unknown }) => d.loc)).toContainEqual(loc);
    }
    await expectAbsent('x');
  });

  it('stores the grants given, skipping null entries, with fresh ids', async () => {
    const group = await createGroup(world.server, world.admin, [world.bob]);
    const res = await world.api.post(
      '/api/v1/tools/create',
      toolBody('granted', {
        access_grants: [
          null,
          { id: 'client-id', principal_type: 'user', principal_id: world.bob.id, permission: 'read' },
          { principal_type: 'group', principal_id: group.id, permission: 'write' },
        ],
      }),
      { token: world.admin.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.access_grants).toHaveLength(2);
    expect(res.body.access_grants.map((g: { id: string }) => g.id)).not.toContain('client-id');
    expect(res.body.access_grants[0]).toEqual({
      id: expect.any(String),
      resource_type: 'tool',
      resource_id: 'granted',
      principal_type: 'user',
      principal_id: world.bob.id,
      permission: 'read',
      created_at: expect.any(Number),
    });
    expect(res.body.access_control).toEqual({ read: { group_ids: [], user_ids: [world.bob.id] }, write: { group_ids: [group.id], user_ids: [] } });
  });

  it('refuses grants to unknown users or groups, and malformed grants (400), storing nothing', async () => {
    const cases: [unknown[], string][] = [
      [[{ principal_type: 'user', principal_id: 'nobody-here', permission: 'read' }], 'Access grant names unknown user(s): nobody-here'],
      [[{ principal_type: 'group', principal_id: 'no-such-group', permission: 'read' }], 'Access grant names unknown group(s): no-such-group'],
      [[{ principal_type: 'robot', principal_id: 'x', permission: 'read' }], "access_grants[0].principal_type must be 'user' or 'group'"],
      [[{ principal_type: 'user', principal_id: 'x', permission: 'admin' }], "access_grants[0].permission must be 'read' or 'write'"],
    ];
    for (const [grants, detail] of cases) {
      const res = await world.api.post('/api/v1/tools/create', toolBody('ungranted', { access_grants: grants }), { token: world.admin.token });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail });
    }
    const legacy = await world.api.post('/api/v1/tools/create', toolBody('ungranted', { access_control: { read: { user_ids: ['ghost'] } } }), { token: world.admin.token });
    expect(legacy.status).toBe(400);
    expect(legacy.body).toEqual({ detail: 'Access grant names unknown user(s): ghost' });
    await expectAbsent('ungranted');
    expect(world.events).toEqual([]);
  });

  it('converts a legacy access_control (null: public read, {}: private, lists: one grant each)', async () => {
    const group = await createGroup(world.server, world.admin, []);
    const publicTool = await createTool(world.server, world.admin, 'legacy_public', { access_control: null });
    expect(publicTool.access_grants).toMatchObject([{ principal_type: 'user', principal_id: '*', permission: 'read' }]);
    expect(publicTool.access_control).toBeNull();

    expect((await createTool(world.server, world.admin, 'legacy_private', { access_control: {} })).access_grants).toEqual([]);

    const listed = await createTool(world.server, world.admin, 'legacy_lists', {
      access_control: { read: { group_ids: [group.id], user_ids: [world.bob.id] }, write: { user_ids: [world.alice.id] } },
    });
    expect(listed.access_grants.map((g: Record<string, string>) => `${g.principal_type}:${g.principal_id}:${g.permission}`).sort()).toEqual(
      [`group:${group.id}:read`, `user:${world.bob.id}:read`, `user:${world.alice.id}:write`].sort(),
    );
    expect(listed.access_control).toEqual({ read: { group_ids: [group.id], user_ids: [world.bob.id] }, write: { group_ids: [], user_ids: [world.alice.id] } });

    // access_grants win over access_control when a form has both (an exported record does).
    const both = await createTool(world.server, world.admin, 'legacy_both', { access_grants: [], access_control: null });
    expect(both.access_grants).toEqual([]);
  });

  it('drops a public grant from a user without sharing.public_tools, as the reference does', async () => {
    const res = await createTool(world.server, world.alice, 'alice_public_try', {
      access_grants: [
        { principal_type: 'user', principal_id: '*', permission: 'read' },
        { principal_type: 'user', principal_id: world.bob.id, permission: 'read' },
      ],
    });
    expect(res.access_grants.map((g: { principal_id: string }) => g.principal_id)).toEqual([world.bob.id]);
    expect((await createTool(world.server, world.alice, 'alice_legacy_public', { access_control: null })).access_grants).toEqual([]);
  });
});

describe('GET /api/v1/tools/id/{id}', () => {
  it('returns the record with write_access and no owner summary; 404 for an unknown id', async () => {
    await createTool(world.server, world.alice, 'shown_tool');
    const res = await world.api.get('/api/v1/tools/id/shown_tool', { token: world.alice.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 'shown_tool', user_id: world.alice.id, user: null, write_access: true, has_user_valves: true, content: simpleTool() });
    expect(res.body.specs).toEqual([
      {
        name: 'marker',
        description: 'Says which source is loaded.',
        parameters: { properties: { text: { default: '', type: 'string' } }, type: 'object' },
      },
    ]);
    const missing = await world.api.get('/api/v1/tools/id/no_such_tool', { token: world.alice.token });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: ERROR.NOT_FOUND });
  });
});

describe('POST /api/v1/tools/id/{id}/update', () => {
  it('replaces name, content, meta and specs; the path names the tool; publishes tool.updated', async () => {
    const created = await createTool(world.server, world.alice, 'editable');
    world.events.length = 0;
    const res = await world.api.post(
      '/api/v1/tools/id/editable/update',
      { id: 'something_else', name: 'Renamed', content: simpleTool('two'), meta: { description: 'New text', manifest: { x: 1 } } },
      { token: world.alice.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(MODEL_KEYS);
    expect(res.body).toMatchObject({
      id: 'editable',
      name: 'Renamed',
      content: simpleTool('two'),
      meta: { description: 'New text', manifest: { title: 'Simple two', version: '1.0' }, has_user_valves: true },
      created_at: created.created_at,
    });
    expect((await world.api.get('/api/v1/tools/id/something_else', { token: world.admin.token })).status).toBe(404);
    expect(world.events.map((e) => e.event)).toEqual(['tool.updated']);
    expect(world.events[0]).toMatchObject({ actor: { id: world.alice.id }, subject: { type: 'tool', id: 'editable' }, data: { name: 'Renamed' } });
    const called = await world.server.parley.services.tools.callTool('editable', 'marker', { text: 'x' });
    expect(called.value).toBe('two:x');
  });

  it('keeps the grants when the form has none, clears them with [], replaces them with a list', async () => {
    const grant = { principal_type: 'user', principal_id: world.bob.id, permission: 'read' };
    await createTool(world.server, world.alice, 'regranted', { access_grants: [grant] });
    const kept = await world.api.post('/api/v1/tools/id/regranted/update', toolBody('regranted'), { token: world.alice.token });
    expect(kept.body.access_grants).toMatchObject([grant]);
    const replaced = await world.api.post('/api/v1/tools/id/regranted/update', toolBody('regranted', { access_grants: [{ ...grant, permission: 'write' }] }), {
      token: world.alice.token,
    });
    expect(replaced.body.access_grants).toMatchObject([{ ...grant, permission: 'write' }]);
    const legacy = await world.api.post('/api/v1/tools/id/regranted/update', toolBody('regranted', { access_control: { read: { user_ids: [world.admin.id] } } }), {
      token: world.alice.token,
    });
    expect(legacy.body.access_grants).toMatchObject([{ principal_type: 'user', principal_id: world.admin.id, permission: 'read' }]);
    const cleared = await world.api.post('/api/v1/tools/id/regranted/update', toolBody('regranted', { access_grants: [] }), { token: world.alice.token });
    expect(cleared.body.access_grants).toEqual([]);
    expect(cleared.body.access_control).toEqual({});
  });

  it('answers a missing tool with 401 NOT_FOUND, as the reference', async () => {
    const res = await world.api.post('/api/v1/tools/id/never_made/update', toolBody('never_made'), { token: world.admin.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: ERROR.NOT_FOUND });
  });

  it('leaves the tool as it was when the new source does not load', async () => {
    await createTool(world.server, world.alice, 'stable');
    const before = (await world.api.get('/api/v1/tools/id/stable', { token: world.alice.token })).body;
    world.events.length = 0;
    const res = await world.api.post('/api/v1/tools/id/stable/update', toolBody('stable', { name: 'Broken', content: 'class Tools:\n    def f(self:\n' }), {
      token: world.alice.token,
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('SyntaxError');
    expect((await world.api.get('/api/v1/tools/id/stable', { token: world.alice.token })).body).toEqual(before);
    expect(world.events).toEqual([]);
    expect((await world.server.parley.services.tools.callTool('stable', 'marker', {})).value).toBe('one:');
  });

  it('lets a write-grant holder without workspace.tools rename, but not change the source (401)', async () => {
    await createTool(world.server, world.alice, 'shared_edit', { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'write' }] });
    const renamed = await world.api.post('/api/v1/tools/id/shared_edit/update', toolBody('shared_edit', { name: 'Bob named it' }), { token: world.bob.token });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.name).toBe('Bob named it');
    const recoded = await world.api.post('/api/v1/tools/id/shared_edit/update', toolBody('shared_edit', { content: simpleTool('bob') }), { token: world.bob.token });
    expect(recoded.status).toBe(401);
    expect(recoded.body).toEqual({ detail: ERROR.UNAUTHORIZED });
    expect((await world.api.get('/api/v1/tools/id/shared_edit', { token: world.bob.token })).body.content).toBe(simpleTool());
  });
});

describe('POST /api/v1/tools/id/{id}/access/update', () => {
  it('replaces the grants, returns the fresh record and publishes tool.access_updated', async () => {
    await createTool(world.server, world.alice, 'access_target', { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] });
    world.events.length = 0;
    const res = await world.api.post(
      '/api/v1/tools/id/access_target/access/update',
      { access_grants: [{ principal_type: 'user', principal_id: world.admin.id, permission: 'write' }] },
      { token: world.alice.token },
    );
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(MODEL_KEYS);
    expect(res.body.access_grants).toMatchObject([{ principal_type: 'user', principal_id: world.admin.id, permission: 'write' }]);
    expect(res.body.access_control).toEqual({ read: { group_ids: [], user_ids: [] }, write: { group_ids: [], user_ids: [world.admin.id] } });
    expect(world.events.map((e) => e.event)).toEqual(['tool.access_updated']);
    expect(world.events[0]).toMatchObject({ subject: { type: 'tool', id: 'access_target' }, data: { name: 'Tool access_target' } });

    const cleared = await world.api.post('/api/v1/tools/id/access_target/access/update', { access_grants: [] }, { token: world.alice.token });
    expect(cleared.body.access_grants).toEqual([]);
  });

  it('needs the list (422), refuses unknown principals (400) and unknown tools (404)', async () => {
    await createTool(world.server, world.alice, 'access_checks');
    world.events.length = 0;
    for (const body of [{}, { access_grants: null }, { access_grants: [null] }]) {
      expect((await world.api.post('/api/v1/tools/id/access_checks/access/update', body, { token: world.alice.token })).status).toBe(422);
    }
    const unknown = await world.api.post(
      '/api/v1/tools/id/access_checks/access/update',
      { access_grants: [{ principal_type: 'group', principal_id: 'ghost-group', permission: 'read' }] },
      { token: world.alice.token },
    );
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ detail: 'Access grant names unknown group(s): ghost-group' });
    const missing = await world.api.post('/api/v1/tools/id/nothing_here/access/update', { access_grants: [] }, { token: world.alice.token });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: ERROR.NOT_FOUND });
    expect(world.events).toEqual([]);
  });
});

describe('DELETE /api/v1/tools/id/{id}/delete', () => {
  it('removes the tool and its grants, publishes tool.deleted, and frees the id', async () => {
    await createTool(world.server, world.alice, 'doomed', { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] });
    world.events.length = 0;
    const res = await world.api.delete('/api/v1/tools/id/doomed/delete', { token: world.alice.token });
    expect(res.status).toBe(200);
    expect(res.body).toBe(true);
    await expectAbsent('doomed');
    expect(await world.server.parley.services.access.grantsOf('tool', 'doomed')).toEqual([]);
    expect(world.events.map((e) => e.event)).toEqual(['tool.deleted']);
    expect(world.events[0]).toMatchObject({ subject: { type: 'tool', id: 'doomed' }, data: { name: 'Tool doomed' } });
    await expect(world.server.parley.services.tools.callTool('doomed', 'marker', {})).rejects.toMatchObject({ code: 'tool_not_found' });

    const again = await createTool(world.server, world.alice, 'doomed', { content: simpleTool('reborn') });
    expect(again.access_grants).toEqual([]);
    expect((await world.server.parley.services.tools.callTool('doomed', 'marker', {})).value).toBe('reborn:');
  });

  it('answers a missing tool with 401 NOT_FOUND, as the reference', async () => {
    const res = await world.api.delete('/api/v1/tools/id/ghost_tool/delete', { token: world.admin.token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: ERROR.NOT_FOUND });
  });
});

describe('listings', () => {
  it('GET / lists ToolUserResponse entries, newest change first, with has_user_valves and specs', async () => {
    await createTool(world.server, world.alice, 'listed_plain', { content: toolSource('example2_search') });
    await new Promise((resolve) => setTimeout(resolve, 1100)); // timestamps are seconds
    await createTool(world.server, world.alice, 'listed_valved');
    const res = await world.api.get('/api/v1/tools/', { token: world.alice.token });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const ids = res.body.map((t: { id: string }) => t.id);
    expect(ids.indexOf('listed_valved')).toBeLessThan(ids.indexOf('listed_plain'));
    const entry = res.body.find((t: { id: string }) => t.id === 'listed_valved');
    expect(Object.keys(entry)).toEqual([...RESPONSE_KEYS, 'user', 'has_user_valves', 'specs']);
    expect(entry).toMatchObject({ user: { id: world.alice.id, name: world.alice.name, role: 'user', email: world.alice.email }, has_user_valves: true });
    expect(Object.keys(entry.user)).toEqual(['id', 'name', 'role', 'email']);
    expect(res.body.find((t: { id: string }) => t.id === 'listed_plain')).toMatchObject({
      has_user_valves: false,
      specs: expectedExtraction('example2_search').specs,
    });
    const updatedAt = res.body.map((t: { updated_at: number }) => t.updated_at);
    expect(updatedAt).toEqual([...updatedAt].sort((a, b) => b - a));
  });

  it('GET / shows every write at once: the same second, and writes by another instance', async () => {
    await createTool(world.server, world.alice, 'fresh_tool');
    const specsOf = async () => (await world.api.get('/api/v1/tools/', { token: world.alice.token })).body.find((t: { id: string }) => t.id === 'fresh_tool').specs;
    expect((await specsOf())[0].description).toBe('Says which source is loaded.');
    const changed = simpleTool().replace('Says which source is loaded.', 'Changed in the same second.');
    await world.api.post('/api/v1/tools/id/fresh_tool/update', toolBody('fresh_tool', { content: changed }), { token: world.alice.token });
    expect((await specsOf())[0].description).toBe('Changed in the same second.');
    // Another instance writes the row (same database): the version tells this one to read it again.
    await world.server.parley.core.db
      .updateTable('tool')
      .set({ specs: JSON.stringify([{ name: 'elsewhere', description: '', parameters: { properties: {}, type: 'object' } }]), version: 'other-instance' })
      .where('id', '=', 'fresh_tool')
      .execute();
    expect((await specsOf())[0].name).toBe('elsewhere');
    const listed = (await world.api.get('/api/v1/tools/list', { token: world.alice.token })).body.find((t: { id: string }) => t.id === 'fresh_tool');
    expect(listed.specs[0].name).toBe('elsewhere');
    await world.api.delete('/api/v1/tools/id/fresh_tool/delete', { token: world.alice.token });
  });

  it('GET /list adds write_access, without the source', async () => {
    const res = await world.api.get('/api/v1/tools/list', { token: world.alice.token });
    expect(res.status).toBe(200);
    const entry = res.body.find((t: { id: string }) => t.id === 'listed_valved');
    expect(entry).toMatchObject({ write_access: true, has_user_valves: true, user: { id: world.alice.id } });
    expect(entry).not.toHaveProperty('content');
    expect(entry.specs).toHaveLength(1);
  });
});

describe('GET /api/v1/tools/export', () => {
  it('needs workspace.tools_export (401 otherwise) and gives whole records', async () => {
    const refused = await world.api.get('/api/v1/tools/export', { token: world.alice.token });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ detail: ERROR.UNAUTHORIZED });

    const all = await world.api.get('/api/v1/tools/export', { token: world.admin.token });
    expect(all.status).toBe(200);
    expect(Object.keys(all.body[0])).toEqual(MODEL_KEYS);
    const adminIds = all.body.map((t: { id: string }) => t.id);
    expect(adminIds).toEqual(expect.arrayContaining(['listed_valved', 'weather_example', 'first_tool']));

    const exporter = await addUser(world.api, world.admin, 'user', 'Eve Exporter');
    await createGroup(world.server, world.admin, [exporter], { workspace: { tools_export: true } });
    const exportedIds = async () => (await world.api.get('/api/v1/tools/export', { token: exporter.token })).body.map((t: { id: string }) => t.id);
    // Only what the exporter may read: public tools so far.
    expect(await exportedIds()).toEqual(['legacy_public']);
    await world.api.post('/api/v1/tools/id/listed_valved/access/update', { access_grants: [{ principal_type: 'user', principal_id: exporter.id, permission: 'read' }] }, {
      token: world.alice.token,
    });
    expect((await exportedIds()).sort()).toEqual(['legacy_public', 'listed_valved']);
    const mine = await world.api.get('/api/v1/tools/export', { token: exporter.token });
    expect(mine.body.find((t: { id: string }) => t.id === 'listed_valved').content).toBe(simpleTool());
  });

  it('round-trips: an exported record creates the same tool', async () => {
    const [record] = (await world.api.get('/api/v1/tools/export', { token: world.admin.token })).body.filter((t: { id: string }) => t.id === 'notes_example');
    await world.api.delete('/api/v1/tools/id/notes_example/delete', { token: world.admin.token });
    const res = await world.api.post('/api/v1/tools/create', record, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    const again = await world.api.get('/api/v1/tools/id/notes_example', { token: world.admin.token });
    expect(again.body.specs).toEqual(record.specs);
    expect(again.body.meta).toEqual(record.meta);
  });
});

describe('with ENABLE_PLUGINS=false', () => {
  it('lists no tools and refuses to load any', async () => {
    await withWorld({ env: { ...TOOLS_ENV, ENABLE_PLUGINS: 'false' }, admin: 'Off Admin' }, async ({ api, admin: owner }) => {
      expect((await api.get('/api/v1/tools/', { token: owner.token })).body).toEqual([]);
      expect((await api.get('/api/v1/tools/list', { token: owner.token })).body).toEqual([]);
      const res = await api.post('/api/v1/tools/create', toolBody('not_loaded'), { token: owner.token });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: '[ERROR: Plugins are disabled by ENABLE_PLUGINS=false]' });
    });
  });
});
