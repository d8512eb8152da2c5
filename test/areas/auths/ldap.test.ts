import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { closedPortUrl, listenLocally, TestClock } from '../../helpers/server.js';
import { SLAPD_SUFFIX, startSlapd, type TestSlapd } from '../../helpers/slapd.js';
import { useServer } from '../../helpers/world.js';

const PEOPLE = `ou=people,${SLAPD_SUFFIX}`;
const GROUPS = `ou=groups,${SLAPD_SUFFIX}`;
const APP_DN = `cn=parley,${SLAPD_SUFFIX}`;

const person = (uid: string, cn: string, mail: string | null, password: string) =>
  [`dn: uid=${uid},${PEOPLE}`, 'objectClass: inetOrgPerson', `uid: ${uid}`, `cn: ${cn}`, 'sn: Person', ...(mail ? [`mail: ${mail}`] : []), `userPassword: ${password}`, ''].join('\n');
const group = (cn: string, members: string[]) =>
  [`dn: cn=${cn},${GROUPS}`, 'objectClass: groupOfNames', `cn: ${cn}`, ...members.map((uid) => `member: uid=${uid},${PEOPLE}`), ''].join('\n');

describe('LDAP sign-in against a real directory (slapd)', () => {
  let slapd: TestSlapd;
  // Each test starts past the sign-in limiter's window (15 attempts per username in 4 minutes).
  const clock = new TestClock();
  const world = useServer({ clock, admin: 'Admin', freshEvents: true });
  beforeEach(() => clock.advance(300));

  beforeAll(async () => {
    slapd = await startSlapd();
    slapd.add(
      [
        `dn: ${PEOPLE}\nobjectClass: organizationalUnit\nou: people\n`,
        `dn: ${GROUPS}\nobjectClass: organizationalUnit\nou: groups\n`,
        `dn: ${APP_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: parley\nuserPassword: app-secret\n`,
        person('jdoe', 'Jane Doe', 'Jane.Doe@Example.org', 'jane-pw'),
        person('bob', 'Bob Roe', 'bob@example.org', 'bob-pw'),
        person('nomail', 'No Mail', null, 'nomail-pw'),
        person('star*', 'Star User', 'star@example.org', 'star-pw'),
      ].join('\n'),
    );
    // After the people: the memberof overlay records memberOf on entries that exist.
    slapd.add([group('engineering', ['jdoe', 'bob']), group('Staff\\, Paris', ['jdoe'])].join('\n'));
  }, 60_000);
  afterAll(() => slapd?.stop());

  const admin = () => ({ token: world.admin.token });
  const configure = async (fields: Record<string, unknown> = {}) => {
    const server = {
      label: 'Test directory',
      host: '127.0.0.1',
      port: slapd.port,
      app_dn: APP_DN,
      app_dn_password: 'app-secret',
      search_base: PEOPLE,
      search_filters: '(objectClass=inetOrgPerson)',
      attribute_for_username: 'uid',
      attribute_for_mail: 'mail',
      use_tls: false,
      enable_group_management: false,
      enable_group_creation: false,
      ...fields,
    };
    const saved = await world.api.post('/api/v1/auths/admin/config/ldap/server', server, admin());
    expect(saved.status, saved.text).toBe(200);
    expect((await world.api.post('/api/v1/auths/admin/config/ldap', { enable_ldap: true }, admin())).status).toBe(200);
  };
  const signin = (user: string, password: string) => world.api.post('/api/v1/auths/ldap', { user, password });
  const groupNamesOf = async (userId: string) => {
    const groups = await world.api.get('/api/v1/groups/', admin());
    const names: string[] = [];
    for (const g of groups.body) {
      const members = await world.api.post(`/api/v1/groups/id/${g.id}/users`, {}, admin());
      if (members.body.some((m: { id: string }) => m.id === userId)) names.push(g.name);
    }
    return names.sort();
  };

  it('binds as the user, creates the account from the entry and signs in with a cookie', async () => {
    await configure();
    const res = await signin('JDoe', 'jane-pw');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ email: 'jane.doe@example.org', name: 'Jane Doe', role: 'pending', token_type: 'Bearer' });
    expect(res.headers.get('set-cookie')).toMatch(/^token=/);
    expect(world.events.map((e) => [e.event, e.source])).toEqual([
      ['user.created', 'ldap'],
      ['auth.login', 'ldap'],
    ]);
    const me = await world.api.get('/api/v1/auths/', { token: res.body.token });
    expect(me.body.email).toBe('jane.doe@example.org');

    // A second sign-in reuses the account.
    const again = await signin('jdoe', 'jane-pw');
    expect(again.body.id).toBe(res.body.id);
  });

  it('refuses a wrong password, an unknown user and an entry without e-mail, creating nothing', async () => {
    await configure();
    const before = (await world.api.get('/api/v1/users/', admin())).body.total;
    const wrong = await signin('bob', 'not-bobs');
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail).toBe('LDAP authentication failed: the username or password is incorrect.');
    const unknown = await signin('nobody', 'whatever');
    expect(unknown.body.detail).toBe(wrong.body.detail);
    const noMail = await signin('nomail', 'nomail-pw');
    expect(noMail.status).toBe(400);
    expect(noMail.body.detail).toBe('LDAP authentication failed: the directory entry has no e-mail address (attribute mail).');
    expect((await world.api.get('/api/v1/users/', admin())).body.total).toBe(before);
    expect(world.events).toEqual([]);
  });

  it('escapes the username (RFC 4515): filter syntax matches nothing but itself', async () => {
    await configure();
    for (const attempt of ['*', 'j*', ')(uid=*', '*)(|(uid=*', 'bob)(|(objectClass=*', '\\2a', 'jdoe\u0000']) {
      const res = await signin(attempt, 'jane-pw');
      expect(res.status, attempt).toBe(400);
      expect(res.body.detail, attempt).toBe('LDAP authentication failed: the username or password is incorrect.');
    }
    // A uid that really contains `*` signs in as itself.
    const star = await signin('star*', 'star-pw');
    expect(star.status, star.text).toBe(200);
    expect(star.body.email).toBe('star@example.org');
  });

  it('refuses a wrong application account with a reason for the admin', async () => {
    await configure({ app_dn_password: 'wrong' });
    const res = await signin('bob', 'bob-pw');
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^LDAP authentication failed: the application account's bind was refused/);
    // Any other LDAP result is a 400 with the directory's words, never a 500.
    await configure({ app_dn: 'not a DN' });
    const invalid = await signin('bob', 'bob-pw');
    expect(invalid.status).toBe(400);
    expect(invalid.body.detail).toMatch(/^LDAP authentication failed: the directory refused the request \(/);
  });

  it('maps the entry’s groups, creating them when group creation is on', async () => {
    await configure({ enable_group_management: true, attribute_for_groups: 'memberOf', enable_group_creation: false });
    const first = await signin('jdoe', 'jane-pw');
    expect(first.status, first.text).toBe(200);
    expect(await groupNamesOf(first.body.id)).toEqual([]);

    await configure({ enable_group_management: true, attribute_for_groups: 'memberOf', enable_group_creation: true });
    const second = await signin('jdoe', 'jane-pw');
    expect(second.status, second.text).toBe(200);
    expect(await groupNamesOf(second.body.id)).toEqual(['Staff, Paris', 'engineering']);
    expect(world.events.filter((e) => e.event === 'group.created').map((e) => e.data.name).sort()).toEqual(['Staff, Paris', 'engineering']);

    // Bob joins the existing group; no second "engineering" is created.
    const bob = await signin('bob', 'bob-pw');
    expect(await groupNamesOf(bob.body.id)).toEqual(['engineering']);
    const groups = await world.api.get('/api/v1/groups/', admin());
    expect(groups.body.filter((g: { name: string }) => g.name === 'engineering')).toHaveLength(1);

    // A group the directory no longer lists is left: an admin-made group Bob was put in goes.
    const extra = await world.api.post('/api/v1/groups/create', { name: 'Extra', description: '' }, admin());
    await world.api.post(`/api/v1/groups/id/${extra.body.id}/users/add`, { user_ids: [bob.body.id] }, admin());
    expect(await groupNamesOf(bob.body.id)).toEqual(['Extra', 'engineering']);
    await signin('bob', 'bob-pw');
    expect(await groupNamesOf(bob.body.id)).toEqual(['engineering']);
  });

  it('connects over TLS (ldaps) and StartTLS, checking the certificate against the CA file', async () => {
    await configure({ port: slapd.tlsPort, use_tls: true, certificate_path: slapd.caFile, validate_cert: true });
    const tls = await signin('bob', 'bob-pw');
    expect(tls.status, tls.text).toBe(200);

    // Without the CA the server's certificate is not trusted.
    await configure({ port: slapd.tlsPort, use_tls: true, certificate_path: '', validate_cert: true });
    const untrusted = await signin('bob', 'bob-pw');
    expect(untrusted.status).toBe(400);
    expect(untrusted.body.detail).toMatch(new RegExp(`^LDAP authentication failed: the TLS connection to ldaps://127.0.0.1:${slapd.tlsPort} was refused`));
    await configure({ port: slapd.tlsPort, use_tls: true, certificate_path: '/nonexistent/ca.pem' });
    expect((await signin('bob', 'bob-pw')).body.detail).toBe('Failed to configure TLS for LDAP connection: the CA certificate file /nonexistent/ca.pem cannot be read.');

    const imported = await world.api.post('/api/v1/configs/import', { config: { 'ldap.server.start_tls': true } }, admin());
    expect(imported.status, imported.text).toBe(200);
    await configure({ use_tls: false, certificate_path: slapd.caFile, validate_cert: true });
    const startTls = await signin('bob', 'bob-pw');
    expect(startTls.status, startTls.text).toBe(200);
    // The upgrade really happens: without the CA it is refused.
    await configure({ use_tls: false, certificate_path: '', validate_cert: true });
    expect((await signin('bob', 'bob-pw')).body.detail).toMatch(/^LDAP authentication failed: the TLS connection to ldap:\/\/127.0.0.1:\d+ was refused/);
    await world.api.post('/api/v1/configs/import', { config: { 'ldap.server.start_tls': false } }, admin());
  });

  it('answers an unreachable server with a 400 naming it', async () => {
    const closed = new URL(await closedPortUrl());
    await configure({ port: Number(closed.port) });
    const res = await signin('bob', 'bob-pw');
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(new RegExp(`^LDAP authentication failed: the LDAP server at ldap://127.0.0.1:${closed.port} could not be reached`));
  });

  it('gives up on a server that accepts the connection but never answers (10 s)', async () => {
    const silent = createServer(() => undefined);
    const url = new URL(await listenLocally(silent));
    try {
      await configure({ port: Number(url.port) });
      const started = Date.now();
      const res = await signin('bob', 'bob-pw');
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/^LDAP authentication failed: the LDAP server at ldap:\/\/127.0.0.1:\d+ did not answer in time \(\w+: Operation timed out\)/);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      silent.close();
    }
  }, 20_000);
});
