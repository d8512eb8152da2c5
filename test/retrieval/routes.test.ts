import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { FormData, fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { ERROR } from '../../src/core/http/errors.js';
import { fakeEmbeddingEngine } from '../helpers/fake-embeddings.js';
import type { Account } from '../helpers/users.js';
import { useServer } from '../helpers/world.js';

describe('/api/v1/retrieval', () => {
  const world = useServer({ fakes: fakeEmbeddingEngine('hash-embed-a'), admin: 'Retrieval Admin', users: { owner: ['user', 'File Owner'], other: ['user', 'Someone Else'] } });
  const as = (account: Account) => ({ token: account.token });

  async function upload(account: Account, name: string, content: string): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([content], { type: 'text/plain' }), name);
    const response = await fetch(`${world.server.url}/api/v1/files/`, { method: 'POST', body: form, headers: { authorization: `Bearer ${account.token}` } });
    expect(response.status).toBe(200);
    return ((await response.json()) as { id: string }).id;
  }

  async function processed(account: Account, id: string): Promise<{ status: string; error?: string }> {
    for (let i = 0; i < 200; i++) {
      const res = await world.api.get(`/api/v1/files/${id}/process/status`, as(account));
      if (res.body.status !== 'pending') return res.body;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`${id} still pending`);
  }

  const queryDoc = (account: Account, collection: string, query: string) => world.api.post('/api/v1/retrieval/query/doc', { collection_name: collection, query }, as(account));

  describe('config', () => {
    it('shows every setting to admins only, with the 0.11.0 fields', async () => {
      expect((await world.api.get('/api/v1/retrieval/config', as(world.owner))).status).toBe(401);
      const res = await world.api.get('/api/v1/retrieval/config', as(world.admin));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: true,
        TOP_K: 3,
        TOP_K_RERANKER: 3,
        RELEVANCE_THRESHOLD: 0,
        HYBRID_BM25_WEIGHT: 0.5,
        ENABLE_RAG_HYBRID_SEARCH: false,
        TEXT_SPLITTER: '',
        CHUNK_SIZE: 1000,
        CHUNK_OVERLAP: 100,
        ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER: true,
        ALLOWED_FILE_EXTENSIONS: [],
        YOUTUBE_LOADER_LANGUAGE: ['en'],
        CONTENT_EXTRACTION_SUPPORTED_MEDIA_MIME_TYPES: [],
        EXTERNAL_DOCUMENT_LOADER_HEADERS: {},
        RAG_TOKENIZER_MODEL: '',
        RAG_RERANKING_BATCH_SIZE: 32,
        FILE_MAX_SIZE: null,
        FILE_MAX_COUNT: null,
        RAG_EMBEDDING_ENGINE: 'openai',
      });
    });

    it('stores the fields given, leaves null ones, and answers the new config', async () => {
      const res = await world.api.post(
        '/api/v1/retrieval/config/update',
        { TOP_K: 5, CHUNK_SIZE: 400, ALLOWED_FILE_EXTENSIONS: ['txt', 'md'], FILE_MAX_SIZE: '20', RAG_TOKENIZER_MODEL: '  gpt2  ', PDF_LOADER_MODE: null, web: { ENABLE_WEB_SEARCH: true } },
        as(world.admin),
      );
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ TOP_K: 5, CHUNK_SIZE: 400, ALLOWED_FILE_EXTENSIONS: ['txt', 'md'], FILE_MAX_SIZE: 20, RAG_TOKENIZER_MODEL: 'gpt2', PDF_LOADER_MODE: 'page' });
      const cleared = await world.api.post('/api/v1/retrieval/config/update', { TOP_K: 3, CHUNK_SIZE: 1000, ALLOWED_FILE_EXTENSIONS: [], FILE_MAX_SIZE: '' }, as(world.admin));
      expect(cleared.body).toMatchObject({ TOP_K: 3, CHUNK_SIZE: 1000, ALLOWED_FILE_EXTENSIONS: [], FILE_MAX_SIZE: null });
    });

    it('carries the chat template and the web search config, read and written with the rest', async () => {
      const before = await world.api.get('/api/v1/retrieval/config', as(world.admin));
      expect(before.body.RAG_TEMPLATE).toContain('{{CONTEXT}}');
      expect(before.body.web).toMatchObject({ ENABLE_WEB_SEARCH: expect.any(Boolean), WEB_SEARCH_RESULT_COUNT: expect.any(Number) });
      const res = await world.api.post(
        '/api/v1/retrieval/config/update',
        { RAG_TEMPLATE: 'Use [context] for [query]', web: { ENABLE_WEB_SEARCH: false, WEB_SEARCH_ENGINE: 'searxng', WEB_SEARCH_RESULT_COUNT: 4 } },
        as(world.admin),
      );
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ RAG_TEMPLATE: 'Use [context] for [query]', web: { ENABLE_WEB_SEARCH: false, WEB_SEARCH_ENGINE: 'searxng', WEB_SEARCH_RESULT_COUNT: 4 } });
      expect((await world.api.get('/api/config', as(world.admin))).body.features.enable_web_search).toBe(false);
      const reset = await world.api.post('/api/v1/retrieval/config/update', { RAG_TEMPLATE: before.body.RAG_TEMPLATE, web: before.body.web }, as(world.admin));
      expect(reset.body.web).toEqual(before.body.web);
    });

    it('refuses null where a list is required (422) and bad values (4xx), changing nothing', async () => {
      for (const field of ['ALLOWED_FILE_EXTENSIONS', 'YOUTUBE_LOADER_LANGUAGE', 'CONTENT_EXTRACTION_SUPPORTED_MEDIA_MIME_TYPES']) {
        const res = await world.api.post('/api/v1/retrieval/config/update', { TOP_K: 9, [field]: null }, as(world.admin));
        expect(res.status).toBe(422);
        expect(res.body.detail[0].loc).toEqual(['body', field]);
      }
      expect((await world.api.post('/api/v1/retrieval/config/update', { TOP_K: 'many' }, as(world.admin))).status).toBe(422);
      expect((await world.api.post('/api/v1/retrieval/config/update', { TOP_K: 0 }, as(world.admin))).status).toBe(400);
      expect((await world.api.post('/api/v1/retrieval/config/update', { FILE_MAX_SIZE: 'lots' }, as(world.admin))).status).toBe(400);
      expect((await world.api.get('/api/v1/retrieval/config', as(world.admin))).body.TOP_K).toBe(3);
    });

    it('shows and updates the embedding config; an unknown engine is refused', async () => {
      const shown = await world.api.get('/api/v1/retrieval/embedding', as(world.admin));
      expect(shown.body).toMatchObject({ status: true, RAG_EMBEDDING_ENGINE: 'openai', RAG_EMBEDDING_MODEL: 'hash-embed-a', RAG_EMBEDDING_BATCH_SIZE: 1, openai_config: { url: world.embeddings.url, key: 'sk-embed' } });
      const bad = await world.api.post('/api/v1/retrieval/embedding/update', { RAG_EMBEDDING_ENGINE: 'sentence-transformers', RAG_EMBEDDING_MODEL: 'x' }, as(world.admin));
      expect(bad.status).toBe(400);
      const ollama = await world.api.post(
        '/api/v1/retrieval/embedding/update',
        { RAG_EMBEDDING_ENGINE: 'ollama', RAG_EMBEDDING_MODEL: 'hash-embed-a', RAG_EMBEDDING_BATCH_SIZE: 8, ollama_config: { url: world.embeddings.url, key: '' } },
        as(world.admin),
      );
      expect(ollama.body).toMatchObject({ RAG_EMBEDDING_ENGINE: 'ollama', RAG_EMBEDDING_BATCH_SIZE: 8, ollama_config: { url: world.embeddings.url, key: '' } });
      const text = await world.api.post('/api/v1/retrieval/process/text', { name: 'ollama', content: 'Embedded through the Ollama format.' }, as(world.owner));
      expect(text.status).toBe(200);
      expect(world.embeddings.requests.at(-1)).toMatchObject({ path: '/api/embed', body: { model: 'hash-embed-a', input: ['Embedded through the Ollama format.'] } });
      const back = await world.api.post('/api/v1/retrieval/embedding/update', { RAG_EMBEDDING_ENGINE: 'openai', RAG_EMBEDDING_MODEL: 'hash-embed-a' }, as(world.admin));
      expect(back.body).toMatchObject({ RAG_EMBEDDING_ENGINE: 'openai', RAG_EMBEDDING_BATCH_SIZE: 1 });
      expect((await world.api.get('/api/v1/retrieval/', as(world.owner))).body).toMatchObject({ status: true, embedding_engine: 'openai', chunk_size: 1000 });
    });
  });

  describe('files', () => {
    it('indexes an uploaded file into file-<id>, readable by those who may read the file only', async () => {
      const id = await upload(world.owner, 'llamas.txt', 'Llamas are domesticated South American camelids used as pack animals.');
      expect(await processed(world.owner, id)).toEqual({ status: 'completed' });
      const found = await queryDoc(world.owner, `file-${id}`, 'pack animals of South America');
      expect(found.status).toBe(200);
      expect(found.body.metadatas[0][0]).toMatchObject({ file_id: id, name: 'llamas.txt', source: 'llamas.txt', created_by: expect.any(String) });
      expect((await queryDoc(world.other, `file-${id}`, 'llamas')).status).toBe(403);
      expect((await world.api.post('/api/v1/retrieval/query/collection', { collection_names: [`file-${id}`, 'file-nope'], query: 'llamas' }, as(world.owner))).status).toBe(403);
      expect((await queryDoc(world.admin, `file-${id}`, 'llamas')).body.documents[0]).toHaveLength(1);
    });

    it('takes a deleted file’s chunks out of the store', async () => {
      const id = await upload(world.owner, 'alpacas.txt', 'Alpacas are kept for their soft fleece.');
      await processed(world.owner, id);
      expect((await queryDoc(world.admin, `file-${id}`, 'alpaca fleece')).body.documents[0]).toHaveLength(1);
      expect((await world.api.delete(`/api/v1/files/${id}`, as(world.owner))).status).toBe(200);
      expect((await queryDoc(world.admin, `file-${id}`, 'alpaca fleece')).body.documents).toEqual([[]]);
    });

    it('marks the file failed with the reason when the embedding engine fails', async () => {
      world.embeddings.failing = true;
      try {
        const id = await upload(world.owner, 'broken.txt', 'This text cannot be embedded right now.');
        const status = await processed(world.owner, id);
        expect(status.status).toBe('failed');
        expect(status.error).toContain('The embedding model hash-embed-a is unavailable');
        // A query needs the engine too: a 400, as the reference.
        expect((await queryDoc(world.admin, `file-${id}`, 'embedded')).body).toEqual({ detail: ERROR.DEFAULT('Error querying knowledge base') });
        world.embeddings.failing = false;
        expect((await queryDoc(world.admin, `file-${id}`, 'embedded')).body.documents).toEqual([[]]);
      } finally {
        world.embeddings.failing = false;
      }
    });

    it('process/file: new content re-indexes the file; a collection takes the file’s chunks; others’ files are 404', async () => {
      const id = await upload(world.owner, 'notes.txt', 'Original words about otters.');
      await processed(world.owner, id);
      const res = await world.api.post('/api/v1/retrieval/process/file', { file_id: id, content: 'Replaced words about beavers.' }, as(world.owner));
      expect(res.body).toEqual({ status: true, collection_name: `file-${id}`, filename: 'notes.txt', content: 'Replaced words about beavers.' });
      const chunks = await queryDoc(world.owner, `file-${id}`, 'otters beavers');
      expect(chunks.body.documents).toEqual([['Replaced words about beavers.']]);

      const copied = await world.api.post('/api/v1/retrieval/process/file', { file_id: id, collection_name: 'shelf-1' }, as(world.admin));
      expect(copied.body).toMatchObject({ status: true, collection_name: 'shelf-1' });
      expect((await queryDoc(world.admin, 'shelf-1', 'beavers')).body.metadatas[0][0]).toMatchObject({ file_id: id, hash: expect.any(String) });
      // A collection that is no file, memory or knowledge base of theirs: not the user's to write or read.
      expect((await world.api.post('/api/v1/retrieval/process/file', { file_id: id, collection_name: 'shelf-1' }, as(world.owner))).status).toBe(403);
      expect((await queryDoc(world.owner, 'shelf-1', 'beavers')).status).toBe(403);
      expect((await world.api.post('/api/v1/retrieval/process/file', { file_id: id }, as(world.other))).status).toBe(404);

      // A file with no extracted text yet: nothing indexed, and the file left as it was.
      const unprocessed = await world.server.parley.services.files.upload(await world.record(world.owner), { filename: 'later.txt', content: Buffer.from('later'), contentType: 'text/plain', process: false });
      const early = await world.api.post('/api/v1/retrieval/process/file', { file_id: unprocessed.id }, as(world.owner));
      expect(early).toMatchObject({ status: 400, body: { detail: ERROR.EMPTY_CONTENT } });
      expect((await world.api.get(`/api/v1/files/${unprocessed.id}/process/status`, as(world.owner))).body).toEqual({ status: 'pending' });

      const removed = await world.api.post('/api/v1/retrieval/delete', { collection_name: 'shelf-1', file_id: id }, as(world.admin));
      expect(removed.body).toEqual({ status: true });
      expect((await queryDoc(world.admin, 'shelf-1', 'beavers')).body.documents).toEqual([[]]);
      expect((await world.api.post('/api/v1/retrieval/delete', { collection_name: 'shelf-1', file_id: id }, as(world.admin))).body).toEqual({ status: false });
      expect((await world.api.post('/api/v1/retrieval/delete', { collection_name: 'shelf-1', file_id: id }, as(world.owner))).status).toBe(401);
    });

    it('process/files/batch indexes the caller’s files together and reports the others', async () => {
      const mine = await upload(world.owner, 'a.txt', 'first');
      const theirs = await upload(world.other, 'b.txt', 'second');
      await processed(world.owner, mine);
      const res = await world.api.post(
        '/api/v1/retrieval/process/files/batch',
        { collection_name: `file-${mine}`, files: [{ id: mine, data: { content: 'Batch text about walruses.' } }, { id: theirs, data: { content: 'x' } }, { id: 'missing' }] },
        as(world.owner),
      );
      expect(res.body).toEqual({
        results: [{ file_id: mine, status: 'completed' }],
        errors: [
          { file_id: theirs, status: 'failed', error: 'File not found' },
          { file_id: 'missing', status: 'failed', error: 'File not found' },
        ],
      });
      expect((await queryDoc(world.owner, `file-${mine}`, 'walruses')).body.documents[0]).toEqual(['Batch text about walruses.']);
    });
  });

  describe('collections', () => {
    it('process/text: a hash-named collection, or one the caller may write; unsafe names are refused', async () => {
      const res = await world.api.post('/api/v1/retrieval/process/text', { name: 'memo', content: 'Quokkas live on Rottnest Island.' }, as(world.owner));
      expect(res.status).toBe(200);
      expect(res.body.collection_name).toMatch(/^[0-9a-f]{64}$/);
      expect((await world.api.post('/api/v1/retrieval/process/text', { name: 'm', content: 'x', collection_name: `user-memory-${(await world.record(world.owner)).id}` }, as(world.owner))).status).toBe(200);
      expect((await world.api.post('/api/v1/retrieval/process/text', { name: 'm', content: 'x', collection_name: `user-memory-${(await world.record(world.other)).id}` }, as(world.owner))).status).toBe(403);
      expect((await world.api.post('/api/v1/retrieval/process/text', { name: 'm', content: 'x', collection_name: '../../etc' }, as(world.admin))).status).toBe(403);
      expect((await world.api.post('/api/v1/retrieval/process/text', { name: 'm', content: '   ', collection_name: 'empty' }, as(world.admin))).body.detail).toBe(ERROR.EMPTY_CONTENT);
      expect((await world.api.post('/api/v1/retrieval/process/text', { name: 'm' }, as(world.owner))).status).toBe(422);
    });

    it('reset/db empties the store and reset/uploads the upload folder (admins only)', async () => {
      await world.api.post('/api/v1/retrieval/process/text', { name: 'r', content: 'Numbats eat termites.', collection_name: 'reset-me' }, as(world.admin));
      expect((await world.api.post('/api/v1/retrieval/reset/db', undefined, as(world.owner))).status).toBe(401);
      const reset = await world.api.post('/api/v1/retrieval/reset/db', undefined, as(world.admin));
      expect(reset.status).toBe(200);
      expect((await queryDoc(world.admin, 'reset-me', 'numbats')).body.documents).toEqual([[]]);
      // The store takes new chunks after a reset.
      await world.api.post('/api/v1/retrieval/process/text', { name: 'r', content: 'Numbats eat termites.', collection_name: 'reset-me' }, as(world.admin));
      expect((await queryDoc(world.admin, 'reset-me', 'numbats')).body.documents[0]).toHaveLength(1);

      await upload(world.owner, 'bytes.txt', 'bytes');
      const uploads = path.join(world.server.dataDir, 'uploads');
      expect(readdirSync(uploads).length).toBeGreaterThan(0);
      const cleared = await world.api.post('/api/v1/retrieval/reset/uploads', undefined, as(world.admin));
      expect(cleared.body).toBe(true);
      expect(existsSync(uploads) ? readdirSync(uploads) : []).toEqual([]);
      expect(world.takeEvents().map((e) => e.event)).toEqual(expect.arrayContaining(['retrieval.vector_db.reset', 'retrieval.uploads.reset', 'retrieval.content.processed']));
    });
  });
});
