import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLocally } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';

/**
 * Event functions: each active one receives the events it subscribes to,
 * through the durable outbox, after the write that published them; a slow and
 * failing handler holds up neither the request nor the other functions.
 */
const listener = (url: string) => `
import json
import urllib.request


class Event:
    events = ["function.valves_updated", "function.enabled"]

    def event(self, event: dict, __event_name__=None, __id__=None):
        data = json.dumps({"name": __event_name__, "id": event["id"], "subject": event.get("subject"), "me": __id__}).encode()
        urllib.request.urlopen(urllib.request.Request("${url}", data=data, method="POST"), timeout=5).read()
`;

const SLOW = `
import time


class Event:
    def event(self, event: dict):
        time.sleep(3)
        raise RuntimeError("this handler always fails")
`;

const VALVED = `
from pydantic import BaseModel


class Filter:
    class Valves(BaseModel):
        level: int = 0

    def __init__(self):
        self.valves = self.Valves()

    def inlet(self, body):
        return body
`;

describe('event functions', () => {
  const world = useServer({ env: { ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS: 'false', PLUGIN_POOL_SIZE: '4', ENABLE_LOCAL_WEB_FETCH: 'true' }, admin: 'Event Admin' });
  const received: any[] = [];
  let server: Server;
  let url = '';

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.end('ok');
      });
    });
    url = await listenLocally(server);
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('delivers the events a function subscribes to, and a slow failing one blocks nothing', async () => {
    const admin = { token: world.admin.token };
    for (const [id, content] of [
      ['listener', listener(url)],
      ['slow', SLOW],
      ['valved', VALVED],
    ]) {
      const res = await world.api.post('/api/v1/functions/create', { id, name: id, content, meta: {} }, admin);
      expect(res.status, res.text).toBe(200);
      expect(res.body.type).toBe(id === 'valved' ? 'filter' : 'event');
    }
    for (const id of ['listener', 'slow']) await world.api.post(`/api/v1/functions/id/${id}/toggle`, {}, admin);

    const started = Date.now();
    for (const level of [1, 2, 3]) {
      const res = await world.api.post('/api/v1/functions/id/valved/valves/update', { level }, admin);
      expect(res.status, res.text).toBe(200);
    }
    expect(Date.now() - started).toBeLessThan(1500);
    const deadline = Date.now() + 15000;
    while (received.filter((e) => e.name === 'function.valves_updated').length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const valves = received.filter((e) => e.name === 'function.valves_updated');
    expect(valves).toHaveLength(3);
    expect(valves[0]).toMatchObject({ subject: { type: 'function', id: 'valved' }, me: 'listener' });
    // Subscribed events only: `function.created` (before it was active) and `function.updated` never came.
    expect(received.every((e) => ['function.valves_updated', 'function.enabled'].includes(e.name))).toBe(true);
  }, 40000);
});
