import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';
import { FormData, fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { useServer } from '../../helpers/world.js';

const BUCKET = 'parley-files';

/** A local S3-compatible server (s3rver) with one bucket, for the test's lifetime. */
async function startS3() {
  const directory = mkdtempSync(path.join(tmpdir(), 'parley-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: BUCKET }] });
  const { port } = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  return {
    endpoint,
    client,
    async close() {
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Files on S3-compatible storage (STORAGE_PROVIDER=s3), through the same routes. */
describe('files on S3 storage', () => {
  const world = useServer({
    fakes: {
      start: async () => ({ s3: await startS3() }),
      env: (fakes) => ({
        STORAGE_PROVIDER: 's3',
        S3_BUCKET_NAME: BUCKET,
        S3_ENDPOINT_URL: fakes.s3.endpoint,
        S3_REGION_NAME: 'us-east-1',
        S3_ACCESS_KEY_ID: 'S3RVER',
        S3_SECRET_ACCESS_KEY: 'S3RVER',
        S3_KEY_PREFIX: 'parley',
        S3_ADDRESSING_STYLE: 'path',
      }),
    },
    admin: 'S3 Admin',
    users: { owner: ['user', 'S3 Owner'] },
  });

  const exists = (key: string) =>
    world.s3.client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(
      () => true,
      () => false,
    );
  const localUploads = () => readdirSync(path.join(world.server.dataDir, 'uploads'));

  async function upload(name: string, content: string) {
    const form = new FormData();
    form.append('file', new Blob([content], { type: 'text/plain' }), name);
    const response = await fetch(`${world.server.url}/api/v1/files/`, { method: 'POST', body: form, headers: { authorization: `Bearer ${world.owner.token}` } });
    expect(response.status).toBe(200);
    return (await response.json()) as { id: string; path: string };
  }

  async function processed(id: string) {
    for (let i = 0; i < 100; i++) {
      const res = await world.api.get(`/api/v1/files/${id}/process/status`, { token: world.owner.token });
      if (res.body.status !== 'pending') return res.body;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('still pending');
  }

  it('stores uploads in the bucket under the key prefix, extracts and serves them from there', async () => {
    const file = await upload('cloud.txt', 'stored in the bucket');
    expect(file.path).toBe(`s3://${BUCKET}/parley/${file.id}_cloud.txt`);
    expect(await exists(`parley/${file.id}_cloud.txt`)).toBe(true);
    expect(await processed(file.id)).toEqual({ status: 'completed' });
    expect((await world.api.get(`/api/v1/files/${file.id}/data/content`, { token: world.owner.token })).body).toEqual({ content: 'stored in the bucket' });
    // Neither the staged upload nor the copy made for extraction stays on local disk.
    expect(localUploads()).toEqual([]);
    const part = await fetch(`${world.server.url}/api/v1/files/${file.id}/content`, { headers: { authorization: `Bearer ${world.owner.token}`, range: 'bytes=10-15' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 10-15/20');
    expect(await part.text()).toBe('the bu');
  });

  it('deletes the object with its file, and every object under the prefix on delete-all, leaving others alone', async () => {
    const file = await upload('gone.txt', 'bye');
    await processed(file.id);
    expect((await world.api.delete(`/api/v1/files/${file.id}`, { token: world.owner.token })).status).toBe(200);
    expect(await exists(`parley/${file.id}_gone.txt`)).toBe(false);
    const kept = await upload('kept.txt', 'kept');
    await processed(kept.id);
    await world.s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'someone-else/object.txt', Body: 'not ours' }));
    expect((await world.api.delete('/api/v1/files/all', { token: world.admin.token })).status).toBe(200);
    expect(await exists(`parley/${kept.id}_kept.txt`)).toBe(false);
    expect(await exists('someone-else/object.txt')).toBe(true);
  });
});
