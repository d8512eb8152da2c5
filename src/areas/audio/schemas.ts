import { type Static, Type } from '@sinclair/typebox';

/** The reference's TTSConfigForm (routers/audio.py), every field required but OPENAI_PARAMS. */
export const TTSConfigForm = Type.Object({
  OPENAI_API_BASE_URL: Type.String(),
  OPENAI_API_KEY: Type.String(),
  OPENAI_PARAMS: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  API_KEY: Type.String(),
  ENGINE: Type.String(),
  MODEL: Type.String(),
  VOICE: Type.String(),
  SPLIT_ON: Type.String(),
  AZURE_SPEECH_REGION: Type.String(),
  AZURE_SPEECH_BASE_URL: Type.String(),
  AZURE_SPEECH_OUTPUT_FORMAT: Type.String(),
  MISTRAL_API_KEY: Type.String(),
  MISTRAL_API_BASE_URL: Type.String(),
});

/**
 * The reference's STTConfigForm. OPENAI_API_REQUEST_FORMAT is the interface document's
 * PROVIDER_API_REQUEST_FORMAT ('multipart' by default; 'json', any case, sends base64 in JSON).
 */
export const STTConfigForm = Type.Object({
  OPENAI_API_BASE_URL: Type.String(),
  OPENAI_API_KEY: Type.String(),
  OPENAI_API_REQUEST_FORMAT: Type.String({ default: 'multipart' }),
  ENGINE: Type.String(),
  MODEL: Type.String(),
  SUPPORTED_CONTENT_TYPES: Type.Array(Type.String(), { default: [] }),
  ALLOWED_EXTENSIONS: Type.Array(Type.String(), { default: [] }),
  WHISPER_MODEL: Type.String(),
  DEEPGRAM_API_KEY: Type.String(),
  AZURE_API_KEY: Type.String(),
  AZURE_REGION: Type.String(),
  AZURE_LOCALES: Type.String(),
  AZURE_BASE_URL: Type.String(),
  AZURE_MAX_SPEAKERS: Type.String(),
  MISTRAL_API_KEY: Type.String(),
  MISTRAL_API_BASE_URL: Type.String(),
  MISTRAL_USE_CHAT_COMPLETIONS: Type.Boolean(),
});

export const AudioConfigForm = Type.Object({ tts: TTSConfigForm, stt: STTConfigForm });
export type AudioConfigForm = Static<typeof AudioConfigForm>;

/** Parley's addition: false, the reference's in-process engines (Whisper, transformers) are not bundled. */
const LocalEngine = { LOCAL_ENGINE_AVAILABLE: Type.Boolean() };

export const AudioConfigResponse = Type.Object({
  tts: Type.Object({ ...TTSConfigForm.properties, OPENAI_PARAMS: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]), ...LocalEngine }),
  stt: Type.Object({ ...STTConfigForm.properties, ...LocalEngine }),
});

export const TranscriptionResponse = Type.Object({ text: Type.String(), filename: Type.String() });

export const ModelsResponse = Type.Object({ models: Type.Array(Type.Record(Type.String(), Type.Unknown())) });
export const VoicesResponse = Type.Object({ voices: Type.Array(Type.Object({ id: Type.String(), name: Type.String() })) });
