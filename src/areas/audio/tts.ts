import { HttpError } from '../../core/http/errors.js';
import { callProvider, providerError, providerJson, trimSlash } from './provider.js';
import type { AudioOptions, TtsConfig } from './settings.js';

/**
 * The text-to-speech engines reached over HTTP, as the reference's
 * routers/audio.py speaks to them: OpenAI-compatible, ElevenLabs, Azure and
 * Mistral; with each engine's models and voices. An engine answers the audio
 * bytes and their type; the service caches them.
 */
export interface SpeechRequest {
  /** The request body as the frontend sent it (`input`, `voice`, maybe `model` and more). */
  payload: Record<string, unknown>;
  /** The voice asked for, or the configured one. */
  voice: string;
  config: TtsConfig;
  options: AudioOptions;
  /** The user's identity for OpenAI-compatible providers (ENABLE_FORWARD_USER_INFO_HEADERS), or none. */
  userHeaders: Record<string, string>;
}

export interface SpeechAudio {
  bytes: Buffer;
  /** The provider's Content-Type (a raw PCM answer is converted to MP3). */
  contentType: string;
}

type TtsEngine = (request: SpeechRequest) => Promise<SpeechAudio>;

/** Lists are asked with a short deadline (the reference's AIOHTTP_CLIENT_TIMEOUT_MODEL_LIST). */
const LIST_TIMEOUT_MS = 10_000;

const escapeXml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' })[c]!);

async function audioOf(response: Response, fallbackType: string): Promise<SpeechAudio> {
  if (!response.ok) throw await providerError(response);
  return { bytes: Buffer.from(await response.arrayBuffer()), contentType: response.headers.get('content-type') ?? fallbackType };
}

const isOpenAI = (baseUrl: string) => baseUrl.startsWith('https://api.openai.com');

const openai: TtsEngine = async ({ payload, voice, config, options, userHeaders }) => {
  const body = { ...payload, model: config.MODEL, voice, ...(config.OPENAI_PARAMS ?? {}) };
  const response = await callProvider(
    `${trimSlash(config.OPENAI_API_BASE_URL)}/audio/speech`,
    { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${config.OPENAI_API_KEY}`, ...userHeaders }, body: JSON.stringify(body) },
    options.timeoutMs,
  );
  return audioOf(response, 'audio/mpeg');
};

const elevenlabs: TtsEngine = async ({ payload, voice, config, options }) => {
  const voiceId = voice.trim();
  if (!voiceId) throw new HttpError(400, 'Invalid voice id');
  const known = await voicesOf(config, options);
  if (known.length > 0 && !known.some((v) => v.id === voiceId)) throw new HttpError(400, 'Invalid voice id');
  const response = await callProvider(
    `${options.elevenLabsBaseUrl}/v1/text-to-speech/${encodeURIComponent(voiceId)}`,
    {
      method: 'POST',
      headers: { accept: 'audio/mpeg', 'content-type': 'application/json', 'xi-api-key': config.API_KEY },
      body: JSON.stringify({ text: payload.input, model_id: config.MODEL, voice_settings: { stability: 0.5, similarity_boost: 0.5 } }),
    },
    options.timeoutMs,
  );
  return audioOf(response, 'audio/mpeg');
};

const azureBase = (config: TtsConfig, region: string) => trimSlash(config.AZURE_SPEECH_BASE_URL || `https://${region}.tts.speech.microsoft.com`);

const azure: TtsEngine = async ({ payload, voice, config, options }) => {
  const locale = voice.split('-').slice(0, 2).join('-');
  const ssml =
    `<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="${escapeXml(locale)}">` +
    `<voice name="${escapeXml(voice)}">${escapeXml(String(payload.input))}</voice></speak>`;
  const response = await callProvider(
    `${azureBase(config, config.AZURE_SPEECH_REGION || 'eastus')}/cognitiveservices/v1`,
    {
      method: 'POST',
      headers: { 'ocp-apim-subscription-key': config.API_KEY, 'content-type': 'application/ssml+xml', 'x-microsoft-outputformat': config.AZURE_SPEECH_OUTPUT_FORMAT },
      body: ssml,
    },
    options.timeoutMs,
  );
  return audioOf(response, 'audio/mpeg');
};

const mistralBase = (config: TtsConfig) => trimSlash(config.MISTRAL_API_BASE_URL || 'https://api.mistral.ai/v1');

const mistral: TtsEngine = async ({ payload, voice, config, options }) => {
  if (!config.MISTRAL_API_KEY) throw new HttpError(400, 'Mistral API key is required for Mistral TTS');
  const response = await callProvider(
    `${mistralBase(config)}/audio/speech`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${config.MISTRAL_API_KEY}` },
      body: JSON.stringify({ input: payload.input ?? '', model: config.MODEL || 'voxtral-mini-tts-2603', voice_id: voice, response_format: 'mp3' }),
    },
    options.timeoutMs,
  );
  const answer = await providerJson(response, 'Mistral');
  if (typeof answer.audio_data !== 'string' || !answer.audio_data) throw new HttpError(500, 'External: No audio_data in Mistral TTS response');
  return { bytes: Buffer.from(answer.audio_data, 'base64'), contentType: 'audio/mpeg' };
};

export const TTS_ENGINES: Record<string, TtsEngine> = { openai, elevenlabs, azure, mistral };

export interface VoiceEntry {
  id: string;
  name: string;
}

/** GET of a list; null when the provider cannot be reached or refuses (lists then fall back, as the reference's). */
async function listOf(url: string, headers: Record<string, string>): Promise<unknown> {
  try {
    const response = await callProvider(url, { headers }, LIST_TIMEOUT_MS);
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    return (await response.json()) as unknown;
  } catch {
    return null;
  }
}

const OPENAI_VOICES = ['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer'].map((id) => ({ id, name: id }));
const OPENAI_MODELS = [{ id: 'tts-1' }, { id: 'tts-1-hd' }];

const records = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value) ? value.filter((v): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)) : [];

/** `GET /voices` of the configured engine (the reference's `get_available_voices`). */
export async function voicesOf(config: TtsConfig, options: AudioOptions): Promise<VoiceEntry[]> {
  const str = (value: unknown) => (typeof value === 'string' ? value : '');
  switch (config.ENGINE) {
    case 'openai': {
      const base = trimSlash(config.OPENAI_API_BASE_URL);
      if (isOpenAI(base)) return OPENAI_VOICES;
      const answer = (await listOf(`${base}/audio/voices`, {})) as { voices?: unknown } | null;
      return answer ? records(answer.voices).map((v) => ({ id: str(v.id), name: str(v.name) })) : OPENAI_VOICES;
    }
    case 'elevenlabs': {
      const answer = (await listOf(`${options.elevenLabsBaseUrl}/v1/voices`, { 'xi-api-key': config.API_KEY, 'content-type': 'application/json' })) as { voices?: unknown } | null;
      return records(answer?.voices).map((v) => ({ id: str(v.voice_id), name: str(v.name) }));
    }
    case 'azure': {
      const answer = await listOf(`${azureBase(config, config.AZURE_SPEECH_REGION)}/cognitiveservices/voices/list`, { 'ocp-apim-subscription-key': config.API_KEY });
      return records(answer).map((v) => ({ id: str(v.ShortName), name: `${str(v.DisplayName)} (${str(v.ShortName)})` }));
    }
    case 'mistral': {
      if (!config.MISTRAL_API_KEY) return [];
      const answer = await listOf(`${mistralBase(config)}/audio/voices`, { authorization: `Bearer ${config.MISTRAL_API_KEY}` });
      const items = Array.isArray(answer) ? answer : (answer as { items?: unknown } | null)?.items;
      return records(items)
        .map((v) => ({ id: str(v.voice_id) || str(v.id), name: str(v.name) || str(v.voice_id) || str(v.id) }))
        .filter((v) => v.id);
    }
    default:
      return [];
  }
}

/** `GET /models` of the configured engine (the reference's `get_available_models`). */
export async function modelsOf(config: TtsConfig, options: AudioOptions): Promise<Record<string, unknown>[]> {
  switch (config.ENGINE) {
    case 'openai': {
      const base = trimSlash(config.OPENAI_API_BASE_URL);
      if (isOpenAI(base)) return OPENAI_MODELS;
      const audioModels = (await listOf(`${base}/audio/models`, {})) as { models?: unknown } | null;
      if (audioModels) return records(audioModels.models);
      const models = (await listOf(`${base}/models`, {})) as { data?: unknown; models?: unknown } | null;
      return models ? records(models.data ?? models.models) : OPENAI_MODELS;
    }
    case 'elevenlabs': {
      const answer = await listOf(`${options.elevenLabsBaseUrl}/v1/models`, { 'xi-api-key': config.API_KEY, 'content-type': 'application/json' });
      return records(answer).map((m) => ({ name: m.name, id: m.model_id }));
    }
    case 'mistral':
      return [{ id: 'voxtral-mini-tts-2603' }];
    default:
      return [];
  }
}
