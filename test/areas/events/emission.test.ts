import { describe, expect, it } from 'vitest';
import { useServer } from '../../helpers/world.js';

/** Events of the 0.11.0 operations that have no reference emitter to copy (docs/events.md). */
describe('0.11.0 operations', () => {
  const world = useServer({ admin: 'Variables Admin' });

  it('POST /api/v1/users/user/variables/update publishes user.variables_updated, without the values', async () => {
    const { admin } = world;
    const res = await world.api.post('/api/v1/users/user/variables/update', { variables: { city: 'Lyon', my_token: 'secret-value' } }, { token: admin.token });
    expect(res.status).toBe(200);
    const event = world.events.find((e) => e.event === 'user.variables_updated');
    expect(event).toMatchObject({ actor: { id: admin.id, type: 'user' }, subject: { type: 'user', id: admin.id }, source: 'api', data: {} });
    expect(JSON.stringify(event)).not.toContain('secret-value');
  });
});
