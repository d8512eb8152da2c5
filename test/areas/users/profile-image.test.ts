import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { useServer } from '../../helpers/world.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const TINY_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

async function imageOf(server: TestServer, userId: string, init: { token?: string; cookie?: string }) {
  const headers: Record<string, string> = {};
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.cookie) headers.cookie = init.cookie;
  const res = await fetch(`${server.url}/api/v1/users/${userId}/profile/image`, { headers, redirect: 'manual' });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

describe('GET /api/v1/users/{id}/profile/image', () => {
  const world = useServer({ admin: 'Picture Admin', users: { member: ['user', 'Picture Member'], pending: ['pending', 'Picture Pending'] } });

  const setImage = async (url: string) => {
    const res = await world.api.post(`/api/v1/users/${world.member.id}/update`, { profile_image_url: url }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
  };

  it('serves the default avatar (a PNG) when the user has no image of their own', async () => {
    const res = await imageOf(world.server, world.admin.id, { token: world.member.token });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.body.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  });

  it('decodes an uploaded data URI and serves it with its type, inline and not sniffed', async () => {
    await setImage(`data:image/gif;base64,${TINY_GIF.toString('base64')}`);
    const res = await imageOf(world.server, world.member.id, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/gif');
    expect(res.headers.get('content-disposition')).toBe('inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.body).toEqual(TINY_GIF);
  });

  it('redirects to an external image', async () => {
    await setImage('https://avatars.example.com/u/1.png');
    const res = await imageOf(world.server, world.member.id, { token: world.admin.token });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://avatars.example.com/u/1.png');
  });

  it('serves the default avatar for a stored image of a type it does not serve', async () => {
    // Written below the API (an older record); the update route would refuse it.
    await world.server.parley.services.users.update(world.member.id, { profile_image_url: 'data:image/svg+xml;base64,PHN2Zy8+' });
    const res = await imageOf(world.server, world.member.id, { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.body.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  });

  it('serves the default avatar for the static path the reference assigns', async () => {
    await setImage('/user.png');
    const res = await imageOf(world.server, world.member.id, { token: world.admin.token });
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.body.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  });

  it('works with the token cookie alone, as <img> requests send it', async () => {
    const res = await imageOf(world.server, world.admin.id, { cookie: `token=${world.member.token}` });
    expect(res.status).toBe(200);
  });

  it('answers 400 for an unknown user and 401 to pending users and anonymous callers', async () => {
    const unknown = await world.api.get('/api/v1/users/nobody/profile/image', { token: world.admin.token });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ detail: "We could not find what you're looking for :/" });
    expect((await imageOf(world.server, world.admin.id, { token: world.pending.token })).status).toBe(401);
    expect((await imageOf(world.server, world.admin.id, {})).status).toBe(401);
  });
});

describe('profile images with ENABLE_PROFILE_IMAGE_URL_FORWARDING=false', () => {
  const world = useServer({ env: { ENABLE_PROFILE_IMAGE_URL_FORWARDING: 'false' }, admin: 'No Forward' });

  it('serves the default avatar instead of redirecting to another origin', async () => {
    const { admin } = world;
    const res = await world.api.post(`/api/v1/users/${admin.id}/update`, { profile_image_url: 'https://tracker.example.com/me.png' }, { token: admin.token });
    expect(res.status, res.text).toBe(200);
    const image = await imageOf(world.server, admin.id, { token: admin.token });
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.body.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  });
});
