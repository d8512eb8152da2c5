import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { type Account, addUser } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/** The files area as the plugin compatibility layer and the file routes use it. */
describe('files', () => {  const files = () => world.server.parley.services.files;
  const upload = async (account: Account, filename: string, content: string, contentType: string | null) =>
    files().upload(await world.record(account), { filename, content: Buffer.from(content), contentType, metadata: { source: 'test' } });

  const world = useServer({ admin: 'Files Admin', users: { owner: ['user', 'Files Owner'], other: ['user', 'Files Other'], pending: ['pending', 'Files Pending'] } });

  describe('uploads', () => {
    it('stores the bytes under DATA_DIR/uploads as <id>_<name> and the record with name, type, size and hash', async () => {
      const file = await upload(world.owner, '../../notes.txt', 'hello', 'text/plain');
      expect(file.path).toBe(path.join(world.server.dataDir, 'uploads', `${file.id}_notes.txt`));
      expect(readFileSync(file.path!, 'utf8')).toBe('hello');
      expect(file).toMatchObject({
        user_id: world.owner.id,
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
      await expect(upload(world.owner, 'empty.txt', '', 'text/plain')).rejects.toMatchObject({ statusCode: 400 });
      await expect(upload(world.pending, 'p.txt', 'x', 'text/plain')).rejects.toMatchObject({ statusCode: 403, detail: ERROR.ACCESS_PROHIBITED });
    });

    it('keeps to the size limit (rag.file.max_size, MB)', async () => {
      await world.server.parley.core.settings.set({ 'rag.file.max_size': 1 }, world.server.parley.core.clock.now());
      try {
        const big = 'x'.repeat(1024 * 1024 + 1);
        await expect(upload(world.owner, 'big.txt', big, 'text/plain')).rejects.toMatchObject({
          statusCode: 413,
          detail: "Oops! The file you're trying to upload is too large. Please upload a file that is less than 1 MB.",
        });
      } finally {
        await world.server.parley.core.settings.set({ 'rag.file.max_size': null }, world.server.parley.core.clock.now());
      }
    });
  });

  describe('records', () => {
    it('shows a file to its owner, admins and grant holders only', async () => {
      const file = await upload(world.owner, 'shared.txt', 'data', 'text/plain');
      expect((await files().get(await world.record(world.owner), file.id))?.id).toBe(file.id);
      expect((await files().get(await world.record(world.admin), file.id))?.id).toBe(file.id);
      expect(await files().get(await world.record(world.other), file.id)).toBeNull();
      await world.server.parley.services.access.grant('file', file.id, { principal_type: 'user', principal_id: world.other.id, permission: 'read' });
      expect((await files().get(await world.record(world.other), file.id))?.id).toBe(file.id);
      expect((await files().getMany(await world.record(world.other), [file.id, 'missing'])).map((f) => f.id)).toEqual([file.id]);
      // Reading is not changing.
      await expect(files().update(await world.record(world.other), file.id, { data: { x: 1 } })).rejects.toMatchObject({ statusCode: 403 });
    });

    it('merges data and meta on update', async () => {
      const file = await upload(world.owner, 'merge.txt', 'data', 'text/plain');
      const updated = await files().update(await world.record(world.owner), file.id, { hash: 'h1', data: { status: 'completed' }, meta: { extra: true } });
      expect(updated).toMatchObject({ hash: 'h1', data: { status: 'completed' }, meta: { name: 'merge.txt', size: 4, extra: true } });
      expect(await files().update(await world.record(world.other), file.id, { data: {} })).toBeNull();
    });

    it('records bytes already stored, inside the upload folder only; a taken id gives null', async () => {
      const user = await world.record(world.owner);
      const stored = await files().writeBytes(user, 'raw.bin', Buffer.from('raw'));
      expect(stored).toBe(path.join(world.server.dataDir, 'uploads', 'raw.bin'));
      const inserted = await files().insert(user, { id: 'raw-file', filename: 'raw.bin', path: stored, meta: { name: 'raw.bin' } });
      expect(inserted).toMatchObject({ id: 'raw-file', user_id: world.owner.id, path: stored, data: {}, meta: { name: 'raw.bin' } });
      expect(await files().insert(user, { id: 'raw-file', filename: 'again', path: stored })).toBeNull();
      await expect(files().insert(user, { id: 'escape', filename: 'passwd', path: '/etc/passwd' })).rejects.toMatchObject({ statusCode: 400 });
      await expect(files().insert(user, { id: 'escape2', filename: 'x', path: '../webui.db' })).rejects.toMatchObject({ statusCode: 400 });
    });

    it('resolves stored paths for readers, and never overwrites bytes of a file the writer may not change', async () => {
      const file = await upload(world.owner, 'guarded.txt', 'mine', 'text/plain');
      const name = path.basename(file.path!);
      expect(await files().localPath(await world.record(world.owner), file.path!, new Set())).toBe(file.path);
      await expect(files().localPath(await world.record(world.other), file.path!, new Set())).rejects.toMatchObject({ statusCode: 404 });
      await expect(files().writeBytes(await world.record(world.other), name, Buffer.from('theirs'))).rejects.toMatchObject({ statusCode: 403 });
      expect(readFileSync(file.path!, 'utf8')).toBe('mine');
      await expect(files().deleteBytes(await world.record(world.other), file.path!, new Set())).rejects.toMatchObject({ statusCode: 403 });
      await files().deleteBytes(await world.record(world.owner), file.path!, new Set());
      expect(existsSync(file.path!)).toBe(false);
    });
  });

  describe('GET /api/v1/files/{id} and /content', () => {
    it('answers the record and the bytes to readers, 404 to others, 401 without a session', async () => {
      const file = await upload(world.owner, 'page.txt', 'plain text', 'text/plain');
      const meta = await world.api.get(`/api/v1/files/${file.id}`, { token: world.owner.token });
      expect(meta.status).toBe(200);
      expect(meta.body).toEqual({ ...file });
      const content = await world.api.get(`/api/v1/files/${file.id}/content`, { token: world.admin.token });
      expect(content.status).toBe(200);
      expect(content.text).toBe('plain text');
      expect(content.headers.get('content-disposition')).toBeNull();
      expect((await world.api.get(`/api/v1/files/${file.id}`, { token: world.other.token })).body).toEqual({ detail: ERROR.NOT_FOUND });
      expect((await world.api.get(`/api/v1/files/${file.id}/content`, { token: world.other.token })).status).toBe(404);
      expect((await world.api.get(`/api/v1/files/${file.id}/content`)).status).toBe(401);
      expect((await world.api.get('/api/v1/files/missing/content', { token: world.admin.token })).status).toBe(404);
    });

    it('sends PDFs inline and other types as attachments, as the reference', async () => {
      const image = await upload(world.owner, 'chart.png', 'png-bytes', 'image/png');
      const res = await world.api.get(`/api/v1/files/${image.id}/content`, { token: world.owner.token });
      expect(res.headers.get('content-type')).toBe('image/png');
      expect(res.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''chart.png");
      const pdf = await upload(world.owner, 'Report 1.pdf', '%PDF', null);
      const inline = await world.api.get(`/api/v1/files/${pdf.id}/content`, { token: world.owner.token });
      expect(inline.headers.get('content-type')).toBe('application/pdf');
      expect(inline.headers.get('content-disposition')).toBe("inline; filename*=UTF-8''Report%201.pdf");
      const text = await upload(world.owner, 'n.txt', 'x', 'text/plain');
      const attached = await world.api.get(`/api/v1/files/${text.id}/content?attachment=true`, { token: world.owner.token });
      expect(attached.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''n.txt");
    });

    it('goes with its owner', async () => {
      const leaving = await addUser(world.api, world.admin, 'user', 'Files Leaving');
      const file = await upload(leaving, 'bye.txt', 'bye', 'text/plain');
      expect((await world.api.delete(`/api/v1/users/${leaving.id}`, { token: world.admin.token })).status).toBe(200);
      expect(await files().get(await world.record(world.admin), file.id)).toBeNull();
    });
  });
});
