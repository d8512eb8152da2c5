import { beforeAll, describe, expect, it } from 'vitest';
import { TOOL_ERROR } from '../../../src/areas/tools/service.js';
import { ValvesCipher } from '../../../src/areas/tools/valves-crypto.js';
import { ERROR } from '../../../src/core/http/errors.js';
import { toolSource } from '../../core/python/helpers.js';
import { TestClock } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';
import { createTool, TOOLS_ENV } from './helpers.js';

const NO_VALVES = `
class Tools:
    def plain(self) -> str:
        """No valves at all."""
        return "plain"
`;

/** Tokens made by Python's `cryptography` Fernet, as the reference stores them (keys from tools.md §5.5). */
const PYTHON_TOKENS = {
  // WEBUI_SECRET_KEY 'test-secret-key' (not 44 characters: the key is sha256 of it); plaintext {"from": "python", "n": [1, 2]}
  hashedKey: 'gAAAAABrAxWitcq4l1SEdFxVRGBSr3AEE0zqL4pglgxRz4T4-ah24vtXeu7ke73nXHr-CV9bhYswaCvFPTNzyKhbClccnYdpYNgodTVqRmfEcQ3pSHjm9_o=',
  // A 44-character secret is the key itself; same plaintext.
  directKey: {
    secret: 'hRJ2y0nQdS-VxZa0Yv2lB1lX2L7kqW9p8y3oT6m5n4k=',
    token: 'gAAAAABrAxWi2fZs4DBXqunEwFX2PpC8LAGbVqqarhc8jAz8jMXtqjErhaHyJ2r-Bg3W9aIYvszGHd3_FD69FW3cFmAAWymgLqGJ6OpHmL9PiDc-W5dl5-M=',
  },
};

describe('valves', () => {
  const clock = new TestClock();
  const world = useServer({ clock, env: TOOLS_ENV, admin: 'Valves Admin', users: { alice: ['user', 'Alice Valves'], bob: ['user', 'Bob Valves'] }, freshEvents: true });
  beforeAll(async () => {
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    await createTool(world.server, world.admin, 'valved', { access_grants: everyone });
    await createTool(world.server, world.admin, 'valveless', { content: NO_VALVES, access_grants: everyone });
    await createTool(world.server, world.admin, 'options', { content: toolSource('valves_options'), access_grants: everyone });
  });


  it('null until configured; {} once configured empty (interface §2.2 ToolValves)', async () => {
    expect((await world.api.get('/api/v1/tools/id/valved/valves', { token: world.admin.token })).body).toBeNull();
    const res = await world.api.post('/api/v1/tools/id/valved/valves/update', {}, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    const stored = await world.api.get('/api/v1/tools/id/valved/valves', { token: world.admin.token });
    expect(stored.status).toBe(200);
    expect(stored.body).toEqual({});
  });

  it('stores the keys sent, coerced by the Valves class, nulls and unknown keys dropped; replaces rather than merges', async () => {
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ priority: '5' }, { priority: 5 }],
      [{ priority: null, max_turns: 3, bogus: 1 }, { max_turns: 3 }],
    ];
    for (const [body, stored] of cases) {
      const res = await world.api.post('/api/v1/tools/id/valved/valves/update', body, { token: world.admin.token });
      expect(res.body).toEqual(stored);
      expect((await world.api.get('/api/v1/tools/id/valved/valves', { token: world.admin.token })).body).toEqual(stored);
    }
  });

  it('refuses values of the wrong type (400) and keeps what was stored', async () => {
    const res = await world.api.post('/api/v1/tools/id/valved/valves/update', { priority: 'high' }, { token: world.admin.token });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: TOOL_ERROR.UPDATE_VALVES });
    expect((await world.api.get('/api/v1/tools/id/valved/valves', { token: world.admin.token })).body).toEqual({ max_turns: 3 });
    const user = await world.api.post('/api/v1/tools/id/valved/valves/user/update', { nickname: ['not', 'a', 'string'] }, { token: world.alice.token });
    expect(user.status).toBe(400);
    expect(user.body).toEqual({ detail: TOOL_ERROR.UPDATE_USER_VALVES });
    expect(world.events).toEqual([]);
  });

  it('needs a JSON object body (422)', async () => {
    for (const raw of ['[1]', '"x"', '3']) {
      expect((await world.api.request('POST', '/api/v1/tools/id/valved/valves/update', undefined, { token: world.admin.token, raw })).status).toBe(422);
      expect((await world.api.request('POST', '/api/v1/tools/id/valved/valves/user/update', undefined, { token: world.alice.token, raw })).status).toBe(422);
    }
  });

  it('publishes tool.valves_updated and moves updated_at for admin valves', async () => {
    const before = (await world.api.get('/api/v1/tools/id/valved', { token: world.admin.token })).body.updated_at;
    clock.advance(60);
    await world.api.post('/api/v1/tools/id/valved/valves/update', { priority: 7 }, { token: world.admin.token });
    expect((await world.api.get('/api/v1/tools/id/valved', { token: world.admin.token })).body.updated_at).toBe(before + 60);
    await world.api.post('/api/v1/tools/id/valved/valves/user/update', { nickname: 'al' }, { token: world.alice.token });
    expect(world.events.map((e) => [e.event, e.actor?.id, e.subject, e.data])).toEqual([
      ['tool.valves_updated', world.admin.id, { type: 'tool', id: 'valved' }, {}],
      ['tool.valves_updated', world.alice.id, { type: 'tool', id: 'valved' }, { scope: 'user' }],
    ]);
  });

  it('specs: the JSON schema with titles, or null without the class', async () => {
    const spec = await world.api.get('/api/v1/tools/id/valved/valves/spec', { token: world.admin.token });
    expect(spec.body).toEqual({
      properties: {
        priority: { default: 0, description: 'Priority level', title: 'Priority', type: 'integer' },
        max_turns: { default: 8, title: 'Max Turns', type: 'integer' },
      },
      title: 'Valves',
      type: 'object',
    });
    const userSpec = await world.api.get('/api/v1/tools/id/valved/valves/user/spec', { token: world.alice.token });
    expect(userSpec.body).toEqual({ properties: { nickname: { default: 'anon', title: 'Nickname', type: 'string' } }, title: 'UserValves', type: 'object' });
    for (const path of ['valves/spec', 'valves/user/spec']) {
      const none = await world.api.get(`/api/v1/tools/id/valveless/${path}`, { token: world.admin.token });
      expect(none.status).toBe(200);
      expect(none.body).toBeNull();
    }
  });

  it('resolves select options with the calling user', async () => {
    const spec = (await world.api.get('/api/v1/tools/id/options/valves/spec', { token: world.admin.token })).body;
    expect(spec.properties.level.input).toEqual({ type: 'select', options: ['low', 'medium', 'high'] });
    expect(spec.properties.model.input).toEqual({ options: [{ value: 'm1', label: 'Model for Valves Admin' }] });
    const userSpec = (await world.api.get('/api/v1/tools/id/options/valves/user/spec', { token: world.alice.token })).body;
    expect(userSpec.properties.theme.input.options).toEqual(['light', 'dark']);
  });

  it('a tool without the class answers updates with 401 NOT_FOUND, as the reference', async () => {
    for (const path of ['valves/update', 'valves/user/update']) {
      const res = await world.api.post(`/api/v1/tools/id/valveless/${path}`, { x: 1 }, { token: world.admin.token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: ERROR.NOT_FOUND });
    }
  });

  it('unknown tools: 404, except the admin valves update (401 NOT_FOUND)', async () => {
    const calls: [string, string, number][] = [
      ['GET', 'valves', 404],
      ['GET', 'valves/spec', 404],
      ['POST', 'valves/update', 401],
      ['GET', 'valves/user', 404],
      ['GET', 'valves/user/spec', 404],
      ['POST', 'valves/user/update', 404],
    ];
    for (const [method, path, status] of calls) {
      const res = await world.api.request(method, `/api/v1/tools/id/nope/${path}`, method === 'POST' ? {} : undefined, { token: world.admin.token });
      expect([path, res.status, res.body]).toEqual([path, status, { detail: ERROR.NOT_FOUND }]);
    }
  });

  it("user valves are each user's own, kept in their settings (settings.tools.valves[id])", async () => {
    expect((await world.api.get('/api/v1/tools/id/valved/valves/user', { token: world.bob.token })).body).toBeNull();
    await world.api.post('/api/v1/tools/id/valved/valves/user/update', { nickname: 'bobby', extra: 1, ignored: null }, { token: world.bob.token });
    expect((await world.api.get('/api/v1/tools/id/valved/valves/user', { token: world.bob.token })).body).toEqual({ nickname: 'bobby' });
    expect((await world.api.get('/api/v1/tools/id/valved/valves/user', { token: world.alice.token })).body).toEqual({ nickname: 'al' });

    const settings = (await world.api.get('/api/v1/users/user/settings', { token: world.bob.token })).body;
    expect(settings.tools).toEqual({ valves: { valved: { nickname: 'bobby' } } });
    // Other settings survive, and a later settings save keeps the valves.
    await world.api.post('/api/v1/users/user/settings/update', { ...settings, ui: { theme: 'dark' } }, { token: world.bob.token });
    await world.api.post('/api/v1/tools/id/options/valves/user/update', { theme: 'dark' }, { token: world.bob.token });
    const after = (await world.api.get('/api/v1/users/user/settings', { token: world.bob.token })).body;
    expect(after.ui).toEqual({ theme: 'dark' });
    expect(after.tools.valves).toEqual({ valved: { nickname: 'bobby' }, options: { theme: 'dark' } });
  });

  it('a tool call sees the stored admin valves and the caller\'s user valves', async () => {
    await createTool(world.server, world.admin, 'runtime', { content: toolSource('runtime'), access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] });
    await world.api.post('/api/v1/tools/id/runtime/valves/update', { prefix: 'P' }, { token: world.admin.token });
    await world.api.post('/api/v1/tools/id/runtime/valves/user/update', { nickname: 'bee' }, { token: world.bob.token });
    const bobRecord = await world.record(world.bob);
    const result = await world.server.parley.services.tools.callTool('runtime', 'echo', { text: 'hi' }, { user: bobRecord });
    expect(result.value).toBe(`P:hi:bee:${world.bob.name}:runtime`);
    const aliceRecord = await world.record(world.alice);
    expect((await world.server.parley.services.tools.callTool('runtime', 'echo', { text: 'hi' }, { user: aliceRecord })).value).toBe(`P:hi:anon:${world.alice.name}:runtime`);
  });
});

describe('valves encrypted at rest (ENABLE_VALVE_ENCRYPTION)', () => {
  const world = useServer({ env: { ...TOOLS_ENV, ENABLE_VALVE_ENCRYPTION: 'true' }, admin: 'Crypto Admin' });
  beforeAll(async () => {
    await createTool(world.server, world.admin, 'sealed');
  });

  const storedValves = async (id: string) =>
    (await world.server.parley.core.db.selectFrom('tool').select('valves').where('id', '=', id).executeTakeFirstOrThrow()).valves;

  it('stores Fernet tokens and answers with the plain values', async () => {
    const res = await world.api.post('/api/v1/tools/id/sealed/valves/update', { priority: 4 }, { token: world.admin.token });
    expect(res.body).toEqual({ priority: 4 });
    const stored = JSON.parse((await storedValves('sealed'))!);
    expect(typeof stored).toBe('string');
    expect(stored).toMatch(/^gAAAAA[A-Za-z0-9_-]+=*$/);
    expect(stored).not.toContain('priority');
    expect((await world.api.get('/api/v1/tools/id/sealed/valves', { token: world.admin.token })).body).toEqual({ priority: 4 });
    expect((await world.server.parley.services.tools.callTool('sealed', 'marker', {})).value).toBe('one:');

    await world.api.post('/api/v1/tools/id/sealed/valves/user/update', { nickname: 'secret' }, { token: world.admin.token });
    const settings = (await world.api.get('/api/v1/users/user/settings', { token: world.admin.token })).body;
    expect(settings.tools.valves.sealed).toMatch(/^gAAAAA/);
    expect((await world.api.get('/api/v1/tools/id/sealed/valves/user', { token: world.admin.token })).body).toEqual({ nickname: 'secret' });
  });

  it("reads the reference's tokens, plain dicts saved before the switch, and unreadable tokens as {}", async () => {
    const write = (value: unknown) =>
      world.server.parley.core.db.updateTable('tool').set({ valves: JSON.stringify(value) }).where('id', '=', 'sealed').execute();
    await write(PYTHON_TOKENS.hashedKey);
    expect((await world.api.get('/api/v1/tools/id/sealed/valves', { token: world.admin.token })).body).toEqual({ from: 'python', n: [1, 2] });
    await write({ priority: 9 });
    expect((await world.api.get('/api/v1/tools/id/sealed/valves', { token: world.admin.token })).body).toEqual({ priority: 9 });
    await write('gAAAAAnot-a-token');
    expect((await world.api.get('/api/v1/tools/id/sealed/valves', { token: world.admin.token })).body).toEqual({});
  });

  it('uses a 44-character secret as the key itself, as Fernet does', () => {
    const cipher = new ValvesCipher(PYTHON_TOKENS.directKey.secret, true);
    expect(cipher.open(PYTHON_TOKENS.directKey.token)).toEqual({ from: 'python', n: [1, 2] });
    const sealed = cipher.seal({ a: 'é' });
    expect(cipher.open(sealed)).toEqual({ a: 'é' });
    expect(new ValvesCipher('another-secret', true).open(sealed)).toEqual({});
    expect(new ValvesCipher('x', false).seal({ a: 1 })).toEqual({ a: 1 });
  });
});
