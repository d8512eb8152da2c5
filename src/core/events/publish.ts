import { randomUUID } from 'node:crypto';
import type { Db } from '../db/database.js';
import catalogJson from './catalog.json' with { type: 'json' };

/**
 * Structured events (interface §6, reference events.md §2). Every area calls
 * `publish` after a write other systems care about; sinks (webhook outbox,
 * realtime, tests) subscribe here. The payload is built and sanitised once.
 */
export interface EventDefinition {
  event: string;
  description: string;
  message: string;
}

export const EVENT_CATALOG: { schema: string; events: EventDefinition[] } = catalogJson;
const KNOWN_EVENTS = new Set(EVENT_CATALOG.events.map((e) => e.event));

export interface EventActor {
  id?: string;
  name?: string;
  email?: string;
  role?: string;
  created_at?: number;
  updated_at?: number;
  type?: string;
}

export interface PublishInput {
  event: string;
  actor?: EventActor | null;
  subjectId?: string | null;
  subjectType?: string | null;
  source?: string;
  data?: Record<string, unknown>;
  message?: string | null;
}

export interface EventPayload {
  schema: string;
  id: string;
  event: string;
  resource: string;
  operation: string;
  created_at: number;
  instance_id: string | null;
  version: string;
  source: string;
  actor: Record<string, unknown> | null;
  subject: { type: string | null; id: string | null } | null;
  data: Record<string, unknown>;
  message: string | null;
}

/** A sink receives each event; `db` is the transaction of the write that caused it, when there is one. */
export type EventSink = (event: EventPayload, db: Db | null) => Promise<void> | void;

const SENSITIVE_KEYS = new Set([
  'password',
  'hashed_password',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'api_key',
  'secret',
  'key',
  'authorization',
  'cookie',
  'webhook_token',
]);
const SENSITIVE_SUFFIXES = ['_token', '_secret', '_api_key', '_key'];
const MAX_STRING_LENGTH = 1000;

export function isSensitiveKey(key: string): boolean {
  const normalised = key.toLowerCase().replace(/-/g, '_');
  return SENSITIVE_KEYS.has(normalised) || SENSITIVE_SUFFIXES.some((suffix) => normalised.endsWith(suffix));
}

/** Drops secret-looking keys at any depth and cuts long strings, as the reference does. */
export function sanitize(value: unknown): unknown {
  if (typeof value === 'string') return value.length > MAX_STRING_LENGTH ? `${value.slice(0, MAX_STRING_LENGTH)}...` : value;
  if (Array.isArray(value)) return value.map(sanitize);
  if (value instanceof Set) return [...value].map(sanitize);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!isSensitiveKey(k)) out[k] = sanitize(v);
    return out;
  }
  return value;
}

const SAFE_ACTOR_FIELDS = ['id', 'name', 'email', 'role', 'created_at', 'updated_at'] as const;

function actorOf(actor: EventActor | null | undefined): Record<string, unknown> | null {
  if (!actor) return null;
  const clean = sanitize(actor) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of SAFE_ACTOR_FIELDS) if (clean[field] !== undefined && clean[field] !== null) out[field] = clean[field];
  if (Object.keys(out).length === 0) return null;
  out.type = actor.type ?? 'user';
  return out;
}

export class EventBus {
  private readonly sinks: EventSink[] = [];

  constructor(
    private readonly options: { version: string; instanceId: string; now: () => number },
  ) {}

  subscribe(sink: EventSink): () => void {
    this.sinks.push(sink);
    return () => {
      const index = this.sinks.indexOf(sink);
      if (index >= 0) this.sinks.splice(index, 1);
    };
  }

  build(input: PublishInput): EventPayload {
    if (!KNOWN_EVENTS.has(input.event)) throw new Error(`Unknown event: ${input.event}`);
    const parts = input.event.split('.');
    const hasSubject = input.subjectId !== undefined || input.subjectType !== undefined;
    const resource = parts.slice(0, -1).join('.');
    return {
      schema: this.options.version,
      id: randomUUID(),
      event: input.event,
      resource,
      operation: parts[parts.length - 1],
      created_at: this.options.now(),
      instance_id: this.options.instanceId,
      version: this.options.version,
      source: input.source ?? 'api',
      actor: actorOf(input.actor),
      subject: hasSubject
        ? (sanitize({ type: input.subjectType ?? resource, id: input.subjectId ?? null }) as EventPayload['subject'])
        : null,
      data: sanitize(input.data ?? {}) as Record<string, unknown>,
      message: input.message ?? null,
    };
  }

  /**
   * Publishes an event. Pass the transaction of the write that caused it so that a
   * durable sink records the event atomically with that write.
   */
  async publish(input: PublishInput, db: Db | null = null): Promise<EventPayload> {
    const payload = this.build(input);
    for (const sink of this.sinks) await sink(payload, db);
    return payload;
  }
}
