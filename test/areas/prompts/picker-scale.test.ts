import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { chunks } from '../../../src/core/db/batches.js';
import { useServer } from '../../helpers/world.js';

const world = useServer({ admin: 'Scale Admin', users: { reader: ['user', 'Rae Reader'] } });

/** More prompts than SQLite binds parameters in one statement (32,766): the picker reads them in batches. */
const COUNT = 33_000;

it('lists more prompts than one statement can bind ids, each with its grants', async () => {
  // Stored directly: creating 33,000 prompts through the route would take minutes.
  const prompts = Array.from({ length: COUNT }, (_, i) => ({
    id: randomUUID(),
    command: `scale_${i}`,
    user_id: world.admin.id,
    name: `Scale ${i}`,
    content: `Prompt ${i}`,
    data: '{}',
    meta: '{}',
    tags: '[]',
    is_active: true,
    version_id: null,
    version: randomUUID(),
    created_at: i,
    updated_at: i,
  }));
  const grants = prompts.map((p) => ({ id: randomUUID(), resource_type: 'prompt', resource_id: p.id, principal_type: 'user', principal_id: '*', permission: 'read', created_at: 0 }));
  const db = world.server.parley.core.db;
  for (const part of chunks(prompts, 1000)) await db.insertInto('prompt').values(part).execute();
  for (const part of chunks(grants, 1000)) await db.insertInto('access_grant').values(part).execute();

  const res = await world.api.get('/api/v1/prompts/', { token: world.reader.token });
  expect(res.status, res.text.slice(0, 200)).toBe(200);
  const listed = res.body as { command: string; access_grants: { principal_id: string }[] }[];
  expect(listed).toHaveLength(COUNT);
  expect(listed[0].command).toBe(`scale_${COUNT - 1}`);
  expect(listed.every((p) => p.access_grants.length === 1 && p.access_grants[0].principal_id === '*')).toBe(true);
}, 60_000);
