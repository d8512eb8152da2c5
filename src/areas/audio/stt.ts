import { openAsBlob } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { HttpError } from '../../core/http/errors.js';
import { convertToMp3, needsConversion } from './ffmpeg.js';
import { callProvider, providerError, providerJson, trimSlash } from './provider.js';
import type { AudioOptions, SttConfig } from './settings.js';

/**
 * The speech-to-text engines reached over HTTP, each speaking its provider's
 * protocol as the reference's routers/audio.py does: OpenAI-compatible
 * (multipart, or base64 in JSON), Deepgram, Azure's fast transcription and
 * Mistral (transcriptions, or chat completions with the audio). Each takes
 * one piece of a recording (under the chunk size) and answers its text.
 */
export interface RecordingPiece {
  path: string;
  /** The name sent to the provider (its extension tells the format). */
  filename: string;
}

export interface SttRequest {
  config: SttConfig;
  options: AudioOptions;
  /** The language asked for, if any. */
  language: string | null;
  /** Where a conversion may write (removed after the transcription). */
  workDir: string;
  /** The user's identity for OpenAI-compatible providers (ENABLE_FORWARD_USER_INFO_HEADERS), or none. */
  userHeaders: Record<string, string>;
}

type SttEngine = (piece: RecordingPiece, request: SttRequest) => Promise<string>;

/** The types Python's `mimetypes.guess_type` gives the reference for recordings. */
const TYPES_BY_EXTENSION: Record<string, string> = {
  mp3: 'audio/mpeg',
  mpga: 'audio/mpeg',
  mpeg: 'video/mpeg',
  wav: 'audio/x-wav',
  m4a: 'audio/mp4',
  mp4: 'video/mp4',
  webm: 'video/webm',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/opus',
  flac: 'audio/flac',
};

const extensionOf = (name: string) => path.extname(name).slice(1).toLowerCase();
export const typeOfRecording = (name: string): string | null => TYPES_BY_EXTENSION[extensionOf(name)] ?? null;

/** The reference's MAX_FILE_SIZE for Mistral and Azure's own limit: refused before any call. */
const MISTRAL_MAX_BYTES = 20 * 1024 * 1024;
const AZURE_MAX_BYTES = 200 * 1024 * 1024;

/** The languages tried in turn: the one asked for, then the provider's detection (the reference's fallback). */
const languagesOf = (language: string | null) => (language ? [language, null] : [null]);

/** Tries each language until one is answered 200; a refusal of the last is passed on. */
async function firstAnswered(language: string | null, send: (language: string | null) => Promise<Response>): Promise<Response> {
  const candidates = languagesOf(language);
  for (const [i, candidate] of candidates.entries()) {
    const response = await send(candidate);
    if (response.ok || i === candidates.length - 1) return response;
    await response.body?.cancel();
  }
  throw new Error('no language to try');
}

const textOf = (answer: Record<string, unknown>) => (typeof answer.text === 'string' ? answer.text : '');

const openai: SttEngine = async (piece, { config, options, language, userHeaders }) => {
  const url = `${trimSlash(config.OPENAI_API_BASE_URL)}/audio/transcriptions`;
  const auth = { authorization: `Bearer ${config.OPENAI_API_KEY}`, ...userHeaders };
  const asJson = (config.OPENAI_API_REQUEST_FORMAT || 'multipart').toLowerCase() === 'json';
  const extension = extensionOf(piece.filename) || 'wav';
  const data = asJson ? (await readFile(piece.path)).toString('base64') : '';
  const response = await firstAnswered(language, async (candidate) => {
    const fields: Record<string, string> = { model: config.MODEL, ...(candidate ? { language: candidate } : {}) };
    if (asJson) {
      const body = JSON.stringify({ ...fields, input_audio: { data, format: extension === 'oga' ? 'ogg' : extension } });
      return callProvider(url, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body }, options.timeoutMs);
    }
    const form = new FormData();
    for (const [key, value] of Object.entries(fields)) form.append(key, value);
    form.append('file', await openAsBlob(piece.path, { type: typeOfRecording(piece.filename) ?? 'application/octet-stream' }), piece.filename);
    return callProvider(url, { method: 'POST', headers: auth, body: form }, options.timeoutMs);
  });
  return textOf(await providerJson(response, 'OpenAI'));
};

const deepgram: SttEngine = async (piece, { config, options, language }) => {
  const bytes = await readFile(piece.path);
  const response = await firstAnswered(language, (candidate) => {
    const query = new URLSearchParams({ smart_format: 'true' });
    if (config.MODEL) query.set('model', config.MODEL);
    if (candidate) query.set('language', candidate);
    return callProvider(
      `${options.deepgramBaseUrl}/v1/listen?${query}`,
      { method: 'POST', headers: { authorization: `Token ${config.DEEPGRAM_API_KEY}`, 'content-type': typeOfRecording(piece.filename) ?? 'audio/wav' }, body: bytes },
      options.timeoutMs,
    );
  });
  const answer = (await providerJson(response, 'Deepgram')) as { results?: { channels?: { alternatives?: { transcript?: string }[] }[] } };
  const transcript = answer.results?.channels?.[0]?.alternatives?.[0]?.transcript;
  if (typeof transcript !== 'string') throw new HttpError(500, 'Failed to parse Deepgram response');
  return transcript.trim();
};

/** Azure's locales when none are set (the reference's list). */
const AZURE_DEFAULT_LOCALES = 'en-US,es-ES,es-MX,fr-FR,hi-IN,it-IT,de-DE,en-GB,en-IN,ja-JP,ko-KR,pt-BR,zh-CN';
/** Azure's error codes the reference shows the user as they are; others get a general message. */
const AZURE_USER_FACING = new Set(['EmptyAudioFile', 'AudioLengthLimitExceeded', 'NoLanguageIdentified', 'MultipleLanguagesIdentified']);

const azure: SttEngine = async (piece, { config, options }) => {
  const size = (await stat(piece.path)).size;
  if (size > AZURE_MAX_BYTES) throw new HttpError(400, `File size (${Math.floor(size / (1024 * 1024))}MB) exceeds Azure limit of 200MB`);
  const region = config.AZURE_REGION || 'eastus';
  if (!config.AZURE_API_KEY) throw new HttpError(400, 'Azure API key and region are required for Azure STT');
  const locales = config.AZURE_LOCALES.length < 2 ? AZURE_DEFAULT_LOCALES : config.AZURE_LOCALES;
  const maxSpeakers = Number.parseInt(config.AZURE_MAX_SPEAKERS, 10) || 3;
  const form = new FormData();
  form.append('definition', JSON.stringify({ locales: locales.split(','), diarization: { maxSpeakers, enabled: true } }));
  form.append('audio', await openAsBlob(piece.path, { type: typeOfRecording(piece.filename) ?? 'application/octet-stream' }), piece.filename);
  const base = trimSlash(config.AZURE_BASE_URL || `https://${region}.api.cognitive.microsoft.com`);
  const response = await callProvider(
    `${base}/speechtotext/transcriptions:transcribe?api-version=2024-11-15`,
    { method: 'POST', headers: { 'ocp-apim-subscription-key': config.AZURE_API_KEY }, body: form },
    options.timeoutMs,
  );
  if (!response.ok) {
    const text = await response.text().catch(() => '');
    const body = (() => {
      try {
        return JSON.parse(text) as { code?: string; message?: string; innerError?: { code?: string } };
      } catch {
        return null;
      }
    })();
    if (body && typeof body.code === 'string' && typeof body.message === 'string') {
      const code = body.innerError?.code ?? body.code;
      throw new HttpError(response.status, AZURE_USER_FACING.has(code) ? body.message : 'An error occurred during transcription.');
    }
    throw await providerError(new Response(text, { status: response.status }));
  }
  const answer = (await providerJson(response, 'Azure')) as { combinedPhrases?: { text?: string }[] };
  const transcript = (answer.combinedPhrases?.[0]?.text ?? '').trim();
  if (!transcript) throw new HttpError(500, 'Failed to parse Azure response: No transcription found in response');
  return transcript;
};

const mistral: SttEngine = async (piece, { config, options, language, workDir }) => {
  if ((await stat(piece.path)).size > MISTRAL_MAX_BYTES) throw new HttpError(400, 'File size exceeds limit of 20MB');
  if (!config.MISTRAL_API_KEY) throw new HttpError(400, 'Mistral API key is required for Mistral STT');
  const base = trimSlash(config.MISTRAL_API_BASE_URL || 'https://api.mistral.ai/v1');
  const model = config.MODEL || 'voxtral-mini-latest';
  const auth = { authorization: `Bearer ${config.MISTRAL_API_KEY}` };
  let transcript: string;
  if (config.MISTRAL_USE_CHAT_COMPLETIONS) {
    // Chat completions take MP3 or WAV only.
    const file = (await needsConversion(piece.path)) ? await convertToMp3(piece.path, workDir) : piece.path;
    const format = extensionOf(file) === 'wav' ? 'wav' : 'mp3';
    const instruction = language
      ? `Transcribe this audio exactly as spoken in ${language}. Do not translate it.`
      : 'Transcribe this audio exactly as spoken in its original language. Do not translate it to another language.';
    const body = {
      model,
      messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: (await readFile(file)).toString('base64'), format } }, { type: 'text', text: instruction }] }],
    };
    const response = await callProvider(`${base}/chat/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) }, options.timeoutMs);
    const answer = (await providerJson(response, 'Mistral')) as { choices?: { message?: { content?: unknown } }[] };
    const content = answer.choices?.[0]?.message?.content;
    transcript = typeof content === 'string' ? content.trim() : '';
  } else {
    const form = new FormData();
    form.append('model', model);
    if (language) form.append('language', language);
    form.append('file', await openAsBlob(piece.path, { type: typeOfRecording(piece.filename) ?? 'audio/webm' }), piece.filename);
    const response = await callProvider(`${base}/audio/transcriptions`, { method: 'POST', headers: auth, body: form }, options.timeoutMs);
    transcript = textOf(await providerJson(response, 'Mistral')).trim();
  }
  if (!transcript) throw new HttpError(500, 'Failed to parse Mistral response: Empty transcript in response');
  return transcript;
};

export const STT_ENGINES: Record<string, SttEngine> = { openai, deepgram, azure, mistral };

/** Engines of the reference that run in its own process; Parley does not bundle them. */
export const LOCAL_STT_ENGINES = new Set(['', 'whisper']);
