import { EVENT_CATALOG, type EventPayload } from './publish.js';

/**
 * The webhook rules of interface §2.5 and §6, as the reference applies them
 * (events.md §2 "Target matching", §3): which event filters and targets are
 * valid, and which events a webhook matches.
 */
export type TargetType = 'user' | 'group';

export interface WebhookTarget {
  type: TargetType;
  id: string;
}

/** What matching needs to know of a webhook. */
export interface WebhookRoute {
  id: string;
  url: string;
  enabled: boolean;
  events: string[];
  targets: WebhookTarget[] | null;
}

/** A rule violation; the message is the reference's 400 detail. */
export class WebhookRuleError extends Error {}

const EVENT_NAMES = new Set(EVENT_CATALOG.events.map((e) => e.event));

/** Every dotted prefix that names at least one event ('chat', 'knowledge', 'knowledge.file', ...). */
const EVENT_PREFIXES = new Set(
  EVENT_CATALOG.events.flatMap((e) => {
    const parts = e.event.split('.');
    return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('.'));
  }),
);

/** Trims the filters, drops empty ones, defaults to ['*'], and refuses names and prefixes outside the catalog. */
export function normalizeEventFilters(events: readonly string[] | null | undefined): string[] {
  const filters = (events ?? []).map((e) => e.trim()).filter(Boolean);
  if (filters.length === 0) return ['*'];
  for (const filter of filters) {
    if (filter === '*') continue;
    if (filter.endsWith('.*')) {
      if (!EVENT_PREFIXES.has(filter.slice(0, -2))) throw new WebhookRuleError(`Invalid event pattern: ${filter}`);
      continue;
    }
    if (!EVENT_NAMES.has(filter)) throw new WebhookRuleError(`Invalid event: ${filter}`);
  }
  return filters;
}

/** `null` stays null (all users); each entry must be `{type: 'user'|'group', id}`; duplicates keep the first. */
export function normalizeTargets(targets: unknown): WebhookTarget[] | null {
  if (targets === null || targets === undefined) return null;
  if (!Array.isArray(targets)) throw new WebhookRuleError('Invalid targets');
  const seen = new Set<string>();
  const out: WebhookTarget[] = [];
  for (const target of targets) {
    if (!target || typeof target !== 'object' || Array.isArray(target)) throw new WebhookRuleError('Invalid target');
    const { type, id } = target as Record<string, unknown>;
    const cleanType = typeof type === 'string' ? type.trim() : '';
    const cleanId = typeof id === 'string' ? id.trim() : '';
    if ((cleanType !== 'user' && cleanType !== 'group') || !cleanId) throw new WebhookRuleError('Invalid target');
    const key = `${cleanType}:${cleanId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ type: cleanType, id: cleanId });
  }
  return out;
}

export function filterMatches(filters: readonly string[], eventName: string): boolean {
  return filters.some((f) => f === '*' || f === eventName || (f.endsWith('.*') && eventName.startsWith(f.slice(0, -1))));
}

/** The users an event is about: actor, a user subject, `data.user_id` and `data.user_ids`. */
export function eventUserIds(event: Pick<EventPayload, 'actor' | 'subject' | 'data'>): Set<string> {
  const ids = new Set<string>();
  const add = (value: unknown) => {
    if (value !== null && value !== undefined && value !== '' && value !== false && value !== 0) ids.add(String(value));
  };
  add(event.actor?.id);
  if (event.subject?.type === 'user') add(event.subject.id);
  add(event.data?.user_id);
  const many = event.data?.user_ids;
  if (Array.isArray(many)) many.forEach(add);
  return ids;
}

/**
 * How a webhook's targets decide an event: 'yes', 'no', or 'groups' when only the
 * group membership of the event's users can tell (resolved by the dispatcher, as
 * the reference resolves groups at dispatch time).
 */
export type TargetDecision = 'yes' | 'no' | 'groups';

export function targetDecision(targets: readonly WebhookTarget[] | null, userIds: ReadonlySet<string>): TargetDecision {
  if (targets === null) return 'yes';
  if (targets.length === 0) return userIds.size === 0 ? 'yes' : 'no';
  if (userIds.size === 0) return 'no';
  if (targets.some((t) => t.type === 'user' && userIds.has(t.id))) return 'yes';
  return targets.some((t) => t.type === 'group') ? 'groups' : 'no';
}

export function groupTargetsMatch(targets: readonly WebhookTarget[] | null, userGroupIds: Iterable<string>): boolean {
  const wanted = new Set((targets ?? []).filter((t) => t.type === 'group').map((t) => t.id));
  for (const id of userGroupIds) if (wanted.has(id)) return true;
  return false;
}

/** A disabled webhook, or one without a url, matches nothing. */
export function routeDecision(route: WebhookRoute, event: EventPayload, userIds: ReadonlySet<string>): TargetDecision {
  if (!route.enabled || !route.url || !filterMatches(route.events, event.event)) return 'no';
  return targetDecision(route.targets, userIds);
}
