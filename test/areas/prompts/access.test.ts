import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { createGroup, createPrompt, grantPromptAuthoring, promptBody } from './helpers.js';

/**
 * Who may do what with a prompt: the owner, an admin, holders of a read grant, a
 * write grant or a group grant, everyone through a public grant, and a user with
 * none of these (routers/prompts.py: reading is 404 to outsiders, the rest 401).
 */
const world = useServer({
  admin: 'Prompt Admin',
  users: { owner: ['user', 'Olive Owner'], reader: ['user', 'Rita Reader'], writer: ['user', 'Walt Writer'], member: ['user', 'Greta Group'], stranger: ['user', 'Stan Stranger'] },
});
let group: { id: string };
const prompts: Record<'shared' | 'public', { id: string; version_id: string }> = {} as never;

type Who = 'owner' | 'admin' | 'reader' | 'writer' | 'group' | 'public' | 'none';
const WHO: Who[] = ['owner', 'admin', 'reader', 'writer', 'group', 'public', 'none'];

/** The principal and the prompt they act on: `public` is the stranger on a prompt with a `user:*` read grant. */
const actors = (): Record<Who, { account: Account; prompt: 'shared' | 'public' }> => ({
  owner: { account: world.owner, prompt: 'shared' },
  admin: { account: world.admin, prompt: 'shared' },
  reader: { account: world.reader, prompt: 'shared' },
  writer: { account: world.writer, prompt: 'shared' },
  group: { account: world.member, prompt: 'shared' },
  public: { account: world.stranger, prompt: 'public' },
  none: { account: world.stranger, prompt: 'shared' },
});

const grantsOf = (which: 'shared' | 'public') =>
  which === 'shared'
    ? [
        { principal_type: 'user', principal_id: world.reader.id, permission: 'read' },
        { principal_type: 'user', principal_id: world.writer.id, permission: 'write' },
        { principal_type: 'group', principal_id: group.id, permission: 'read' },
      ]
    : [{ principal_type: 'user', principal_id: '*', permission: 'read' }];

beforeAll(async () => {
  await grantPromptAuthoring(world.server, world.admin, [world.owner], { sharing: { public_prompts: true } });
  group = await createGroup(world.server, world.admin, [world.member]);
  prompts.shared = await createPrompt(world.server, world.owner, 'shared', { access_grants: grantsOf('shared') });
  prompts.public = await createPrompt(world.server, world.owner, 'public', { access_grants: grantsOf('public') });
});

type Expectation = number | [number, string];
const ok = 200;
const prohibited: Expectation = [401, ERROR.ACCESS_PROHIBITED];
const hidden: Expectation = [404, ERROR.NOT_FOUND];
const readers = { owner: ok, admin: ok, reader: ok, writer: ok, group: ok, public: ok } as const;
const writers = { owner: ok, admin: ok, reader: prohibited, writer: ok, group: prohibited, public: prohibited, none: prohibited } as const;

/** One row per route: the expected answer for each principal. Mutations send what is already stored, so the table holds for every row. */
const ROUTES: { name: string; call: (account: Account, which: 'shared' | 'public') => Promise<{ status: number; body: any }>; expect: Record<Who, Expectation> }[] = [
  {
    name: 'GET /id/{id}',
    call: (a, w) => world.api.get(`/api/v1/prompts/id/${prompts[w].id}`, { token: a.token }),
    expect: { ...readers, none: hidden },
  },
  {
    name: 'GET /id/{id}/history',
    call: (a, w) => world.api.get(`/api/v1/prompts/id/${prompts[w].id}/history`, { token: a.token }),
    expect: { ...readers, none: prohibited },
  },
  {
    name: 'GET /id/{id}/history/{history_id}',
    call: (a, w) => world.api.get(`/api/v1/prompts/id/${prompts[w].id}/history/${prompts[w].version_id}`, { token: a.token }),
    expect: { ...readers, none: prohibited },
  },
  {
    name: 'POST /id/{id}/update (same fields)',
    call: (a, w) => world.api.post(`/api/v1/prompts/id/${prompts[w].id}/update`, promptBody(w), { token: a.token }),
    expect: writers,
  },
  {
    name: 'POST /id/{id}/update/meta (same fields)',
    call: (a, w) => world.api.post(`/api/v1/prompts/id/${prompts[w].id}/update/meta`, { name: `Prompt ${w}`, command: w }, { token: a.token }),
    expect: writers,
  },
  {
    name: 'POST /id/{id}/update/version (the one in use)',
    call: (a, w) => world.api.post(`/api/v1/prompts/id/${prompts[w].id}/update/version`, { version_id: prompts[w].version_id }, { token: a.token }),
    expect: writers,
  },
  {
    name: 'POST /id/{id}/access/update (the same grants)',
    call: (a, w) => world.api.post(`/api/v1/prompts/id/${prompts[w].id}/access/update`, { access_grants: grantsOf(w) }, { token: a.token }),
    expect: writers,
  },
  {
    name: 'DELETE /id/{id}/history/{unknown}',
    call: (a, w) => world.api.delete(`/api/v1/prompts/id/${prompts[w].id}/history/unknown`, { token: a.token }),
    expect: { ...writers, owner: 404, admin: 404, writer: 404 },
  },
];

describe.each(ROUTES)('$name', ({ call, expect: expected }) => {
  it.each(WHO)('as %s', async (who) => {
    const { account, prompt } = actors()[who];
    const res = await call(account, prompt);
    const [status, detail] = Array.isArray(expected[who]) ? (expected[who] as [number, string]) : [expected[who] as number, undefined];
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    if (detail) expect(res.body).toEqual({ detail });
  });
});

describe('listings', () => {
  it('the / picker shows each user what they may read', async () => {
    const seen = async (account: Account) => ((await world.api.get('/api/v1/prompts/', { token: account.token })).body as { command: string }[]).map((p) => p.command).sort();
    expect(await seen(world.owner)).toEqual(['public', 'shared']);
    expect(await seen(world.reader)).toEqual(['public', 'shared']);
    expect(await seen(world.member)).toEqual(['public', 'shared']);
    expect(await seen(world.stranger)).toEqual(['public']);
    // Admins see every prompt (BYPASS_ADMIN_ACCESS_CONTROL, on by default), a private one too.
    await createPrompt(world.server, world.owner, 'owner_private');
    expect(await seen(world.admin)).toEqual(['owner_private', 'public', 'shared']);
    expect(await seen(world.reader)).toEqual(['public', 'shared']);
  });

  it('the / picker follows grant and group membership changes at once', async () => {
    const seen = async (account: Account) => ((await world.api.get('/api/v1/prompts/', { token: account.token })).body as { command: string }[]).map((p) => p.command);
    const team = await createGroup(world.server, world.admin, []);
    const followed = await createPrompt(world.server, world.owner, 'followed', { access_grants: [{ principal_type: 'group', principal_id: team.id, permission: 'read' }] });
    expect(await seen(world.stranger)).not.toContain('followed');
    const members = (ids: string[], action: 'add' | 'remove') => world.api.post(`/api/v1/groups/id/${team.id}/users/${action}`, { user_ids: ids }, { token: world.admin.token });
    expect((await members([world.stranger.id], 'add')).status).toBe(200);
    expect(await seen(world.stranger)).toContain('followed');
    expect((await members([world.stranger.id], 'remove')).status).toBe(200);
    expect(await seen(world.stranger)).not.toContain('followed');

    const share = (grants: unknown[]) => world.api.post(`/api/v1/prompts/id/${followed.id}/access/update`, { access_grants: grants }, { token: world.owner.token });
    expect((await share([{ principal_type: 'user', principal_id: world.stranger.id, permission: 'write' }])).status).toBe(200);
    expect(await seen(world.stranger)).toContain('followed');
    expect((await share([])).status).toBe(200);
    expect(await seen(world.stranger)).not.toContain('followed');
    expect(await seen(world.owner)).toContain('followed');
  });

  it('/list says who may write', async () => {
    const writeAccess = async (account: Account) => {
      const res = await world.api.get('/api/v1/prompts/list?query=shared', { token: account.token });
      return res.body.items.map((p: { write_access: boolean }) => p.write_access);
    };
    expect(await writeAccess(world.writer)).toEqual([true]);
    expect(await writeAccess(world.reader)).toEqual([false]);
    expect(await writeAccess(world.stranger)).toEqual([]);
  });

  it('GET /id/{id} says write_access', async () => {
    const of = async (account: Account) => (await world.api.get(`/api/v1/prompts/id/${prompts.shared.id}`, { token: account.token })).body.write_access;
    expect(await of(world.writer)).toBe(true);
    expect(await of(world.reader)).toBe(false);
  });
});

describe('changes by others', () => {
  it('a reader cannot change, toggle or delete the prompt, and nothing changes', async () => {
    const before = (await world.api.get(`/api/v1/prompts/id/${prompts.shared.id}`, { token: world.owner.token })).body;
    const token = { token: world.reader.token };
    expect((await world.api.post(`/api/v1/prompts/id/${prompts.shared.id}/update`, promptBody('shared', { content: 'hijacked' }), token)).status).toBe(401);
    expect((await world.api.post(`/api/v1/prompts/id/${prompts.shared.id}/toggle`, {}, token)).status).toBe(401);
    expect((await world.api.delete(`/api/v1/prompts/id/${prompts.shared.id}/delete`, token)).status).toBe(401);
    const after = (await world.api.get(`/api/v1/prompts/id/${prompts.shared.id}`, { token: world.owner.token })).body;
    expect(after).toEqual(before);
  });

  it('a writer edits: a version by them, grants kept', async () => {
    const res = await world.api.post(`/api/v1/prompts/id/${prompts.shared.id}/update`, promptBody('shared', { content: 'edited by writer' }), { token: world.writer.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.access_grants).toHaveLength(3);
    const versions = (await world.api.get(`/api/v1/prompts/id/${prompts.shared.id}/history`, { token: world.reader.token })).body;
    expect(versions[0]).toMatchObject({ user_id: world.writer.id, snapshot: { content: 'edited by writer' } });
    expect(versions[0].snapshot.access_grants).toHaveLength(3);
  });

  it('public grants need sharing.public_prompts: dropped for a user without it', async () => {
    await grantPromptAuthoring(world.server, world.admin, [world.writer]);
    const created = await createPrompt(world.server, world.writer, 'writer_public', { access_grants: grantsOf('public') });
    expect(created.access_grants).toEqual([]);
  });
});
