import { describe, expect, it } from 'vitest';
import {
  eventUserIds,
  filterMatches,
  groupTargetsMatch,
  normalizeEventFilters,
  normalizeTargets,
  routeDecision,
  targetDecision,
  type WebhookRoute,
} from '../../../src/core/events/filters.js';
import { EventBus } from '../../../src/core/events/publish.js';

const bus = new EventBus({ version: '0.11.0', instanceId: 'i', now: () => 1 });

describe('event filters', () => {
  it('accept *, real prefixes at any depth and exact names; refuse the rest with the reference messages', () => {
    expect(normalizeEventFilters(['*', 'chat.*', 'knowledge.*', 'knowledge.file.*', 'config.webhook.*', 'user.created'])).toHaveLength(6);
    expect(normalizeEventFilters(null)).toEqual(['*']);
    expect(normalizeEventFilters([' ', ''])).toEqual(['*']);
    expect(normalizeEventFilters([' user.created ', 'user.created'])).toEqual(['user.created', 'user.created']);
    expect(() => normalizeEventFilters(['chat'])).toThrow('Invalid event: chat');
    expect(() => normalizeEventFilters(['*', 'user.*.created'])).toThrow('Invalid event: user.*.created');
    expect(() => normalizeEventFilters(['ch.*'])).toThrow('Invalid event pattern: ch.*');
    expect(() => normalizeEventFilters(['user.created.*'])).toThrow('Invalid event pattern: user.created.*');
    expect(() => normalizeEventFilters(['USER.*'])).toThrow('Invalid event pattern: USER.*');
  });

  it.each([
    [['*'], 'user.created', true],
    [['user.*'], 'user.created', true],
    [['user.*'], 'auth.login', false],
    [['knowledge.*'], 'knowledge.file.added', true],
    [['knowledge.file.*'], 'knowledge.created', false],
    [['config.*'], 'config.webhook.updated', true],
    [['auth.login'], 'auth.login', true],
    [['auth.login'], 'auth.logout', false],
    [['chat.*', 'auth.login'], 'auth.login', true],
  ])('%j matches %s: %s', (filters, name, expected) => {
    expect(filterMatches(filters, name)).toBe(expected);
  });
});

describe('event targets', () => {
  it('normalise to {type, id}, trimmed, first of duplicates kept; null stays null', () => {
    expect(normalizeTargets(null)).toBeNull();
    expect(normalizeTargets([])).toEqual([]);
    expect(normalizeTargets([{ type: ' user', id: 'a ', name: 'x' }, { type: 'group', id: 'g' }, { type: 'user', id: 'a' }])).toEqual([
      { type: 'user', id: 'a' },
      { type: 'group', id: 'g' },
    ]);
    expect(() => normalizeTargets('user')).toThrow('Invalid targets');
    for (const bad of [[null], ['a'], [{ type: 'User', id: 'a' }], [{ type: 'user', id: '' }], [{ type: 'user' }]]) {
      expect(() => normalizeTargets(bad)).toThrow('Invalid target');
    }
  });

  it('find the users of an event in the actor, a user subject, data.user_id and data.user_ids', () => {
    const event = bus.build({ event: 'group.member_added', actor: { id: 'admin' }, subjectId: 'g1', subjectType: 'group', data: { user_ids: ['u1', '', 'u2'], user_id: 'u3' } });
    expect([...eventUserIds(event)].sort()).toEqual(['admin', 'u1', 'u2', 'u3']);
    expect([...eventUserIds(bus.build({ event: 'user.deleted', subjectId: 'u9', subjectType: 'user' }))]).toEqual(['u9']);
    expect(eventUserIds(bus.build({ event: 'group.created', subjectId: 'g', subjectType: 'group', data: { member_ids: ['u1'] } })).size).toBe(0);
  });

  // interface §2.5: null → everything; [] → only events without users; list → listed users or members of listed groups.
  it.each([
    [null, [], 'yes'],
    [null, ['u1'], 'yes'],
    [[], [], 'yes'],
    [[], ['u1'], 'no'],
    [[{ type: 'user', id: 'u1' }], [], 'no'],
    [[{ type: 'user', id: 'u1' }], ['u1', 'u2'], 'yes'],
    [[{ type: 'user', id: 'u1' }], ['u2'], 'no'],
    [[{ type: 'group', id: 'g1' }], ['u2'], 'groups'],
    [[{ type: 'group', id: 'g1' }], [], 'no'],
    [[{ type: 'user', id: 'u2' }, { type: 'group', id: 'g1' }], ['u2'], 'yes'],
  ] as const)('targets %j with users %j: %s', (targets, users, expected) => {
    expect(targetDecision(targets as never, new Set(users))).toBe(expected);
  });

  it('match group targets against the groups of the event users', () => {
    expect(groupTargetsMatch([{ type: 'group', id: 'g1' }], ['g2', 'g1'])).toBe(true);
    expect(groupTargetsMatch([{ type: 'group', id: 'g1' }, { type: 'user', id: 'g2' }], ['g2'])).toBe(false);
  });

  it('never route to a disabled webhook or one without a url', () => {
    const route: WebhookRoute = { id: 'w', url: 'http://x', enabled: true, events: ['*'], targets: null };
    const event = bus.build({ event: 'system.startup.started' });
    expect(routeDecision(route, event, new Set())).toBe('yes');
    expect(routeDecision({ ...route, enabled: false }, event, new Set())).toBe('no');
    expect(routeDecision({ ...route, url: '' }, event, new Set())).toBe('no');
    expect(routeDecision({ ...route, events: ['user.*'] }, event, new Set())).toBe('no');
  });
});
