import { Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Open } from '../../core/http/schema.js';

/** Forms of `/openai` (routers/openai.py). Proxy bodies are open: providers define them. */

export const OpenAIConfigForm = Type.Object({
  ENABLE_OPENAI_API: Maybe(Type.Boolean()),
  OPENAI_API_BASE_URLS: Type.Array(Type.String()),
  OPENAI_API_KEYS: Type.Array(Type.String()),
  OPENAI_API_CONFIGS: JsonObject(),
});

export const OpenAIConfigResponse = Type.Object({
  ENABLE_OPENAI_API: Maybe(Type.Boolean()),
  OPENAI_API_BASE_URLS: Type.Array(Type.String()),
  OPENAI_API_KEYS: Type.Array(Type.String()),
  OPENAI_API_CONFIGS: JsonObject(),
});

export const OpenAIVerifyForm = Type.Object({
  url: Type.String(),
  key: Type.String(),
  config: Maybe(JsonObject()),
});

export const UrlIdxParams = Type.Object({ url_idx: Type.Integer() });

/** A Chat Completions request: the model is required, everything else goes to the provider. */
export const ChatCompletionForm = Open({ model: Type.String() });

/** ResponsesForm. */
export const ResponsesForm = Open({
  model: Type.String(),
  input: Maybe(Type.Union([Type.Array(Type.Unknown()), Type.String()])),
  instructions: Maybe(Type.String()),
  stream: Maybe(Type.Boolean()),
  temperature: Maybe(Type.Number()),
  max_output_tokens: Maybe(Type.Integer()),
  top_p: Maybe(Type.Number()),
  tools: Maybe(Type.Array(Type.Unknown())),
  tool_choice: Maybe(Type.Union([Type.String(), JsonObject()])),
  text: Maybe(JsonObject()),
  truncation: Maybe(Type.String()),
  metadata: Maybe(JsonObject()),
  store: Maybe(Type.Boolean()),
  reasoning: Maybe(JsonObject()),
  previous_response_id: Maybe(Type.String()),
});

export const PassthroughParams = Type.Object({ '*': Type.String() });
