import { describe, expect, it } from 'vitest';
import { withServer } from '../../helpers/server.js';

const HEADERS = {
  WEBUI_AUTH_TRUSTED_EMAIL_HEADER: 'X-Forwarded-Email',
  WEBUI_AUTH_TRUSTED_NAME_HEADER: 'X-Forwarded-Name',
  WEBUI_AUTH_TRUSTED_GROUPS_HEADER: 'X-Forwarded-Groups',
};

describe('trusted headers', () => {
  it('signs in the address the proxy vouches for, with its name and exactly the existing groups it names', async () => {
    await withServer({ env: HEADERS }, async (server) => {
      const form = { email: 'ignored@example.com', password: 'ignored' };
      const signin = (headers: Record<string, string>) => server.api.post('/api/v1/auths/signin', form, { headers });
      const admin = await signin({ 'x-forwarded-email': 'root@corp.example', 'x-forwarded-name': 'Root' });
      expect(admin.status, admin.text).toBe(200);
      const token = admin.body.token as string;
      const ids: Record<string, string> = {};
      for (const name of ['engineering', 'ops', 'finance']) {
        const created = await server.api.post('/api/v1/groups/create', { name, description: '' }, { token, headers: { 'x-forwarded-email': 'root@corp.example' } });
        expect(created.status, created.text).toBe(200);
        ids[name] = created.body.id;
      }
      const groupsOf = async (userId: string) => (await server.parley.services.groups.groupsOf(userId)).map((g) => g.name).sort();

      const carol = await signin({ 'x-forwarded-email': 'Carol@Corp.example', 'x-forwarded-name': 'Carol%20C.', 'x-forwarded-groups': 'engineering, ops ,unknown' });
      expect(carol.status, carol.text).toBe(200);
      expect(carol.body).toMatchObject({ email: 'carol@corp.example', name: 'Carol C.' });
      expect(await groupsOf(carol.body.id)).toEqual(['engineering', 'ops']);
      // An unknown name creates no group.
      expect((await server.parley.core.db.selectFrom('group').select('name').execute()).map((g) => g.name).sort()).toEqual(['engineering', 'finance', 'ops']);

      const moved = await signin({ 'x-forwarded-email': 'carol@corp.example', 'x-forwarded-groups': 'finance' });
      expect(moved.body.id).toBe(carol.body.id);
      expect(await groupsOf(carol.body.id)).toEqual(['finance']);
      // Without the groups header, memberships stay as they are.
      await signin({ 'x-forwarded-email': 'carol@corp.example' });
      expect(await groupsOf(carol.body.id)).toEqual(['finance']);

      // A session used behind the proxy for someone else is refused.
      const mismatch = await server.api.get('/api/v1/auths/', { token: moved.body.token, headers: { 'x-forwarded-email': 'root@corp.example' } });
      expect(mismatch.status).toBe(401);
      expect(mismatch.body.detail).toBe('User mismatch. Please sign in again.');
    });
  });
});
