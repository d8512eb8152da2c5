/**
 * Request shaping for OpenAI-style providers (routers/openai.py): reasoning
 * models' parameter names, Azure deployments, and connections that speak the
 * Responses API (`api_type: responses`) instead of Chat Completions.
 */
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** o-series and gpt-5 and later take `max_completion_tokens` and a `developer` role. */
export function isReasoningModel(model: string): boolean {
  const lower = model.toLowerCase();
  if (/^o\d+/.test(lower)) return true;
  const gpt = /^gpt-(\d+)/.exec(lower);
  return gpt !== null && Number(gpt[1]) >= 5;
}

export function adaptForReasoningModel(payload: Json): Json {
  if ('max_tokens' in payload) {
    payload.max_completion_tokens = payload.max_tokens;
    delete payload.max_tokens;
  }
  const messages = Array.isArray(payload.messages) ? payload.messages : [];
  const first = messages[0];
  if (isObject(first) && first.role === 'system') {
    const model = String(payload.model).toLowerCase();
    messages[0] = { ...first, role: model.startsWith('o1-mini') || model.startsWith('o1-preview') ? 'user' : 'developer' };
  }
  return payload;
}

/** `logit_bias` typed in the UI as "token:bias, token:bias" becomes the JSON object providers expect. */
export function logitBiasOf(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const out: Record<string, number> = {};
  for (const pair of value.split(',')) {
    const [token, bias] = pair.split(':').map((s) => s.trim());
    if (token && bias !== undefined && Number.isFinite(Number(bias))) out[token] = Math.max(-100, Math.min(100, Number(bias)));
  }
  return out;
}

const AZURE_PARAMS = new Set([
  'messages', 'temperature', 'role', 'content', 'contentPart', 'contentPartImage', 'enhancements', 'dataSources', 'n', 'stream', 'stop',
  'max_tokens', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'user', 'function_call', 'functions', 'tools', 'tool_choice',
  'top_p', 'log_probs', 'top_logprobs', 'response_format', 'seed', 'max_completion_tokens', 'reasoning_effort',
]);

export function isAzureV1(url: string): boolean {
  return /\/openai\/v1(?:\/|$)/.test(url);
}

/** A deployment name safe as one URL segment; anything else is refused (400 in the caller). */
export function deploymentOf(model: unknown): string | null {
  const name = typeof model === 'string' ? model : '';
  if (!name || name.includes('..') || name.includes('/') || name.includes('\\')) return null;
  return encodeURIComponent(name);
}

/** Chat Completions for a classic Azure deployment: allowed parameters only, reasoning models adjusted. */
export function azurePayload(payload: Json, apiVersion: string): Json {
  const model = String(payload.model ?? '');
  const out: Json = { ...payload };
  if (isReasoningModel(model)) {
    if ('max_tokens' in out) {
      out.max_completion_tokens = out.max_tokens;
      delete out.max_tokens;
    }
    if ('temperature' in out && out.temperature !== 1) delete out.temperature;
  }
  const allowed = new Set(AZURE_PARAMS);
  if (apiVersion >= '2024-09-01-preview') allowed.add('stream_options');
  return Object.fromEntries(Object.entries(out).filter(([key]) => allowed.has(key)));
}

const RESPONSES_FIELDS: Record<string, string[]> = {
  message: ['type', 'role', 'content'],
  function_call: ['type', 'call_id', 'name', 'arguments', 'id'],
  function_call_output: ['type', 'call_id', 'output'],
};

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.filter((p) => isObject(p) && p.type === 'text').map((p) => String((p as Json).text ?? '')).join('\n');
  return '';
}

/** Chat Completions → Responses API request (convert_to_responses_payload). */
export function toResponsesPayload(payload: Json): Json {
  const { messages, ...rest } = payload;
  let instructions = '';
  const input: Json[] = [];
  for (const message of Array.isArray(messages) ? messages.filter(isObject) : []) {
    const role = String(message.role ?? 'user');
    const content = message.content;
    if (Array.isArray(message.output)) {
      for (const item of message.output.filter(isObject)) {
        const allowed = RESPONSES_FIELDS[String(item.type)];
        input.push(allowed ? Object.fromEntries(Object.entries(item).filter(([k]) => allowed.includes(k))) : item);
      }
      continue;
    }
    if (role === 'system') {
      instructions = textOf(content);
      continue;
    }
    if (role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      const text = textOf(content);
      if (text.trim()) input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
      for (const call of message.tool_calls.filter(isObject)) {
        const fn = isObject(call.function) ? call.function : {};
        input.push({ type: 'function_call', call_id: call.id ?? '', name: fn.name ?? '', arguments: fn.arguments ?? '{}' });
      }
      continue;
    }
    if (role === 'tool') {
      input.push({ type: 'function_call_output', call_id: message.tool_call_id ?? '', output: content ?? '' });
      continue;
    }
    const textType = role === 'assistant' ? 'output_text' : 'input_text';
    let parts: Json[];
    if (typeof content === 'string') parts = [{ type: textType, text: content }];
    else if (Array.isArray(content)) {
      parts = [];
      for (const part of content.filter(isObject)) {
        if (part.type === 'text') parts.push({ type: textType, text: part.text ?? '' });
        else if (part.type === 'image_url') {
          const url = isObject(part.image_url) ? part.image_url.url : part.image_url;
          parts.push({ type: 'input_image', image_url: url ?? '' });
        }
      }
    } else parts = [{ type: textType, text: String(content ?? '') }];
    input.push({ type: 'message', role, content: parts });
  }
  const out: Json = { ...rest, input };
  if (instructions) out.instructions = instructions;
  for (const key of ['max_tokens', 'max_completion_tokens']) {
    if (key in out) {
      out.max_output_tokens = out[key];
      delete out[key];
    }
  }
  for (const key of ['stream_options', 'logit_bias', 'frequency_penalty', 'presence_penalty', 'stop']) delete out[key];
  if (Array.isArray(out.tools)) {
    out.tools = out.tools.map((tool) => {
      if (!isObject(tool) || !isObject(tool.function)) return tool;
      const fn = tool.function;
      const converted: Json = { type: tool.type ?? 'function', name: fn.name ?? '' };
      for (const key of ['description', 'parameters', 'strict']) if (key in fn) converted[key] = fn[key];
      return converted;
    });
  }
  return out;
}

/** A non-streamed Responses API result as a Chat Completion (convert_responses_result). */
export function fromResponsesResult(response: Json): Json {
  let content = '';
  for (const item of Array.isArray(response.output) ? response.output.filter(isObject) : []) {
    if (item.type !== 'message') continue;
    for (const part of Array.isArray(item.content) ? item.content.filter(isObject) : []) if (part.type === 'output_text') content += String(part.text ?? '');
  }
  return {
    id: response.id ?? '',
    object: 'chat.completion',
    model: response.model ?? '',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: response.usage ?? {},
  };
}
