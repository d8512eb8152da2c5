import { describe, expect, it } from 'vitest';
import { as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';
import { chain, newChat } from '../chats/fixtures.js';

/** A file reached through a shared chat, as the reference's `has_access_to_file`: read only, while the share lasts. */
describe('files reached through a shared chat', () => {
  const world = useServer({ users: { alice: ['user', 'Alice Attaches'], bob: ['user', 'Bob Granted'], carol: ['user', 'Carol Outside'] } });

  it('lets those who may open the share read a file its messages carry, and nothing more', async () => {
    const file = await world.server.parley.services.files.upload(await world.record(world.alice), {
      filename: 'plan.txt',
      content: Buffer.from('the plan'),
      contentType: 'text/plain',
    });
    const other = await world.server.parley.services.files.upload(await world.record(world.alice), {
      filename: 'private.txt',
      content: Buffer.from('not in the chat'),
      contentType: 'text/plain',
    });
    const history = chain(['u1', 'user', 'see the plan', { files: [{ type: 'file', id: file.id, name: 'plan.txt', file: { id: file.id } }] }], ['a1', 'assistant', 'seen']);
    const chat = await newChat(world.api, world.alice, { title: 'Plans', history });
    const read = (account: typeof world.bob, id = file.id) => world.api.get(`/api/v1/files/${id}`, as(account));

    // Not shared yet: the chat alone gives nothing.
    expect((await read(world.bob)).status).toBe(404);
    expect((await world.api.post(`/api/v1/chats/${chat.id}/share`, undefined, as(world.alice))).status).toBe(200);
    expect((await read(world.bob)).status).toBe(404);

    const grant = { access_grants: [{ principal_type: 'user', principal_id: world.bob.id, permission: 'read' }] };
    expect((await world.api.post(`/api/v1/chats/shared/${chat.id}/access/update`, grant, as(world.alice))).status).toBe(200);
    expect((await read(world.bob)).body).toMatchObject({ id: file.id, filename: 'plan.txt' });
    expect((await world.api.get(`/api/v1/files/${file.id}/content`, as(world.bob))).text).toBe('the plan');
    expect((await read(world.carol)).status).toBe(404);
    expect((await read(world.bob, other.id)).status).toBe(404);
    // Reading is all a share gives.
    expect((await world.api.post(`/api/v1/files/${file.id}/rename`, { filename: 'mine.txt' }, as(world.bob))).status).toBe(404);
    expect((await world.api.delete(`/api/v1/files/${file.id}`, as(world.bob))).status).toBe(404);

    expect((await world.api.delete(`/api/v1/chats/${chat.id}/share`, as(world.alice))).status).toBe(200);
    expect((await read(world.bob)).status).toBe(404);
  });
});
