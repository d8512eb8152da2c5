import { FormData, fetch } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { makeDocx, makeEml, makeEpub, makePdf } from '../../helpers/documents.js';
import { type FakeExtractionEngines, startFakeExtractionEngines } from '../../helpers/fake-extraction.js';
import type { Account } from '../../helpers/users.js';
import { type ServerWorld, useServer } from '../../helpers/world.js';

/** Uploads and waits through a world's HTTP interface. */
function filesOf(world: ServerWorld<any, any>) {
  async function upload(account: Account, name: string, content: string | Uint8Array, type: string) {
    const form = new FormData();
    form.append('file', new Blob([content], { type }), name);
    const response = await fetch(`${world.server.url}/api/v1/files/`, { method: 'POST', body: form, headers: { authorization: `Bearer ${account.token}` } });
    expect(response.status).toBe(200);
    return ((await response.json()) as { id: string }).id;
  }
  const status = async (account: Account, id: string) => (await world.api.get(`/api/v1/files/${id}/process/status`, { token: account.token })).body;
  async function processed(account: Account, id: string, timeoutMs = 20_000): Promise<{ status: string; error?: string }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const body = await status(account, id);
      if (body.status !== 'pending' || Date.now() > deadline) return body;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const content = async (account: Account, id: string) => (await world.api.get(`/api/v1/files/${id}/data/content`, { token: account.token })).body.content as string;
  return { upload, status, processed, content };
}

/** A PDF long enough that extracting it takes a few seconds. */
const longPdf = (pages: number) => makePdf(Array.from({ length: pages }, (_, i) => `Page number ${i}`));

describe('content extraction', () => {
  const world = useServer({ users: { owner: ['user', 'Extraction Owner'] } });
  const files = filesOf(world);

  it('answers requests promptly while a large PDF is extracted in a worker thread', { timeout: 120_000 }, async () => {
    const pages = 3_000;
    const id = await files.upload(world.owner, 'long.pdf', longPdf(pages), 'application/pdf');
    let slowest = 0;
    let duringExtraction = 0;
    while ((await files.status(world.owner, id)).status === 'pending') {
      const started = performance.now();
      const answer = await world.api.get('/api/v1/files/count', { token: world.owner.token });
      slowest = Math.max(slowest, performance.now() - started);
      expect(answer.status).toBe(200);
      duringExtraction++;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await files.status(world.owner, id)).toEqual({ status: 'completed' });
    expect((await files.content(world.owner, id)).endsWith(`Page number ${pages - 1}`)).toBe(true);
    // Many answers came while pdf.js worked, none held by it (a generous bound: the machine is shared).
    expect(duringExtraction).toBeGreaterThan(5);
    expect(slowest).toBeLessThan(1_000);
  });

  it('indexes a PDF page by page: each chunk names its page, and a knowledge base keeps them', async () => {
    const pages = ['The boiler room is in the basement.', 'Fire drills happen every March.', 'The caretaker keeps the radiator keys.'];
    const id = await files.upload(world.owner, 'building.pdf', makePdf(pages, { title: 'Building Handbook' }), 'application/pdf');
    expect(await files.processed(world.owner, id)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, id)).toBe(pages.join('\n\n'));
    const query = async (collection: string, text: string, account = world.owner) => {
      const res = await world.api.post('/api/v1/retrieval/query/collection', { collection_names: [collection], query: text, k: 1 }, { token: account.token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return { text: res.body.documents[0][0] as string, metadata: res.body.metadatas[0][0] as Record<string, unknown> };
    };
    const drills = await query(`file-${id}`, 'When are fire drills?');
    expect(drills.text).toBe(pages[1]);
    expect(drills.metadata).toMatchObject({ page: 1, page_label: '2', total_pages: 3, title: 'Building Handbook', name: 'building.pdf', file_id: id, source: 'building.pdf' });
    // The stated title is indexed with the text: a question naming it finds the document.
    expect((await query(`file-${id}`, 'handbook keys')).metadata.page).toBe(2);

    const knowledge = await world.api.post('/api/v1/knowledge/create', { name: 'Facilities', description: '' }, { token: world.admin.token });
    expect(knowledge.status).toBe(200);
    expect((await world.api.post(`/api/v1/knowledge/${knowledge.body.id}/file/add`, { file_id: id }, { token: world.admin.token })).status).toBe(200);
    const keys = await query(knowledge.body.id, 'Who keeps the radiator keys?', world.admin);
    expect(keys.text).toBe(pages[2]);
    expect(keys.metadata).toMatchObject({ page: 2, page_label: '3', total_pages: 3, file_id: id, name: 'building.pdf' });
  });

  it('titles the chunks of PDFs and Word documents with their headings (font size, paragraph style), across pages', async () => {
    // Paragraphs of words no heading has: a chunk after the first is found by a heading's words only through its title.
    const filler = (topic: string, n: number) => Array.from({ length: n }, (_, i) => `${topic} ${i}: pour, wait, rinse and dry the parts, then put them back in order.`).join(' ');
    const kettle = (size: number) => [{ text: 'Appliance manual', size: 20 }, { text: 'Descaling the kettle', size: 15 }, ...Array.from({ length: 14 }, (_, i) => ({ text: filler(`step ${i}`, 1), size }))];
    const pdf = makePdf([kettle(10), Array.from({ length: 14 }, (_, i) => ({ text: filler(`more ${i}`, 1), size: 10 })), [{ text: 'Cleaning the toaster', size: 15 }, { text: filler('crumbs', 1), size: 10 }]]);
    const docx = await makeDocx([
      { text: 'Appliance manual', style: 'Title' },
      { text: 'Descaling the kettle', style: 'Heading1' },
      ...Array.from({ length: 10 }, (_, i) => filler(`step ${i}`, 4)),
      { text: 'Cleaning the toaster', style: 'Heading1' },
      filler('crumbs', 1),
    ]);
    const pdfId = await files.upload(world.owner, 'appliances.pdf', pdf, 'application/pdf');
    const docxId = await files.upload(world.owner, 'appliances.docx', docx, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    for (const id of [pdfId, docxId]) expect(await files.processed(world.owner, id)).toEqual({ status: 'completed' });
    const found = async (id: string, query: string) => {
      const res = await world.api.post('/api/v1/retrieval/query/collection', { collection_names: [`file-${id}`], query, k: 10 }, { token: world.owner.token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.documents[0] as string[];
    };
    for (const id of [pdfId, docxId]) {
      const chunks = await found(id, 'descaling');
      // The chunks under the heading (on the PDF's second page too), not those under the next one only.
      expect(chunks.length).toBeGreaterThan(2);
      expect(chunks.filter((text) => !text.includes('Descaling')).length).toBeGreaterThan(1);
      expect(chunks.filter((text) => text.startsWith('crumbs'))).toEqual([]);
      expect((await found(id, 'toaster')).every((text) => text.includes('toaster'))).toBe(true);
    }
    // The text is as extracted: no marks added for the headings.
    expect((await files.content(world.owner, docxId)).startsWith('Appliance manual\n\nDescaling the kettle\n\nstep 0')).toBe(true);
  });

  it('reads EPUB chapters in spine order and mails with headers, body and attachment names', async () => {
    const epub = await makeEpub([
      { title: 'Chapter One', paragraphs: ['It was a dark & stormy night.', 'Rain fell.'] },
      { title: 'Chapter Two', paragraphs: ['Morning came.'] },
    ]);
    const book = await files.upload(world.owner, 'novel.epub', epub, 'application/epub+zip');
    expect(await files.processed(world.owner, book)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, book)).toBe('Chapter One\nIt was a dark & stormy night.\nRain fell.\n\nChapter Two\nMorning came.');

    const eml = makeEml({ from: 'Ada <ada@example.com>', to: 'bob@example.com', subject: 'Quarterly numbers', text: 'Numbers attached.\n', attachments: ['q3.xlsx', 'chart.png'] });
    const mail = await files.upload(world.owner, 'numbers.eml', eml, 'message/rfc822');
    expect(await files.processed(world.owner, mail)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, mail)).toBe(
      'From: "Ada" <ada@example.com>\nTo: bob@example.com\nSubject: Quarterly numbers\nDate: 2026-11-24T10:00:00.000Z\n\nNumbers attached.\n\nAttachments: q3.xlsx, chart.png',
    );
    const htmlOnly = makeEml({ from: 'a@example.com', to: 'b@example.com', subject: 'Page', html: '<html><body><h2>Hello</h2><p>Visit <a href="https://x.test">us</a></p><script>x()</script></body></html>' });
    const page = await files.upload(world.owner, 'page.eml', htmlOnly, 'application/octet-stream');
    expect(await files.processed(world.owner, page)).toEqual({ status: 'completed' });
    expect((await files.content(world.owner, page)).split('\n\n')[1]).toBe('Hello\nVisit us');

    const broken = await files.upload(world.owner, 'broken.epub', 'PK not a zip', 'application/epub+zip');
    expect(await files.processed(world.owner, broken)).toMatchObject({ status: 'failed', error: expect.stringMatching(/^The document could not be read: /) });
  });

  it('keeps audio and video, completing them empty until speech-to-text exists; images still fail', async () => {
    const binary = new Uint8Array([0x1a, 0x45, 0xdf, 0xa3, 0, 0, 0, 1]);
    for (const [name, type] of [
      ['voice.mp3', 'audio/mpeg'],
      ['talk.webm', 'video/webm'],
      ['film.mp4', 'video/mp4'],
    ]) {
      const id = await files.upload(world.owner, name, binary, type);
      expect(await files.processed(world.owner, id)).toEqual({ status: 'completed' });
      expect(await files.content(world.owner, id)).toBe('');
      expect((await world.api.get(`/api/v1/files/${id}/content`, { token: world.owner.token })).status).toBe(200);
    }
    const image = await files.upload(world.owner, 'pic.png', binary, 'image/png');
    expect(await files.processed(world.owner, image)).toEqual({ status: 'failed', error: 'File type image/png is not supported for processing' });
  });
});

describe('content extraction with a short timeout and one worker', () => {
  const world = useServer({ users: { owner: ['user', 'Timeout Owner'] }, env: { CONTENT_EXTRACTION_TIMEOUT: '1', CONTENT_EXTRACTION_WORKERS: '1' } });
  const files = filesOf(world);

  it('fails a document that takes too long, ending its worker, and goes on with the next', { timeout: 120_000 }, async () => {
    const slow = await files.upload(world.owner, 'huge.pdf', longPdf(20_000), 'application/pdf');
    const next = await files.upload(world.owner, 'after.txt', 'still processed', 'text/plain');
    expect(await files.processed(world.owner, slow, 60_000)).toEqual({ status: 'failed', error: 'Extraction took longer than 1 seconds' });
    expect(await files.processed(world.owner, next)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, next)).toBe('still processed');
    const locked = await files.upload(world.owner, 'locked.pdf', makePdf(['secret'], { locked: true }), 'application/pdf');
    expect(await files.processed(world.owner, locked)).toEqual({ status: 'failed', error: 'The PDF is password-protected' });
  });

});

describe('content extraction with one small worker', () => {
  const world = useServer({ users: { owner: ['user', 'Memory Owner'] }, env: { CONTENT_EXTRACTION_WORKERS: '1', CONTENT_EXTRACTION_WORKER_MEMORY_MB: '64' } });
  const files = filesOf(world);

  it('fails a zip bomb whose worker runs out of memory, and goes on with the next', { timeout: 120_000 }, async () => {
    const { default: JSZip } = await import('jszip');
    const zip = new JSZip();
    zip.file('xl/workbook.xml', '<workbook><sheets><sheet name="Bomb" sheetId="1"/></sheets></workbook>');
    // 150 MB of shared strings in a file of a few hundred KB.
    zip.file('xl/sharedStrings.xml', `<sst><si><t>${'x'.repeat(150 * 2 ** 20)}</t></si></sst>`);
    zip.file('xl/worksheets/sheet1.xml', '<worksheet><sheetData><row><c t="s"><v>0</v></c></row></sheetData></worksheet>');
    const bomb = await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
    expect(bomb.length).toBeLessThan(2 * 2 ** 20);
    const id = await files.upload(world.owner, 'bomb.xlsx', bomb, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    const next = await files.upload(world.owner, 'next.txt', 'after the bomb', 'text/plain');
    expect(await files.processed(world.owner, id, 60_000)).toEqual({
      status: 'failed',
      error: 'The extraction worker stopped: Worker terminated due to reaching memory limit: JS heap out of memory',
    });
    expect(await files.processed(world.owner, next)).toEqual({ status: 'completed' });
  });
});

describe('external content extraction engines', () => {
  const world = useServer({
    fakes: { start: async () => ({ engines: await startFakeExtractionEngines() }) },
    users: { owner: ['user', 'Engine Owner'] },
  });
  const files = filesOf(world);
  const engines = (): FakeExtractionEngines => world.engines;
  const configure = (settings: Record<string, unknown>) => world.server.parley.core.settings.set(settings, world.server.parley.core.clock.now());

  afterEach(async () => {
    engines().requests.length = 0;
    await configure({ 'rag.content_extraction_engine': '' });
  });

  it('sends documents to Tika and reads text files itself', async () => {
    await configure({ 'rag.content_extraction_engine': 'tika', 'rag.tika_server_url': `${engines().url}/`, 'rag.pdf_extract_images': true });
    const pdf = makePdf(['Scanned']);
    const id = await files.upload(world.owner, 'scan.pdf', pdf, 'application/pdf');
    expect(await files.processed(world.owner, id)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, id)).toBe(`Tika read ${pdf.length} bytes`);
    expect(engines().requests).toHaveLength(1);
    expect(engines().requests[0]).toMatchObject({ method: 'PUT', path: '/tika/text', headers: { 'x-tika-pdfextractinlineimages': 'true' } });
    expect(engines().requests[0].body.equals(pdf)).toBe(true);

    const code = await files.upload(world.owner, 'main.py', 'print("hi")\n', 'text/x-python');
    expect(await files.processed(world.owner, code)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, code)).toBe('print("hi")\n');
    expect(engines().requests).toHaveLength(1);

    const failing = await files.upload(world.owner, 'bad.docx', 'FAIL this', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect(await files.processed(world.owner, failing)).toEqual({ status: 'failed', error: 'Error calling Tika: Unprocessable Entity' });
  });

  it('converts documents with Docling, with its parameters and key', async () => {
    await configure({
      'rag.content_extraction_engine': 'docling',
      'rag.docling_server_url': engines().url,
      'rag.docling_api_key': 'dock-key',
      'rag.docling_params': { do_ocr: true, ocr_lang: ['en', 'fr'] },
    });
    const id = await files.upload(world.owner, 'report.pdf', makePdf(['x']), 'application/pdf');
    expect(await files.processed(world.owner, id)).toEqual({ status: 'completed' });
    const [request] = engines().requests;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/convert/file', headers: { 'x-api-key': 'dock-key' } });
    expect(request.fields).toEqual({
      files: ['report.pdf:application/pdf'],
      image_export_mode: ['placeholder'],
      md_page_break_placeholder: ['\f'],
      do_ocr: ['true'],
      ocr_lang: ['en', 'fr'],
    });
    expect(await files.content(world.owner, id)).toMatch(/^# Page one Page two of \d+ bytes$/);

    const failing = await files.upload(world.owner, 'bad.pdf', 'FAIL', 'application/pdf');
    expect(await files.processed(world.owner, failing)).toEqual({
      status: 'failed',
      error: 'Error calling Docling: Error calling Docling API: Internal Server Error - conversion failed',
    });
  });

  it('hands every file, images included, to the external loader with its key and headers', async () => {
    await configure({
      'rag.content_extraction_engine': 'external',
      'rag.external_document_loader_url': `${engines().url}/`,
      'rag.external_document_loader_api_key': 'loader-key',
      'rag.external_document_loader_headers': { 'X-Source': 'parley {{FILE_NAME}} ({{FILE_CONTENT_TYPE}})' },
    });
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d]);
    const id = await files.upload(world.owner, 'photo one.png', png, 'image/png');
    expect(await files.processed(world.owner, id)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, id)).toBe('Loaded part one part two of 8 bytes');
    const [request] = engines().requests;
    expect(request).toMatchObject({
      method: 'PUT',
      path: '/process',
      headers: { authorization: 'Bearer loader-key', 'content-type': 'image/png', 'x-source': 'parley photo one.png (image/png)' },
    });
    expect(request.headers['x-filename']).toMatch(/_photo%20one\.png$/);

    const failing = await files.upload(world.owner, 'bad.txt', 'FAIL', 'text/plain');
    expect(await files.processed(world.owner, failing)).toEqual({ status: 'failed', error: 'Error loading document: 502 loader broke' });
  });

  it('reads PDFs with Mistral OCR, uploading them and deleting the copy, or inline as base64', async () => {
    await configure({ 'rag.content_extraction_engine': 'mistral_ocr', 'rag.mistral_ocr_api_base_url': `${engines().url}/mistral/v1/`, 'rag.mistral_ocr_api_key': 'mistral-key' });
    const pdf = makePdf(['scan']);
    const id = await files.upload(world.owner, 'scan.pdf', pdf, 'application/pdf');
    expect(await files.processed(world.owner, id)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, id)).toBe(`# OCR page one page three of ${pdf.length} bytes`);
    expect(engines().requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /mistral/v1/files',
      'GET /mistral/v1/files/file-1/url?expiry=1',
      'POST /mistral/v1/ocr',
      'DELETE /mistral/v1/files/file-1',
    ]);
    expect(engines().requests[0].fields).toEqual({ purpose: ['ocr'], file: ['scan.pdf:application/pdf'] });
    expect(JSON.parse(engines().requests[2].body.toString())).toEqual({
      model: 'mistral-ocr-latest',
      document: { type: 'document_url', document_url: 'https://signed.example/file-1' },
      include_image_base64: false,
    });

    // Not a PDF: the built-in extractors.
    const text = await files.upload(world.owner, 'notes.md', '# notes', 'text/markdown');
    expect(await files.processed(world.owner, text)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, text)).toBe('# notes');
    expect(engines().requests).toHaveLength(4);

    engines().requests.length = 0;
    const failing = await files.upload(world.owner, 'bad.pdf', 'FAIL', 'application/pdf');
    expect(await files.processed(world.owner, failing)).toEqual({ status: 'failed', error: 'Error during processing: 500 {"detail":"ocr broke"}' });
    expect(engines().requests.at(-1)).toMatchObject({ method: 'DELETE', path: '/mistral/v1/files/file-2' });

    await configure({ 'rag.mistral_ocr_use_base64': true });
    engines().requests.length = 0;
    const inline = await files.upload(world.owner, 'inline.pdf', pdf, 'application/pdf');
    expect(await files.processed(world.owner, inline)).toEqual({ status: 'completed' });
    expect(engines().requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /mistral/v1/ocr']);
    expect(JSON.parse(engines().requests[0].body.toString()).document.document_url).toBe(`data:application/pdf;base64,${pdf.toString('base64')}`);
    await configure({ 'rag.mistral_ocr_use_base64': false });
  });

  it('analyses documents with Azure Document Intelligence, polling the operation', async () => {
    await configure({
      'rag.content_extraction_engine': 'document_intelligence',
      'rag.document_intelligence_endpoint': `${engines().url}/di/`,
      'rag.document_intelligence_key': 'di-key',
    });
    const docx = 'docx bytes';
    const id = await files.upload(world.owner, 'memo.docx', docx, 'application/octet-stream');
    expect(await files.processed(world.owner, id)).toEqual({ status: 'completed' });
    expect(await files.content(world.owner, id)).toBe(`# Analyzed\n\n${docx.length} bytes`);
    const [analyze, ...polls] = engines().requests;
    expect(analyze).toMatchObject({
      method: 'POST',
      path: '/di/documentintelligence/documentModels/prebuilt-layout:analyze?api-version=2024-11-30&outputContentFormat=markdown',
      headers: { 'content-type': 'application/octet-stream', 'ocp-apim-subscription-key': 'di-key' },
    });
    expect(polls.map((r) => r.method)).toEqual(['GET', 'GET']);

    const failing = await files.upload(world.owner, 'bad.pdf', 'FAIL', 'application/pdf');
    expect(await files.processed(world.owner, failing)).toEqual({
      status: 'failed',
      error: 'Error calling Document Intelligence: The file is corrupted or format is unsupported.',
    });
    const elsewhere = await files.upload(world.owner, 'odd.pdf', 'ELSEWHERE', 'application/pdf');
    expect(await files.processed(world.owner, elsewhere)).toEqual({
      status: 'failed',
      error: 'Error calling Document Intelligence: the answer has no Operation-Location on the endpoint',
    });
  });

  it('fails the file with the reason when the engine cannot be reached', async () => {
    await configure({ 'rag.content_extraction_engine': 'tika', 'rag.tika_server_url': 'http://127.0.0.1:9' });
    const id = await files.upload(world.owner, 'doc.pdf', makePdf(['x']), 'application/pdf');
    expect(await files.processed(world.owner, id)).toMatchObject({ status: 'failed', error: expect.stringMatching(/^Error calling Tika: /) });
  });
});
