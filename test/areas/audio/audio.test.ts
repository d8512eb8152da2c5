import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FormData, fetch } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_MP3, type FakeSpeech, startFakeSpeech } from '../../helpers/fake-speech.js';
import { processedFile, uploadFile } from '../../helpers/files.js';
import type { Account } from '../../helpers/users.js';
import { useServer } from '../../helpers/world.js';

// Recordings are made with ffmpeg's sine source; the area needs ffmpeg anyway.
const here = mkdtempSync(path.join(tmpdir(), 'parley-audio-'));
const sine = (name: string, seconds: number) => {
  const file = path.join(here, name);
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}`, '-ar', '16000', file]);
  return readFileSync(file);
};
/** MP3 is sent as it is; WAV (PCM) is converted to MP3 first, as the reference does. */
let shortMp3: Buffer;
let shortWav: Buffer;
let longWav: Buffer;

beforeAll(() => {
  execFileSync('bash', [path.resolve('scripts/ensure-ffmpeg.sh')], { stdio: 'inherit' });
  shortMp3 = sine('short.mp3', 1);
  shortWav = sine('short.wav', 1);
  longWav = sine('long.wav', 60);
});
afterAll(() => rmSync(here, { recursive: true, force: true }));

const world = useServer({
  fakes: { start: async () => ({ speech: await startFakeSpeech() }), env: ({ speech }) => ({ ELEVENLABS_API_BASE_URL: speech.url, DEEPGRAM_API_BASE_URL: speech.url }) },
  // Recordings over 50 KB are compressed, then split.
  env: { AUDIO_STT_MAX_CHUNK_SIZE_MB: '0.05', ENABLE_FORWARD_USER_INFO_HEADERS: 'true' },
  users: { member: 'user' },
});

let speech: FakeSpeech;
beforeEach(() => {
  speech = world.speech;
  speech.requests.length = 0;
  speech.failure = null;
  speech.audio = { bytes: FAKE_MP3, type: 'audio/mpeg' };
});

/** Sets the given fields over the current config, as the admin page sends the whole form. */
async function configure(tts: Record<string, unknown>, stt: Record<string, unknown> = {}) {
  const current = (await world.api.get('/api/v1/audio/config', { token: world.admin.token })).body;
  const res = await world.api.post('/api/v1/audio/config/update', { tts: { ...current.tts, ...tts }, stt: { ...current.stt, ...stt } }, { token: world.admin.token });
  expect(res.status).toBe(200);
  return res.body;
}

async function transcribe(account: Account, name: string, bytes: Buffer, type = 'audio/wav', language?: string) {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), name);
  if (language) form.append('language', language);
  const response = await fetch(`${world.server.url}/api/v1/audio/transcriptions`, { method: 'POST', body: form, headers: { authorization: `Bearer ${account.token}` } });
  return { status: response.status, body: (await response.json()) as any };
}

const speak = (account: Account, body: Record<string, unknown>) =>
  fetch(`${world.server.url}/api/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('config', () => {
  it('answers every field with the reference defaults and says local engines are not bundled', async () => {
    const res = await world.api.get('/api/v1/audio/config', { token: world.admin.token });
    expect(res.status).toBe(200);
    expect(res.body.tts).toMatchObject({ ENGINE: '', MODEL: 'tts-1', VOICE: 'alloy', SPLIT_ON: 'punctuation', MISTRAL_API_BASE_URL: 'https://api.mistral.ai/v1', LOCAL_ENGINE_AVAILABLE: false });
    expect(res.body.stt).toMatchObject({ ENGINE: '', OPENAI_API_REQUEST_FORMAT: 'multipart', SUPPORTED_CONTENT_TYPES: [], WHISPER_MODEL: 'base', MISTRAL_USE_CHAT_COMPLETIONS: false, LOCAL_ENGINE_AVAILABLE: false });
    expect(res.body.stt.ALLOWED_EXTENSIONS).toEqual(['mp3', 'wav', 'm4a', 'webm', 'ogg', 'flac', 'mp4', 'mpga', 'mpeg']);
  });

  it('round-trips an update, which /api/config reports; only admins read or change it', async () => {
    const before = (await world.api.get('/api/v1/audio/config', { token: world.admin.token })).body;
    expect((await world.api.get('/api/v1/audio/config', { token: world.member.token })).status).toBe(401);
    expect((await world.api.post('/api/v1/audio/config/update', before, { token: world.member.token })).status).toBe(401);
    const updated = await configure({ ENGINE: 'openai', VOICE: 'nova', OPENAI_PARAMS: { speed: 1.5 } }, { ENGINE: 'deepgram', ALLOWED_EXTENSIONS: ['wav'], OPENAI_API_REQUEST_FORMAT: 'JSON' });
    expect(updated.tts).toMatchObject({ ENGINE: 'openai', VOICE: 'nova', OPENAI_PARAMS: { speed: 1.5 } });
    const again = (await world.api.get('/api/v1/audio/config', { token: world.admin.token })).body;
    expect(again).toEqual(updated);
    const config = (await world.api.get('/api/config', { token: world.member.token })).body;
    expect(config.audio).toMatchObject({ tts: { engine: 'openai', voice: 'nova' }, stt: { engine: 'deepgram' } });
    // A form without a required field changes nothing.
    const { ENGINE: _engine, ...partial } = again.stt;
    expect((await world.api.post('/api/v1/audio/config/update', { tts: again.tts, stt: partial }, { token: world.admin.token })).status).toBe(422);
    await world.api.post('/api/v1/audio/config/update', before, { token: world.admin.token });
    expect((await world.api.get('/api/v1/audio/config', { token: world.admin.token })).body).toEqual(before);
  });
});

describe('speech-to-text', () => {
  it('sends an OpenAI-compatible multipart request with the model, language and file', async () => {
    await configure({}, { ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1`, OPENAI_API_KEY: 'sk-stt', MODEL: 'whisper-1', OPENAI_API_REQUEST_FORMAT: 'multipart' });
    const res = await transcribe(world.member, 'note.mp3', shortMp3, 'audio/mpeg', 'en');
    expect(res.status).toBe(200);
    expect(res.body.text).toBe(`heard ${res.body.filename} ${shortMp3.length}`);
    expect(res.body.filename).toMatch(/^[0-9a-f-]{36}\.mp3$/);
    const [call] = speech.requests;
    expect(call!.headers.authorization).toBe('Bearer sk-stt');
    expect(call!.headers['x-openwebui-user-id']).toBe(world.member.id);
    expect(call!.headers['content-type']).toMatch(/^multipart\/form-data/);
    expect(call!.form).toMatchObject({ model: 'whisper-1', language: 'en' });
    expect((call!.form!.file as { bytes: Buffer }).bytes.equals(shortMp3)).toBe(true);
  });

  it("sends base64 in JSON when the request format is 'json' in any case", async () => {
    await configure({}, { ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1`, OPENAI_API_KEY: 'sk-stt', MODEL: 'whisper-1', OPENAI_API_REQUEST_FORMAT: 'Json' });
    const res = await transcribe(world.member, 'note.mp3', shortMp3);
    expect(res.body.text).toBe(`json mp3 ${shortMp3.length}`);
    const [call] = speech.requests;
    expect(call!.headers['content-type']).toBe('application/json');
    expect(call!.json).toEqual({ model: 'whisper-1', input_audio: { data: shortMp3.toString('base64'), format: 'mp3' } });
    // Anything but 'json' is multipart.
    await configure({}, { OPENAI_API_REQUEST_FORMAT: 'xml' });
    speech.requests.length = 0;
    await transcribe(world.member, 'note.mp3', shortMp3);
    expect(speech.requests[0]!.form).not.toBeNull();
  });

  it('speaks to Deepgram with a token and the raw bytes', async () => {
    await configure({}, { ENGINE: 'deepgram', DEEPGRAM_API_KEY: 'dg-key', MODEL: 'nova-2' });
    const res = await transcribe(world.member, 'note.mp3', shortMp3, 'audio/mpeg', 'de');
    expect(res.body.text).toBe(`deepgram ${shortMp3.length}`);
    const [call] = speech.requests;
    expect(call!.headers.authorization).toBe('Token dg-key');
    expect(call!.headers['content-type']).toBe('audio/mpeg');
    expect(Object.fromEntries(call!.query)).toEqual({ smart_format: 'true', model: 'nova-2', language: 'de' });
    expect(call!.raw.equals(shortMp3)).toBe(true);
  });

  it("speaks to Azure's fast transcription with the definition and the audio", async () => {
    await configure({}, { ENGINE: 'azure', AZURE_API_KEY: 'az-key', AZURE_BASE_URL: world.speech.url, AZURE_LOCALES: 'en-US,fr-FR', AZURE_MAX_SPEAKERS: '2' });
    const res = await transcribe(world.member, 'note.mp3', shortMp3);
    expect(res.body.text).toBe(`azure ${shortMp3.length}`);
    const [call] = speech.requests;
    expect(call!.query.get('api-version')).toBe('2024-11-15');
    expect(call!.headers['ocp-apim-subscription-key']).toBe('az-key');
    expect(JSON.parse(call!.form!.definition as string)).toEqual({ locales: ['en-US', 'fr-FR'], diarization: { maxSpeakers: 2, enabled: true } });
  });

  it('speaks to Mistral: transcriptions as multipart, or chat completions with the audio in JSON', async () => {
    await configure({}, { ENGINE: 'mistral', MISTRAL_API_KEY: 'ms-key', MISTRAL_API_BASE_URL: `${world.speech.url}/v1`, MODEL: '', MISTRAL_USE_CHAT_COMPLETIONS: false });
    const res = await transcribe(world.member, 'note.mp3', shortMp3, 'audio/mpeg', 'fr');
    expect(res.body.text).toMatch(/^heard .*\.mp3 \d+$/);
    expect(speech.requests[0]!.headers.authorization).toBe('Bearer ms-key');
    expect(speech.requests[0]!.form).toMatchObject({ model: 'voxtral-mini-latest', language: 'fr' });
    await configure({}, { MISTRAL_USE_CHAT_COMPLETIONS: true });
    speech.requests.length = 0;
    expect((await transcribe(world.member, 'note.mp3', shortMp3)).body.text).toBe('chat mp3');
    const [call] = speech.requests;
    expect(call!.path).toBe('/v1/chat/completions');
    expect(call!.json.messages[0].content[0].input_audio.data).toBe(shortMp3.toString('base64'));
  });

  it('converts a recording providers would not take (PCM in WAV) to MP3 first', async () => {
    await configure({}, { ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1`, OPENAI_API_KEY: 'sk-stt', MODEL: 'whisper-1', OPENAI_API_REQUEST_FORMAT: 'multipart' });
    const res = await transcribe(world.member, 'note.wav', shortWav, 'audio/wav');
    expect(res.status).toBe(200);
    const file = speech.requests[0]!.form!.file as { name: string; type: string; bytes: Buffer };
    expect(file.name).toMatch(/\.mp3$/);
    expect(file.type).toBe('audio/mpeg');
    expect(file.bytes.length).toBeLessThan(shortWav.length);
  });

  it('splits a long recording into pieces under the limit, sent in order and joined', async () => {
    await configure({}, { ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1`, OPENAI_API_KEY: 'sk-stt', MODEL: 'whisper-1', OPENAI_API_REQUEST_FORMAT: 'multipart' });
    const res = await transcribe(world.member, 'lecture.wav', longWav);
    expect(res.status).toBe(200);
    const pieces = speech.requests.map((r) => r.form!.file as { name: string; bytes: Buffer });
    expect(pieces.length).toBeGreaterThan(3);
    for (const piece of pieces) expect(piece.bytes.length).toBeLessThanOrEqual(0.05 * 1024 * 1024);
    const names = pieces.map((p) => p.name).sort((a, b) => Number(/_(\d+)\.mp3$/.exec(a)![1]) - Number(/_(\d+)\.mp3$/.exec(b)![1]));
    expect(res.body.text).toBe(names.map((name) => `heard ${name} ${pieces.find((p) => p.name === name)!.bytes.length}`).join(' '));
    // Nothing of the recording is left behind.
    expect(readdirSync(path.join(world.server.dataDir, 'cache', 'audio', 'transcriptions'))).toEqual([]);
  });

  it('refuses a disallowed type, extension or size before any upstream call', async () => {
    await configure({}, { ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1`, ALLOWED_EXTENSIONS: ['wav', 'webm'] });
    const text = await transcribe(world.member, 'note.wav', shortWav, 'text/plain');
    expect(text.status).toBe(400);
    expect(text.body.detail).toMatch(/file format you're trying to upload is not supported/);
    const extension = await transcribe(world.member, 'note.mp3', shortWav, 'audio/mpeg');
    expect(extension).toEqual({ status: 400, body: { detail: 'Invalid audio file extension' } });
    // The recorder's type with its codec parameter is audio/webm.
    expect((await transcribe(world.member, 'note.webm', shortWav, 'audio/webm;codecs=opus')).status).toBe(200);
    speech.requests.length = 0;
    await world.api.post('/api/v1/retrieval/config/update', { FILE_MAX_SIZE: 1 }, { token: world.admin.token });
    try {
      const large = await transcribe(world.member, 'note.wav', Buffer.concat([shortWav, Buffer.alloc(1024 * 1024)]));
      expect(large.status).toBe(413);
    } finally {
      await world.api.post('/api/v1/retrieval/config/update', { FILE_MAX_SIZE: '' }, { token: world.admin.token });
    }
    expect(speech.requests).toEqual([]);
    await configure({}, { ALLOWED_EXTENSIONS: ['mp3', 'wav', 'm4a', 'webm', 'ogg', 'flac', 'mp4', 'mpga', 'mpeg'] });
  });

  it("passes the provider's refusal on with its status and message", async () => {
    await configure({}, { ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1` });
    speech.failure = { status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } };
    const res = await transcribe(world.member, 'note.mp3', shortMp3, 'audio/mpeg', 'en');
    expect(res).toEqual({ status: 401, body: { detail: 'External: Incorrect API key provided' } });
    // The language asked for, then the provider's detection.
    expect(speech.requests.map((r) => r.form!.language ?? null)).toEqual(['en', null]);
  });

  it('refuses members without the speech permissions (403), before reading the upload', async () => {
    const defaults = (await world.api.get('/api/v1/users/default/permissions', { token: world.admin.token })).body;
    const off = { ...defaults, chat: { ...defaults.chat, stt: false, tts: false } };
    expect((await world.api.post('/api/v1/users/default/permissions', off, { token: world.admin.token })).status).toBe(200);
    try {
      await configure({ ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1` }, { ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1` });
      expect((await transcribe(world.member, 'note.mp3', shortMp3, 'audio/mpeg')).status).toBe(403);
      expect((await speak(world.member, { input: 'Not for you' })).status).toBe(403);
      expect((await transcribe(world.admin, 'note.mp3', shortMp3, 'audio/mpeg')).status).toBe(200);
      expect(speech.requests).toHaveLength(1);
    } finally {
      await world.api.post('/api/v1/users/default/permissions', defaults, { token: world.admin.token });
    }
  });

  it('says local Whisper is not bundled', async () => {
    await configure({}, { ENGINE: '' });
    const res = await transcribe(world.member, 'note.wav', shortWav);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/Whisper .* not bundled/);
  });

  it('transcribes an audio file uploaded to files when an engine is configured', async () => {
    await configure({}, { ENGINE: 'deepgram', DEEPGRAM_API_KEY: 'dg-key' });
    const upload = await uploadFile(world.server.url, world.member, 'memo.mp3', shortMp3, 'audio/mpeg');
    expect(upload.status).toBe(200);
    expect((await processedFile(world.api, world.member, upload.body.id)).status).toBe('completed');
    const content = await world.api.get(`/api/v1/files/${upload.body.id}/data/content`, { token: world.member.token });
    expect(content.body.content).toBe(`deepgram ${shortMp3.length}`);
    expect(speech.requests[0]!.headers['content-type']).toBe('audio/mpeg');
  });
});

describe('text-to-speech', () => {
  const cacheFiles = () => {
    try {
      return readdirSync(path.join(world.server.dataDir, 'cache', 'audio', 'speech')).filter((n) => n.endsWith('.mp3')).length;
    } catch {
      return 0;
    }
  };

  it('is 404 without an engine', async () => {
    await configure({ ENGINE: '' });
    expect((await speak(world.member, { input: 'Hello' })).status).toBe(404);
  });

  it('speaks through an OpenAI-compatible engine and answers a repeated request from the cache', async () => {
    await configure({ ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1`, OPENAI_API_KEY: 'sk-tts', MODEL: 'tts-1-hd', VOICE: 'alloy', OPENAI_PARAMS: { speed: 1.25 } });
    const first = await speak(world.member, { input: 'Hello there', voice: 'nova' });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('audio/mpeg');
    expect(Buffer.from(await first.arrayBuffer()).equals(FAKE_MP3)).toBe(true);
    expect(speech.requests).toHaveLength(1);
    expect(speech.requests[0]!.headers.authorization).toBe('Bearer sk-tts');
    expect(speech.requests[0]!.headers['x-openwebui-user-id']).toBe(world.member.id);
    expect(speech.requests[0]!.json).toEqual({ input: 'Hello there', voice: 'nova', model: 'tts-1-hd', speed: 1.25 });
    const files = cacheFiles();
    const again = await speak(world.member, { voice: 'nova', input: 'Hello there' });
    expect(Buffer.from(await again.arrayBuffer()).equals(FAKE_MP3)).toBe(true);
    expect(speech.requests).toHaveLength(1);
    expect(cacheFiles()).toBe(files);
    // Another voice is another entry.
    await speak(world.member, { input: 'Hello there', voice: 'echo' });
    expect(speech.requests).toHaveLength(2);
  });

  it('converts raw PCM answers to MP3', async () => {
    await configure({ ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1` });
    speech.audio = { bytes: Buffer.alloc(24000 * 2), type: 'audio/pcm;rate=24000' };
    const res = await speak(world.member, { input: 'Raw audio' });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(res.status).toBe(200);
    // An MP3 starts with an ID3 tag or a frame sync.
    expect(bytes.subarray(0, 3).toString() === 'ID3' || (bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0)).toBe(true);
  });

  it("passes the provider's refusal on", async () => {
    await configure({ ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1` });
    speech.failure = { status: 429, body: { error: { message: 'Rate limit reached' } } };
    const res = await speak(world.member, { input: 'Refused words' });
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ detail: 'External: Rate limit reached' });
  });

  it('speaks through ElevenLabs with its key, checking the voice first', async () => {
    await configure({ ENGINE: 'elevenlabs', API_KEY: 'xi-key', MODEL: 'eleven_multilingual_v2' });
    const bad = await speak(world.member, { input: 'Hi', voice: 'nobody' });
    expect(bad.status).toBe(400);
    expect(speech.requests.filter((r) => r.method === 'POST')).toEqual([]);
    const res = await speak(world.member, { input: 'Hi', voice: 'rachel-id' });
    expect(res.status).toBe(200);
    const call = speech.requests.find((r) => r.method === 'POST')!;
    expect(call.path).toBe('/v1/text-to-speech/rachel-id');
    expect(call.headers['xi-api-key']).toBe('xi-key');
    expect(call.json).toEqual({ text: 'Hi', model_id: 'eleven_multilingual_v2', voice_settings: { stability: 0.5, similarity_boost: 0.5 } });
  });

  it('speaks through Azure with SSML', async () => {
    await configure({ ENGINE: 'azure', API_KEY: 'az-tts', AZURE_SPEECH_BASE_URL: world.speech.url, AZURE_SPEECH_OUTPUT_FORMAT: 'audio-16khz-32kbitrate-mono-mp3' });
    const res = await speak(world.member, { input: 'Fish & <chips>', voice: 'en-GB-SoniaNeural' });
    expect(res.status).toBe(200);
    const [call] = speech.requests;
    expect(call!.path).toBe('/cognitiveservices/v1');
    expect(call!.headers).toMatchObject({ 'ocp-apim-subscription-key': 'az-tts', 'content-type': 'application/ssml+xml', 'x-microsoft-outputformat': 'audio-16khz-32kbitrate-mono-mp3' });
    expect(call!.raw.toString()).toBe(
      '<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="en-GB"><voice name="en-GB-SoniaNeural">Fish &amp; &lt;chips&gt;</voice></speak>',
    );
  });

  it('lists the models and voices of each engine', async () => {
    const lists = async () => ({
      models: (await world.api.get('/api/v1/audio/models', { token: world.member.token })).body.models,
      voices: (await world.api.get('/api/v1/audio/voices', { token: world.member.token })).body.voices,
    });
    await configure({ ENGINE: 'openai', OPENAI_API_BASE_URL: `${world.speech.url}/v1` });
    expect(await lists()).toEqual({ models: [{ id: 'custom-tts' }], voices: [{ id: 'custom-voice', name: 'Custom' }] });
    await configure({ ENGINE: 'openai', OPENAI_API_BASE_URL: 'https://api.openai.com/v1' });
    expect((await lists()).models).toEqual([{ id: 'tts-1' }, { id: 'tts-1-hd' }]);
    await configure({ ENGINE: 'elevenlabs', API_KEY: 'xi-key' });
    expect(await lists()).toEqual({ models: [{ id: 'eleven_multilingual_v2', name: 'Multilingual v2' }], voices: [{ id: 'rachel-id', name: 'Rachel' }] });
    await configure({ ENGINE: 'azure', AZURE_SPEECH_BASE_URL: world.speech.url });
    expect((await lists()).voices).toEqual([{ id: 'en-US-JennyNeural', name: 'Jenny (en-US-JennyNeural)' }]);
    await configure({ ENGINE: '' });
    expect(await lists()).toEqual({ models: [], voices: [] });
  });
});
