import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newSigningSecret, signedHeaders } from '../../../src/core/events/signing.js';

describe('Standard Webhooks signatures', () => {
  it('verify with the standardwebhooks library', () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({ event: 'user.created', data: { name: 'Zoë' } });
    const headers = signedHeaders([secret], 'evt-1', Math.floor(Date.now() / 1000), body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('fail for another secret, another body or another id', () => {
    const secret = newSigningSecret();
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders([secret], 'evt-1', now, '{"a":1}');
    expect(() => new Webhook(newSigningSecret()).verify('{"a":1}', headers)).toThrow();
    expect(() => new Webhook(secret).verify('{"a":2}', headers)).toThrow();
    expect(() => new Webhook(secret).verify('{"a":1}', { ...headers, 'webhook-id': 'evt-2' })).toThrow();
  });

  it('carry one signature per secret during a rotation, each verifying', () => {
    const [next, previous] = [newSigningSecret(), newSigningSecret()];
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders([next, previous], 'evt-1', now, '{}');
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(next).verify('{}', headers)).toEqual({});
    expect(new Webhook(previous).verify('{}', headers)).toEqual({});
  });
});
