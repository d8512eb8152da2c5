import { describe, expect, it } from 'vitest';
import { useServer } from '../helpers/world.js';

describe('HTTP plumbing', () => {
  const world = useServer({ admin: false });

  it('serves the OpenAPI document', async () => {
    const res = await world.api.get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
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
