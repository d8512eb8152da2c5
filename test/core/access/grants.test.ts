import { describe, expect, it } from 'vitest';
import { accessControlToGrants, grantsToAccessControl, parseGrants, type GrantSpec } from '../../../src/core/access/grants.js';

const grant = (principal_type: GrantSpec['principal_type'], principal_id: string, permission: GrantSpec['permission']): GrantSpec => ({
  principal_type,
  principal_id,
  permission,
});

describe('legacy access_control to grants', () => {
  it('reads null as public read, except for files', () => {
    expect(accessControlToGrants(null, 'tool')).toEqual({ grants: [grant('user', '*', 'read')] });
    expect(accessControlToGrants(undefined, 'model')).toEqual({ grants: [grant('user', '*', 'read')] });
    expect(accessControlToGrants(null, 'file')).toEqual({ grants: [] });
  });

  it('reads {} and empty lists as private', () => {
    expect(accessControlToGrants({}, 'tool')).toEqual({ grants: [] });
    expect(accessControlToGrants({ read: { group_ids: [], user_ids: [] }, write: {} }, 'tool')).toEqual({ grants: [] });
    expect(accessControlToGrants({ read: null }, 'tool')).toEqual({ grants: [] });
  });

  it('gives one grant per listed group and user, read then write, without duplicates', () => {
    const result = accessControlToGrants(
      { read: { group_ids: ['g1'], user_ids: ['u1', 'u1'] }, write: { group_ids: ['g2'], user_ids: ['u2'] } },
      'knowledge',
    );
    expect(result).toEqual({
      grants: [grant('group', 'g1', 'read'), grant('user', 'u1', 'read'), grant('group', 'g2', 'write'), grant('user', 'u2', 'write')],
    });
  });

  it('refuses malformed objects', () => {
    expect(accessControlToGrants('public', 'tool')).toEqual({ error: 'access_control must be an object or null' });
    expect(accessControlToGrants({ read: [] }, 'tool')).toEqual({ error: 'access_control.read must be an object' });
    expect(accessControlToGrants({ write: { user_ids: 'u1' } }, 'tool')).toEqual({ error: 'access_control.write.user_ids must be a list of ids' });
    expect(accessControlToGrants({ read: { group_ids: [3] } }, 'tool')).toEqual({ error: 'access_control.read.group_ids must be a list of ids' });
  });
});

describe('grants to legacy access_control', () => {
  it('gives {} for no grants (private)', () => {
    expect(grantsToAccessControl([])).toEqual({});
  });

  it('gives null when the public read grant is present', () => {
    expect(grantsToAccessControl([grant('user', '*', 'read'), grant('group', 'g1', 'write')])).toBeNull();
  });

  it('lists groups and users per permission', () => {
    expect(
      grantsToAccessControl([grant('group', 'g1', 'read'), grant('user', 'u1', 'read'), grant('user', 'u1', 'read'), grant('user', 'u2', 'write'), grant('group', 'g1', 'write')]),
    ).toEqual({ read: { group_ids: ['g1'], user_ids: ['u1'] }, write: { group_ids: ['g1'], user_ids: ['u2'] } });
  });

  it("keeps public write as '*' in write.user_ids and ignores other principals", () => {
    expect(grantsToAccessControl([grant('user', '*', 'write'), grant('anyone', '*', 'read')])).toEqual({
      read: { group_ids: [], user_ids: [] },
      write: { group_ids: [], user_ids: ['*'] },
    });
  });

  it('survives a round trip both ways', () => {
    const forms = [
      null,
      {},
      { read: { group_ids: ['g1'], user_ids: ['u1'] }, write: { group_ids: [], user_ids: ['u1'] } },
      { read: { group_ids: [], user_ids: [] }, write: { group_ids: ['g2'], user_ids: ['*'] } },
    ];
    for (const form of forms) {
      const converted = accessControlToGrants(form, 'tool');
      if ('error' in converted) throw new Error(converted.error);
      const back = grantsToAccessControl(converted.grants);
      const expected = form && Object.keys(form).length === 0 ? {} : form;
      expect(back).toEqual(expected);
    }
  });
});

describe('parseGrants', () => {
  it('accepts user, group, public and open grants and drops duplicates and ids', () => {
    expect(
      parseGrants([
        { id: 'ignored', principal_type: 'user', principal_id: 'u1', permission: 'read' },
        { principal_type: 'user', principal_id: 'u1', permission: 'read' },
        { principal_type: 'group', principal_id: 'g1', permission: 'write' },
        { principal_type: 'user', principal_id: '*', permission: 'read' },
        { principal_type: 'anyone', principal_id: '*', permission: 'read' },
      ]),
    ).toEqual({
      grants: [grant('user', 'u1', 'read'), grant('group', 'g1', 'write'), grant('user', '*', 'read'), grant('anyone', '*', 'read')],
    });
    expect(parseGrants(null)).toEqual({ grants: [] });
    expect(parseGrants([])).toEqual({ grants: [] });
  });

  it('refuses malformed entries with the position and field', () => {
    expect(parseGrants({})).toEqual({ error: 'access_grants must be a list' });
    expect(parseGrants(['x'])).toEqual({ error: 'access_grants[0] must be an object' });
    expect(parseGrants([{ principal_type: 'role', principal_id: 'u', permission: 'read' }])).toEqual({
      error: "access_grants[0].principal_type must be 'user' or 'group'",
    });
    expect(parseGrants([grant('user', 'u', 'read'), { principal_type: 'user', principal_id: 'u', permission: 'admin' }])).toEqual({
      error: "access_grants[1].permission must be 'read' or 'write'",
    });
    expect(parseGrants([{ principal_type: 'user', principal_id: '', permission: 'read' }])).toEqual({
      error: 'access_grants[0].principal_id must be a non-empty string',
    });
    expect(parseGrants([grant('group', '*', 'read')])).toEqual({ error: "access_grants[0]: '*' names every user, not a group" });
    expect(parseGrants([grant('anyone', '*', 'write')])).toEqual({
      error: "access_grants[0]: an 'anyone' grant must be principal_id '*' with permission 'read'",
    });
  });
});
