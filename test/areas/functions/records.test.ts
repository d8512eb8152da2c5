import { describe, expect, it } from 'vitest';
import { useServer } from '../../helpers/world.js';

/** `/api/v1/functions`: records, types from the class, admin-only writes, valves, sync with a failing source. */
const FILTER = `"""
title: Shouter
version: 0.2
"""
from pydantic import BaseModel


class Filter:
    class Valves(BaseModel):
        priority: int = 0
        suffix: str = "!"

    class UserValves(BaseModel):
        loud: bool = False

    def __init__(self):
        self.valves = self.Valves()
        self.toggle = True

    def inlet(self, body: dict) -> dict:
        return body
`;

const ACTION = `
class Action:
    actions = [{"id": "one", "name": "One"}, {"id": "two", "name": "Two"}]

    async def action(self, body: dict, __id__=None):
        return {"pressed": __id__}
`;

const form = (id: string, content: string) => ({ id, name: `Fn ${id}`, content, meta: { description: `About ${id}` } });

describe('function records', () => {
  const world = useServer({ env: { ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS: 'false', PLUGIN_POOL_SIZE: '2' }, admin: 'Fn Admin', users: { alice: ['user', 'Fn Alice'] } });

  it('creates with the type of the class the source defines, inactive, with its frontmatter and toggle', async () => {
    const res = await world.api.post('/api/v1/functions/create', form('Shout', FILTER), { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: 'shout', type: 'filter', is_active: false, is_global: false, meta: { description: 'About Shout', manifest: { title: 'Shouter', version: '0.2' }, toggle: true } });
    expect(res.body.content).toBeUndefined();
    const action = await world.api.post('/api/v1/functions/create', form('buttons', ACTION), { token: world.admin.token });
    expect(action.body.type).toBe('action');

    const got = await world.api.get('/api/v1/functions/id/shout', { token: world.admin.token });
    expect(got.body.content).toContain('class Filter');
    const listed = await world.api.get('/api/v1/functions/', { token: world.alice.token });
    expect(listed.body.map((f: any) => f.id).sort()).toEqual(['buttons', 'shout']);
    const list = await world.api.get('/api/v1/functions/list', { token: world.admin.token });
    expect(list.body.find((f: any) => f.id === 'shout').user).toMatchObject({ name: 'Fn Admin' });
  }, 30000);

  it('refuses bad input and non-admins, changing nothing', async () => {
    expect((await world.api.post('/api/v1/functions/create', form('nope', ACTION), { token: world.alice.token })).status).toBe(401);
    const bad = await world.api.post('/api/v1/functions/create', form('bad-id', ACTION), { token: world.admin.token });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toBe('Only alphanumeric characters and underscores are allowed in the id');
    const taken = await world.api.post('/api/v1/functions/create', form('shout', ACTION), { token: world.admin.token });
    expect(taken.body.detail).toMatch(/already registered/);
    const broken = await world.api.post('/api/v1/functions/create', form('broken', 'class Pipe(:\n'), { token: world.admin.token });
    expect(broken.status).toBe(400);
    expect(broken.body.detail).toMatch(/^\[ERROR: SyntaxError/);
    const none = await world.api.post('/api/v1/functions/create', form('empty', 'x = 1\n'), { token: world.admin.token });
    expect(none.body.detail).toBe('[ERROR: No Function class found in the module]');
    expect((await world.api.get('/api/v1/functions/id/broken', { token: world.admin.token })).status).toBe(401);
    expect((await world.api.post('/api/v1/functions/id/shout/toggle', {}, { token: world.alice.token })).status).toBe(401);
    expect((await world.api.get('/api/v1/functions/list', { token: world.alice.token })).status).toBe(401);
  }, 30000);

  it('toggles, updates valves and user valves, exports and deletes', async () => {
    const on = await world.api.post('/api/v1/functions/id/shout/toggle', {}, { token: world.admin.token });
    expect(on.body.is_active).toBe(true);
    const global = await world.api.post('/api/v1/functions/id/shout/toggle/global', {}, { token: world.admin.token });
    expect(global.body.is_global).toBe(true);

    expect((await world.api.get('/api/v1/functions/id/shout/valves', { token: world.admin.token })).body).toBeNull();
    const spec = await world.api.get('/api/v1/functions/id/shout/valves/spec', { token: world.admin.token });
    expect(spec.body.properties.suffix).toMatchObject({ default: '!' });
    const valves = await world.api.post('/api/v1/functions/id/shout/valves/update', { priority: '3', suffix: '?' }, { token: world.admin.token });
    expect(valves.body).toEqual({ priority: 3, suffix: '?' });
    const refused = await world.api.post('/api/v1/functions/id/shout/valves/update', { priority: 'high' }, { token: world.admin.token });
    expect(refused.status).toBe(400);
    expect((await world.api.get('/api/v1/functions/id/shout/valves', { token: world.admin.token })).body).toEqual({ priority: 3, suffix: '?' });
    expect((await world.api.post('/api/v1/functions/id/buttons/valves/update', {}, { token: world.admin.token })).status).toBe(401);

    const userSpec = await world.api.get('/api/v1/functions/id/shout/valves/user/spec', { token: world.alice.token });
    expect(userSpec.body.properties.loud).toMatchObject({ default: false });
    const mine = await world.api.post('/api/v1/functions/id/shout/valves/user/update', { loud: true }, { token: world.alice.token });
    expect(mine.body).toEqual({ loud: true });
    expect((await world.api.get('/api/v1/functions/id/shout/valves/user', { token: world.alice.token })).body).toEqual({ loud: true });
    expect((await world.api.get('/api/v1/functions/id/shout/valves/user', { token: world.admin.token })).body).toBeNull();

    const exported = await world.api.get('/api/v1/functions/export?include_valves=true', { token: world.admin.token });
    expect(exported.body.find((f: any) => f.id === 'shout')).toMatchObject({ content: expect.stringContaining('class Filter'), valves: { priority: 3, suffix: '?' } });

    const updated = await world.api.post('/api/v1/functions/id/buttons/update', form('buttons', 'class Pipe:\n    def pipe(self, body):\n        return "hi"\n'), { token: world.admin.token });
    expect(updated.body.type).toBe('pipe');
    expect((await world.api.delete('/api/v1/functions/id/buttons/delete', { token: world.admin.token })).body).toBe(true);
    expect((await world.api.delete('/api/v1/functions/id/buttons/delete', { token: world.admin.token })).body).toBe(false);
  }, 30000);

  it('syncs an export, storing a source that does not load as inactive with its error', async () => {
    const res = await world.api.post(
      '/api/v1/functions/sync',
      { functions: [{ ...form('good', ACTION), is_active: true }, { ...form('bad', 'import not_a_module_anywhere\n'), type: 'filter', is_active: true }] },
      { token: world.admin.token },
    );
    expect(res.status, res.text).toBe(200);
    const byId = Object.fromEntries(res.body.map((f: any) => [f.id, f]));
    expect(Object.keys(byId).sort()).toEqual(['bad', 'good']);
    expect(byId.good).toMatchObject({ type: 'action', is_active: true });
    expect(byId.bad).toMatchObject({ type: 'filter', is_active: false, meta: { error: expect.stringContaining('not_a_module_anywhere') } });
  }, 30000);
});
