import { checks, defineSetting, parsers, type SettingDefinition } from '../../config/settings.js';

/**
 * Every persistent setting of audio (the reference's config.py `audio.*` keys and their
 * environment variables), named by the field `/api/v1/audio/config` shows it under.
 */
const text = (key: string, env: string, fallback = '') => defineSetting<string>({ key, env, default: fallback, check: checks.string });
const stringList = (v: unknown) => (Array.isArray(v) && v.every((item) => typeof item === 'string') ? null : 'must be a list of strings');
const list = (key: string, env: string, fallback: string[] = []) => defineSetting<string[]>({ key, env, default: fallback, parse: parsers.list, check: stringList });
/** The OpenAI connection's address and key, unless audio has its own (AUDIO_*_OPENAI_API_*). */
const openai = (key: string, env: string, shared: string, fallback: string) =>
  defineSetting<string>({ key, env, seed: (raw) => raw[env] || raw[shared] || fallback, seedFrom: [env, shared], default: fallback, check: checks.string });

export const TTS_SETTINGS = {
  OPENAI_API_BASE_URL: openai('audio.tts.openai.api_base_url', 'AUDIO_TTS_OPENAI_API_BASE_URL', 'OPENAI_API_BASE_URL', 'https://api.openai.com/v1'),
  OPENAI_API_KEY: openai('audio.tts.openai.api_key', 'AUDIO_TTS_OPENAI_API_KEY', 'OPENAI_API_KEY', ''),
  // A malformed variable is `{}`, as the reference's try/except.
  OPENAI_PARAMS: defineSetting<Record<string, unknown> | null>({
    key: 'audio.tts.openai.params',
    env: 'AUDIO_TTS_OPENAI_PARAMS',
    default: {},
    parse: (raw) => {
      const value = JSON.parse(raw) as unknown;
      return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
    },
    check: (v) => (v === null ? null : checks.object(v)),
  }),
  API_KEY: text('audio.tts.api_key', 'AUDIO_TTS_API_KEY'),
  ENGINE: text('audio.tts.engine', 'AUDIO_TTS_ENGINE'),
  MODEL: text('audio.tts.model', 'AUDIO_TTS_MODEL', 'tts-1'),
  VOICE: text('audio.tts.voice', 'AUDIO_TTS_VOICE', 'alloy'),
  SPLIT_ON: text('audio.tts.split_on', 'AUDIO_TTS_SPLIT_ON', 'punctuation'),
  AZURE_SPEECH_REGION: text('audio.tts.azure.speech_region', 'AUDIO_TTS_AZURE_SPEECH_REGION'),
  AZURE_SPEECH_BASE_URL: text('audio.tts.azure.speech_base_url', 'AUDIO_TTS_AZURE_SPEECH_BASE_URL'),
  AZURE_SPEECH_OUTPUT_FORMAT: text('audio.tts.azure.speech_output_format', 'AUDIO_TTS_AZURE_SPEECH_OUTPUT_FORMAT', 'audio-24khz-160kbitrate-mono-mp3'),
  MISTRAL_API_KEY: text('audio.tts.mistral.api_key', 'AUDIO_TTS_MISTRAL_API_KEY'),
  MISTRAL_API_BASE_URL: text('audio.tts.mistral.api_base_url', 'AUDIO_TTS_MISTRAL_API_BASE_URL', 'https://api.mistral.ai/v1'),
} satisfies Record<string, SettingDefinition<any>>;

export const STT_SETTINGS = {
  OPENAI_API_BASE_URL: openai('audio.stt.openai.api_base_url', 'AUDIO_STT_OPENAI_API_BASE_URL', 'OPENAI_API_BASE_URL', 'https://api.openai.com/v1'),
  OPENAI_API_KEY: openai('audio.stt.openai.api_key', 'AUDIO_STT_OPENAI_API_KEY', 'OPENAI_API_KEY', ''),
  // The interface document's PROVIDER_API_REQUEST_FORMAT: 'json' (any case) sends base64 in JSON, anything else multipart.
  OPENAI_API_REQUEST_FORMAT: text('audio.stt.openai.api_request_format', 'AUDIO_STT_OPENAI_API_REQUEST_FORMAT', 'multipart'),
  ENGINE: text('audio.stt.engine', 'AUDIO_STT_ENGINE'),
  MODEL: text('audio.stt.model', 'AUDIO_STT_MODEL'),
  SUPPORTED_CONTENT_TYPES: list('audio.stt.supported_content_types', 'AUDIO_STT_SUPPORTED_CONTENT_TYPES'),
  ALLOWED_EXTENSIONS: list('audio.stt.allowed_extensions', 'AUDIO_STT_ALLOWED_EXTENSIONS', 'mp3,wav,m4a,webm,ogg,flac,mp4,mpga,mpeg'.split(',')),
  WHISPER_MODEL: text('audio.stt.whisper_model', 'WHISPER_MODEL', 'base'),
  DEEPGRAM_API_KEY: text('audio.stt.deepgram.api_key', 'DEEPGRAM_API_KEY'),
  AZURE_API_KEY: text('audio.stt.azure.api_key', 'AUDIO_STT_AZURE_API_KEY'),
  AZURE_REGION: text('audio.stt.azure.region', 'AUDIO_STT_AZURE_REGION'),
  AZURE_LOCALES: text('audio.stt.azure.locales', 'AUDIO_STT_AZURE_LOCALES'),
  AZURE_BASE_URL: text('audio.stt.azure.base_url', 'AUDIO_STT_AZURE_BASE_URL'),
  AZURE_MAX_SPEAKERS: text('audio.stt.azure.max_speakers', 'AUDIO_STT_AZURE_MAX_SPEAKERS'),
  MISTRAL_API_KEY: text('audio.stt.mistral.api_key', 'AUDIO_STT_MISTRAL_API_KEY'),
  MISTRAL_API_BASE_URL: text('audio.stt.mistral.api_base_url', 'AUDIO_STT_MISTRAL_API_BASE_URL', 'https://api.mistral.ai/v1'),
  MISTRAL_USE_CHAT_COMPLETIONS: defineSetting<boolean>({
    key: 'audio.stt.mistral.use_chat_completions',
    env: 'AUDIO_STT_MISTRAL_USE_CHAT_COMPLETIONS',
    default: false,
    parse: parsers.bool,
    check: checks.bool,
  }),
} satisfies Record<string, SettingDefinition<any>>;

/** The values of a group of settings, by field. */
export type ValuesOf<S extends Record<string, SettingDefinition<any>>> = { [K in keyof S]: S[K] extends SettingDefinition<infer T> ? T : never };
export type TtsConfig = ValuesOf<typeof TTS_SETTINGS>;
export type SttConfig = ValuesOf<typeof STT_SETTINGS>;

/**
 * Process settings of audio, read once (not persistent): the fixed provider
 * addresses the reference calls (overridable for proxies and tests) and the
 * size a recording is split to.
 */
export interface AudioOptions {
  /** ELEVENLABS_API_BASE_URL (the reference's variable). */
  elevenLabsBaseUrl: string;
  /** DEEPGRAM_API_BASE_URL (Parley's: the reference calls api.deepgram.com only). */
  deepgramBaseUrl: string;
  /** AUDIO_STT_MAX_CHUNK_SIZE_MB: larger recordings are compressed, then split (the reference's MAX_FILE_SIZE, 20 MB). */
  maxChunkBytes: number;
  /** AUDIO_REQUEST_TIMEOUT, seconds: the longest call to a provider (speech or one chunk's transcription). */
  timeoutMs: number;
  /** WHISPER_LANGUAGE: asked of speech-to-text instead of the request's language (the reference's). */
  language: string | null;
}

export function readAudioOptions(raw: Record<string, string | undefined>): AudioOptions {
  const positive = (value: string | undefined, fallback: number) => {
    const parsed = Number.parseFloat(value ?? '');
    return Number.isFinite(parsed) && parsed > 0 ? parsed : fallback;
  };
  return {
    elevenLabsBaseUrl: (raw.ELEVENLABS_API_BASE_URL || 'https://api.elevenlabs.io').replace(/\/+$/, ''),
    deepgramBaseUrl: (raw.DEEPGRAM_API_BASE_URL || 'https://api.deepgram.com').replace(/\/+$/, ''),
    maxChunkBytes: Math.round(positive(raw.AUDIO_STT_MAX_CHUNK_SIZE_MB, 20) * 1024 * 1024),
    timeoutMs: Math.round(positive(raw.AUDIO_REQUEST_TIMEOUT, 300) * 1000),
    language: raw.WHISPER_LANGUAGE?.trim() || null,
  };
}
