import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, percentile, row } from '../lib/report.js';

const ROUNDS = 40;
const ensureFfmpeg = fileURLToPath(new URL('../../scripts/ensure-ffmpeg.sh', import.meta.url));

/** A one-second MP3 from ffmpeg's sine source (sent as it is: MP3 needs no conversion). */
function recording() {
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-bench-audio-'));
  try {
    const file = path.join(dir, 'bench.mp3');
    execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', file]);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function timed(send) {
  const started = performance.now();
  const response = await send();
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`answered ${response.status}`);
  return performance.now() - started;
}

function transcription(url, token, bytes) {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: 'audio/mpeg' }), 'bench.mp3');
  form.append('model', 'whisper-1');
  return fetch(url, { method: 'POST', body: form, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

const speech = (url, token, body) =>
  fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } });

/**
 * Audio (issue 23): the time Parley adds to a transcription (a 1 s MP3, multipart,
 * to an OpenAI-compatible engine: the upload written to disk, probed with ffprobe,
 * sent on, answered) and to a speech request answered from the cache, each against
 * the same request sent to the fake provider directly; rounds alternate, one request
 * at a time.
 */
export default {
  name: 'audio',
  async setup(ctx) {
    execFileSync('bash', [ensureFfmpeg], { stdio: 'inherit' });
    const [{ token }, upstream] = await Promise.all([ctx.admin(), ctx.upstream()]);
    const current = await ctx.get('/api/v1/audio/config', { token });
    await ctx.post(
      '/api/v1/audio/config/update',
      {
        tts: { ...current.tts, ENGINE: 'openai', OPENAI_API_BASE_URL: upstream.url, OPENAI_API_KEY: 'sk-bench', MODEL: 'tts-1', VOICE: 'alloy' },
        stt: { ...current.stt, ENGINE: 'openai', OPENAI_API_BASE_URL: upstream.url, OPENAI_API_KEY: 'sk-bench', MODEL: 'whisper-1' },
      },
      { token },
    );
    const spoken = { input: 'The bench reads this sentence aloud.', voice: 'alloy' };
    // The first request fills the cache; the timed ones are answered from it.
    await timed(() => speech(`${ctx.url}/api/v1/audio/speech`, token, spoken));
    return { token, upstream, bytes: recording(), spoken };
  },
  async measure(ctx, { token, upstream, bytes, spoken }) {
    const times = { transcription: { parley: [], floor: [] }, speech: { parley: [], floor: [] } };
    for (let i = 0; i < ROUNDS; i++) {
      times.transcription.parley.push(await timed(() => transcription(`${ctx.url}/api/v1/audio/transcriptions`, token, bytes)));
      times.transcription.floor.push(await timed(() => transcription(`${upstream.url}/audio/transcriptions`, null, bytes)));
      times.speech.parley.push(await timed(() => speech(`${ctx.url}/api/v1/audio/speech`, token, spoken)));
      times.speech.floor.push(await timed(() => speech(`${upstream.url}/audio/speech`, null, { ...spoken, model: 'tts-1' })));
    }
    const rows = [];
    for (const [name, label] of [
      ['transcription', 'transcription of a 1 s MP3'],
      ['speech', 'speech answered from the cache'],
    ]) {
      const { parley, floor } = times[name];
      rows.push(row({ figure: `audio: ${label}, p50`, parley: median(parley), floor: median(floor), unit: 'ms' }));
      rows.push(row({ figure: `audio: ${label}, p95`, parley: percentile(parley, 0.95), floor: percentile(floor, 0.95), unit: 'ms' }));
      rows.push(row({ figure: `audio: ${label}, added by Parley (p50)`, parley: median(parley) - median(floor), unit: 'ms' }));
    }
    return { rows, details: { rounds: ROUNDS, bytes: bytes.length, times } };
  },
};
