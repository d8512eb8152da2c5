import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RAG_TEMPLATE } from '../../../src/core/retrieval/template.js';
import { defaultScript, fakeModel, lastUserText } from '../../helpers/fake-model.js';
import { processedFile, uploadFile } from '../../helpers/files.js';
import type { Account } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';
import { type Browser, openBrowser, webRequest } from './setup.js';

/**
 * Attachments in a chat completion, end to end: uploaded documents and images,
 * other chats, files of other users; what the model receives (the fake model
 * records it), the `sources` streamed and stored, the status lines.
 */
describe('chat attachments', () => {
  const world = useServer({ fakes: fakeModel(), admin: 'Attach Admin', users: { owner: ['user', 'Attach Owner'], other: ['user', 'Attach Other'] } });
  let browser: Browser;
  beforeAll(async () => {
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, { token: world.admin.token });
    browser = await openBrowser(world.server.url, world.owner.token);
  });
  afterAll(() => browser?.close());

  const upload = async (account: Account, name: string, content: string | Uint8Array, type = 'text/plain', query = '') => {
    const { status, body } = await uploadFile(world.server.url, account, name, content, type, { query });
    expect(status).toBe(200);
    if (body.status) expect(await processedFile(world.api, account, body.id)).toEqual({ status: 'completed' });
    return body;
  };
  /** A file entry of a message or of the request's `files`, as the chat input makes it. */
  const fileItem = (file: any, extra: Record<string, unknown> = {}) => ({
    type: 'file',
    file,
    id: file.id,
    url: file.id,
    name: file.filename,
    collection_name: '',
    status: 'uploaded',
    size: file.meta.size,
    content_type: file.meta.content_type,
    ...extra,
  });
  /** Runs `use` with the model answering the retrieval query prompt with `queries`. */
  async function withQueries(queries: string[], use: () => Promise<void>) {
    world.model.script = (body) =>
      lastUserText(body.messages).includes('determine the necessity of generating search queries') ? { text: JSON.stringify({ queries }) } : defaultScript(body);
    try {
      await use();
    } finally {
      world.model.script = defaultScript;
    }
  }
  /** The last answer the model was asked for (not a task prompt). */
  const answerRequest = () => world.model.requests.filter((body) => body.stream === true).at(-1);

  /** Sends a message with attachments from the owner's browser; answers the chat, the answer's id and what the model got. */
  async function send(content: string, files: any[], options: { chatId?: string; parentId?: string; imageFiles?: any[] } = {}) {
    browser.received.length = 0;
    const requests = world.model.requests.length;
    const { body, userId, assistantId } = webRequest(browser.socket, { content, chatId: options.chatId, parentId: options.parentId, extra: { files } });
    body.user_message = { ...body.user_message, files: [...files, ...(options.imageFiles ?? [])] } as any;
    const res = await world.api.post('/api/chat/completions', body, { token: world.owner.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.type === 'chat:completion' && e.data?.done === true, 'the answer');
    expect(done.message_id).toBe(assistantId);
    await browser.next((e) => e.type === 'chat:active' && e.data?.active === false, 'the end');
    const request = world.model.requests.slice(requests).filter((b) => b.stream === true).at(-1);
    return { chatId: res.body.chat_id as string, userId, assistantId, request };
  }
  const statuses = () => browser.received.filter((e) => e.type === 'status').map((e) => e.data);
  const sourcesEvent = () => browser.received.find((e) => e.type === 'chat:completion' && e.data?.sources);

  it('puts a whole document before the question through the RAG template, and cites it', async () => {
    const doc = await upload(world.owner, 'manual.txt', 'The reactor start code is 4217.\nNever share it.');
    const item = fileItem(doc, { context: 'full' });
    const { chatId, userId, assistantId, request } = await send('What is the start code?', [item]);

    const source = `<source id="1" name="manual.txt" resource-type="file" resource-id="${doc.id}">The reactor start code is 4217.\nNever share it.</source>`;
    expect(request.messages).toEqual([{ role: 'user', content: `${DEFAULT_RAG_TEMPLATE.replace('{{CONTEXT}}', source)}\nWhat is the start code?` }]);

    const sources = [{ source: item, document: ['The reactor start code is 4217.\nNever share it.'], metadata: [{ file_id: doc.id, name: 'manual.txt', source: 'manual.txt' }] }];
    expect(sourcesEvent()!.data).toEqual({ sources });
    // Whole documents need no search queries.
    expect(statuses()).toEqual([{ action: 'sources_retrieved', count: 1, done: true }]);

    const chat = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.owner.token })).body.chat;
    expect(chat.history.messages[assistantId]).toMatchObject({ done: true, sources, statusHistory: [{ action: 'sources_retrieved', count: 1, done: true }] });
    expect(chat.history.messages[userId].files).toEqual([item]);
    expect(chat.files).toEqual([item]);
  });

  it('searches a document for the generated queries and gives the model the passages found, with their scores', async () => {
    const topics = {
      penguins: 'Emperor penguins breed in large colonies on the Antarctic sea ice during the winter months.',
      volcanoes: 'Stratovolcanoes are built from layers of hardened lava and volcanic ash over many eruptions.',
      bread: 'Sourdough bread rises slowly because wild yeast and lactic bacteria ferment the dough.',
    };
    // One chunk per topic: each paragraph fills most of a chunk (CHUNK_SIZE 1000).
    const text = Object.values(topics)
      .map((sentence) => `${sentence} `.repeat(9).trim())
      .join('\n\n');
    const doc = await upload(world.owner, 'nature.txt', text);
    await withQueries(['penguin colonies on sea ice'], async () => {
      const item = fileItem(doc);
      const { request } = await send('Where do they breed?', [item]);
      const asked = lastUserText(request.messages);
      expect(asked).toContain(topics.penguins);
      expect(asked).not.toContain(topics.volcanoes);
      expect(asked).not.toContain(topics.bread);
      expect(statuses()).toEqual([
        { action: 'queries_generated', queries: ['penguin colonies on sea ice'], done: false },
        { action: 'sources_retrieved', count: 1, done: true },
      ]);
      const [source] = sourcesEvent()!.data.sources;
      expect(source.source).toEqual(item);
      expect(source.document).toHaveLength(source.metadata.length);
      expect(source.document[0]).toContain(topics.penguins);
      expect(source.metadata[0]).toMatchObject({ file_id: doc.id, name: 'nature.txt', source: 'nature.txt' });
      expect(source.distances).toHaveLength(source.document.length);
      expect(source.distances[0]).toBeGreaterThan(0);

      // A collection named by the request is searched the same way when the user may read it.
      const named = { type: 'text', name: 'Nature notes', collection_name: `file-${doc.id}` };
      const again = await send('Where do they breed?', [named]);
      expect(lastUserText(again.request.messages)).toContain(`<source id="1" name="Nature notes" resource-type="text">${topics.penguins}`);
    });
  });

  it("searches a workspace model's knowledge, which its users may read through the model, with the knowledge statuses", async () => {
    const handbook = await upload(world.admin, 'handbook.txt', 'Lunch break starts at 12:30 for every team.');
    const knowledge = [{ type: 'file', id: handbook.id, name: 'handbook.txt' }];
    const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
    const created = await world.api.post(
      '/api/v1/models/create',
      { id: 'hr-assistant', base_model_id: 'fake-model', name: 'HR', meta: { knowledge }, params: {}, access_grants: everyone },
      { token: world.admin.token },
    );
    expect(created.status, created.text).toBe(200);
    // The admin's file: the owner reads it only as a user of the model that attaches it (the files area's rule).
    expect((await world.api.get(`/api/v1/files/${handbook.id}`, { token: world.owner.token })).status).toBe(200);

    browser.received.length = 0;
    const { body } = webRequest(browser.socket, { model: 'hr-assistant', content: 'When is lunch break?' });
    await withQueries(['lunch break time'], async () => {
      const res = await world.api.post('/api/chat/completions', body, { token: world.owner.token });
      expect(res.status, res.text).toBe(200);
      await browser.next((e) => e.type === 'chat:active' && e.data?.active === false, 'the end');
    });
    expect(lastUserText(answerRequest().messages)).toContain('>Lunch break starts at 12:30 for every team.</source>');
    const [first, queries, retrieved, last] = statuses();
    expect(first).toEqual({ action: 'knowledge_search', query: 'When is lunch break?', done: false });
    expect(queries).toEqual({ action: 'queries_generated', queries: ['lunch break time'], done: false });
    expect(retrieved).toEqual({ action: 'sources_retrieved', count: 1, done: true });
    expect(last).toEqual({ action: 'knowledge_search', query: 'When is lunch break?', done: true, hidden: true });
    expect(sourcesEvent()!.data.sources[0]).toMatchObject({ source: knowledge[0], metadata: [{ file_id: handbook.id, name: 'handbook.txt' }] });
  });

  it('searches a knowledge base its collection lets the user read, and no other', async () => {
    await world.server.parley.services.retrieval.index('kb-geology', [
      { text: 'Basalt forms when lava cools quickly at the surface.', metadata: { file_id: 'f-basalt', name: 'rocks.md', source: 'rocks.md', page: 2 } },
    ]);
    const item = { type: 'collection', id: 'kb-geology', name: 'Geology' };
    const body = { model: 'fake-model', stream: false, messages: [{ role: 'user', content: 'How does basalt form?' }], files: [item] };
    await withQueries(['basalt lava'], async () => {
      // Admins read every collection (filter_accessible_collections).
      const admin = await world.api.post('/api/chat/completions', body, { token: world.admin.token });
      expect(admin.status, admin.text).toBe(200);
      expect(admin.body.sources).toEqual([
        { source: item, document: ['Basalt forms when lava cools quickly at the surface.'], metadata: [expect.objectContaining({ name: 'rocks.md', page: 2 })], distances: [expect.any(Number)] },
      ]);
      expect(lastUserText(world.model.requests.at(-1).messages)).toContain('<source id="1" name="Geology" resource-type="collection" resource-id="kb-geology">Basalt forms');
      // A user is admitted only to knowledge bases the knowledge area says they may read.
      const user = await world.api.post('/api/chat/completions', body, { token: world.owner.token });
      expect(user.status, user.text).toBe(200);
      expect(user.body.sources).toBeUndefined();
      expect(world.model.requests.at(-1).messages).toEqual(body.messages);
    });
  });

  it('takes documents whole, without queries, under BYPASS_EMBEDDING_AND_RETRIEVAL or RAG_FULL_CONTEXT', async () => {
    const settings = world.server.parley.core.settings;
    const doc = await upload(world.owner, 'whole.txt', 'First part.\n\nSecond part.');
    for (const key of ['rag.bypass_embedding_and_retrieval', 'rag.full_context']) {
      await settings.set({ [key]: true }, Date.now());
      try {
        // A file, and a collection named by the request (read whole from the store under RAG_FULL_CONTEXT).
        const files = [fileItem(doc), ...(key === 'rag.full_context' ? [{ type: 'text', name: 'Again', collection_name: `file-${doc.id}` }] : [])];
        const { request } = await send('Summarise', files);
        expect(lastUserText(request.messages)).toContain(`resource-id="${doc.id}">First part.\n\nSecond part.</source>`);
        expect(statuses().map((s) => s.action)).toEqual(['sources_retrieved']);
        if (key === 'rag.full_context') expect(sourcesEvent()!.data.sources[1]).toMatchObject({ source: files[1], document: ['First part.\n\nSecond part.'] });
      } finally {
        await settings.set({ [key]: false }, Date.now());
      }
    }
  });

  it('follows the configured RAG template, leaving placeholders inside documents as written', async () => {
    const settings = world.server.parley.core.settings;
    await settings.set({ 'rag.template': 'Context: [context]\nQuestion: [query]' }, Date.now());
    try {
      const doc = await upload(world.owner, 'meta.txt', 'Write [query] and {{CONTEXT}} in templates.');
      const { request } = await send('How are templates written?', [fileItem(doc, { context: 'full' })]);
      expect(lastUserText(request.messages)).toBe(
        `Context: <source id="1" name="meta.txt" resource-type="file" resource-id="${doc.id}">Write [query] and {{CONTEXT}} in templates.</source>\nQuestion: How are templates written?\nHow are templates written?`,
      );
    } finally {
      await settings.set({ 'rag.template': DEFAULT_RAG_TEMPLATE }, Date.now());
    }
  });

  it('sends an attached image as a data URI of the stored file, scaled down to FILE_IMAGE_COMPRESSION_WIDTH', async () => {
    const png = await sharp({ create: { width: 400, height: 200, channels: 3, background: '#ff0000' } }).png().toBuffer();
    const image = await upload(world.owner, 'red.png', png, 'image/png', '?process=false');
    const settings = world.server.parley.core.settings;
    await settings.set({ 'file.image_compression_width': 100 }, Date.now());
    try {
      const { chatId, userId, request } = await send('What colour is this?', [], { imageFiles: [fileItem(image)] });
      const [message] = request.messages;
      expect(message.content[0]).toEqual({ type: 'text', text: 'What colour is this?' });
      const url: string = message.content[1].image_url.url;
      expect(url.startsWith('data:image/png;base64,')).toBe(true);
      const sent = await sharp(Buffer.from(url.split(',')[1], 'base64')).metadata();
      expect([sent.format, sent.width, sent.height]).toEqual(['png', 100, 50]);
      // No document: no sources, no statuses.
      expect(sourcesEvent()).toBeUndefined();
      expect(statuses()).toEqual([]);
      // The stored message keeps the file, not the bytes.
      const stored = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.owner.token })).body.chat.history.messages[userId];
      expect(stored.files).toEqual([fileItem(image)]);
    } finally {
      await settings.set({ 'file.image_compression_width': null }, Date.now());
    }
    // Unbounded: the stored bytes as they are.
    const { request } = await send('And now?', [], { imageFiles: [fileItem(image)] });
    expect(request.messages[0].content[1].image_url.url).toBe(`data:image/png;base64,${png.toString('base64')}`);
  });

  it("scales an API client's data URI images too, and leaves out a file id it may not read", async () => {
    const big = await sharp({ create: { width: 300, height: 600, channels: 3, background: '#0000ff' } }).jpeg().toBuffer();
    const theirs = await upload(world.other, 'theirs.png', await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } }).png().toBuffer(), 'image/png', '?process=false');
    const settings = world.server.parley.core.settings;
    await settings.set({ 'file.image_compression_height': 60 }, Date.now());
    try {
      const content = [
        { type: 'text', text: 'Compare' },
        { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${big.toString('base64')}` } },
        { type: 'image_url', image_url: { url: theirs.id } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
      ];
      const res = await world.api.post('/api/chat/completions', { model: 'fake-model', stream: false, messages: [{ role: 'user', content }] }, { token: world.owner.token });
      expect(res.status, res.text).toBe(200);
      const sent = world.model.requests.at(-1).messages[0].content;
      expect(sent.map((part: any) => part.type)).toEqual(['text', 'image_url', 'image_url']);
      expect(sent[2]).toEqual(content[3]);
      const scaled = await sharp(Buffer.from(sent[1].image_url.url.split(',')[1], 'base64')).metadata();
      expect([sent[1].image_url.url.slice(0, 23), scaled.width, scaled.height]).toEqual(['data:image/jpeg;base64,', 30, 60]);
    } finally {
      await settings.set({ 'file.image_compression_height': null }, Date.now());
    }
  });

  it('gives the model another chat of the user as a source', async () => {
    const first = await send('Remember: the password is swordfish', []);
    const item = { type: 'chat', id: first.chatId, name: 'Password chat' };
    const { request } = await send('What was the password?', [item]);
    const history = '#### User\nRemember: the password is swordfish\n\n#### Assistant\nYou said: Remember: the password is swordfish\n';
    expect(lastUserText(request.messages)).toContain(`<source id="1" name="Password chat" resource-type="chat" resource-id="${first.chatId}">${history}</source>`);
    expect(sourcesEvent()!.data.sources).toEqual([{ source: item, document: [history], metadata: [{ file_id: first.chatId, name: 'A Fake Title' }] }]);
  });

  it("reads a folder attachment as the files its owner attached to the folder; another user's folder gives nothing", async () => {
    const doc = await upload(world.owner, 'project.txt', 'The project deadline is March 3.');
    const entries = [{ type: 'file', id: doc.id, name: 'project.txt', context: 'full' }];
    const own = await world.api.post('/api/v1/folders/', { name: 'Project', data: { files: entries } }, { token: world.owner.token });
    const theirs = await world.api.post('/api/v1/folders/', { name: 'Theirs', data: { files: entries } }, { token: world.other.token });
    expect([own.status, theirs.status]).toEqual([200, 200]);

    const { request } = await send('When is the deadline?', [{ type: 'folder', id: own.body.id, name: 'Project' }]);
    expect(lastUserText(request.messages)).toContain('>The project deadline is March 3.</source>');
    expect(sourcesEvent()!.data.sources).toEqual([{ source: entries[0], document: ['The project deadline is March 3.'], metadata: [{ file_id: doc.id, name: 'project.txt', source: 'project.txt' }] }]);

    const other = await send('And theirs?', [{ type: 'folder', id: theirs.body.id, name: 'Theirs' }]);
    expect(other.request.messages).toEqual([{ role: 'user', content: 'And theirs?' }]);
    expect(sourcesEvent()).toBeUndefined();
  });

  it("never reads another user's files, chats or images: they are left out", async () => {
    const secret = await upload(world.other, 'secret.txt', 'The vault opens with 9931.');
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#00ff00' } }).png().toBuffer();
    const image = await upload(world.other, 'green.png', png, 'image/png', '?process=false');
    const otherChat = await world.api.post('/api/v1/chats/new', { chat: { title: 'Private', history: { currentId: 'm1', messages: { m1: { id: 'm1', role: 'user', content: 'private words' } } } } }, { token: world.other.token });
    expect(otherChat.status).toBe(200);

    const files = [
      fileItem(secret, { context: 'full' }),
      fileItem(secret),
      { type: 'chat', id: otherChat.body.id, name: 'Private' },
      { type: 'text', name: 'Named collection', collection_name: `file-${secret.id}` },
      { type: 'web_search', name: 'Odd name', collection_name: '../file-x' },
    ];
    const before = world.model.requests.length;
    const { chatId, assistantId, request } = await send('Tell me the secrets', files, { imageFiles: [fileItem(image)] });
    expect(request.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Tell me the secrets' }] }]);
    expect(JSON.stringify(world.model.requests.slice(before))).not.toMatch(/9931|private words|base64/);
    expect(sourcesEvent()).toBeUndefined();
    expect(statuses().at(-1)).toEqual({ action: 'sources_retrieved', count: 0, done: true });
    const answer = (await world.api.get(`/api/v1/chats/${chatId}`, { token: world.owner.token })).body.chat.history.messages[assistantId];
    expect(answer.sources).toBeUndefined();
  });

  it('refuses a files field that is not a list, or too long a one, before storing anything', async () => {
    const chats = async () => (await world.api.get('/api/v1/chats/?page=1', { token: world.owner.token })).body.length;
    const before = await chats();
    for (const files of ['manual.txt', { id: 'x' }, Array.from({ length: 1001 }, (_, i) => ({ type: 'chat', id: `c${i}` }))]) {
      const { body } = webRequest(browser.socket, { content: 'Hi', extra: { files } });
      const res = await world.api.post('/api/chat/completions', body, { token: world.owner.token });
      expect([res.status, res.body.detail]).toEqual([400, 'files must be a list of at most 1000 attachments']);
    }
    expect(await chats()).toBe(before);
  });

  it('answers API clients with the sources first: in the JSON answer and as the first event of a stream', async () => {
    const doc = await upload(world.owner, 'api.txt', 'API clients read sources too.');
    const files = [{ type: 'file', id: doc.id, name: 'api.txt', context: 'full' }];
    const body = { model: 'fake-model', messages: [{ role: 'user', content: 'Do they?' }], files };
    const sources = [{ source: files[0], document: ['API clients read sources too.'], metadata: [{ file_id: doc.id, name: 'api.txt', source: 'api.txt' }] }];

    const json = await world.api.post('/api/chat/completions', { ...body, stream: false }, { token: world.owner.token });
    expect(json.status, json.text).toBe(200);
    expect(Object.keys(json.body)[0]).toBe('sources');
    expect(json.body.sources).toEqual(sources);
    expect(json.body.choices[0].message.content).toContain('API clients read sources too.');

    const stream = await world.api.post('/api/chat/completions', { ...body, stream: true }, { token: world.owner.token });
    expect(stream.status).toBe(200);
    const events = stream.text.split('\n\n').filter(Boolean);
    expect(JSON.parse(events[0].slice('data: '.length))).toEqual({ sources });
    expect(events.at(-1)).toBe('data: [DONE]');
  });
});

describe('chat attachments with RAG_SYSTEM_CONTEXT', () => {
  it('appends the filled template to the system message instead', async () => {
    await withWorld({ fakes: fakeModel(), env: { RAG_SYSTEM_CONTEXT: 'true' } }, async (world) => {
      const { token } = world.admin;
      const { body: doc } = await uploadFile(world.server.url, world.admin, 'facts.txt', 'Water boils at 100 C.');
      expect(await processedFile(world.api, world.admin, doc.id)).toEqual({ status: 'completed' });
      const messages = [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'When does water boil?' },
      ];
      const res = await world.api.post('/api/chat/completions', { model: 'fake-model', stream: false, messages, files: [{ type: 'file', id: doc.id, name: 'facts.txt', context: 'full' }] }, { token });
      expect(res.status, res.text).toBe(200);
      const source = `<source id="1" name="facts.txt" resource-type="file" resource-id="${doc.id}">Water boils at 100 C.</source>`;
      expect(world.model.requests.at(-1).messages).toEqual([
        { role: 'system', content: `Be brief.\n${DEFAULT_RAG_TEMPLATE.replace('{{CONTEXT}}', source)}` },
        { role: 'user', content: 'When does water boil?' },
      ]);
    });
  });
});
