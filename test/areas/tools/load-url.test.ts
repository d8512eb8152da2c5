import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { githubRawUrl, toolNameFromUrl } from '../../../src/areas/tools/load-url.js';
import { ERROR } from '../../../src/core/http/errors.js';
import { closedPortUrl, destroyServer, startServer } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { simpleTool, TOOLS_ENV } from './helpers.js';

const LIMIT = 4096;

/** A stand-in for a code host. */
function startSource(): Promise<Server> {
  const source = createServer((request, response) => {
    const path = request.url ?? '/';
    if (path === '/tools/weather.py' || path === '/pack/main.py') return void response.end(simpleTool('loaded'));
    if (path === '/empty.py') return void response.end('');
    if (path === '/moved.py') return void response.writeHead(302, { location: '/tools/weather.py' }).end();
    if (path === '/loop.py') return void response.writeHead(302, { location: '/loop.py' }).end();
    if (path === '/metadata.py') return void response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    if (path === '/big.py') return void response.end('#'.repeat(LIMIT + 1));
    if (path === '/big-chunked.py') {
      // No content-length: the limit applies while reading.
      response.write('#'.repeat(LIMIT));
      return void response.end('#'.repeat(10));
    }
    if (path === '/slow.py') return; // never answers
    if (path === '/broken.py') return void response.writeHead(500).end('oops');
    response.writeHead(404).end('not here');
  });
  return new Promise((resolve) => source.listen(0, '127.0.0.1', () => resolve(source)));
}

describe('POST /api/v1/tools/load/url', () => {
  const world = useServer({
    env: { ...TOOLS_ENV, ENABLE_LOCAL_WEB_FETCH: 'true', TOOL_LOAD_URL_MAX_BYTES: String(LIMIT), AIOHTTP_CLIENT_TIMEOUT: '1' },
    admin: 'Loader Admin',
    users: { user: ['user', 'Lou User'] },
  });
  let source: Server;
  let base: string;

  beforeAll(async () => {
    source = await startSource();
    base = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    source.closeAllConnections();
    await new Promise((resolve) => source.close(resolve));
  });

  const load = (url: unknown, token = world.admin.token) => world.api.post('/api/v1/tools/load/url', { url }, { token });

  it('returns the name and the source, storing nothing', async () => {
    const res = await load(`${base}/tools/weather.py`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ name: 'weather', content: simpleTool('loaded') });
    expect((await load(`${base}/pack/main.py`)).body.name).toBe('pack');
    expect((await world.api.get('/api/v1/tools/', { token: world.admin.token })).body).toEqual([]);
    expect(world.events.filter((e) => e.event.startsWith('tool.'))).toEqual([]);
  });

  it('follows redirects, checking every hop', async () => {
    expect((await load(`${base}/moved.py`)).body).toEqual({ name: 'moved', content: simpleTool('loaded') });
    const loop = await load(`${base}/loop.py`);
    expect(loop.status).toBe(400);
    expect(loop.body.detail).toContain('redirects');
    const metadata = await load(`${base}/metadata.py`);
    expect(metadata.status).toBe(400);
    expect(metadata.body.detail).toContain(`${ERROR.INVALID_URL} 169.254.169.254 is a cloud metadata host, which is always refused.`);
  });

  it('passes the upstream error status through; an empty source is a 400', async () => {
    const missing = await load(`${base}/missing.py`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Failed to fetch the tool' });
    expect((await load(`${base}/broken.py`)).status).toBe(500);
    const empty = await load(`${base}/empty.py`);
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({ detail: 'No data received from the URL' });
  });

  it('refuses sources over the size limit, announced or not (400)', async () => {
    for (const path of ['/big.py', '/big-chunked.py']) {
      const res = await load(`${base}${path}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: `The tool source is larger than the limit of ${LIMIT} bytes` });
    }
  });

  it('answers unreachable and silent targets with 400, and keeps serving meanwhile', async () => {
    const refused = await load(`${await closedPortUrl()}/x.py`);
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/^\[ERROR: Error fetching tool: .*ECONNREFUSED/);

    const started = Date.now();
    const [slow, health] = await Promise.all([load(`${base}/slow.py`), world.api.get('/health')]);
    expect(health.status).toBe(200);
    expect(slow.status).toBe(400);
    expect(slow.body).toEqual({ detail: '[ERROR: Error fetching tool: no answer within 1 s]' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('refuses cloud metadata addresses and non-http schemes whatever the settings', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://metadata.google.internal/x.py', 'http://[fe80::1]/x.py']) {
      const res = await load(url);
      expect([url, res.status, res.body.detail]).toEqual([url, 400, expect.stringMatching(/^The URL you provided is invalid\. Please double-check and try again\. .*always refused/)]);
    }
  });

  it('validates the URL as pydantic HttpUrl (422)', async () => {
    for (const url of ['not a url', 'ftp://example.com/x.py', '/relative/x.py', 42]) {
      const res = await load(url);
      expect(res.status, String(url)).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'url']);
    }
    expect((await world.api.post('/api/v1/tools/load/url', {}, { token: world.admin.token })).status).toBe(422);
  });

  it('is for admins only', async () => {
    const res = await load(`${base}/tools/weather.py`, world.user.token);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: ERROR.ACCESS_PROHIBITED });
  });
});

describe('load URL rules by default (no ENABLE_LOCAL_WEB_FETCH)', () => {
  it('refuses loopback and private targets with 400 INVALID_URL', async () => {
    const source = await startSource();
    const server = await startServer({ env: TOOLS_ENV });
    try {
      const admin = await signup(server.api, 'Strict Loader');
      const port = (source.address() as AddressInfo).port;
      for (const url of [`http://127.0.0.1:${port}/tools/weather.py`, `http://localhost:${port}/tools/weather.py`, 'http://10.1.2.3/x.py', 'http://[::1]/x.py']) {
        const res = await server.api.post('/api/v1/tools/load/url', { url }, { token: admin.token });
        expect([url, res.status, res.body.detail]).toEqual([url, 400, expect.stringContaining('local targets are refused unless the server runs with ENABLE_LOCAL_WEB_FETCH=true')]);
      }
    } finally {
      await destroyServer(server);
      await new Promise((resolve) => source.close(resolve));
    }
  });
});

describe('GitHub addresses and names (routers/tools.py)', () => {
  it('turns blob and tree pages into raw-file addresses', () => {
    expect(githubRawUrl('https://github.com/org/repo/blob/main/tools/weather.py')).toBe(
      'https://raw.githubusercontent.com/org/repo/refs/heads/main/tools/weather.py',
    );
    expect(githubRawUrl('https://github.com/org/repo/tree/dev/tools/pack/')).toBe('https://raw.githubusercontent.com/org/repo/refs/heads/dev/tools/pack/main.py');
    expect(githubRawUrl('https://raw.githubusercontent.com/org/repo/main/x.py')).toBe('https://raw.githubusercontent.com/org/repo/main/x.py');
    expect(githubRawUrl('https://gitlab.com/org/repo/blob/main/x.py')).toBe('https://gitlab.com/org/repo/blob/main/x.py');
  });

  it('names the tool after the file, or its folder for main.py / index.py / __init__.py', () => {
    expect(toolNameFromUrl('https://h/a/weather.py')).toBe('weather');
    expect(toolNameFromUrl('https://raw.githubusercontent.com/o/r/refs/heads/main/tools/pack/main.py')).toBe('pack');
    expect(toolNameFromUrl('https://h/a/index.py')).toBe('a');
    expect(toolNameFromUrl('https://h/a/__init__.py/')).toBe('a');
    expect(toolNameFromUrl('https://h/a/readme.txt')).toBe('a');
    // pydantic adds a slash to a bare host, and the reference names such a tool after the empty segment.
    expect(toolNameFromUrl('https://example.com/')).toBe('');
  });
});
