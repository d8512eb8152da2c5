import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyServer, startServer, type TestServer } from '../../helpers/server.js';
import { signup, type Account } from '../../helpers/users.js';

describe('legal gate of the reference frontend', () => {
  let server: TestServer;
  let admin: Account;
  beforeAll(async () => {
    server = await startServer();
    admin = await signup(server.api);
  });
  afterAll(async () => destroyServer(server));

  it('tells a signed-in user that nothing needs accepting', async () => {
    const res = await server.api.get('/api/v1/legal/status', { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ docs: [], needs_accept: false });
    expect(typeof res.body.server_time).toBe('number');
  });

  it('requires a session for the status and accepts an acceptance without documents', async () => {
    expect((await server.api.get('/api/v1/legal/status')).status).toBe(401);
    const accepted = await server.api.post('/api/v1/legal/accept', { keys: [], method: 'ui_gate' }, { token: admin.token });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ accepted: [], status: { needs_accept: false } });
  });

  it('lists no requirements to anyone', async () => {
    const res = await server.api.get('/api/v1/legal/requirements');
    expect(res.status).toBe(200);
    expect(res.body.docs).toEqual([]);
  });
});
