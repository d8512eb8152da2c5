import { createServer, type IncomingMessage, type Server } from 'node:http';
import { listenLocally } from './server.js';

/**
 * Speech providers for tests, on one server, each answering on its own paths in
 * its documented protocol: OpenAI-compatible and Mistral (`/v1/audio/*`,
 * `/v1/chat/completions`), Deepgram (`/v1/listen`), Azure speech-to-text
 * (`/speechtotext/transcriptions:transcribe`) and text-to-speech
 * (`/cognitiveservices/*`), ElevenLabs (`/v1/text-to-speech/{voice}`,
 * `/v1/voices`, `/v1/models`). Every request is recorded with its raw bytes and,
 * for multipart bodies, its parsed form.
 */
export interface SpeechRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  raw: Buffer;
  /** JSON bodies, parsed. */
  json: any;
  /** Multipart bodies: text fields as strings, files as { name, type, bytes }. */
  form: Record<string, string | { name: string; type: string; bytes: Buffer }> | null;
}

export interface FakeSpeech {
  url: string;
  requests: SpeechRequest[];
  /** Answers every request with this status and JSON body instead, while set. */
  failure: { status: number; body: unknown } | null;
  /** What text-to-speech answers (bytes and their type). */
  audio: { bytes: Buffer; type: string };
  close(): Promise<void>;
}

/** Audio the fake speaks: an MP3 frame header followed by a marker. */
export const FAKE_MP3 = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.from('fake speech')]);

async function parseForm(raw: Buffer, contentType: string): Promise<SpeechRequest['form']> {
  const data = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
  const form: NonNullable<SpeechRequest['form']> = {};
  for (const [key, value] of data.entries()) {
    form[key] = typeof value === 'string' ? value : { name: (value as File).name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
  }
  return form;
}

export async function startFakeSpeech(): Promise<FakeSpeech> {
  let server: Server;
  const fake: FakeSpeech = {
    url: '',
    requests: [],
    failure: null,
    audio: { bytes: FAKE_MP3, type: 'audio/mpeg' },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://fake');
    const type = req.headers['content-type'] ?? '';
    const request: SpeechRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      raw,
      json: type.startsWith('application/json') && raw.length > 0 ? JSON.parse(raw.toString('utf8')) : null,
      form: type.startsWith('multipart/form-data') ? await parseForm(raw, type) : null,
    };
    fake.requests.push(request);
    if (fake.failure) return json(res, fake.failure.status, fake.failure.body);
    const route = `${request.method} ${request.path}`;
    const file = request.form?.file;
    switch (true) {
      case route === 'POST /v1/audio/transcriptions': {
        // The piece's name and size, so tests see which bytes were sent in which order.
        if (request.json) return json(res, 200, { text: `json ${request.json.input_audio.format} ${Buffer.from(request.json.input_audio.data, 'base64').length}` });
        if (file && typeof file !== 'string') return json(res, 200, { text: `heard ${file.name} ${file.bytes.length}` });
        return json(res, 400, { error: { message: 'no file' } });
      }
      case route === 'POST /v1/chat/completions':
        return json(res, 200, { choices: [{ message: { role: 'assistant', content: `chat ${request.json.messages[0].content[0].input_audio.format}` } }] });
      case route === 'POST /v1/listen':
        return json(res, 200, { results: { channels: [{ alternatives: [{ transcript: ` deepgram ${raw.length} ` }] }] } });
      case route === 'POST /speechtotext/transcriptions:transcribe':
        return json(res, 200, { combinedPhrases: [{ text: `azure ${(request.form?.audio as { bytes: Buffer }).bytes.length}` }] });
      case route === 'POST /v1/audio/speech':
        // Mistral names the voice `voice_id` and answers base64 in JSON.
        if (request.json?.voice_id !== undefined) return json(res, 200, { audio_data: fake.audio.bytes.toString('base64') });
        res.writeHead(200, { 'content-type': fake.audio.type });
        return res.end(fake.audio.bytes);
      case request.method === 'POST' && (request.path.startsWith('/v1/text-to-speech/') || request.path === '/cognitiveservices/v1'):
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        return res.end(fake.audio.bytes);
      case route === 'GET /v1/audio/voices':
        return json(res, 200, { voices: [{ id: 'custom-voice', name: 'Custom' }] });
      case route === 'GET /v1/audio/models':
        return json(res, 200, { models: [{ id: 'custom-tts' }] });
      case route === 'GET /v1/voices':
        return json(res, 200, { voices: [{ voice_id: 'rachel-id', name: 'Rachel' }] });
      case route === 'GET /v1/models':
        return json(res, 200, [{ model_id: 'eleven_multilingual_v2', name: 'Multilingual v2' }]);
      case route === 'GET /cognitiveservices/voices/list':
        return json(res, 200, [{ ShortName: 'en-US-JennyNeural', DisplayName: 'Jenny' }]);
      default:
        return json(res, 404, { error: { message: `no route ${route}` } });
    }
  });
  server.keepAliveTimeout = 1000;
  fake.url = await listenLocally(server);
  return fake;
}
