import type { UserRecord } from '../../core/auth/user.js';

/**
 * A workspace model's stored parameters applied to a request bound for a
 * provider (utils/payload.py): the system prompt is put in front of the
 * conversation, sampling parameters overwrite the request's, and Parley's own
 * settings (stream_response, function_calling, ...) never leave.
 */
type Json = Record<string, unknown>;

const PARLEY_ONLY_PARAMS = new Set(['stream_response', 'stream_delta_chunk_size', 'function_calling', 'reasoning_tags', 'compact_token_threshold', 'system']);

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

function deepUpdate(target: Json, source: Json): Json {
  for (const [key, value] of Object.entries(source)) {
    target[key] = isObject(value) ? deepUpdate(isObject(target[key]) ? (target[key] as Json) : {}, value) : value;
  }
  return target;
}

/** Provider-bound parameters: Parley's own removed, `custom_params` (JSON strings parsed) merged in. */
function providerParams(params: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(params)) if (!PARLEY_ONLY_PARAMS.has(key)) out[key] = value;
  const custom = out.custom_params;
  delete out.custom_params;
  if (isObject(custom)) {
    const parsed: Json = {};
    for (const [key, value] of Object.entries(custom)) {
      if (typeof value !== 'string') parsed[key] = value;
      else {
        try {
          parsed[key] = JSON.parse(value) as unknown;
        } catch {
          parsed[key] = value;
        }
      }
    }
    deepUpdate(out, parsed);
  }
  return out;
}

/** Python's `bytes(s).decode('unicode_escape')` for stop sequences typed as `\n`. */
const unescape = (s: unknown) => (typeof s === 'string' ? s.replace(/\\n/g, '\n').replace(/\\t/g, '\t').replace(/\\r/g, '\r') : s);

type Cast = (value: unknown) => unknown;
const float: Cast = (v) => Number(v);
const int: Cast = (v) => Math.trunc(Number(v));
const same: Cast = (v) => v;
const stops: Cast = (v) => (Array.isArray(v) ? v.map(unescape) : v);

function applyMapped(params: Json, target: Json, mappings: Record<string, Cast | null>): Json {
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined) continue;
    const cast = mappings[key];
    target[key] = cast ? cast(value) : value;
  }
  return target;
}

const OPENAI_CASTS: Record<string, Cast> = {
  temperature: float,
  top_p: float,
  min_p: float,
  max_tokens: int,
  frequency_penalty: float,
  presence_penalty: float,
  reasoning_effort: String,
  seed: same,
  stop: stops,
  logit_bias: same,
  response_format: same,
};

export function applyParamsOpenAI(params: Json, body: Json): Json {
  return applyMapped(providerParams(params), body, OPENAI_CASTS);
}

const OLLAMA_OPTION_CASTS: Record<string, Cast> = {
  temperature: float,
  top_p: float,
  seed: same,
  mirostat: int,
  mirostat_eta: float,
  mirostat_tau: float,
  num_ctx: int,
  num_batch: int,
  num_keep: int,
  num_predict: int,
  repeat_last_n: int,
  top_k: int,
  min_p: float,
  repeat_penalty: float,
  presence_penalty: float,
  frequency_penalty: float,
  stop: stops,
  num_gpu: int,
  use_mmap: Boolean,
  use_mlock: Boolean,
  num_thread: int,
};

const parseJson: Cast = (v) => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
};

/** Ollama takes sampling parameters under `options`; `format`, `keep_alive` and `think` stay at the root. */
export function applyParamsOllama(params: Json, body: Json): Json {
  const rest = providerParams(params);
  if (rest.max_tokens !== undefined && rest.max_tokens !== null) {
    rest.num_predict = rest.max_tokens;
    delete rest.max_tokens;
  }
  for (const [key, cast] of [['format', parseJson], ['keep_alive', parseJson], ['think', same]] as const) {
    if (rest[key] !== undefined && rest[key] !== null) {
      body[key] = cast(rest[key]);
      delete rest[key];
    }
  }
  body.options = applyMapped(rest, isObject(body.options) ? { ...body.options } : {}, OLLAMA_OPTION_CASTS);
  return body;
}

function age(birthDate: string | null): string {
  if (!birthDate) return 'None';
  const born = new Date(birthDate);
  if (Number.isNaN(born.getTime())) return 'None';
  const now = new Date();
  let years = now.getFullYear() - born.getFullYear();
  if (now.getMonth() < born.getMonth() || (now.getMonth() === born.getMonth() && now.getDate() < born.getDate())) years--;
  return String(years);
}

/** The reference's `{{...}}` variables of system prompts (utils/task.prompt_template and the request's own variables). */
export function renderSystemPrompt(template: string, user: UserRecord | null, variables?: Record<string, unknown> | null): string {
  let text = template;
  if (variables) for (const [name, value] of Object.entries(variables)) if (typeof value === 'string') text = text.split(name).join(value);
  const now = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  const date = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
  const hours = now.getHours() % 12 || 12;
  const time = `${pad(hours)}:${pad(now.getMinutes())}:${pad(now.getSeconds())} ${now.getHours() < 12 ? 'AM' : 'PM'}`;
  const weekday = now.toLocaleDateString('en-US', { weekday: 'long' });
  const info = (user?.info ?? {}) as Json;
  const values: Record<string, string> = {
    '{{CURRENT_DATE}}': date,
    '{{CURRENT_TIME}}': time,
    '{{CURRENT_DATETIME}}': `${date} ${time}`,
    '{{CURRENT_WEEKDAY}}': weekday,
    '{{USER_NAME}}': user ? String(user.name) : 'Unknown',
    '{{USER_EMAIL}}': user ? String(user.email) : 'Unknown',
    '{{USER_BIO}}': user ? String(user.bio) : 'Unknown',
    '{{USER_GENDER}}': user ? String(user.gender) : 'Unknown',
    '{{USER_BIRTH_DATE}}': user ? String(user.date_of_birth) : 'Unknown',
    '{{USER_AGE}}': user ? age(user.date_of_birth) : 'Unknown',
    '{{USER_LOCATION}}': user ? String(info.location ?? 'None') : 'Unknown',
  };
  for (const [token, value] of Object.entries(values)) text = text.split(token).join(value);
  return text;
}

/** Puts the system prompt first: into an existing leading system message, or as a new one. */
export function applySystemPrompt(system: unknown, body: Json, user: UserRecord | null, metadata?: Json | null): Json {
  if (typeof system !== 'string' || !system) return body;
  const text = renderSystemPrompt(system, user, isObject(metadata?.variables) ? (metadata.variables as Json) : null);
  if (!text) return body;
  const messages = Array.isArray(body.messages) ? [...(body.messages as Json[])] : [];
  const first = messages[0];
  if (isObject(first) && first.role === 'system') {
    const content = first.content;
    if (Array.isArray(content)) {
      messages[0] = { ...first, content: content.map((part) => (isObject(part) && part.type === 'text' ? { ...part, text: `${text}\n${part.text}` } : part)) };
    } else messages[0] = { ...first, content: `${text}\n${content ?? ''}` };
  } else messages.unshift({ role: 'system', content: text });
  body.messages = messages;
  return body;
}
