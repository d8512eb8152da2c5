import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { extractText, getDocumentProxy } from 'unpdf';
import { describe, expect, it } from 'vitest';
import { dialect } from '../../helpers/server.js';
import { as } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

/** `/api/v1/utils`: Gravatar, black through the plugin host, a chat as a PDF, the database download. */
describe('utils', () => {
  const world = useServer({ users: { member: ['user', 'Member Zoë'] } });
  const admin = () => as(world.admin);

  async function fetchBytes(route: string, init: RequestInit, token: string) {
    const response = await fetch(`${world.server.url}${route}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
    return { status: response.status, type: response.headers.get('content-type'), disposition: response.headers.get('content-disposition'), bytes: Buffer.from(await response.arrayBuffer()) };
  }

  it('answers the Gravatar address of an email', async () => {
    const res = await world.api.get('/api/v1/utils/gravatar?email=%20Someone@Example.com%20', as(world.member));
    expect(res.status).toBe(200);
    // SHA-256 of "someone@example.com".
    expect(res.body).toBe(`https://www.gravatar.com/avatar/${createHash('sha256').update('someone@example.com').digest('hex')}?d=mp`);
    expect((await world.api.get('/api/v1/utils/gravatar?email=a@b.c')).status).toBe(401);
    expect((await world.api.get('/api/v1/utils/gravatar', admin())).status).toBe(422);
  });

  it('formats Python code with black in the plugin host (admins only), and reports code black cannot parse', async () => {
    const formatted = await world.api.post('/api/v1/utils/code/format', { code: "x = {  'a':1 }\nprint( x )" }, admin());
    expect(formatted.status, formatted.text).toBe(200);
    expect(formatted.body).toEqual({ code: 'x = {"a": 1}\nprint(x)\n' });
    const same = await world.api.post('/api/v1/utils/code/format', { code: 'x = 1\n' }, admin());
    expect(same.body).toEqual({ code: 'x = 1\n' });
    const broken = await world.api.post('/api/v1/utils/code/format', { code: 'def (:' }, admin());
    expect(broken.status).toBe(400);
    expect(broken.body.detail).toMatch(/Cannot parse/);
    expect((await world.api.post('/api/v1/utils/code/format', { code: 'x=1' }, as(world.member))).status).toBe(401);
  }, 60_000);

  it('exports a chat as a PDF whose text reads back, accents and Cyrillic included', async () => {
    const chat = {
      title: 'Café résumé — Привет',
      messages: [
        { role: 'user', content: 'Déjà vu: naïve façade, Ελληνικά', timestamp: 1764140000 },
        { role: 'assistant', model: 'fake-model', content: [{ type: 'text', text: 'Ответ: всё хорошо' }], timestamp: 1764140005 },
      ],
    };
    const res = await fetchBytes('/api/v1/utils/pdf', { method: 'POST', body: JSON.stringify(chat) }, world.member.token);
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/pdf');
    expect(res.disposition).toBe('attachment;filename=chat.pdf');
    expect(res.bytes.subarray(0, 5).toString()).toBe('%PDF-');
    const { text } = await extractText(await getDocumentProxy(new Uint8Array(res.bytes)), { mergePages: true });
    for (const expected of ['Café résumé — Привет', 'User', 'Déjà vu: naïve façade, Ελληνικά', 'Assistant', 'fake-model', 'Ответ: всё хорошо', '2025-11-26']) {
      expect(text).toContain(expected);
    }
    expect((await world.api.post('/api/v1/utils/pdf', { title: 'x' }, admin())).status).toBe(422);
    expect((await world.api.post('/api/v1/utils/pdf', { title: 'x', messages: [] })).status).toBe(401);
  });

  it('gives admins a consistent copy of the database, and refuses others', async () => {
    const res = await fetchBytes('/api/v1/utils/db/download', {}, world.admin.token);
    if (dialect === 'postgres') {
      expect(res.status).toBe(400);
      expect(JSON.parse(res.bytes.toString()).detail).toBe('This feature is only available with SQLite databases.');
      return;
    }
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/octet-stream');
    expect(res.disposition).toBe('attachment; filename="webui.db"');
    const dir = mkdtempSync(path.join(tmpdir(), 'parley-db-test-'));
    try {
      const file = path.join(dir, 'copy.db');
      writeFileSync(file, res.bytes);
      const copy = new Database(file, { readonly: true });
      const names = copy.prepare('SELECT name FROM user ORDER BY created_at').all() as { name: string }[];
      expect(names.map((n) => n.name)).toContain('Member Zoë');
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      copy.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await world.api.get('/api/v1/utils/db/download', as(world.member))).status).toBe(401);
  });
});
