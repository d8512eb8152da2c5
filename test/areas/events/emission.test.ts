import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventPayload } from '../../../src/core/events/publish.js';
import { destroyServer, startServer, type TestServer } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';

/** Events of the 0.11.0 operations that have no reference emitter to copy (docs/events.md). */
describe('0.11.0 operations', () => {
  let server: TestServer;
  const published: EventPayload[] = [];
  beforeAll(async () => {
    server = await startServer();
    server.parley.core.events.subscribe((event) => void published.push(event));
  });
  afterAll(async () => destroyServer(server));

  it('POST /api/v1/users/user/variables/update publishes user.variables_updated, without the values', async () => {
    const admin = await signup(server.api, 'Variables Admin');
    const res = await server.api.post('/api/v1/users/user/variables/update', { variables: { city: 'Lyon', my_token: 'secret-value' } }, { token: admin.token });
    expect(res.status).toBe(200);
    const event = published.find((e) => e.event === 'user.variables_updated');
    expect(event).toMatchObject({ actor: { id: admin.id, type: 'user' }, subject: { type: 'user', id: admin.id }, source: 'api', data: {} });
    expect(JSON.stringify(event)).not.toContain('secret-value');
  });
});
