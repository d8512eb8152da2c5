import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserRecord } from '../../../src/core/auth/user.js';
import { ERROR } from '../../../src/core/http/errors.js';
import { type TestServer, destroyServer, startServer } from '../../helpers/server.js';
import { type Account, addUser, signup } from '../../helpers/users.js';

/** The files area as the plugin compatibility layer and the file routes use it. */
describe('files', () => {
  let server: TestServer;
  let admin: Account;
  let owner: Account;
  let other: Account;
  let pending: Account;

  const files = () => server.parley.services.files;
  const record = async (account: Account): Promise<UserRecord> => (await server.parley.services.users.byId(account.id))!;
  const upload = async (account: Account, filename: string, content: string, contentType: string | null) =>
    files().upload(await record(account), { filename, content: Buffer.from(content), contentType, metadata: { source: 'test' } });

  beforeAll(async () => {
    server = await startServer();
    admin = await signup(server.api, 'Files Admin');
    owner = await addUser(server.api, admin, 'user', 'Files Owner');
    other = await addUser(server.api, admin, 'user', 'Files Other');
    pending = await addUser(server.api, admin, 'pending', 'Files Pending');
  });
  afterAll(async () => destroyServer(server));

  describe('uploads', () => {
    it('stores the bytes under DATA_DIR/uploads as <id>_<name> and the record with name, type, size and hash', async () => {
      const file = await upload(owner, '../../notes.txt', 'hello', 'text/plain');
      expect(file.path).toBe(path.join(server.dataDir, 'uploads', `${file.id}_notes.txt`));
      expect(readFileSync(file.path!, 'utf8')).toBe('hello');
      expect(file).toMatchObject({
        user_id: owner.id,
        filename: 'notes.txt',
        data: {},
        meta: {
          name: 'notes.txt',
          content_type: 'text/plain',
          size: 5,
          file_hash: '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
          data: { source: 'test' },
        },
      });
    });

    it('refuses empty content and pending users, storing nothing', async () => {
      await expect(upload(owner, 'empty.txt', '', 'text/plain')).rejects.toMatchObject({ statusCode: 400 });
      await expect(upload(pending, 'p.txt', 'x', 'text/plain')).rejects.toMatchObject({ statusCode: 403, detail: ERROR.ACCESS_PROHIBITED });
    });

    it('keeps to the size limit (rag.file.max_size, MB)', async () => {
      await server.parley.core.settings.set({ 'rag.file.max_size': 1 }, server.parley.core.clock.now());
      try {
        const big = 'x'.repeat(1024 * 1024 + 1);
        await expect(upload(owner, 'big.txt', big, 'text/plain')).rejects.toMatchObject({
          statusCode: 413,
          detail: "Oops! The file you're trying to upload is too large. Please upload a file that is less than 1 MB.",
        });
      } finally {
        await server.parley.core.settings.set({ 'rag.file.max_size': null }, server.parley.core.clock.now());
      }
    });
  });

  describe('records', () => {
    it('shows a file to its owner, admins and grant holders only', async () => {
      const file = await upload(owner, 'shared.txt', 'data', 'text/plain');
      expect((await files().get(await record(owner), file.id))?.id).toBe(file.id);
      expect((await files().get(await record(admin), file.id))?.id).toBe(file.id);
      expect(await files().get(await record(other), file.id)).toBeNull();
      await server.parley.services.access.grant('file', file.id, { principal_type: 'user', principal_id: other.id, permission: 'read' });
      expect((await files().get(await record(other), file.id))?.id).toBe(file.id);
      expect((await files().getMany(await record(other), [file.id, 'missing'])).map((f) => f.id)).toEqual([file.id]);
      // Reading is not changing.
      await expect(files().update(await record(other), file.id, { data: { x: 1 } })).rejects.toMatchObject({ statusCode: 403 });
    });

    it('merges data and meta on update', async () => {
      const file = await upload(owner, 'merge.txt', 'data', 'text/plain');
      const updated = await files().update(await record(owner), file.id, { hash: 'h1', data: { status: 'completed' }, meta: { extra: true } });
      expect(updated).toMatchObject({ hash: 'h1', data: { status: 'completed' }, meta: { name: 'merge.txt', size: 4, extra: true } });
      expect(await files().update(await record(other), file.id, { data: {} })).toBeNull();
    });

    it('records bytes already stored, inside the upload folder only; a taken id gives null', async () => {
      const user = await record(owner);
      const stored = await files().writeBytes(user, 'raw.bin', Buffer.from('raw'));
      expect(stored).toBe(path.join(server.dataDir, 'uploads', 'raw.bin'));
      const inserted = await files().insert(user, { id: 'raw-file', filename: 'raw.bin', path: stored, meta: { name: 'raw.bin' } });
      expect(inserted).toMatchObject({ id: 'raw-file', user_id: owner.id, path: stored, data: {}, meta: { name: 'raw.bin' } });
      expect(await files().insert(user, { id: 'raw-file', filename: 'again', path: stored })).toBeNull();
      await expect(files().insert(user, { id: 'escape', filename: 'passwd', path: '/etc/passwd' })).rejects.toMatchObject({ statusCode: 400 });
      await expect(files().insert(user, { id: 'escape2', filename: 'x', path: '../webui.db' })).rejects.toMatchObject({ statusCode: 400 });
    });

    it('resolves stored paths for readers, and never overwrites bytes of a file the writer may not change', async () => {
      const file = await upload(owner, 'guarded.txt', 'mine', 'text/plain');
      const name = path.basename(file.path!);
      expect(await files().localPath(await record(owner), file.path!, new Set())).toBe(file.path);
      await expect(files().localPath(await record(other), file.path!, new Set())).rejects.toMatchObject({ statusCode: 404 });
      await expect(files().writeBytes(await record(other), name, Buffer.from('theirs'))).rejects.toMatchObject({ statusCode: 403 });
      expect(readFileSync(file.path!, 'utf8')).toBe('mine');
      await expect(files().deleteBytes(await record(other), file.path!, new Set())).rejects.toMatchObject({ statusCode: 403 });
      await files().deleteBytes(await record(owner), file.path!, new Set());
      expect(existsSync(file.path!)).toBe(false);
    });
  });

  describe('GET /api/v1/files/{id} and /content', () => {
    it('answers the record and the bytes to readers, 404 to others, 401 without a session', async () => {
      const file = await upload(owner, 'page.txt', 'plain text', 'text/plain');
      const meta = await server.api.get(`/api/v1/files/${file.id}`, { token: owner.token });
      expect(meta.status).toBe(200);
      expect(meta.body).toEqual({ ...file });
      const content = await server.api.get(`/api/v1/files/${file.id}/content`, { token: admin.token });
      expect(content.status).toBe(200);
      expect(content.text).toBe('plain text');
      expect(content.headers.get('content-disposition')).toBeNull();
      expect((await server.api.get(`/api/v1/files/${file.id}`, { token: other.token })).body).toEqual({ detail: ERROR.NOT_FOUND });
      expect((await server.api.get(`/api/v1/files/${file.id}/content`, { token: other.token })).status).toBe(404);
      expect((await server.api.get(`/api/v1/files/${file.id}/content`)).status).toBe(401);
      expect((await server.api.get('/api/v1/files/missing/content', { token: admin.token })).status).toBe(404);
    });

    it('sends PDFs inline and other types as attachments, as the reference', async () => {
      const image = await upload(owner, 'chart.png', 'png-bytes', 'image/png');
      const res = await server.api.get(`/api/v1/files/${image.id}/content`, { token: owner.token });
      expect(res.headers.get('content-type')).toBe('image/png');
      expect(res.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''chart.png");
      const pdf = await upload(owner, 'Report 1.pdf', '%PDF', null);
      const inline = await server.api.get(`/api/v1/files/${pdf.id}/content`, { token: owner.token });
      expect(inline.headers.get('content-type')).toBe('application/pdf');
      expect(inline.headers.get('content-disposition')).toBe("inline; filename*=UTF-8''Report%201.pdf");
      const text = await upload(owner, 'n.txt', 'x', 'text/plain');
      const attached = await server.api.get(`/api/v1/files/${text.id}/content?attachment=true`, { token: owner.token });
      expect(attached.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''n.txt");
    });

    it('goes with its owner', async () => {
      const leaving = await addUser(server.api, admin, 'user', 'Files Leaving');
      const file = await upload(leaving, 'bye.txt', 'bye', 'text/plain');
      expect((await server.api.delete(`/api/v1/users/${leaving.id}`, { token: admin.token })).status).toBe(200);
      expect(await files().get(await record(admin), file.id)).toBeNull();
    });
  });
});
