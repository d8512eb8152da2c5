import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makePdf } from '../lib/pdf.js';
import { startServer } from '../lib/processes.js';
import { median, percentile, row } from '../lib/report.js';

const MB = 2 ** 20;
const UPLOAD_BYTES = 50 * MB;
const UPLOAD_ROUNDS = 3;
const PDF_PAGES = 2_000;
const SMALL_UPLOADS = 100;
const RSS_EVERY_MS = 20;
/** Most the reachable heap may grow over the uploads (after full collections): nothing of a file is kept. */
const HEAP_GROWTH_TARGET = 2 * MB;
const UPLOAD_RATIO_TARGET = 0.5;
const floorScript = fileURLToPath(new URL('../lib/upload-floor.js', import.meta.url));

/** A multipart upload as the web client sends it; the answer's JSON and the seconds it took. */
async function upload(url, token, name, bytes, type, query = '') {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), name);
  const started = performance.now();
  const response = await fetch(`${url}/api/v1/files/${query}`, { method: 'POST', body: form, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const body = await response.json();
  const seconds = (performance.now() - started) / 1000;
  if (response.status !== 200) throw new Error(`upload answered ${response.status}: ${JSON.stringify(body).slice(0, 200)}`);
  return { body, seconds };
}

async function processed(ctx, token, id, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, error } = await ctx.get(`/api/v1/files/${id}/process/status`, { token });
    if (status !== 'pending') return { status, error };
    if (Date.now() > deadline) throw new Error(`file ${id} still pending after ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Samples the process's resident memory until `stop()`, which answers the largest seen. */
function sampleRss(server) {
  let peak = server.memory().rss;
  const timer = setInterval(() => (peak = Math.max(peak, server.memory().rss)), RSS_EVERY_MS);
  return () => (clearInterval(timer), Math.max(peak, server.memory().rss));
}

/**
 * Files (issue 16): a 50 MB upload (`?process=false`: the bytes only) to
 * Parley and to a bare Node receiver on loopback, rounds alternating, in MB/s,
 * with both servers' resident memory sampled during their uploads (its peak
 * growth is garbage not yet collected, the chunks that went through) and
 * Parley's heap after full collections before and after the rounds (streamed
 * to disk, nothing of a file stays: flat); a 2,000-page PDF extracted by the queue (worker
 * threads), in pages per second from upload to `completed`; and 100 small
 * uploads sent at once (processed, as the web client sends them): answer time
 * p50/p95, the time until all are answered and until all are extracted.
 */
export default {
  name: 'files',
  async setup(ctx) {
    const admin = await ctx.admin();
    return { token: admin.token, big: Buffer.alloc(UPLOAD_BYTES, 'parley bench upload '), pdf: makePdf(Array.from({ length: PDF_PAGES }, (_, i) => `Bench page ${i}`)) };
  },
  async measure(ctx, { token, big, pdf }) {
    const floor = await startServer({ name: 'upload floor', args: [floorScript], env: { PATH: process.env.PATH }, cwd: path.dirname(floorScript) });
    const rates = { parley: [], floor: [] };
    const rss = { parleyBefore: ctx.parley.memory().rss, floorBefore: floor.memory().rss, parleyPeak: 0, floorPeak: 0 };
    const heapBefore = (await ctx.parley.heapAfterGc()).heapUsed;
    let heapAfter;
    try {
      for (let round = 0; round < UPLOAD_ROUNDS; round++) {
        let stop = sampleRss(ctx.parley);
        const { body, seconds } = await upload(ctx.url, token, `big-${round}.bin`, big, 'application/octet-stream', '?process=false');
        rss.parleyPeak = Math.max(rss.parleyPeak, stop());
        rates.parley.push(UPLOAD_BYTES / MB / seconds);
        await ctx.delete(`/api/v1/files/${body.id}`, { token });
        stop = sampleRss(floor);
        rates.floor.push(UPLOAD_BYTES / MB / (await upload(floor.url, null, 'big.bin', big, 'application/octet-stream')).seconds);
        rss.floorPeak = Math.max(rss.floorPeak, stop());
      }
      heapAfter = (await ctx.parley.heapAfterGc()).heapUsed;
    } finally {
      await floor.stop();
    }

    const pdfStarted = performance.now();
    const { body: pdfFile } = await upload(ctx.url, token, 'bench.pdf', pdf, 'application/pdf');
    const pdfResult = await processed(ctx, token, pdfFile.id);
    const pdfSeconds = (performance.now() - pdfStarted) / 1000;
    if (pdfResult.status !== 'completed') throw new Error(`the PDF ended ${pdfResult.status}: ${pdfResult.error}`);

    const smallStarted = performance.now();
    const small = await Promise.all(Array.from({ length: SMALL_UPLOADS }, (_, i) => upload(ctx.url, token, `small-${i}.txt`, `small upload number ${i}\n`.repeat(40), 'text/plain')));
    const allAnswered = (performance.now() - smallStarted) / 1000;
    for (const { body } of small) {
      const result = await processed(ctx, token, body.id);
      if (result.status !== 'completed') throw new Error(`a small upload ended ${result.status}: ${result.error}`);
    }
    const allExtracted = (performance.now() - smallStarted) / 1000;
    const answerMs = small.map((s) => s.seconds * 1000);

    const rows = [
      row({
        figure: 'files: 50 MB upload, median of 3',
        parley: median(rates.parley),
        floor: median(rates.floor),
        unit: 'megabytesPerSecond',
        target: `≥ ${UPLOAD_RATIO_TARGET}× floor`,
        check: (_rate, ratio) => ratio >= UPLOAD_RATIO_TARGET,
      }),
      row({ figure: 'files: RSS growth during 50 MB uploads (peak)', parley: rss.parleyPeak - rss.parleyBefore, floor: rss.floorPeak - rss.floorBefore, unit: 'megabytes' }),
      row({
        figure: 'files: heap after full GC, after uploads − before',
        parley: heapAfter - heapBefore,
        unit: 'megabytes',
        target: `≤ ${HEAP_GROWTH_TARGET / MB} MB`,
        check: (bytes) => bytes <= HEAP_GROWTH_TARGET,
      }),
      row({ figure: `files: PDF extraction, ${PDF_PAGES} pages, upload to completed`, parley: PDF_PAGES / pdfSeconds, unit: 'pagesPerSecond' }),
      row({ figure: `files: ${SMALL_UPLOADS} small uploads at once, answer p50`, parley: percentile(answerMs, 0.5), unit: 'ms' }),
      row({ figure: `files: ${SMALL_UPLOADS} small uploads at once, answer p95`, parley: percentile(answerMs, 0.95), unit: 'ms' }),
      row({ figure: `files: ${SMALL_UPLOADS} small uploads at once, all answered`, parley: allAnswered, unit: 'seconds' }),
      row({ figure: `files: ${SMALL_UPLOADS} small uploads at once, all extracted`, parley: allExtracted, unit: 'seconds' }),
    ];
    return { rows, details: { rates, rss, heapBefore, heapAfter, pdfPages: PDF_PAGES, pdfSeconds, answerMs, allAnswered, allExtracted } };
  },
};
