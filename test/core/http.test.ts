import { describe, expect, it } from 'vitest';
import { useServer } from '../helpers/world.js';

describe('HTTP plumbing', () => {
  const world = useServer({ admin: false });

  it('serves the OpenAPI document', async () => {
    const res = await world.api.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
  });

  it('serves Swagger UI at /docs over /openapi.json, with its files and nothing else', async () => {
    const page = await world.api.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain("url: '/openapi.json'");
    for (const [file, type] of [['swagger-ui-bundle.js', /javascript/], ['swagger-ui.css', /text\/css/], ['favicon-32x32.png', /image\/png/]] as const) {
      expect(page.text).toContain(`/docs/static/${file}`);
      const asset = await world.api.get(`/docs/static/${file}`);
      expect(asset.status, file).toBe(200);
      expect(asset.headers.get('content-type'), file).toMatch(type);
      expect(Number(asset.headers.get('content-length')), file).toBeGreaterThan(100);
    }
    expect((await world.api.get('/docs/static/package.json')).status).toBe(404);
    expect((await world.api.get('/docs/static/..%2Fpackage.json')).status).toBe(404);
    const spec = (await world.api.get('/openapi.json')).body;
    expect(Object.keys(spec.paths).some((p) => p.startsWith('/docs'))).toBe(false);
  });

  it('answers HEAD with the GET route\'s status and headers, without a body', async () => {
    const get = await world.api.get('/api/version');
    const head = await world.api.request('HEAD', '/api/version');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'));
    expect((await world.api.request('HEAD', '/api/v1/auths/signin')).status).toBe(405);
    expect((await world.api.request('HEAD', '/api/v1/no-such-thing')).status).toBe(404);
  });

  it('answers unknown API paths with JSON 404', async () => {
    const res = await world.api.get('/api/v1/no-such-thing');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Not Found' });
  });

  it('answers a known path with the wrong method with 405', async () => {
    const res = await world.api.post('/openapi.json', {});
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ detail: 'Method Not Allowed' });
  });
});

// As the reference's Starlette CORSMiddleware (allow_credentials, every method and header).
describe('CORS', () => {
  describe('with every origin allowed (the default)', () => {
    const world = useServer({ admin: false });

    it('mirrors the origin of a cross-origin request, with credentials', async () => {
      const res = await world.api.get('/api/version', { headers: { origin: 'https://chat.example' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('https://chat.example');
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      expect(res.headers.get('vary')).toBe('Origin');
    });

    it('adds only Vary to a request without an origin', async () => {
      const res = await world.api.get('/api/version');
      expect(res.headers.get('vary')).toBe('Origin');
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    });

    it('answers a preflight on any path before routing, mirroring the requested headers', async () => {
      for (const path of ['/api/v1/auths/signin', '/api/v1/no-such-thing']) {
        const res = await world.api.request('OPTIONS', path, undefined, {
          headers: { origin: 'https://chat.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
        });
        expect(res.status, path).toBe(200);
        expect(res.text).toBe('OK');
        expect(res.headers.get('access-control-allow-origin')).toBe('https://chat.example');
        expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
        expect(res.headers.get('access-control-allow-methods')).toBe('DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT');
        expect(res.headers.get('access-control-allow-credentials')).toBe('true');
        expect(res.headers.get('access-control-max-age')).toBe('600');
      }
    });

    it('refuses a preflight for an unknown method', async () => {
      const res = await world.api.request('OPTIONS', '/api/version', undefined, {
        headers: { origin: 'https://chat.example', 'access-control-request-method': 'TRACE' },
      });
      expect(res.status).toBe(400);
      expect(res.text).toBe('Disallowed CORS method');
    });

    it('leaves an OPTIONS request that is no preflight to the routes (405 on a known path)', async () => {
      const res = await world.api.request('OPTIONS', '/api/version', undefined, { headers: { origin: 'https://chat.example' } });
      expect(res.status).toBe(405);
    });
  });

  describe('with CORS_ALLOW_ORIGIN listing origins', () => {
    const world = useServer({ admin: false, env: { CORS_ALLOW_ORIGIN: 'https://a.example;https://b.example' } });

    it('mirrors a listed origin and withholds Allow-Origin from others', async () => {
      const listed = await world.api.get('/api/version', { headers: { origin: 'https://b.example' } });
      expect(listed.headers.get('access-control-allow-origin')).toBe('https://b.example');
      const other = await world.api.get('/api/version', { headers: { origin: 'https://evil.example' } });
      expect(other.status).toBe(200);
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('refuses a preflight from an origin not listed', async () => {
      const res = await world.api.request('OPTIONS', '/api/version', undefined, {
        headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
      });
      expect(res.status).toBe(400);
      expect(res.text).toBe('Disallowed CORS origin');
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });
  });
});
