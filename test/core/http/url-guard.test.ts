import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressAllowed, hostAllowed, type Resolver, UrlGuard, UrlRefusedError, urlPolicyFromEnv } from '../../../src/core/http/url-guard.js';
import { Receiver } from '../../areas/events/receiver.js';

const strict = urlPolicyFromEnv({});
const local = urlPolicyFromEnv({ EVENT_WEBHOOK_ALLOW_LOCAL: 'true' });

describe('addresses', () => {
  it.each([
    ['93.184.216.34', true, true],
    ['2606:2800:220:1::1', true, true],
    ['127.0.0.1', false, true],
    ['10.0.0.1', false, true],
    ['172.20.1.1', false, true],
    ['192.168.0.1', false, true],
    ['100.64.0.1', false, true],
    ['::1', false, true],
    ['fd12::1', false, true],
    ['::ffff:10.0.0.1', false, true],
    ['::ffff:93.184.216.34', true, true],
    ['64:ff9b::7f00:1', false, true],
    ['2002:7f00:1::', false, true],
    ['169.254.169.254', false, false],
    ['169.254.10.10', false, false],
    ['100.100.100.200', false, false],
    ['fd00:ec2::254', false, false],
    ['fe80::1', false, false],
    ['::ffff:169.254.169.254', false, false],
    ['0.0.0.0', false, false],
    ['::', false, false],
    ['224.0.0.1', false, false],
    ['ff02::1', false, false],
    ['not-an-ip', false, false],
  ])('%s: allowed strictly %s, with local targets %s', (address, strictly, locally) => {
    expect(addressAllowed(address, strict)).toBe(strictly);
    expect(addressAllowed(address, local)).toBe(locally);
  });
});

describe('host filter list', () => {
  it('blocks ! entries on label boundaries and, once plain entries exist, allows only those', () => {
    expect(hostAllowed('metadata.google.internal', strict.filterList)).toBe(false);
    expect(hostAllowed('x.metadata.google.internal.', strict.filterList)).toBe(false);
    expect(hostAllowed('notmetadata.google.internal.example', strict.filterList)).toBe(true);
    expect(hostAllowed('hooks.example.com', ['example.com'])).toBe(true);
    expect(hostAllowed('evilexample.com', ['example.com'])).toBe(false);
    expect(hostAllowed('HOOKS.example.com', ['example.com', '!hooks.example.com'])).toBe(false);
  });

  it('uses EVENT_WEBHOOK_FILTER_LIST before WEB_FETCH_FILTER_LIST, always with the metadata defaults', () => {
    expect(urlPolicyFromEnv({ WEB_FETCH_FILTER_LIST: 'a.com' }).filterList).toContain('a.com');
    const own = urlPolicyFromEnv({ WEB_FETCH_FILTER_LIST: 'a.com', EVENT_WEBHOOK_FILTER_LIST: 'b.com' }).filterList;
    expect(own).toContain('b.com');
    expect(own).not.toContain('a.com');
    expect(own).toContain('!169.254.169.254');
    expect(urlPolicyFromEnv({ ENABLE_LOCAL_WEB_FETCH: 'true' }).allowLocal).toBe(true);
    expect(urlPolicyFromEnv({ ENABLE_RAG_LOCAL_WEB_FETCH: 'true' }).allowLocal).toBe(true);
    expect(urlPolicyFromEnv({ ENABLE_LOCAL_WEB_FETCH: 'true', EVENT_WEBHOOK_ALLOW_LOCAL: 'false' }).allowLocal).toBe(false);
  });
});

describe('saving a webhook url', () => {
  const fixed = (address: string): Resolver => async () => [{ address, family: address.includes(':') ? 6 : 4 }];
  const failing: Resolver = async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
  };

  it('refuses names that resolve to refused addresses, or do not resolve', async () => {
    await expect(new UrlGuard(strict, fixed('93.184.216.34')).check('https://hooks.example.com/x')).resolves.toBeUndefined();
    await expect(new UrlGuard(strict, fixed('10.0.0.8')).check('https://internal.example.com/x')).rejects.toBeInstanceOf(UrlRefusedError);
    await expect(new UrlGuard(strict, failing).check('https://nowhere.example/x')).rejects.toBeInstanceOf(UrlRefusedError);
    await expect(new UrlGuard(local, fixed('169.254.169.254')).check('http://sneaky.example/')).rejects.toBeInstanceOf(UrlRefusedError);
  });

  it('with local targets allowed, accepts a name that does not resolve yet (a container not started), as the reference', async () => {
    await expect(new UrlGuard(local, failing).check('http://n8n:5678/webhook')).resolves.toBeUndefined();
  });
});

describe('connecting to a webhook', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await Receiver.start();
  });
  afterAll(async () => receiver.close());

  const post = async (guard: UrlGuard, url: string) => {
    const agent = new Agent({ connect: { lookup: guard.lookup } });
    try {
      const res = await request(url, { method: 'POST', body: '{}', dispatcher: agent });
      await res.body.dump();
      return res.statusCode;
    } finally {
      await agent.close();
    }
  };

  it('connects to exactly the address the guard checked', async () => {
    const port = new URL(receiver.url).port;
    const guard = new UrlGuard(local, async () => [{ address: '127.0.0.1', family: 4 }]);
    expect(await post(guard, `http://receiver.invalid:${port}/pinned`)).toBe(200);
    expect(receiver.received.at(-1)?.path).toBe('/pinned');
  });

  it('refuses a name that passed when saved but resolves to a refused address when connecting (DNS rebinding)', async () => {
    const port = new URL(receiver.url).port;
    let calls = 0;
    const guard = new UrlGuard(strict, async () => (calls++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]));
    await guard.check(`http://rebind.invalid:${port}/x`);
    const before = receiver.received.length;
    // The delivery log's last_error says why and what allows it.
    await expect(post(guard, `http://rebind.invalid:${port}/x`)).rejects.toThrow(
      'rebind.invalid (127.0.0.1) is on this machine or a private network; local targets are refused unless the server runs with EVENT_WEBHOOK_ALLOW_LOCAL=true.',
    );
    expect(receiver.received.length).toBe(before);
  });
});
