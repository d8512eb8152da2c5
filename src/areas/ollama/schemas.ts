import { Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable, Open } from '../../core/http/schema.js';

/** Forms of `/ollama` (routers/ollama.py). Request bodies the provider defines stay open. */

export const OllamaConfigForm = Type.Object({
  ENABLE_OLLAMA_API: Maybe(Type.Boolean()),
  OLLAMA_BASE_URLS: Type.Array(Type.String()),
  OLLAMA_API_CONFIGS: JsonObject(),
});

export const OllamaConfigResponse = Type.Object({
  ENABLE_OLLAMA_API: Nullable(Type.Boolean()),
  OLLAMA_BASE_URLS: Type.Array(Type.String()),
  OLLAMA_API_CONFIGS: JsonObject(),
});

export const OllamaVerifyForm = Type.Object({ url: Type.String(), key: Maybe(Type.String()) });

export const UrlIdxParams = Type.Object({ url_idx: Type.Integer() });

const KeepAlive = Maybe(Type.Union([Type.Integer(), Type.String()]));

/** ModelNameForm: `model` (or the older `name`) and whatever else Ollama takes. */
export const ModelNameForm = Open({ model: Maybe(Type.String()) });

export const PushModelForm = Type.Object({ model: Type.String(), insecure: Maybe(Type.Boolean()), stream: Maybe(Type.Boolean()) });

export const CreateModelForm = Open({ model: Maybe(Type.String()), stream: Maybe(Type.Boolean()), path: Maybe(Type.String()) });

export const CopyModelForm = Type.Object({ source: Type.String(), destination: Type.String() });

export const GenerateEmbedForm = Open({
  model: Type.String(),
  input: Type.Union([Type.Array(Type.String()), Type.String()]),
  truncate: Maybe(Type.Boolean()),
  options: Maybe(JsonObject()),
  keep_alive: KeepAlive,
});

export const GenerateEmbeddingsForm = Type.Object({
  model: Type.String(),
  prompt: Type.String(),
  options: Maybe(JsonObject()),
  keep_alive: KeepAlive,
});

export const GenerateCompletionForm = Type.Object({
  model: Type.String(),
  prompt: Maybe(Type.String()),
  suffix: Maybe(Type.String()),
  images: Maybe(Type.Array(Nullable(Type.String()))),
  format: Maybe(Type.Union([JsonObject(), Type.String()])),
  options: Maybe(JsonObject()),
  system: Maybe(Type.String()),
  template: Maybe(Type.String()),
  context: Maybe(Type.Array(Nullable(Type.Integer()))),
  stream: Maybe(Type.Boolean()),
  raw: Maybe(Type.Boolean()),
  keep_alive: KeepAlive,
});

const ChatMessage = Open({
  role: Type.String(),
  content: Maybe(Type.String()),
  tool_calls: Maybe(Type.Array(Nullable(JsonObject()))),
  images: Maybe(Type.Array(Nullable(Type.String()))),
});

export const GenerateChatCompletionForm = Open({
  model: Type.String(),
  messages: Type.Array(ChatMessage),
  format: Maybe(Type.Union([JsonObject(), Type.String()])),
  options: Maybe(JsonObject()),
  template: Maybe(Type.String()),
  stream: Maybe(Type.Boolean()),
  keep_alive: KeepAlive,
  tools: Maybe(Type.Array(Nullable(JsonObject()))),
});

const OpenAIChatMessage = Open({
  role: Type.String(),
  content: Type.Union([Type.String(), Type.Null(), Type.Array(Open({ type: Type.String() }))]),
});

export const OpenAIChatCompletionForm = Open({ model: Type.String(), messages: Type.Array(OpenAIChatMessage) });
export const OpenAICompletionForm = Open({ model: Type.String(), prompt: Type.String() });
export const OpenAIEmbeddingsForm = Open({ model: Type.String(), input: Type.Unknown() });
export const AnthropicMessagesForm = JsonObject();
export const ResponsesForm = Open({ model: Type.String() });

export const UrlForm = Type.Object({ url: Type.String() });
