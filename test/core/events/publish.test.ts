import { describe, expect, it } from 'vitest';
import { EventBus, isSensitiveKey, sanitize } from '../../../src/core/events/publish.js';

describe('event payloads', () => {
  const bus = new EventBus({ version: '0.11.0', instanceId: 'instance-1', now: () => 1_700_000_000 });

  it('drops secret-looking keys at any depth, as the reference does', () => {
    for (const key of ['password', 'API-Key', 'client_secret', 'my_key', 'x_token', 'Authorization']) expect(isSensitiveKey(key)).toBe(true);
    for (const key of ['keys', 'monkey', 'tokens', 'api_key_suffix', 'name']) expect(isSensitiveKey(key)).toBe(false);
    expect(sanitize({ a: { password: 'p', b: [{ token: 't', ok: 1 }] }, keep: 'x' })).toEqual({ a: { b: [{ ok: 1 }] }, keep: 'x' });
  });

  it('cuts long strings to 1000 characters plus an ellipsis', () => {
    const cut = sanitize({ text: 'x'.repeat(1500) }) as { text: string };
    expect(cut.text.length).toBe(1003);
    expect(cut.text.endsWith('...')).toBe(true);
  });

  it('builds the payload with resource, operation, actor and subject', () => {
    const event = bus.build({
      event: 'knowledge.file.added',
      actor: { id: 'u1', name: 'Ada', email: 'ada@example.com', role: 'admin' },
      subjectId: 'k1',
      data: { file_id: 'f1' },
    });
    expect(Object.keys(event)).toEqual([
      'schema', 'id', 'event', 'resource', 'operation', 'created_at', 'instance_id', 'version', 'source', 'actor', 'subject', 'data', 'message',
    ]);
    expect(event).toMatchObject({
      schema: '0.11.0',
      event: 'knowledge.file.added',
      resource: 'knowledge.file',
      operation: 'added',
      created_at: 1_700_000_000,
      instance_id: 'instance-1',
      source: 'api',
      actor: { id: 'u1', name: 'Ada', email: 'ada@example.com', role: 'admin', type: 'user' },
      subject: { type: 'knowledge.file', id: 'k1' },
      data: { file_id: 'f1' },
      message: null,
    });
  });

  it('gives a null actor when no safe field is present, and no subject when none is named', () => {
    const event = bus.build({ event: 'system.startup.started', actor: {}, source: 'system' });
    expect(event.actor).toBeNull();
    expect(event.subject).toBeNull();
  });

  it('refuses event names outside the catalog', () => {
    expect(() => bus.build({ event: 'made.up' })).toThrow('Unknown event: made.up');
  });

  it('hands each event to every subscribed sink with the writing transaction', async () => {
    const seen: string[] = [];
    const unsubscribe = bus.subscribe((event, db) => void seen.push(`${event.event}:${db === null}`));
    await bus.publish({ event: 'user.created', subjectId: 'u1', subjectType: 'user' });
    unsubscribe();
    await bus.publish({ event: 'user.deleted' });
    expect(seen).toEqual(['user.created:true']);
  });
});
