import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { SettingDefinition } from '../../config/settings.js';
import type { AccessService } from '../../core/access/service.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import { forwardedUserHeaders } from '../../core/upstream/headers.js';
import { type UpstreamOptions, readUpstreamOptions } from '../../core/upstream/options.js';
import { convertToMp3, needsConversion, splitForUpload, transcodeToMp3 } from './ffmpeg.js';
import type { AudioConfigForm } from './schemas.js';
import { type AudioOptions, readAudioOptions, STT_SETTINGS, type SttConfig, TTS_SETTINGS, type TtsConfig, type ValuesOf } from './settings.js';
import { LOCAL_STT_ENGINES, STT_ENGINES } from './stt.js';
import { modelsOf, TTS_ENGINES, voicesOf } from './tts.js';

/** The reference's FILE_NOT_SUPPORTED. */
const FILE_NOT_SUPPORTED =
  "Oops! It seems like the file format you're trying to upload is not supported. Please upload a file with a supported format and try again.";
const LOCAL_WHISPER =
  'Local Whisper speech-to-text is not bundled with Parley: choose an engine reached over HTTP (openai, azure, deepgram or mistral) in Admin Settings > Audio';
const LOCAL_TTS = 'Local text-to-speech (transformers) is not bundled with Parley: choose openai, elevenlabs, azure or mistral in Admin Settings > Audio';

function valuesOf<S extends Record<string, SettingDefinition<any>>>(core: Core, settings: S): ValuesOf<S> {
  return Object.fromEntries(Object.entries(settings).map(([field, definition]) => [field, core.settings.get(definition)])) as ValuesOf<S>;
}

/**
 * The reference's `strict_match_mime_type`: the type without its parameters against the
 * supported list (wildcards allowed); an empty list means audio and WebM video.
 */
export function isSupportedType(supported: string[], contentType: string | null): boolean {
  const patterns = supported.map((s) => s.trim().toLowerCase()).filter((s) => s.includes('/'));
  const [type, subtype] = (contentType ?? '').split(';')[0]!.trim().toLowerCase().split('/');
  if (!type || !subtype) return false;
  return (patterns.length > 0 ? patterns : ['audio/*', 'video/webm']).some((pattern) => {
    const [ptype, psubtype] = pattern.split(';')[0]!.trim().split('/');
    return (ptype === '*' || ptype === type) && (psubtype === '*' || psubtype === subtype);
  });
}

const extensionOf = (name: string) => (name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : '');

/** A recording being received: where it is written, and what its name says. */
export interface ReceivedRecording {
  id: string;
  dir: string;
  path: string;
  name: string;
  contentType: string | null;
}

/**
 * `/api/v1/audio` (routers/audio.py): the admin's audio settings, speech-to-text
 * through providers reached over HTTP (long recordings split with ffmpeg), and
 * text-to-speech cached under DATA_DIR. See docs/audio.md.
 */
export class AudioService {
  readonly options: AudioOptions;
  private readonly forwardUserInfo: UpstreamOptions['forwardUserInfo'];
  private readonly speechDir: string;
  private readonly transcriptionDir: string;

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
  ) {
    this.options = readAudioOptions(core.env.raw);
    this.forwardUserInfo = readUpstreamOptions(core.env.raw).forwardUserInfo;
    this.speechDir = path.join(core.env.dataDir, 'cache', 'audio', 'speech');
    this.transcriptionDir = path.join(core.env.dataDir, 'cache', 'audio', 'transcriptions');
  }

  private tts(): TtsConfig {
    return valuesOf(this.core, TTS_SETTINGS);
  }

  private stt(): SttConfig {
    return valuesOf(this.core, STT_SETTINGS);
  }

  /** `GET /config`: every field of the reference's forms, and which local engines this server lacks. */
  config() {
    return { tts: { ...this.tts(), LOCAL_ENGINE_AVAILABLE: false }, stt: { ...this.stt(), LOCAL_ENGINE_AVAILABLE: false } };
  }

  /** `POST /config/update`: both forms, stored all or none; answers the new config. */
  async updateConfig(user: UserRecord, form: AudioConfigForm) {
    const updates: Record<string, unknown> = {};
    const collect = (values: Record<string, unknown>, settings: Record<string, SettingDefinition<any>>) => {
      for (const [field, definition] of Object.entries(settings)) if (values[field] !== undefined) updates[definition.key] = values[field];
    };
    collect(form.tts, TTS_SETTINGS);
    collect(form.stt, STT_SETTINGS);
    const { settings, events, clock } = this.core;
    await settings.update(updates, clock.now(), {
      refused: (problems) => badRequest(problems.join('; ')),
      alongside: (trx) => {
        const config = this.config();
        return events.publish({ event: 'config.updated', actor: user, subjectId: 'audio', subjectType: 'config', data: { tts_engine: config.tts.ENGINE, stt_engine: config.stt.ENGINE } }, trx);
      },
    });
    return this.config();
  }

  /** Speech-to-text is for admins and holders of `chat.stt`. */
  async authorizeTranscription(user: UserRecord): Promise<void> {
    if (!(await this.access.hasPermission(user, 'chat.stt'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  /**
   * The uploaded recording, refused (400) before a byte is kept when its type is not one
   * speech-to-text takes or its extension is not allowed; else written to a folder of its own.
   */
  async receiveRecording(filename: string, contentType: string | null, content: Readable): Promise<ReceivedRecording> {
    const config = this.stt();
    if (!isSupportedType(config.SUPPORTED_CONTENT_TYPES, contentType)) throw badRequest(FILE_NOT_SUPPORTED);
    const name = path.basename(filename.replaceAll('\\', '/'));
    const extension = extensionOf(name);
    if (config.ALLOWED_EXTENSIONS.length > 0 && !config.ALLOWED_EXTENSIONS.map((e) => e.toLowerCase()).includes(extension)) throw badRequest('Invalid audio file extension');
    if (extension && !/^[a-z0-9]{1,16}$/.test(extension)) throw badRequest('Invalid audio file extension');
    const id = randomUUID();
    await mkdir(this.transcriptionDir, { recursive: true });
    const dir = await mkdtemp(path.join(this.transcriptionDir, `${id}-`));
    const file = path.join(dir, extension ? `${id}.${extension}` : id);
    try {
      await pipeline(content, createWriteStream(file));
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    return { id, dir, path: file, name, contentType };
  }

  /** Removes a received recording (the form failed after it, or it was transcribed). */
  async discardRecording(recording: ReceivedRecording): Promise<void> {
    await rm(recording.dir, { recursive: true, force: true });
  }

  /** `POST /transcriptions`: the received recording's text, with its stored name as the reference answers. */
  async transcribeRecording(user: UserRecord, recording: ReceivedRecording, language: string | null): Promise<{ text: string; filename: string }> {
    try {
      const text = await this.transcribe(recording.path, recording.dir, language || null, user);
      await this.core.events.publish({
        event: 'audio.transcription_requested',
        actor: user,
        subjectId: recording.id,
        data: { filename: recording.name, content_type: recording.contentType, language: language || null },
      });
      return { text, filename: path.basename(recording.path) };
    } finally {
      await this.discardRecording(recording);
    }
  }

  /** Whether speech-to-text takes a stored file of this type (the files area's extraction asks). */
  takes(contentType: string): boolean {
    return isSupportedType(this.stt().SUPPORTED_CONTENT_TYPES, contentType);
  }

  /**
   * The text of a stored audio or video file (the files area's extraction), or '' when the
   * engine is one this server does not bundle (the file then completes empty, as before).
   */
  async transcribeStored(input: { path: string; name: string }): Promise<string> {
    if (LOCAL_STT_ENGINES.has(this.stt().ENGINE)) return '';
    await mkdir(this.transcriptionDir, { recursive: true });
    const dir = await mkdtemp(path.join(this.transcriptionDir, 'file-'));
    try {
      // Providers read the format from the name's extension.
      const extension = extensionOf(input.name);
      const named = path.join(dir, extension && /^[a-z0-9]{1,16}$/.test(extension) ? `recording.${extension}` : 'recording');
      await copyFile(input.path, named);
      return await this.transcribe(named, dir, null, null);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** The reference's `transcribe`: converted when providers would not take it, compressed and split, each piece sent, the texts joined in order. */
  private async transcribe(file: string, workDir: string, asked: string | null, user: UserRecord | null): Promise<string> {
    const config = this.stt();
    if (LOCAL_STT_ENGINES.has(config.ENGINE)) throw badRequest(LOCAL_WHISPER);
    const engine = STT_ENGINES[config.ENGINE];
    if (!engine) throw badRequest(`Unsupported STT engine: ${config.ENGINE}`);
    const source = (await needsConversion(file)) ? await convertToMp3(file, workDir) : file;
    const pieces = await splitForUpload(source, this.options.maxChunkBytes, workDir);
    const request = { config, options: this.options, language: this.options.language ?? asked, workDir, userHeaders: await forwardedUserHeaders(this.forwardUserInfo, user) };
    const texts = await Promise.all(pieces.map((piece) => engine({ path: piece, filename: path.basename(piece) }, request)));
    return texts.join(' ');
  }

  /**
   * `POST /speech`: the audio of `input` in the configured engine, model and voice, from the
   * cache under DATA_DIR/cache/audio/speech when the same text, voice, model and engine were
   * asked before (no call then). Admins and holders of `chat.tts`.
   */
  async speech(user: UserRecord, payload: Record<string, unknown>): Promise<Buffer> {
    const config = this.tts();
    if (config.ENGINE === '') throw notFound(ERROR.NOT_FOUND);
    if (!(await this.access.hasPermission(user, 'chat.tts'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    if (typeof payload.input !== 'string') throw badRequest('Invalid input text');
    const voice = typeof payload.voice === 'string' && payload.voice ? payload.voice : config.VOICE;
    const canonical = Object.fromEntries(Object.entries(payload).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const name = createHash('sha256').update(JSON.stringify([config.ENGINE, config.MODEL, voice, canonical])).digest('hex');
    const file = path.join(this.speechDir, `${name}.mp3`);
    const cached = await readFile(file).catch(() => null);
    if (cached) {
      await this.core.events.publish({ event: 'audio.speech_requested', actor: user, subjectId: name, data: { engine: config.ENGINE, cached: true } });
      return cached;
    }
    if (config.ENGINE === 'transformers') throw badRequest(LOCAL_TTS);
    const engine = TTS_ENGINES[config.ENGINE];
    if (!engine) throw badRequest(`Unsupported TTS engine: ${config.ENGINE}`);
    const audio = await engine({ payload, voice, config, options: this.options, userHeaders: await forwardedUserHeaders(this.forwardUserInfo, user) });
    await mkdir(this.speechDir, { recursive: true });
    const temporary = path.join(this.speechDir, `${name}.${randomUUID()}.tmp`);
    try {
      await writeFile(temporary, audio.bytes);
      await this.asMp3(temporary, audio.contentType);
      await writeFile(path.join(this.speechDir, `${name}.json`), JSON.stringify({ ...payload, voice, model: config.MODEL }));
      await rename(temporary, file);
    } finally {
      await rm(temporary, { force: true });
    }
    await this.core.events.publish({
      event: 'audio.speech_requested',
      actor: user,
      subjectId: name,
      data: { engine: config.ENGINE, model: config.MODEL, input_preview: payload.input.slice(0, 300), cached: false },
    });
    return readFile(file);
  }

  /** Audio the provider sent in another format is converted in place (raw PCM at its `rate` and `channels`, 24 kHz mono by default). */
  private async asMp3(file: string, contentType: string): Promise<void> {
    const [mime = '', ...params] = contentType.split(';').map((part) => part.trim().toLowerCase());
    if (mime === 'audio/mpeg' || mime === 'audio/mp3') return;
    const param = (key: string, fallback: number) => Number.parseInt(params.find((p) => p.startsWith(`${key}=`))?.slice(key.length + 1) ?? '', 10) || fallback;
    const pcm = ['audio/pcm', 'audio/l16', 'audio/raw'].includes(mime) ? { rate: param('rate', 24000), channels: param('channels', 1) } : null;
    const converted = `${file}.mp3`;
    try {
      await transcodeToMp3(file, converted, pcm);
      await rename(converted, file);
    } finally {
      await rm(converted, { force: true });
    }
  }

  /** `GET /models`: the configured speech engine's models. */
  async models() {
    return { models: await modelsOf(this.tts(), this.options) };
  }

  /** `GET /voices`: the configured speech engine's voices. */
  async voices() {
    return { voices: await voicesOf(this.tts(), this.options) };
  }
}
