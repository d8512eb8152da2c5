import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { FormData, fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { makeDocx, makeOdt, makePdf, makePptx, makeXlsx } from '../../helpers/documents.js';
import { processedFile, uploadFile } from '../../helpers/files.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/** The files routes over HTTP, with real multipart uploads as the frontend sends them. */
describe('files routes', () => {
  const world = useServer({ admin: 'Files Admin', users: { owner: ['user', 'Route Owner'], other: ['user', 'Route Other'], pending: ['pending', 'Route Pending'] } });

  const send = (account: Account | null, method: string, url: string, body?: FormData | string, headers: Record<string, string> = {}) =>
    fetch(world.server.url + url, { method, body, headers: { ...(account ? { authorization: `Bearer ${account.token}` } : {}), ...headers } });

  const upload = (account: Account, name: string, content: string | Uint8Array, type = 'text/plain', options: { metadata?: unknown; query?: string } = {}) =>
    uploadFile(world.server.url, account, name, content, type, options);
  const processed = (account: Account, id: string) => processedFile(world.api, account, id);

  const uploads = () => readdirSync(path.join(world.server.dataDir, 'uploads'));

  describe('upload and extraction', () => {
    it('stores a multipart upload with its metadata, queues it, and extracts the text', async () => {
      world.takeEvents();
      const { status, body } = await upload(world.owner, 'notes.md', '# Title\n\nSome notes.', 'text/markdown', { metadata: { chat_id: 'c1' } });
      expect(status).toBe(200);
      expect(body).toMatchObject({
        status: true,
        user_id: world.owner.id,
        filename: 'notes.md',
        data: { status: 'pending' },
        meta: { name: 'notes.md', content_type: 'text/markdown', size: 20, data: { chat_id: 'c1' } },
      });
      expect(body.meta.file_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(world.takeEvents().find((e) => e.event === 'file.uploaded')).toMatchObject({ subject: { id: body.id }, data: { filename: 'notes.md' } });
      expect(await processed(world.owner, body.id)).toEqual({ status: 'completed' });
      expect((await world.api.get(`/api/v1/files/${body.id}/data/content`, { token: world.owner.token })).body).toEqual({ content: '# Title\n\nSome notes.' });
    });

    it('keeps a file unprocessed with ?process=false', async () => {
      const { body } = await upload(world.owner, 'raw.bin', 'abc', 'application/octet-stream', { query: '?process=false' });
      expect(body.status).toBeUndefined();
      expect(body.data).toEqual({});
    });

    it('turns HTML into clean text and CSV into rows', async () => {
      const html = await upload(world.owner, 'page.html', '<html><head><style>p{}</style><script>alert(1)</script></head><body><h1>Hi &amp; bye</h1><p>Text</p></body></html>', 'text/html');
      expect(await processed(world.owner, html.body.id)).toEqual({ status: 'completed' });
      expect((await world.api.get(`/api/v1/files/${html.body.id}/data/content`, { token: world.owner.token })).body.content).toBe('Hi & bye\nText');
      const csv = await upload(world.owner, 'table.csv', 'name,city\n"Smith, J",Paris\nLee,Oslo\n', 'text/csv');
      expect(await processed(world.owner, csv.body.id)).toEqual({ status: 'completed' });
      expect((await world.api.get(`/api/v1/files/${csv.body.id}/data/content`, { token: world.owner.token })).body.content).toBe(
        'name: Smith, J\ncity: Paris\n\nname: Lee\ncity: Oslo',
      );
    });

    it('reads source code sent under a media type as text, and fails binary files with the reason', async () => {
      const ts = await upload(world.owner, 'main.ts', 'export const x = 1;\n', 'video/mp2t');
      expect(await processed(world.owner, ts.body.id)).toEqual({ status: 'completed' });
      const png = await upload(world.owner, 'pic.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d]), 'image/png');
      expect(png.status).toBe(200);
      expect(await processed(world.owner, png.body.id)).toEqual({ status: 'failed', error: 'File type image/png is not supported for processing' });
      // The bytes stay.
      expect((await send(world.owner, 'GET', `/api/v1/files/${png.body.id}/content`)).status).toBe(200);
    });

    it('extracts the text of PDF and DOCX documents', async () => {
      const pdf = await upload(world.owner, 'report.pdf', makePdf(['First page (one)', 'Second page']), 'application/pdf');
      expect(await processed(world.owner, pdf.body.id)).toEqual({ status: 'completed' });
      expect((await world.api.get(`/api/v1/files/${pdf.body.id}/data/content`, { token: world.owner.token })).body.content).toBe('First page (one)\n\nSecond page');
      const docx = await upload(world.owner, 'letter.docx', await makeDocx(['Dear reader,', 'Kind regards']), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
      expect(await processed(world.owner, docx.body.id)).toEqual({ status: 'completed' });
      expect((await world.api.get(`/api/v1/files/${docx.body.id}/data/content`, { token: world.owner.token })).body.content).toBe('Dear reader,\n\nKind regards');
    });

    it('extracts the text of XLSX, PPTX and ODT documents', async () => {
      const content = async (name: string, bytes: Buffer) => {
        const { body } = await upload(world.owner, name, bytes, 'application/octet-stream');
        expect(await processed(world.owner, body.id)).toEqual({ status: 'completed' });
        return (await world.api.get(`/api/v1/files/${body.id}/data/content`, { token: world.owner.token })).body.content;
      };
      expect(await content('book.xlsx', await makeXlsx({ Prices: [['item', 'price'], ['tea & milk', 3.5]], Notes: [['done']] }))).toBe(
        'Prices\nitem\tprice\ntea & milk\t3.5\n\nNotes\ndone',
      );
      const slides = Array.from({ length: 11 }, (_, i) => [`Slide ${i + 1}`]);
      slides[0].push('Second line');
      expect(await content('deck.pptx', await makePptx(slides))).toBe(
        ['Slide 1\nSecond line', ...slides.slice(1).map((lines) => lines[0])].join('\n\n'),
      );
      expect(await content('essay.odt', await makeOdt('Title', ['First <para>', 'Second']))).toBe('Title\nFirst <para>\nSecond');
    });

    it('fails corrupt and password-protected documents with the reason, keeping them', async () => {
      const pdf = await upload(world.owner, 'broken.pdf', '%PDF-1.4 not really', 'application/pdf');
      const result = await processed(world.owner, pdf.body.id);
      expect(result.status).toBe('failed');
      expect(result.error).toMatch(/^The PDF could not be read: /);
      const docx = await upload(world.owner, 'broken.docx', 'PK not a zip', 'application/octet-stream');
      const docxResult = await processed(world.owner, docx.body.id);
      expect(docxResult.status).toBe('failed');
      expect(docxResult.error).toMatch(/^The document could not be read: /);
      const xlsx = await upload(world.owner, 'broken.xlsx', 'PK not a zip', 'application/octet-stream');
      expect(await processed(world.owner, xlsx.body.id)).toMatchObject({ status: 'failed', error: expect.stringMatching(/^The document could not be read: /) });
      expect((await send(world.owner, 'GET', `/api/v1/files/${pdf.body.id}/content`)).status).toBe(200);
      const locked = await upload(world.owner, 'locked.pdf', makePdf(['secret'], { locked: true }), 'application/pdf');
      expect(await processed(world.owner, locked.body.id)).toEqual({ status: 'failed', error: 'The PDF is password-protected' });
    });

    it('streams the processing status as the frontend polls it', async () => {
      const { body } = await upload(world.owner, 'stream.txt', 'streamed', 'text/plain');
      const response = await send(world.owner, 'GET', `/api/v1/files/${body.id}/process/status?stream=true`);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = (await response.text()).trim().split('\n\n').map((line) => JSON.parse(line.replace(/^data: /, '')));
      expect(events.at(-1)).toEqual({ status: 'completed' });
      expect((await send(world.other, 'GET', `/api/v1/files/${body.id}/process/status?stream=true`)).status).toBe(404);
    });
  });

  describe('bad input', () => {
    it('refuses an upload over FILE_MAX_SIZE with 413 and keeps nothing', async () => {
      const before = uploads().length;
      const count = (await world.api.get('/api/v1/files/count', { token: world.owner.token })).body;
      await world.server.parley.core.settings.set({ 'rag.file.max_size': 1 }, world.server.parley.core.clock.now());
      try {
        const res = await upload(world.owner, 'big.txt', 'x'.repeat(2 * 1024 * 1024));
        expect(res.status).toBe(413);
        expect(res.body.detail).toBe(ERROR.FILE_TOO_LARGE('1 MB'));
      } finally {
        await world.server.parley.core.settings.set({ 'rag.file.max_size': null }, world.server.parley.core.clock.now());
      }
      expect(uploads().length).toBe(before);
      expect((await world.api.get('/api/v1/files/count', { token: world.owner.token })).body).toBe(count);
    });

    it('refuses a chunked upload at the chunk that passes FILE_MAX_SIZE, keeping nothing', async () => {
      const before = uploads().length;
      await world.server.parley.core.settings.set({ 'rag.file.max_size': 1 }, world.server.parley.core.clock.now());
      try {
        const boundary = 'chunkedboundary';
        const chunk = Buffer.alloc(64 * 1024, 'y');
        // No Content-Length: the limit can only be seen while the bytes arrive.
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="chunked.txt"\r\n\r\n`));
            for (let i = 0; i < 32; i++) controller.enqueue(chunk);
            controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
            controller.close();
          },
        });
        const response = await fetch(`${world.server.url}/api/v1/files/`, {
          method: 'POST',
          body,
          duplex: 'half',
          headers: { authorization: `Bearer ${world.owner.token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
        });
        expect(response.status).toBe(413);
      } finally {
        await world.server.parley.core.settings.set({ 'rag.file.max_size': null }, world.server.parley.core.clock.now());
      }
      expect(uploads().length).toBe(before);
    });

    it('keeps the last segment of a path name, stores a 10 KB name safely, refuses empty files and bad metadata', async () => {
      const traversal = await upload(world.owner, '../../../etc/evil.txt', 'x');
      expect(traversal.body.filename).toBe('evil.txt');
      expect(path.dirname(traversal.body.path)).toBe(path.join(world.server.dataDir, 'uploads'));
      const windows = await upload(world.owner, '..\\..\\win.txt', 'x');
      expect(windows.body.filename).toBe('win.txt');
      const long = await upload(world.owner, `${'n'.repeat(10 * 1024)}.txt`, 'long');
      expect(long.status).toBe(200);
      expect(long.body.filename).toHaveLength(10 * 1024 + 4);
      expect(path.basename(long.body.path)).toBe(`${long.body.id}.txt`);
      expect(existsSync(long.body.path)).toBe(true);
      const dots = await upload(world.owner, '..', 'x');
      expect(dots.status).toBe(400);
      const empty = await upload(world.owner, 'empty.txt', '');
      expect(empty.status).toBe(400);
      const before = uploads().length;
      const badMeta = await upload(world.owner, 'meta.txt', 'x', 'text/plain', { metadata: '{not json' });
      expect(badMeta).toEqual({ status: 400, body: { detail: ERROR.DEFAULT('Invalid metadata format') } });
      expect(uploads().length).toBe(before);
    });

    it('strips a NUL from a raw multipart file name', async () => {
      const boundary = 'b0undary';
      const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a\u0000b.txt"\r\nContent-Type: text/plain\r\n\r\nnul\r\n--${boundary}--\r\n`;
      const response = await send(world.owner, 'POST', '/api/v1/files/', body, { 'content-type': `multipart/form-data; boundary=${boundary}` });
      expect(response.status).toBe(200);
      expect(((await response.json()) as any).filename).toBe('ab.txt');
    });

    it('answers 422 without a file part, multipart or not', async () => {
      const form = new FormData();
      form.append('metadata', '{}');
      expect((await send(world.owner, 'POST', '/api/v1/files/', form)).status).toBe(422);
      expect((await world.api.post('/api/v1/files/', { file: 'x' }, { token: world.owner.token })).status).toBe(422);
    });

    it('keeps to RAG_ALLOWED_FILE_EXTENSIONS for processed uploads', async () => {
      await world.server.parley.core.settings.set({ 'rag.file.allowed_extensions': ['txt'] }, world.server.parley.core.clock.now());
      try {
        expect(await upload(world.owner, 'tool.exe', 'MZ')).toEqual({ status: 400, body: { detail: ERROR.DEFAULT('File type exe is not allowed') } });
        expect((await upload(world.owner, 'tool.exe', 'MZ', 'application/octet-stream', { query: '?process=false' })).status).toBe(200);
        expect((await upload(world.owner, 'ok.txt', 'fine')).status).toBe(200);
      } finally {
        await world.server.parley.core.settings.set({ 'rag.file.allowed_extensions': [] }, world.server.parley.core.clock.now());
      }
    });
  });

  describe('download', () => {
    it('answers byte ranges with 206 and 416, with the original name', async () => {
      const { body } = await upload(world.owner, 'clip één.mp3', '0123456789', 'audio/mpeg');
      const whole = await send(world.owner, 'GET', `/api/v1/files/${body.id}/content`);
      expect(whole.headers.get('accept-ranges')).toBe('bytes');
      expect(whole.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''${encodeURIComponent('clip één.mp3')}`);
      expect(whole.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await whole.text()).toBe('0123456789');
      const part = await send(world.owner, 'GET', `/api/v1/files/${body.id}/content`, undefined, { range: 'bytes=2-5' });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe('bytes 2-5/10');
      expect(await part.text()).toBe('2345');
      const suffix = await send(world.owner, 'GET', `/api/v1/files/${body.id}/content`, undefined, { range: 'bytes=-3' });
      expect(await suffix.text()).toBe('789');
      const open = await send(world.owner, 'GET', `/api/v1/files/${body.id}/content`, undefined, { range: 'bytes=8-' });
      expect(await open.text()).toBe('89');
      const outside = await send(world.owner, 'GET', `/api/v1/files/${body.id}/content`, undefined, { range: 'bytes=10-12' });
      expect(outside.status).toBe(416);
      expect(outside.headers.get('content-range')).toBe('bytes */10');
      const named = await send(world.owner, 'GET', `/api/v1/files/${body.id}/content/anything.mp3`);
      expect(named.headers.get('content-disposition')).toMatch(/^attachment/);
    });

    it('serves content/html only for an admin\'s file, sandboxed', async () => {
      const mine = await upload(world.owner, 'x.html', '<script>alert(1)</script>', 'text/html', { query: '?process=false' });
      expect((await send(world.owner, 'GET', `/api/v1/files/${mine.body.id}/content/html`)).status).toBe(404);
      // HTML uploaded by a user downloads, never renders.
      expect((await send(world.owner, 'GET', `/api/v1/files/${mine.body.id}/content`)).headers.get('content-disposition')).toMatch(/^attachment/);
      const admins = await upload(world.admin, 'a.html', '<p>hi</p>', 'text/html', { query: '?process=false' });
      const page = await send(world.owner, 'GET', `/api/v1/files/${admins.body.id}/content/html`);
      expect(page.status).toBe(404);
      const own = await send(world.admin, 'GET', `/api/v1/files/${admins.body.id}/content/html`);
      expect(own.status).toBe(200);
      expect(own.headers.get('content-security-policy')).toMatch(/^sandbox/);
      expect(await own.text()).toBe('<p>hi</p>');
    });
  });

  describe('records and access', () => {
    it('lists, searches and counts each user\'s own files; admins see everyone\'s', async () => {
      const a = await upload(world.other, 'Quarterly_Report.TXT', 'q1');
      await upload(world.other, 'other-notes.txt', 'n');
      await processed(world.other, a.body.id);
      const list = await world.api.get('/api/v1/files/?content=false', { token: world.other.token });
      expect(list.body.total).toBe(2);
      expect(list.body.items.map((f: any) => f.filename).sort()).toEqual(['Quarterly_Report.TXT', 'other-notes.txt']);
      expect(list.body.items.every((f: any) => f.user_id === world.other.id && f.path === undefined && !('content' in (f.data ?? {})))).toBe(true);
      expect((await world.api.get('/api/v1/files/count', { token: world.other.token })).body).toBe(2);
      const found = await world.api.get('/api/v1/files/search?filename=quarterly_*.txt', { token: world.other.token });
      expect(found.body.map((f: any) => f.id)).toEqual([a.body.id]);
      expect(found.body[0].data.content).toBe('q1');
      // `_` is a literal in the pattern, not a LIKE wildcard.
      expect((await world.api.get('/api/v1/files/search?filename=quarterlyxreport*', { token: world.other.token })).body).toEqual({
        detail: 'No files found matching the pattern.',
      });
      expect((await world.api.get('/api/v1/files/search?filename=*', { token: world.owner.token })).body.every((f: any) => f.user_id === world.owner.id)).toBe(true);
      const all = await world.api.get('/api/v1/files/count', { token: world.admin.token });
      expect(all.body).toBeGreaterThan(2);
      expect((await world.api.get('/api/v1/files/?page=0', { token: world.owner.token })).status).toBe(422);
    });

    it('lets only readers read and writers change, answering 404 to others', async () => {
      const { body } = await upload(world.owner, 'private.txt', 'secret');
      await processed(world.owner, body.id);
      for (const url of [`/api/v1/files/${body.id}`, `/api/v1/files/${body.id}/content`, `/api/v1/files/${body.id}/data/content`, `/api/v1/files/${body.id}/process/status`]) {
        expect((await world.api.get(url, { token: world.other.token })).status).toBe(404);
      }
      expect((await world.api.post(`/api/v1/files/${body.id}/rename`, { filename: 'mine.txt' }, { token: world.other.token })).status).toBe(404);
      expect((await world.api.post(`/api/v1/files/${body.id}/data/content/update`, { content: 'x' }, { token: world.other.token })).status).toBe(404);
      expect((await world.api.delete(`/api/v1/files/${body.id}`, { token: world.other.token })).status).toBe(404);
      expect((await world.api.get(`/api/v1/files/${body.id}`)).status).toBe(401);
      // A read grant reads, but does not change.
      await world.server.parley.services.access.grant('file', body.id, { principal_type: 'user', principal_id: world.other.id, permission: 'read' });
      expect((await world.api.get(`/api/v1/files/${body.id}/data/content`, { token: world.other.token })).body).toEqual({ content: 'secret' });
      expect((await world.api.delete(`/api/v1/files/${body.id}`, { token: world.other.token })).status).toBe(404);
    });

    it('renames, replaces the extracted text and deletes, with their events', async () => {
      const { body } = await upload(world.owner, 'draft.txt', 'first');
      await processed(world.owner, body.id);
      world.takeEvents();
      const renamed = await world.api.post(`/api/v1/files/${body.id}/rename`, { filename: 'final.txt' }, { token: world.owner.token });
      expect(renamed.body).toMatchObject({ id: body.id, filename: 'final.txt', meta: { name: 'final.txt', size: 5 } });
      expect((await world.api.post(`/api/v1/files/${body.id}/rename`, { filename: '' }, { token: world.owner.token })).status).toBe(422);
      const updated = await world.api.post(`/api/v1/files/${body.id}/data/content/update`, { content: 'second' }, { token: world.owner.token });
      expect(updated.body).toEqual({ content: 'second' });
      expect((await world.api.get(`/api/v1/files/${body.id}/data/content`, { token: world.owner.token })).body).toEqual({ content: 'second' });
      const deleted = await world.api.delete(`/api/v1/files/${body.id}`, { token: world.owner.token });
      expect(deleted.body).toEqual({ message: 'File deleted successfully' });
      expect(existsSync(body.path)).toBe(false);
      expect((await world.api.get(`/api/v1/files/${body.id}`, { token: world.owner.token })).status).toBe(404);
      expect(world.takeEvents().map((e) => e.event)).toEqual(['file.renamed', 'file.content_updated', 'file.deleted']);
    });

    it('reaches a file through a shared workspace model that attaches it, writing only as the model owner\'s file', async () => {
      const { body } = await upload(world.admin, 'manual.txt', 'the manual', 'text/plain', { query: '?process=false' });
      const grant = (permission: string) => ({ principal_type: 'user', principal_id: world.other.id, permission });
      const created = await world.api.post(
        '/api/v1/models/create',
        { id: 'files-manual', base_model_id: null, name: 'Manual', params: {}, meta: { knowledge: [{ type: 'file', id: body.id, name: 'manual.txt' }] }, access_grants: [grant('read')] },
        { token: world.admin.token },
      );
      expect(created.status, created.text).toBe(200);
      expect((await world.api.get(`/api/v1/files/${body.id}`, { token: world.other.token })).status).toBe(200);
      expect((await world.api.get(`/api/v1/files/${body.id}`, { token: world.owner.token })).status).toBe(404);
      expect((await world.api.post(`/api/v1/files/${body.id}/rename`, { filename: 'x.txt' }, { token: world.other.token })).status).toBe(404);
      // A model confers write only on its owner's files: the owner's file it attaches stays read-only to model writers.
      const { body: foreign } = await upload(world.owner, 'theirs.txt', 'theirs', 'text/plain', { query: '?process=false' });
      const update = await world.api.post(
        '/api/v1/models/model/update',
        { id: 'files-manual', base_model_id: null, name: 'Manual', params: {}, meta: { knowledge: [{ type: 'file', id: body.id }, { type: 'file', id: foreign.id }] }, access_grants: [grant('read'), grant('write')] },
        { token: world.admin.token },
      );
      expect(update.status, update.text).toBe(200);
      expect((await world.api.post(`/api/v1/files/${body.id}/rename`, { filename: 'renamed.txt' }, { token: world.other.token })).status).toBe(200);
      expect((await world.api.get(`/api/v1/files/${foreign.id}`, { token: world.other.token })).status).toBe(200);
      expect((await world.api.post(`/api/v1/files/${foreign.id}/rename`, { filename: 'x.txt' }, { token: world.other.token })).status).toBe(404);
      expect((await world.api.delete(`/api/v1/files/${foreign.id}`, { token: world.other.token })).status).toBe(404);
    });

    it('answers pending users 401 on every operation, storing nothing', async () => {
      const before = uploads().length;
      expect((await upload(world.pending, 'p.txt', 'x')).status).toBe(401);
      for (const url of ['/api/v1/files/', '/api/v1/files/count', '/api/v1/files/search?filename=*']) {
        expect((await world.api.get(url, { token: world.pending.token })).status).toBe(401);
      }
      expect(uploads().length).toBe(before);
    });

    it('deletes every file for admins only', async () => {
      const { body } = await upload(world.owner, 'last.txt', 'bye', 'text/plain', { query: '?process=false' });
      expect((await world.api.delete('/api/v1/files/all', { token: world.owner.token })).status).toBe(401);
      expect((await world.api.delete('/api/v1/files/all', { token: world.admin.token })).body).toEqual({ message: 'All files deleted successfully' });
      expect(existsSync(body.path)).toBe(false);
      expect((await world.api.get('/api/v1/files/count', { token: world.admin.token })).body).toBe(0);
      expect(uploads()).toEqual([]);
    });
  });
});
