import { getEncoding } from 'js-tiktoken';
import { describe, expect, it } from 'vitest';
import { useServer } from '../helpers/world.js';

/** Chunking per the retrieval config, seen through the chunks a collection holds. */
describe('chunking', () => {
  const world = useServer({ admin: 'Chunking Admin' });
  const admin = () => ({ token: world.admin.token });

  const configure = (form: Record<string, unknown>) => world.api.post('/api/v1/retrieval/config/update', form, admin());

  async function chunksOf(collection: string, content: string) {
    expect((await world.api.post('/api/v1/retrieval/process/text', { name: collection, content, collection_name: collection }, admin())).status).toBe(200);
    return (await world.server.parley.services.retrieval.documents(collection)).map((d) => ({ text: d.text, start: d.metadata.start_index as number }));
  }

  const sentences = Array.from({ length: 40 }, (_, i) => `Sentence number ${i} talks about topic ${i % 7}.`).join(' ');

  it('splits by characters under CHUNK_SIZE with CHUNK_OVERLAP, each chunk with its start_index', async () => {
    await configure({ CHUNK_SIZE: 120, CHUNK_OVERLAP: 30, TEXT_SPLITTER: 'character', ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER: false });
    const chunks = await chunksOf('characters', sentences);
    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks) {
      expect(chunk.text.length).toBeLessThanOrEqual(120);
      expect(sentences.slice(chunk.start, chunk.start + chunk.text.length)).toBe(chunk.text);
    }
    // Consecutive chunks overlap, and together they cover the text.
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.start).toBeLessThan(chunks[i - 1]!.start + chunks[i - 1]!.text.length);
    expect(chunks.at(-1)!.start + chunks.at(-1)!.text.length).toBe(sentences.length);
  });

  it('splits by cl100k_base tokens with the token splitter', async () => {
    await configure({ CHUNK_SIZE: 25, CHUNK_OVERLAP: 5, TEXT_SPLITTER: 'token', ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER: false });
    const encoding = getEncoding('cl100k_base');
    const chunks = await chunksOf('tokens', sentences);
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) expect(encoding.encode(chunk.text).length).toBeLessThanOrEqual(25);
    expect(chunks[0]!.text).toBe(encoding.decode(encoding.encode(sentences).slice(0, 25)));
  });

  it('splits Markdown at headers first, keeping each header with its section', async () => {
    await configure({ CHUNK_SIZE: 1000, CHUNK_OVERLAP: 100, TEXT_SPLITTER: '', ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER: true, CHUNK_MIN_SIZE_TARGET: 0 });
    const markdown = '# Setup\nInstall the package.\n\n## Usage\nRun the command.\n```\n# not a header\n```\n\n## Limits\nNone known.';
    const chunks = await chunksOf('markdown', markdown);
    expect(chunks.map((c) => c.text)).toEqual(['# Setup\nInstall the package.', '## Usage\nRun the command.\n```\n# not a header\n```', '## Limits\nNone known.']);

    await configure({ CHUNK_MIN_SIZE_TARGET: 60 });
    const merged = await chunksOf('markdown-merged', markdown);
    // Small sections grow forward, and the small last one joins the one before (the reference's merge_docs_to_target_size).
    expect(merged.map((c) => c.text)).toEqual([markdown]);
  });
});
