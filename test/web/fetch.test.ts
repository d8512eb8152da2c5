import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ERROR } from '../../src/core/http/errors.js';
import { withWorld, useServer } from '../helpers/world.js';
import { fakeWeb } from './fake-web.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('POST /api/v1/retrieval/process/web', () => {
  const world = useServer({
    fakes: fakeWeb(),
    // Loopback pages are allowed (as webhooks' tests allow theirs), but not through the name localhost.
    env: { WEB_FETCH_FILTER_LIST: '!localhost', WEB_LOADER_MAX_BYTES: '4096', WEB_LOADER_TIMEOUT: '1' },
    admin: 'Fetch Admin',
    users: { member: ['user', 'Fetch Member'] },
  });
  const fetchPage = (body: object, query = '', token = world.admin.token) => world.api.post(`/api/v1/retrieval/process/web${query}`, body, { token });
  const stored = (collection: string) => world.server.parley.services.retrieval.documents(collection);

  it('stores the main text of a page under the hash of its URL', async () => {
    const url = `${world.web.url}/pages/moon`;
    const res = await fetchPage({ url });
    expect(res.status, res.text).toBe(200);
    const collection = sha256(url).slice(0, 63);
    expect(res.body).toMatchObject({ status: true, collection_name: collection, filename: url, file: { meta: { name: url, source: url } } });
    const content: string = res.body.file.data.content;
    expect(content).toContain('The moon article explains tidal locking');
    // Navigation, footer and scripts are not the page's text.
    expect(content).not.toMatch(/Menu of many links|Footer boilerplate|script text/);
    const docs = await stored(collection);
    expect(docs.map((d) => d.text).join(' ')).toContain('tidal locking');
    expect(docs[0].metadata).toMatchObject({ source: url, title: 'moon title', description: 'About moon', language: 'en' });
  });

  it('reads plain text and PDFs; refuses other binary types', async () => {
    const text = await fetchPage({ url: `${world.web.url}/plain.txt` }, '?process=false');
    expect(text.body).toEqual({ status: true, content: 'Plain text page about comets.' });
    const pdf = await fetchPage({ url: `${world.web.url}/doc.pdf` }, '?process=false');
    expect(pdf.status, pdf.text).toBe(200);
    expect(pdf.body.content).toContain('First PDF page about asteroids');
    const image = await fetchPage({ url: `${world.web.url}/image.png` });
    expect([image.status, image.body.detail]).toEqual([400, expect.stringMatching(/^\[ERROR: Error querying knowledge base\] .*image\/png/)]);
  });

  it('into a named collection, replaced unless overwrite=false', async () => {
    const first = await fetchPage({ url: `${world.web.url}/pages/first`, collection_name: 'web-search-mine' });
    expect(first.body.collection_name).toBe('web-search-mine');
    await fetchPage({ url: `${world.web.url}/plain.txt`, collection_name: 'web-search-mine' }, '?overwrite=false');
    expect((await stored('web-search-mine')).map((d) => d.metadata.source)).toEqual(expect.arrayContaining([`${world.web.url}/pages/first`, `${world.web.url}/plain.txt`]));
    await fetchPage({ url: `${world.web.url}/plain.txt`, collection_name: 'web-search-mine' });
    expect(new Set((await stored('web-search-mine')).map((d) => d.metadata.source))).toEqual(new Set([`${world.web.url}/plain.txt`]));
  });

  it('lets members write only collections that are theirs to write', async () => {
    const token = world.member.token;
    expect((await fetchPage({ url: `${world.web.url}/plain.txt` }, '', token)).status).toBe(200);
    expect((await fetchPage({ url: `${world.web.url}/plain.txt`, collection_name: 'web-search-member' }, '', token)).status).toBe(200);
    for (const collection_name of ['some-knowledge-base', 'file-abc', 'user-memory-someone-else', '../escape']) {
      const res = await fetchPage({ url: `${world.web.url}/plain.txt`, collection_name }, '', token);
      expect([collection_name, res.status, res.body.detail]).toEqual([collection_name, 403, ERROR.ACCESS_PROHIBITED]);
    }
    expect((await world.api.post('/api/v1/retrieval/process/web', { url: `${world.web.url}/plain.txt` })).status).toBe(401);
  });

  it('checks every redirect, and honours the size limit and the timeout', async () => {
    const port = new URL(world.web.url).port;
    const followed = await fetchPage({ url: `${world.web.url}/redirect?to=/pages/after` }, '?process=false');
    expect(followed.body.content).toContain('The after article');
    for (const to of [`http://localhost:${port}/pages/x`, 'http://169.254.169.254/latest/meta-data/']) {
      const res = await fetchPage({ url: `${world.web.url}/redirect?to=${encodeURIComponent(to)}` });
      expect([to, res.status, res.body.detail]).toEqual([to, 400, expect.stringContaining(ERROR.INVALID_URL)]);
    }
    const big = await fetchPage({ url: `${world.web.url}/big` });
    expect([big.status, big.body.detail]).toEqual([400, expect.stringContaining('larger than the limit of 4096 bytes')]);
    const slow = await fetchPage({ url: `${world.web.url}/slow` });
    expect([slow.status, slow.body.detail]).toEqual([400, expect.stringContaining('did not answer within 1 s')]);
    const missing = await fetchPage({ url: `${world.web.url}/nowhere` });
    expect([missing.status, missing.body.detail]).toEqual([400, expect.stringContaining('answered 404')]);
    for (const url of ['file:///etc/passwd', 'not a url', `http://user:pw@127.0.0.1:${port}/plain.txt`]) {
      const res = await fetchPage({ url });
      expect([url, res.status, res.body.detail]).toEqual([url, 400, expect.stringContaining(ERROR.INVALID_URL)]);
    }
    expect((await fetchPage({ url: 42 })).status).toBe(422);
  });

  it('cuts the text to WEB_FETCH_MAX_CONTENT_LENGTH and skips the index when told to', async () => {
    const config = { 'web.fetch.max_content_length': 12, 'web.search.bypass_embedding_and_retrieval': true };
    expect((await world.api.post('/api/v1/configs/import', { config }, { token: world.admin.token })).status).toBe(200);
    const res = await fetchPage({ url: `${world.web.url}/plain.txt` });
    expect(res.body).toMatchObject({ collection_name: null, file: { data: { content: 'Plain text p' } } });
    const reset = { 'web.fetch.max_content_length': null, 'web.search.bypass_embedding_and_retrieval': false };
    expect((await world.api.post('/api/v1/configs/import', { config: reset }, { token: world.admin.token })).status).toBe(200);
  });

  it('reads YouTube transcripts: the languages in order, a written track before a generated one', async () => {
    const res = await world.api.post('/api/v1/retrieval/process/youtube', { url: 'https://www.youtube.com/watch?v=abcdefghijk' }, { token: world.admin.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body.file.data.content).toBe('Hello & welcome to the show');
    const [player] = world.web.seen('/youtubei/v1/player');
    expect(player.body).toMatchObject({ videoId: 'abcdefghijk', context: { client: { clientName: 'ANDROID' } } });
    await world.api.post('/api/v1/configs/import', { config: { 'rag.youtube_loader_language': ['fr', 'de'] } }, { token: world.admin.token });
    const german = await world.api.post('/api/v1/retrieval/process/web', { url: 'https://youtu.be/abcdefghijk' }, { token: world.admin.token });
    expect(german.body.file.data.content).toBe('Hallo und willkommen');
    const none = await world.api.post('/api/v1/retrieval/process/youtube', { url: 'https://youtu.be/nocaptions1' }, { token: world.admin.token });
    expect([none.status, none.body.detail]).toEqual([400, expect.stringContaining('Subtitles are disabled')]);
    await world.api.post('/api/v1/configs/import', { config: { 'rag.youtube_loader_language': ['en'] } }, { token: world.admin.token });
  });
});

describe('page fetching by default', () => {
  it('refuses this machine and private networks unless ENABLE_LOCAL_WEB_FETCH', async () => {
    await withWorld({ admin: 'Default Admin' }, async ({ api, admin }) => {
      for (const url of ['http://127.0.0.1:9/page', 'http://10.1.2.3/page', 'http://[::1]/page']) {
        const res = await api.post('/api/v1/retrieval/process/web', { url }, { token: admin.token });
        expect([url, res.status, res.body.detail]).toEqual([url, 400, expect.stringContaining('local targets are refused unless the server runs with ENABLE_LOCAL_WEB_FETCH=true')]);
      }
    });
  });
});
