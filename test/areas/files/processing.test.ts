import { describe, expect, it } from 'vitest';
import { FileStore } from '../../../src/areas/files/store.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/** The content extraction queue: shared by instances, claimed once, taken again after a crash. */
describe('file processing queue', () => {
  const world = useServer({ admin: 'Queue Admin', users: { owner: ['user', 'Queue Owner'] } });
  const db = () => world.server.parley.core.db;
  const now = () => world.server.parley.core.clock.now();

  const upload = async (account: Account, name: string, content: string, process = true) =>
    world.server.parley.services.files.upload(await world.record(account), { filename: name, content: Buffer.from(content), contentType: 'text/plain', process });

  async function settled(id: string) {
    for (let i = 0; i < 200; i++) {
      const file = await new FileStore(db()).byId(id);
      if (file?.data?.status !== 'pending') return file;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`${id} still pending`);
  }

  /** A file whose job an instance claimed and then died with (kill -9): `running`, lease as given. */
  async function crashedJob(name: string, leaseUntil: number, attempts = 1) {
    const file = await upload(world.owner, name, `text of ${name}`, false);
    await new FileStore(db()).update(file.id, { data: { status: 'pending' } }, now());
    await db().insertInto('file_job').values({ file_id: file.id, status: 'running', attempts, lease_until: leaseUntil, created_at: now() }).execute();
    return file;
  }

  it('hands one job to exactly one of two instances racing for it', async () => {
    const other = await world.addInstance();
    await other.parley.services.files.close();
    await world.server.parley.services.files.close();
    try {
      for (let round = 0; round < 5; round++) {
        const file = await upload(world.owner, `race-${round}.txt`, 'race');
        const claims = await Promise.all([
          new FileStore(db()).claimJob(now(), now() + 300),
          new FileStore(other.parley.core.db).claimJob(now(), now() + 300),
          new FileStore(db()).claimJob(now(), now() + 300),
        ]);
        expect(claims.filter(Boolean)).toEqual([{ file_id: file.id, attempts: 1 }]);
        await new FileStore(db()).finishJob(file.id);
      }
    } finally {
      world.server.parley.services.files.start();
    }
  });

  it('takes up a job whose instance died once its lease ran out, and leaves a live lease alone', async () => {
    const expired = await crashedJob('expired.txt', now() - 1);
    const live = await crashedJob('live.txt', now() + 3600);
    await world.restart();
    expect(await settled(expired.id)).toMatchObject({ data: { status: 'completed', content: 'text of expired.txt' } });
    const held = await new FileStore(db()).byId(live.id);
    expect(held?.data).toEqual({ status: 'pending' });
    expect(await db().selectFrom('file_job').select(['file_id', 'status']).execute()).toEqual([{ file_id: live.id, status: 'running' }]);
    await new FileStore(db()).finishJob(live.id);
  });

  it('fails a job that keeps killing its instance instead of taking it up forever', async () => {
    const doomed = await crashedJob('doomed.txt', now() - 1, 3);
    world.server.parley.services.files.processing.kick();
    expect(await settled(doomed.id)).toMatchObject({ data: { status: 'failed', error: 'Processing was interrupted too many times' } });
  });

  it('processes many uploads across two instances, each once, without holding the requests', async () => {
    const other = await world.addInstance();
    const files = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const service = (i % 2 === 0 ? world.server : other).parley.services.files;
        const file = await service.upload(await world.record(world.owner), { filename: `many-${i}.txt`, content: Buffer.from(`body ${i}`), contentType: 'text/plain', process: true });
        expect(file.data).toEqual({ status: 'pending' });
        return file;
      }),
    );
    for (const [i, file] of files.entries()) expect(await settled(file.id)).toMatchObject({ data: { status: 'completed', content: `body ${i}` } });
    expect(await db().selectFrom('file_job').selectAll().execute()).toEqual([]);
  });

  it('removes the job with its file', async () => {
    const file = await crashedJob('gone.txt', now() + 3600);
    await world.server.parley.services.files.delete(await world.record(world.owner), file.id);
    expect(await db().selectFrom('file_job').selectAll().where('file_id', '=', file.id).execute()).toEqual([]);
  });
});
