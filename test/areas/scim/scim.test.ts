import { describe, expect, it } from 'vitest';
import { TestClock } from '../../helpers/server.js';
import { useServer, withWorld } from '../../helpers/world.js';

const TOKEN = 'scim-secret-token';
const SCIM = '/api/v1/scim/v2';
const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

describe('SCIM 2.0 provisioning', () => {
  const clock = new TestClock();
  const world = useServer({ clock, admin: 'Admin', users: { member: 'user' }, env: { ENABLE_SCIM: 'true', SCIM_TOKEN: TOKEN, SCIM_AUTH_PROVIDER: 'oidc' }, freshEvents: true });

  /** As an IdP sends it: the SCIM token and `application/scim+json`. */
  const idp = (method: string, path: string, body?: unknown, token: string | null = TOKEN) =>
    world.api.request(method, `${SCIM}${path}`, body, { token, headers: body === undefined ? {} : { 'content-type': 'application/scim+json' } });
  const patch = (path: string, Operations: unknown[]) => idp('PATCH', path, { schemas: [PATCH_SCHEMA], Operations });
  const scimEvents = () => world.events.map((e) => [e.event, e.source, e.actor]);

  it('refuses requests without the SCIM token (401, SCIM error format)', async () => {
    for (const token of [null, 'wrong-token', world.admin.token]) {
      const res = await idp('GET', '/Users', undefined, token);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/scim\+json/);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: '401' });
    }
    const basic = await world.api.get(`${SCIM}/Users`, { headers: { authorization: `Basic ${TOKEN}` } });
    expect(basic.status).toBe(401);
  });

  it('describes itself: service provider config, resource types, schemas', async () => {
    const config = await idp('GET', '/ServiceProviderConfig');
    expect(config.status).toBe(200);
    expect(config.body).toMatchObject({ patch: { supported: true }, filter: { supported: true }, bulk: { supported: false } });
    const types = await idp('GET', '/ResourceTypes');
    expect(types.body.map((t: { id: string; endpoint: string }) => [t.id, t.endpoint])).toEqual([
      ['User', '/Users'],
      ['Group', '/Groups'],
    ]);
    const schemas = await idp('GET', '/Schemas');
    expect(schemas.body.map((s: { id: string }) => s.id)).toEqual(['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:core:2.0:Group']);
  });

  it('runs an IdP’s provisioning sequence for a user: create, find, update, deactivate, delete', async () => {
    const created = await idp('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      externalId: 'ext-ada-1',
      userName: 'Ada.Lovelace@Example.com',
      name: { givenName: 'Ada', familyName: 'Lovelace' },
      emails: [{ value: 'Ada.Lovelace@Example.com', type: 'work', primary: true }],
      active: true,
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Math' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    const ada = created.body;
    expect(ada).toMatchObject({
      externalId: 'ext-ada-1',
      userName: 'ada.lovelace@example.com',
      displayName: 'Ada Lovelace',
      active: true,
      emails: [{ value: 'ada.lovelace@example.com', primary: true }],
      meta: { resourceType: 'User', location: expect.stringMatching(new RegExp(`${SCIM}/Users/${ada.id}$`)) },
    });
    expect(scimEvents()).toEqual([['user.created', 'scim', null]]);
    expect(world.events[0].data).toMatchObject({ email: 'ada.lovelace@example.com', role: 'user', external_id: 'ext-ada-1' });

    // The same person again: 409 uniqueness, by externalId and by e-mail.
    const again = await idp('POST', '/Users', { userName: 'other@example.com', externalId: 'ext-ada-1' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: '409', scimType: 'uniqueness' });
    expect((await idp('POST', '/Users', { userName: 'ADA.LOVELACE@example.com' })).status).toBe(409);

    // Found by the filters IdPs send.
    for (const filter of ['userName eq "ADA.LOVELACE@EXAMPLE.COM"', 'externalId eq "ext-ada-1"', `id eq "${ada.id}"`, 'displayName co "Lovelace"']) {
      const found = await idp('GET', `/Users?filter=${encodeURIComponent(filter)}`);
      expect(found.status, filter).toBe(200);
      expect(found.body, filter).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 1, itemsPerPage: 1, startIndex: 1 });
      expect(found.body.Resources[0].id, filter).toBe(ada.id);
    }
    const none = await idp('GET', `/Users?filter=${encodeURIComponent('userName eq "nobody@example.com"')}`);
    expect(none.body).toMatchObject({ totalResults: 0, Resources: [] });

    // PUT replaces the attributes Parley keeps.
    const replaced = await idp('PUT', `/Users/${ada.id}`, { userName: 'ada@example.com', displayName: 'Ada King', externalId: 'ext-ada-1', active: true });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body).toMatchObject({ userName: 'ada@example.com', displayName: 'Ada King', active: true });

    // Entra-style PATCH: capitalised op, a string boolean, attributes in a value object.
    const renamed = await patch(`/Users/${ada.id}`, [{ op: 'Replace', value: { displayName: 'Ada K.', 'name.givenName': 'Ada' } }]);
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.displayName).toBe('Ada K.');
    const emails = await patch(`/Users/${ada.id}`, [{ op: 'replace', path: 'emails', value: [{ value: 'old@example.com' }, { value: 'Ada.K@example.com', primary: true }] }]);
    expect(emails.body.userName).toBe('ada.k@example.com');
    const byPath = await patch(`/Users/${ada.id}`, [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'ada@example.com' }]);
    expect(byPath.body.emails).toEqual([expect.objectContaining({ value: 'ada@example.com' })]);
    const off = await patch(`/Users/${ada.id}`, [{ op: 'Replace', path: 'active', value: 'False' }]);
    expect(off.body.active).toBe(false);
    const record = await world.api.get(`/api/v1/users/${ada.id}`, { token: world.admin.token });
    expect(record.body.role).toBe('pending');

    const deleted = await idp('DELETE', `/Users/${ada.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const gone = await idp('GET', `/Users/${ada.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: '404', detail: `User ${ada.id} not found` });
    expect(world.events.at(-1)).toMatchObject({ event: 'user.deleted', source: 'scim', actor: null, data: { email: 'ada@example.com' } });
  });

  it('signs a user out everywhere when the IdP deactivates or deletes them', async () => {
    const member = world.member;
    const found = await idp('GET', `/Users?filter=${encodeURIComponent(`userName eq "${member.email}"`)}`);
    const id = found.body.Resources[0].id;
    expect((await world.api.get('/api/v1/auths/', { token: member.token })).status).toBe(200);

    const off = await patch(`/Users/${id}`, [{ op: 'replace', path: 'active', value: false }]);
    expect(off.status, off.text).toBe(200);
    expect((await world.api.get('/api/v1/auths/', { token: member.token })).status).toBe(401);

    // Active again: a new sign-in works; the old token stays ended.
    await patch(`/Users/${id}`, [{ op: 'replace', path: 'active', value: true }]);
    clock.advance(1);
    const signin = await world.api.post('/api/v1/auths/signin', { email: member.email, password: member.password });
    expect(signin.status, signin.text).toBe(200);
    expect(signin.body.role).toBe('user');
    expect((await world.api.get('/api/v1/auths/', { token: signin.body.token })).status).toBe(200);
    expect((await world.api.get('/api/v1/auths/', { token: member.token })).status).toBe(401);

    // Never an admin: `active` does not demote one.
    const admin = await idp('GET', `/Users?filter=${encodeURIComponent(`userName eq "${world.admin.email}"`)}`);
    await patch(`/Users/${admin.body.Resources[0].id}`, [{ op: 'replace', path: 'active', value: false }]);
    expect((await world.api.get('/api/v1/auths/', { token: world.admin.token })).body.role).toBe('admin');
    expect((await idp('DELETE', `/Users/${admin.body.Resources[0].id}`)).status).toBe(403);

    const deleted = await idp('DELETE', `/Users/${id}`);
    expect(deleted.status).toBe(204);
    expect((await world.api.get('/api/v1/auths/', { token: signin.body.token })).status).toBe(401);
  });

  it('pages users with startIndex and count', async () => {
    for (const n of [1, 2, 3]) expect((await idp('POST', '/Users', { userName: `pager${n}@example.com`, displayName: `Pager ${n}` })).status).toBe(201);
    const all = await idp('GET', '/Users?count=100');
    const total = all.body.totalResults;
    expect(total).toBeGreaterThanOrEqual(4);
    const page = await idp('GET', `/Users?startIndex=2&count=2`);
    expect(page.body).toMatchObject({ totalResults: total, itemsPerPage: 2, startIndex: 2 });
    expect(page.body.Resources.map((u: { id: string }) => u.id)).toEqual(all.body.Resources.slice(1, 3).map((u: { id: string }) => u.id));
    const clamped = await idp('GET', '/Users?startIndex=0&count=-5');
    expect(clamped.body).toMatchObject({ startIndex: 1, itemsPerPage: 0, Resources: [] });
  });

  it('runs an IdP’s sequence for a group: create with members, patch members and name, delete', async () => {
    const user = async (name: string) => (await idp('POST', '/Users', { userName: `${name}@example.com`, displayName: name })).body.id as string;
    const [ann, ben, cy] = [await user('ann'), await user('ben'), await user('cy')];
    world.events.length = 0;

    const created = await idp('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Engineers', members: [{ value: ann }, { value: ben }] });
    expect(created.status, created.text).toBe(201);
    const group = created.body;
    expect(group.members.map((m: { value: string }) => m.value).sort()).toEqual([ann, ben].sort());
    expect(world.events.map((e) => e.event)).toEqual(['group.created', 'group.member_added']);
    expect(world.events[1]).toMatchObject({ source: 'scim', actor: null, data: { member_ids: [ann, ben].sort(), count: 2 } });

    const byName = await idp('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Engineers"')}`);
    expect(byName.body.Resources.map((g: { id: string }) => g.id)).toEqual([group.id]);
    const user1 = await idp('GET', `/Users/${ann}`);
    expect(user1.body.groups).toEqual([expect.objectContaining({ value: group.id, display: 'Engineers' })]);

    // Entra: add, remove by filter path; Okta: replace with a value object.
    world.events.length = 0;
    const added = await patch(`/Groups/${group.id}`, [{ op: 'Add', path: 'members', value: [{ value: cy }] }]);
    expect(added.body.members).toHaveLength(3);
    const removed = await patch(`/Groups/${group.id}`, [{ op: 'Remove', path: `members[value eq "${ann}"]` }]);
    expect(removed.body.members.map((m: { value: string }) => m.value).sort()).toEqual([ben, cy].sort());
    const okta = await patch(`/Groups/${group.id}`, [{ op: 'replace', value: { id: group.id, displayName: 'Platform' } }]);
    expect(okta.body.displayName).toBe('Platform');
    const removeList = await patch(`/Groups/${group.id}`, [{ op: 'remove', path: 'members', value: [{ value: ben }] }]);
    expect(removeList.body.members.map((m: { value: string }) => m.value)).toEqual([cy]);
    expect(world.events.map((e) => [e.event, e.data.member_ids ?? null])).toEqual([
      ['group.updated', null],
      ['group.member_added', [cy]],
      ['group.updated', null],
      ['group.member_removed', [ann]],
      ['group.updated', null],
      ['group.updated', null],
      ['group.member_removed', [ben]],
    ]);

    // PUT replaces the members; then the group is deleted.
    const put = await idp('PUT', `/Groups/${group.id}`, { displayName: 'Platform', members: [{ value: ann }] });
    expect(put.body.members.map((m: { value: string }) => m.value)).toEqual([ann]);
    const paged = await idp('GET', '/Groups?count=1');
    expect(paged.body).toMatchObject({ itemsPerPage: 1, totalResults: expect.any(Number) });
    expect((await idp('DELETE', `/Groups/${group.id}`)).status).toBe(204);
    expect((await idp('GET', `/Groups/${group.id}`)).status).toBe(404);
    expect((await world.api.get(`/api/v1/groups/id/${group.id}`, { token: world.admin.token })).status).not.toBe(200);
  });

  it('answers malformed input in the SCIM error format and changes nothing', async () => {
    const target = (await idp('POST', '/Users', { userName: 'steady@example.com', displayName: 'Steady' })).body;
    world.events.length = 0;
    const cases: [string, Promise<{ status: number; body: any }>, string][] = [
      ['unknown op', patch(`/Users/${target.id}`, [{ op: 'frobnicate', path: 'active', value: false }]), 'invalidSyntax'],
      ['op list missing', idp('PATCH', `/Users/${target.id}`, { schemas: [PATCH_SCHEMA] }), 'invalidValue'],
      ['empty op list', patch(`/Users/${target.id}`, []), 'invalidValue'],
      ['bad boolean', patch(`/Users/${target.id}`, [{ op: 'replace', path: 'active', value: 'maybe' }]), 'invalidValue'],
      ['no path, no object', patch(`/Users/${target.id}`, [{ op: 'replace', value: 'x' }]), 'invalidValue'],
      ['bad group path', patch(`/Groups/none`, [{ op: 'add', path: 'members', value: [] }]), ''],
      ['broken JSON', world.api.request('POST', `${SCIM}/Users`, undefined, { token: TOKEN, raw: '{"userName": ', headers: { 'content-type': 'application/scim+json' } }), 'invalidSyntax'],
      ['missing userName', idp('POST', '/Users', { displayName: 'No Name' }), 'invalidValue'],
      ['bad e-mail', idp('POST', '/Users', { userName: 'not-an-address' }), 'invalidValue'],
      ['bad filter', idp('GET', `/Users?filter=${encodeURIComponent('userName eq')}`), 'invalidFilter'],
    ];
    for (const [name, request, scimType] of cases) {
      const res = await request;
      expect(res.body.schemas, name).toEqual([ERROR_SCHEMA]);
      if (scimType) {
        expect(res.status, name).toBe(400);
        expect(res.body.scimType, name).toBe(scimType);
      } else expect(res.status, name).toBe(404);
      expect(typeof res.body.detail, name).toBe('string');
    }
    expect((await idp('GET', `/Users/${target.id}`)).body.active).toBe(true);
    expect(world.events).toEqual([]);
  });
});

describe('SCIM on a fresh instance', () => {
  it('provisions nothing before the first (admin) account exists', async () => {
    await withWorld({ admin: false, env: { ENABLE_SCIM: 'true', SCIM_TOKEN: TOKEN } }, async (world) => {
      const send = (path: string, body: unknown) => world.api.post(`${SCIM}${path}`, body, { token: TOKEN });
      for (const [path, body] of [
        ['/Users', { userName: 'first@example.com' }],
        ['/Groups', { displayName: 'First' }],
      ] as const) {
        const res = await send(path, body);
        expect(res.status, path).toBe(409);
        expect(res.body.schemas, path).toEqual([ERROR_SCHEMA]);
      }
      expect((await world.api.get(`${SCIM}/Users`, { token: TOKEN })).body.totalResults).toBe(0);
    });
  });
});

describe('SCIM switched off', () => {
  it('serves no SCIM routes without ENABLE_SCIM, as the reference', async () => {
    await withWorld({ env: { SCIM_TOKEN: TOKEN } }, async (world) => {
      const res = await world.api.get(`${SCIM}/Users`, { token: TOKEN });
      expect(res.status).toBe(404);
    });
  });
});
