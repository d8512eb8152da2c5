import { describe, expect, it } from 'vitest';
import { useServer } from '../../helpers/world.js';

describe('legal gate of the reference frontend', () => {
  const world = useServer();

  it('tells a signed-in user that nothing needs accepting', async () => {
    const res = await world.api.get('/api/v1/legal/status', { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ docs: [], needs_accept: false });
    expect(typeof res.body.server_time).toBe('number');
  });

  it('requires a session for the status and accepts an acceptance without documents', async () => {
    expect((await world.api.get('/api/v1/legal/status')).status).toBe(401);
    const accepted = await world.api.post('/api/v1/legal/accept', { keys: [], method: 'ui_gate' }, { token: world.admin.token });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ accepted: [], status: { needs_accept: false } });
  });

  it('lists no requirements to anyone', async () => {
    const res = await world.api.get('/api/v1/legal/requirements');
    expect(res.status).toBe(200);
    expect(res.body.docs).toEqual([]);
  });
});
