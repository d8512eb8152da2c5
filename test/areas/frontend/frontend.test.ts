import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useServer } from '../../helpers/world.js';

const INDEX_HTML = '<!doctype html><html><body><div id="svelte">fake app shell</div></body></html>';

/** A small stand-in for a built Open WebUI frontend, removed on close. */
async function makeBuild(): Promise<{ dir: string; close(): Promise<void> }> {
  const root = mkdtempSync(path.join(tmpdir(), 'parley-build-'));
  const build = path.join(root, 'build');
  const files: Record<string, string> = {
    'index.html': INDEX_HTML,
    '_app/version.json': '{"version":"0.11.0"}',
    '_app/immutable/entry/start.abc123.js': 'export const start = 1;',
    '_app/immutable/workers/worker.def456.mjs': 'export default 2;',
    'wasm/ort.wasm': '\0asm',
    'static/favicon.png': 'png-bytes',
    'static/loader.js': 'console.log("loader");',
    'pyodide/pyodide-lock.json': '{"packages":{}}',
    'manifest.json': '{"name":"static file that the dynamic route shadows"}',
    'opensearch.xml': '<static/>',
    'favicon.png': 'root-favicon',
    'robots.txt': 'User-agent: *',
  };
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(build, file)), { recursive: true });
    writeFileSync(path.join(build, file), content);
  }
  writeFileSync(path.join(root, 'secret.txt'), 'outside the build');
  return { dir: build, close: async () => rmSync(root, { recursive: true, force: true }) };
}

/** A request with the path sent exactly as written (fetch would normalise `..`). */
function rawGet(url: string, rawPath: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const req = httpRequest({ hostname, port, path: rawPath, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('serving a built frontend', () => {
  const world = useServer({ fakes: { start: async () => ({ build: await makeBuild() }), env: ({ build }) => ({ FRONTEND_BUILD_DIR: build.dir }) }, admin: false });

  it('serves index.html for / and for client routes, never cached', async () => {
    for (const route of ['/', '/auth', '/c/1234', '/workspace/tools?x=1', '/index.html', '/_app/missing.css']) {
      const res = await world.api.get(route);
      expect(res.status, route).toBe(200);
      expect(res.text, route).toBe(INDEX_HTML);
      expect(res.headers.get('content-type'), route).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control'), route).toMatch(/no-store/);
    }
    const head = await world.api.request('HEAD', '/c/1234');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it('serves exact files with JavaScript and WebAssembly types', async () => {
    const js = await world.api.get('/_app/immutable/entry/start.abc123.js');
    expect(js.status).toBe(200);
    expect(js.text).toBe('export const start = 1;');
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('etag')).toBeTruthy();

    const mjs = await world.api.get('/_app/immutable/workers/worker.def456.mjs');
    expect(mjs.headers.get('content-type')).toMatch(/^text\/javascript/);

    const wasm = await world.api.get('/wasm/ort.wasm');
    expect(wasm.status).toBe(200);
    expect(wasm.headers.get('content-type')).toBe('application/wasm');

    for (const [file, body] of [
      ['/favicon.png', 'root-favicon'],
      ['/robots.txt', 'User-agent: *'],
      ['/static/favicon.png', 'png-bytes'],
    ]) {
      const res = await world.api.get(file);
      expect(res.status, file).toBe(200);
      expect(res.text, file).toBe(body);
    }
    const head = await world.api.request('HEAD', '/static/favicon.png');
    expect(head.status).toBe(200);
  });

  it('never caches the version file the app polls', async () => {
    const res = await world.api.get('/_app/version.json');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ version: '0.11.0' });
    expect(res.headers.get('cache-control')).toMatch(/no-cache/);
    expect(res.headers.get('cache-control')).toMatch(/no-store/);
  });

  it('answers 404 for a missing .js file instead of the app shell', async () => {
    for (const file of ['/_app/immutable/entry/gone.js', '/gone.js', '/static/gone.js']) {
      const res = await world.api.get(file);
      expect(res.status, file).toBe(404);
      expect(res.text, file).not.toContain('fake app shell');
    }
  });

  it('answers 404 for missing files under the plain file mounts', async () => {
    for (const file of ['/static/gone.png', '/pyodide/gone.whl']) {
      const res = await world.api.get(file);
      expect(res.status, file).toBe(404);
    }
  });

  it('serves pyodide files to any origin', async () => {
    const res = await world.api.get('/pyodide/pyodide-lock.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('lets the dynamic manifest and OpenSearch routes win over the build files', async () => {
    const manifest = await world.api.get('/manifest.json');
    expect(manifest.body).toMatchObject({ name: 'Open WebUI', start_url: '/' });
    const search = await world.api.get('/opensearch.xml');
    expect(search.text).toContain('<OpenSearchDescription');
  });

  it('keeps unknown API paths a JSON 404, whatever the method', async () => {
    for (const apiPath of ['/api/v1/no-such-thing', '/api/nothing', '/ollama/api/nothing', '/openai', '/oauth/nothing/login']) {
      const res = await world.api.get(apiPath);
      expect(res.status, apiPath).toBe(404);
      expect(res.body, apiPath).toEqual({ detail: 'Not Found' });
    }
    const post = await world.api.post('/api/v1/no-such-thing', {});
    expect(post.status).toBe(404);
    expect(post.body).toEqual({ detail: 'Not Found' });
    expect((await world.api.get('/api/version')).body.version).toBe('0.11.0');
  });

  it('does not serve files outside the build', async () => {
    for (const rawPath of ['/_app/../../secret.txt', '/_app/%2e%2e/%2e%2e/secret.txt', '/static/..%2f..%2fsecret.txt']) {
      const res = await rawGet(world.server.url, rawPath);
      expect(res.body, rawPath).not.toContain('outside the build');
    }
  });
});

describe('without a frontend build', () => {
  const world = useServer({ env: { FRONTEND_BUILD_DIR: path.join(tmpdir(), 'parley-no-such-build') }, admin: false });

  it('serves the API only: other paths are a JSON 404', async () => {
    for (const route of ['/', '/auth', '/_app/version.json']) {
      const res = await world.api.get(route);
      expect(res.status, route).toBe(404);
      expect(res.body, route).toEqual({ detail: 'Not Found' });
    }
    expect((await world.api.get('/health')).body).toEqual({ status: true });
  });
});
