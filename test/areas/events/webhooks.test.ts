import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { as } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';

const INVALID_URL = 'The URL you provided is invalid. Please double-check and try again.';
const PROHIBITED = 'You do not have permission to access this resource. Please contact your administrator for assistance.';
// `GET /api/events` of the reference (Open WebUI 0.10.2), recorded.
const reference = JSON.parse(readFileSync(path.join(import.meta.dirname, 'reference-event-catalog.json'), 'utf8')) as {
  events: { event: string; description: string; message: string }[];
};

/** Webhook administration: the reference's CRUD semantics, statuses and messages (events.md §3, §4). */
describe('event webhook administration', () => {
  const world = useServer({ admin: 'Events Admin', users: { user: 'user' } });
  const list = async () => (await world.api.get('/api/events/webhooks', as(world.admin))).body as any[];

  describe('GET /api/events', () => {
    it("answers the reference's 172 events in their order, plus the 0.11.0 additions, under the version", async () => {
      const res = await world.api.get('/api/events', as(world.admin));
      expect(res.status).toBe(200);
      expect(res.body.schema).toBe('0.11.0');
      const names = res.body.events.map((e: { event: string }) => e.event);
      const fromReference = res.body.events.filter((e: { event: string }) => reference.events.some((r) => r.event === e.event));
      expect(fromReference).toEqual(reference.events);
      for (const added of ['chat.forked', 'chat.read', 'chat.unread', 'user.variables_updated', 'note.chat_linked', 'config.subagents.updated', 'folder.read']) {
        expect(names).toContain(added);
      }
      for (const entry of res.body.events) expect(Object.keys(entry)).toEqual(['event', 'description', 'message']);
    });

    it('answers 401 to users who are not admins, and to anonymous callers', async () => {
      const asUser = await world.api.get('/api/events', as(world.user));
      expect(asUser.status).toBe(401);
      expect(asUser.body).toEqual({ detail: PROHIBITED });
      expect((await world.api.get('/api/events')).status).toBe(401);
      for (const [method, path] of [
        ['GET', '/api/events/webhooks'],
        ['POST', '/api/events/webhooks'],
        ['PUT', '/api/events/webhooks/x'],
        ['DELETE', '/api/events/webhooks/x'],
        ['GET', '/api/events/webhooks/x/deliveries'],
        ['GET', '/api/events/webhooks/x/secret'],
        ['POST', '/api/events/webhooks/x/test'],
      ]) {
        const res = await world.api.request(method, path, method === 'GET' || method === 'DELETE' ? undefined : { url: '' }, as(world.user));
        expect(res.status, `${method} ${path}`).toBe(401);
      }
    });
  });

  describe('POST /api/events/webhooks', () => {
    it('creates a webhook with the defaults and a server-made id, and says so with config.webhook.updated', async () => {
      world.events.length = 0;
      const res = await world.api.post('/api/events/webhooks', { url: 'http://93.184.216.34/hook' }, as(world.admin));
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['id', 'name', 'url', 'enabled', 'events', 'targets', 'created_at', 'updated_at']);
      expect(res.body).toMatchObject({ name: 'Webhook', url: 'http://93.184.216.34/hook', enabled: true, events: ['*'], targets: null });
      expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.created_at).toBe(res.body.updated_at);
      expect(res.body.created_at).toBeLessThan(10_000_000_000);
      expect((await list()).map((w) => w.id)).toContain(res.body.id);
      const event = world.events.find((e) => e.event === 'config.webhook.updated');
      expect(event).toMatchObject({
        actor: { id: world.admin.id, role: 'admin', type: 'user' },
        subject: { type: 'config', id: res.body.id },
        source: 'api',
        data: { action: 'created', enabled: true, events: ['*'], targets: null },
      });
    });

    it('trims and keeps valid filters and targets, dropping duplicate targets', async () => {
      const res = await world.api.post(
        '/api/events/webhooks',
        {
          name: 'Filtered',
          url: ' http://93.184.216.34/a ',
          enabled: false,
          events: [' chat.* ', 'knowledge.file.*', 'user.created', '', '*'],
          targets: [
            { type: 'user', id: ' u1 ', extra: 'dropped' },
            { type: ' group ', id: 'g1' },
            { type: 'user', id: 'u1' },
          ],
        },
        as(world.admin),
      );
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: 'Filtered',
        url: 'http://93.184.216.34/a',
        enabled: false,
        events: ['chat.*', 'knowledge.file.*', 'user.created', '*'],
        targets: [
          { type: 'user', id: 'u1' },
          { type: 'group', id: 'g1' },
        ],
      });
    });

    it('accepts an empty url (such a webhook never delivers) and empty filters as every event', async () => {
      const res = await world.api.post('/api/events/webhooks', { url: '  ', events: [], targets: [] }, as(world.admin));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ url: '', events: ['*'], targets: [] });
    });

    it('refuses unknown events and prefixes with 400 and the reference message, storing nothing', async () => {
      const before = await list();
      for (const [filter, detail] of [
        ['chat', 'Invalid event: chat'],
        ['chat*', 'Invalid event: chat*'],
        ['Chat.created', 'Invalid event: Chat.created'],
        ['nope.*', 'Invalid event pattern: nope.*'],
        ['.*', 'Invalid event pattern: .*'],
        ['chat.created.*', 'Invalid event pattern: chat.created.*'],
      ]) {
        const res = await world.api.post('/api/events/webhooks', { url: 'http://93.184.216.34/x', events: ['*', filter] }, as(world.admin));
        expect(res.status, filter).toBe(400);
        expect(res.body).toEqual({ detail });
      }
      expect(await list()).toEqual(before);
    });

    it('refuses malformed targets: 400 for a wrong type or a missing id, 422 for non-string values', async () => {
      const before = await list();
      for (const target of [{ type: 'team', id: 'x' }, { type: 'user' }, { type: 'user', id: '  ' }, { id: 'x' }]) {
        const res = await world.api.post('/api/events/webhooks', { url: 'http://93.184.216.34/x', targets: [target] }, as(world.admin));
        expect(res.status, JSON.stringify(target)).toBe(400);
        expect(res.body).toEqual({ detail: 'Invalid target' });
      }
      for (const targets of [[{ type: 'user', id: 5 }], ['user:1'], { type: 'user', id: 'x' }]) {
        const res = await world.api.post('/api/events/webhooks', { url: 'http://93.184.216.34/x', targets }, as(world.admin));
        expect(res.status, JSON.stringify(targets)).toBe(422);
      }
      expect(await list()).toEqual(before);
    });

    it('answers 422 for a missing url, a null enabled, or wrongly typed fields', async () => {
      for (const body of [{}, { url: null }, { url: 'http://93.184.216.34/', enabled: null }, { url: 'http://93.184.216.34/', events: 'chat.*' }, { url: 5 }]) {
        const res = await world.api.post('/api/events/webhooks', body, as(world.admin));
        expect(res.status, JSON.stringify(body)).toBe(422);
        expect(Array.isArray(res.body.detail)).toBe(true);
      }
    });

    it('refuses URLs outside the allow-list with 400 and the reference message, before looking at filters', async () => {
      const before = await list();
      for (const url of [
        'ftp://93.184.216.34/x',
        'http://user:secret@93.184.216.34/x',
        'http://169.254.169.254/latest/meta-data',
        'http://[fd00:ec2::254]/',
        'http://metadata.google.internal/computeMetadata',
        'http://100.100.100.200/',
        'http://127.0.0.1:8080/hook',
        'http://localhost:8080/hook',
        'http://10.1.2.3/hook',
        'http://192.168.1.10/hook',
        'http://[::1]/hook',
        'http://[::ffff:127.0.0.1]/hook',
        'http://[::ffff:7f00:1]/hook',
        'http://0.0.0.0/hook',
        'http://93.184.216.34\\@127.0.0.1/',
        'not a url',
      ]) {
        const res = await world.api.post('/api/events/webhooks', { url, events: ['not.an.event'] }, as(world.admin));
        expect(res.status, url).toBe(400);
        expect(res.body, url).toEqual({ detail: INVALID_URL });
      }
      expect(await list()).toEqual(before);
    });

    it('upserts by id: the same id replaces every field, keeping the creation time and the secret', async () => {
      const first = await world.api.post('/api/events/webhooks', { id: 'my-hook', name: 'One', url: 'http://93.184.216.34/1', events: ['chat.*'] }, as(world.admin));
      expect(first.status).toBe(200);
      const secret = (await world.api.get('/api/events/webhooks/my-hook/secret', as(world.admin))).body.secret;
      world.events.length = 0;
      const second = await world.api.post('/api/events/webhooks', { id: 'my-hook', url: 'http://93.184.216.34/2' }, as(world.admin));
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ id: 'my-hook', name: 'Webhook', url: 'http://93.184.216.34/2', events: ['*'], enabled: true, created_at: first.body.created_at });
      expect((await list()).filter((w) => w.id === 'my-hook')).toHaveLength(1);
      expect((await world.api.get('/api/events/webhooks/my-hook/secret', as(world.admin))).body.secret).toBe(secret);
      expect(world.events.find((e) => e.event === 'config.webhook.updated')?.data.action).toBe('updated');
    });

    it("names the webhook with id 'default' 'Default webhook'", async () => {
      const res = await world.api.post('/api/events/webhooks', { id: 'default', url: '' }, as(world.admin));
      expect(res.body.name).toBe('Default webhook');
      expect((await world.api.delete('/api/events/webhooks/default', as(world.admin))).status).toBe(200);
    });
  });

  describe('PUT /api/events/webhooks/{id}', () => {
    let id: string;
    beforeAll(async () => {
      const res = await world.api.post(
        '/api/events/webhooks',
        { name: 'Editable', url: 'http://93.184.216.34/e', events: ['chat.*'], targets: [{ type: 'user', id: 'u1' }] },
        as(world.admin),
      );
      id = res.body.id;
    });

    it('answers 404 Webhook not found for an unknown id', async () => {
      const res = await world.api.put('/api/events/webhooks/nope', { enabled: false }, as(world.admin));
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Webhook not found' });
    });

    it('merges only the fields given non-null (the toggle sends only enabled)', async () => {
      const before = (await list()).find((w) => w.id === id);
      const res = await world.api.put(`/api/events/webhooks/${id}`, { enabled: false, name: null, url: null, events: null, targets: null }, as(world.admin));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ ...before, enabled: false, updated_at: expect.any(Number) });
      const events = await world.api.put(`/api/events/webhooks/${id}`, { events: ['user.*'] }, as(world.admin));
      expect(events.body).toMatchObject({ enabled: false, events: ['user.*'], targets: [{ type: 'user', id: 'u1' }], name: 'Editable' });
    });

    it('takes [] targets as system events only, [] events as every event and an empty name as the default name', async () => {
      const res = await world.api.put(`/api/events/webhooks/${id}`, { targets: [], events: [], name: '' }, as(world.admin));
      expect(res.body).toMatchObject({ targets: [], events: ['*'], name: 'Webhook' });
    });

    it('refuses bad values with the reference messages and changes nothing', async () => {
      const before = (await list()).find((w) => w.id === id);
      for (const [body, status, detail] of [
        [{ events: ['nope'] }, 400, 'Invalid event: nope'],
        [{ targets: [{ type: 'role', id: 'x' }] }, 400, 'Invalid target'],
        [{ url: 'http://127.0.0.1/' }, 400, INVALID_URL],
        [{ enabled: 'yes' }, 422, undefined],
      ] as const) {
        const res = await world.api.put(`/api/events/webhooks/${id}`, body, as(world.admin));
        expect(res.status, JSON.stringify(body)).toBe(status);
        if (detail) expect(res.body).toEqual({ detail });
      }
      expect((await list()).find((w) => w.id === id)).toEqual(before);
    });

    it('loses no change when edits of one webhook, and creations, arrive at once', async () => {
      const names = Array.from({ length: 8 }, (_, i) => `parallel-${i}`);
      const [renamed, refiltered, toggled, ...created] = await Promise.all([
        world.api.put(`/api/events/webhooks/${id}`, { name: 'Renamed' }, as(world.admin)),
        world.api.put(`/api/events/webhooks/${id}`, { events: ['file.*'] }, as(world.admin)),
        world.api.put(`/api/events/webhooks/${id}`, { enabled: true }, as(world.admin)),
        ...names.map((name) => world.api.post('/api/events/webhooks', { name, url: 'http://93.184.216.34/p' }, as(world.admin))),
      ]);
      for (const res of [renamed, refiltered, toggled, ...created]) expect(res.status).toBe(200);
      const webhooks = await list();
      expect(webhooks.find((w) => w.id === id)).toMatchObject({ name: 'Renamed', events: ['file.*'], enabled: true });
      for (const name of names) expect(webhooks.filter((w) => w.name === name)).toHaveLength(1);
      const exported = (await world.api.get('/api/v1/configs/export', as(world.admin))).body['events.webhooks'] as any[];
      expect(exported.map((w) => w.id)).toEqual(webhooks.map((w) => w.id));
    });
  });

  describe('DELETE /api/events/webhooks/{id}', () => {
    it('removes the webhook, answers {status: true} and says so; an unknown id is 404', async () => {
      const { body } = await world.api.post('/api/events/webhooks', { url: '' }, as(world.admin));
      world.events.length = 0;
      const res = await world.api.delete(`/api/events/webhooks/${body.id}`, as(world.admin));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: true });
      expect((await list()).some((w) => w.id === body.id)).toBe(false);
      expect(world.events.find((e) => e.event === 'config.webhook.updated')).toMatchObject({ subject: { type: 'config', id: body.id }, data: { action: 'deleted' } });
      const again = await world.api.delete(`/api/events/webhooks/${body.id}`, as(world.admin));
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ detail: 'Webhook not found' });
    });
  });

  describe('signing secrets', () => {
    it('gives each webhook a whsec_ secret of 32 random bytes, readable by admins and rotatable', async () => {
      const { body } = await world.api.post('/api/events/webhooks', { url: '' }, as(world.admin));
      const read = await world.api.get(`/api/events/webhooks/${body.id}/secret`, as(world.admin));
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id: body.id, previous_secret_expires_at: null });
      expect(read.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      expect(Buffer.from(read.body.secret.slice(6), 'base64')).toHaveLength(32);
      const rotated = await world.api.post(`/api/events/webhooks/${body.id}/secret/rotate`, undefined, as(world.admin));
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).not.toBe(read.body.secret);
      expect(rotated.body.previous_secret_expires_at).toBeGreaterThan(world.server.parley.core.clock.now());
      expect((await world.api.get('/api/events/webhooks/nope/secret', as(world.admin))).status).toBe(404);
      expect(JSON.stringify(await list())).not.toContain('whsec_');
    });
  });

  describe('the events.webhooks config key', () => {
    it('mirrors the webhooks without secrets, and an import replaces them', async () => {
      const exported = (await world.api.get('/api/v1/configs/export', as(world.admin))).body['events.webhooks'] as any[];
      expect(exported).toEqual(await list());
      const imported = await world.api.post(
        '/api/v1/configs/import',
        {
          config: {
            'events.webhooks': [
              { id: 'imported-1', url: 'http://93.184.216.34/i', events: ['chat.*'] },
              { id: 'broken', url: 'http://93.184.216.34/b', events: ['not.real'] },
              'not an object',
            ],
          },
        },
        as(world.admin),
      );
      expect(imported.status).toBe(200);
      const webhooks = await list();
      expect(webhooks).toHaveLength(1);
      expect(webhooks[0]).toMatchObject({ id: 'imported-1', name: 'Webhook', enabled: true, events: ['chat.*'], targets: null });
      expect((await world.api.get('/api/v1/configs/export', as(world.admin))).body['events.webhooks']).toEqual(webhooks);
      expect((await world.api.get('/api/events/webhooks/imported-1/secret', as(world.admin))).body.secret).toMatch(/^whsec_/);
    });
  });
});

describe('local webhook targets', () => {
  it('are refused by default, allowed by EVENT_WEBHOOK_ALLOW_LOCAL, and never reach metadata or link-local addresses', async () => {
    await withWorld({ env: { EVENT_WEBHOOK_ALLOW_LOCAL: 'true' }, admin: 'Local Admin' }, async ({ api, admin }) => {
      const post = (url: string) => api.post('/api/events/webhooks', { url }, { token: admin.token });
      for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://10.0.0.5/hook', 'http://[::1]:9/']) {
        expect((await post(url)).status, url).toBe(200);
      }
      for (const url of ['http://169.254.169.254/', 'http://[fe80::1]/', 'http://metadata.azure.com/', 'http://0.0.0.0:9/']) {
        expect((await post(url)).status, url).toBe(400);
      }
    });
  });

  it('must match EVENT_WEBHOOK_FILTER_LIST when it names allowed hosts', async () => {
    await withWorld({ env: { EVENT_WEBHOOK_ALLOW_LOCAL: 'true', EVENT_WEBHOOK_FILTER_LIST: 'localhost,!blocked.localhost' }, admin: 'Filter Admin' }, async ({ api, admin }) => {
      const post = (url: string) => api.post('/api/events/webhooks', { url }, { token: admin.token });
      expect((await post('http://localhost:9/hook')).status).toBe(200);
      expect((await post('http://127.0.0.1:9/hook')).status).toBe(400);
      expect((await post('http://blocked.localhost:9/hook')).status).toBe(400);
    });
  });
});

describe('the legacy single webhook', () => {
  it("migrates WEBHOOK_URL once into the webhook 'default', first in the list; deleting it keeps it deleted", async () => {
    await withWorld({ env: { WEBHOOK_URL: 'http://93.184.216.34/legacy' }, admin: 'Legacy Admin' }, async (world) => {
      const { admin } = world;
      const list = async () => (await world.api.get('/api/events/webhooks', { token: admin.token })).body as any[];
      expect(await list()).toEqual([
        expect.objectContaining({ id: 'default', name: 'Default webhook', url: 'http://93.184.216.34/legacy', enabled: true, events: ['*'], targets: null }),
      ]);
      await world.api.post('/api/events/webhooks', { url: '' }, { token: admin.token });
      await world.restart();
      const afterRestart = await list();
      expect(afterRestart.map((w) => w.id)[0]).toBe('default');
      expect(afterRestart.filter((w) => w.id === 'default')).toHaveLength(1);
      expect((await world.api.delete('/api/events/webhooks/default', { token: admin.token })).status).toBe(200);
      await world.restart();
      expect((await list()).some((w) => w.id === 'default')).toBe(false);
    });
  });
});
