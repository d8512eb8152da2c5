import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { FormData, fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { ChildServer, useBuiltServerStore } from '../../helpers/child-server.js';
import { makePdf } from '../../helpers/documents.js';
import { ApiClient } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The extraction jobs as the database holds them, read while no server runs. */
async function jobs(dataDir: string, databaseUrl: string | null): Promise<{ status: string; attempts: number }[]> {
  const query = 'select status, attempts from file_job';
  if (!databaseUrl) {
    const db = new SQLite(path.join(dataDir, 'webui.db'), { readonly: true });
    try {
      return db.prepare(query).all() as { status: string; attempts: number }[];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(query)).rows.map((row) => ({ status: row.status, attempts: Number(row.attempts) }));
  } finally {
    await client.end();
  }
}

/** The extraction queue across a real SIGKILL: the job the dead process held is done by the next one. */
describe('a server killed with SIGKILL while extracting', () => {
  const store = useBuiltServerStore('parley-files-crash');

  it('takes the interrupted job up again once its lease runs out', { timeout: 120_000 }, async () => {
    const env = {
      DATA_DIR: store.dataDir,
      WEBUI_SECRET_KEY: 'files-crash-key',
      CONTENT_EXTRACTION_LEASE_SECONDS: '2',
      ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
    };
    const pages = 6_000;
    let child = await ChildServer.start(store.entry, env);
    try {
      const admin = await signup(new ApiClient(child.url), 'Crash Files Admin');
      const form = new FormData();
      // Long enough to extract (seconds) that the kill lands in the middle of it.
      form.append('file', new Blob([makePdf(Array.from({ length: pages }, (_, i) => `Page number ${i}`))], { type: 'application/pdf' }), 'long.pdf');
      const uploaded = await fetch(`${child.url}/api/v1/files/`, { method: 'POST', body: form, headers: { authorization: `Bearer ${admin.token}` } });
      expect(uploaded.status).toBe(200);
      const { id } = (await uploaded.json()) as { id: string };
      await sleep(300);
      await child.kill();
      // Killed in the middle: the job is claimed, never finished.
      expect(await jobs(store.dataDir, store.databaseUrl)).toEqual([{ status: 'running', attempts: 1 }]);

      child = await ChildServer.start(store.entry, env);
      const api = new ApiClient(child.url);
      const status = () => api.get(`/api/v1/files/${id}/process/status`, { token: admin.token });
      // The dead process never finished it.
      expect((await status()).body).toEqual({ status: 'pending' });
      const deadline = Date.now() + 90_000;
      while ((await status()).body.status === 'pending' && Date.now() < deadline) await sleep(200);
      expect((await status()).body).toEqual({ status: 'completed' });
      const content = (await api.get(`/api/v1/files/${id}/data/content`, { token: admin.token })).body.content as string;
      expect(content.startsWith('Page number 0\n\nPage number 1\n\n')).toBe(true);
      expect(content.endsWith(`Page number ${pages - 1}`)).toBe(true);
      expect(await jobs(store.dataDir, store.databaseUrl)).toEqual([]);
    } finally {
      await child.kill().catch(() => undefined);
    }
  });
});
