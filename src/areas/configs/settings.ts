import { Type } from '@sinclair/typebox';
import { checks, defineSetting, parsers, type SettingDefinition } from '../../config/settings.js';
import { schemaProblem } from '../../core/http/validation.js';
import { TerminalServerConnection, ToolServerConnection } from './schemas.js';

/**
 * The settings the `/api/v1/configs` forms edit, with the reference's keys and
 * environment variables (config.py DEFAULT_CONFIG), and the maps from each form's
 * upper-case field names to those keys (routers/configs.py *_CONFIG_KEYS).
 */
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A list whose every item passes `item`; the message names the first bad index. */
const listOf = (item: (v: unknown) => string | null) => (value: unknown) => {
  if (!Array.isArray(value)) return 'must be a list';
  for (const [index, entry] of value.entries()) {
    const problem = item(entry);
    if (problem) return `item ${index} ${problem}`;
  }
  return null;
};

/** An object whose named fields pass their checks (other fields are free). */
const objectWith = (fields: Record<string, (v: unknown) => string | null>) => (value: unknown) => {
  if (!isObject(value)) return 'must be an object';
  for (const [field, check] of Object.entries(fields)) {
    const problem = check(value[field]);
    if (problem) return `${field} ${problem}`;
  }
  return null;
};

const nullableObject = (v: unknown) => (v === null || isObject(v) ? null : 'must be an object or null');
const stringList = listOf(checks.string);

const flag = (key: string, env: string, fallback: boolean) =>
  defineSetting({ key, env, default: fallback, parse: parsers.bool, check: checks.bool });
const text = (key: string, env: string, fallback: string) => defineSetting({ key, env, default: fallback, check: checks.string });
const nullableText = (key: string, env: string, fallback: string | null) =>
  defineSetting<string | null>({ key, env, default: fallback, check: checks.nullableString });
const nullableInt = (key: string, env: string, fallback: number | null) =>
  defineSetting<number | null>({ key, env, default: fallback, parse: parsers.int, check: checks.nullableInt });
const int = (key: string, env: string, fallback: number) => defineSetting({ key, env, default: fallback, parse: parsers.int, check: checks.int });
const keyOf = (definition: SettingDefinition<unknown>) => definition.key;

export const CONNECTIONS_CONFIG_KEYS = {
  ENABLE_DIRECT_CONNECTIONS: keyOf(flag('direct.enable', 'ENABLE_DIRECT_CONNECTIONS', false)),
  ENABLE_BASE_MODELS_CACHE: keyOf(flag('models.base_models_cache', 'ENABLE_BASE_MODELS_CACHE', false)),
} as const;

/** The tool and terminal server lists are held to the forms' connection schemas. */
export const TOOL_SERVER_CONNECTIONS = defineSetting<Record<string, unknown>[]>({
  key: 'tool_server.connections',
  env: 'TOOL_SERVER_CONNECTIONS',
  default: [],
  parse: parsers.jsonOr([], Array.isArray),
  check: schemaProblem(Type.Array(ToolServerConnection)),
});

export const TERMINAL_SERVER_CONNECTIONS = defineSetting<Record<string, unknown>[]>({
  key: 'terminal_server.connections',
  env: 'TERMINAL_SERVER_CONNECTIONS',
  default: [],
  parse: parsers.jsonOr([], Array.isArray),
  check: schemaProblem(Type.Array(TerminalServerConnection)),
});

/** The interpreter's Jupyter settings fall back to the code-execution variables, as in the reference. */
function interpreterJupyter<T extends string | number>(field: string, suffix: string, fallback: T, parse: (raw: string) => T = (raw) => raw as T) {
  return defineSetting<T | null>({
    key: `code_interpreter.jupyter.${field}`,
    env: `CODE_INTERPRETER_JUPYTER_${suffix}`,
    default: fallback,
    seedFrom: [`CODE_INTERPRETER_JUPYTER_${suffix}`, `CODE_EXECUTION_JUPYTER_${suffix}`],
    seed: (env) => {
      const raw = env[`CODE_INTERPRETER_JUPYTER_${suffix}`] ?? env[`CODE_EXECUTION_JUPYTER_${suffix}`];
      return raw === undefined ? fallback : parse(raw);
    },
    check: typeof fallback === 'number' ? checks.nullableInt : checks.nullableString,
  });
}

export const CODE_EXECUTION_CONFIG_KEYS = {
  ENABLE_CODE_EXECUTION: keyOf(flag('code_execution.enable', 'ENABLE_CODE_EXECUTION', true)),
  CODE_EXECUTION_ENGINE: keyOf(text('code_execution.engine', 'CODE_EXECUTION_ENGINE', 'pyodide')),
  CODE_EXECUTION_JUPYTER_URL: keyOf(nullableText('code_execution.jupyter.url', 'CODE_EXECUTION_JUPYTER_URL', '')),
  CODE_EXECUTION_JUPYTER_AUTH: keyOf(nullableText('code_execution.jupyter.auth', 'CODE_EXECUTION_JUPYTER_AUTH', '')),
  CODE_EXECUTION_JUPYTER_AUTH_TOKEN: keyOf(nullableText('code_execution.jupyter.auth_token', 'CODE_EXECUTION_JUPYTER_AUTH_TOKEN', '')),
  CODE_EXECUTION_JUPYTER_AUTH_PASSWORD: keyOf(
    nullableText('code_execution.jupyter.auth_password', 'CODE_EXECUTION_JUPYTER_AUTH_PASSWORD', ''),
  ),
  CODE_EXECUTION_JUPYTER_TIMEOUT: keyOf(nullableInt('code_execution.jupyter.timeout', 'CODE_EXECUTION_JUPYTER_TIMEOUT', 60)),
  ENABLE_CODE_INTERPRETER: keyOf(flag('code_interpreter.enable', 'ENABLE_CODE_INTERPRETER', true)),
  CODE_INTERPRETER_ENGINE: keyOf(text('code_interpreter.engine', 'CODE_INTERPRETER_ENGINE', 'pyodide')),
  CODE_INTERPRETER_PROMPT_TEMPLATE: keyOf(nullableText('code_interpreter.prompt_template', 'CODE_INTERPRETER_PROMPT_TEMPLATE', '')),
  CODE_INTERPRETER_JUPYTER_URL: keyOf(interpreterJupyter('url', 'URL', '')),
  CODE_INTERPRETER_JUPYTER_AUTH: keyOf(interpreterJupyter('auth', 'AUTH', '')),
  CODE_INTERPRETER_JUPYTER_AUTH_TOKEN: keyOf(interpreterJupyter('auth_token', 'AUTH_TOKEN', '')),
  CODE_INTERPRETER_JUPYTER_AUTH_PASSWORD: keyOf(interpreterJupyter('auth_password', 'AUTH_PASSWORD', '')),
  CODE_INTERPRETER_JUPYTER_TIMEOUT: keyOf(
    interpreterJupyter('timeout', 'TIMEOUT', 60, (raw) => {
      const n = Number.parseInt(raw, 10);
      return Number.isFinite(n) ? n : 60;
    }),
  ),
} as const;

export const DEFAULT_MODEL_METADATA = defineSetting<Record<string, unknown> | null>({
  key: 'models.default_metadata',
  env: 'DEFAULT_MODEL_METADATA',
  default: {},
  parse: parsers.jsonOr({}, isObject),
  check: nullableObject,
});

export const MODELS_CONFIG_KEYS = {
  DEFAULT_MODELS: keyOf(nullableText('ui.default_models', 'DEFAULT_MODELS', null)),
  DEFAULT_PINNED_MODELS: keyOf(nullableText('ui.default_pinned_models', 'DEFAULT_PINNED_MODELS', null)),
  MODEL_ORDER_LIST: keyOf(
    defineSetting<(string | null)[]>({
      key: 'ui.model_order_list',
      env: 'MODEL_ORDER_LIST',
      default: [],
      parse: parsers.jsonOr([], Array.isArray),
      check: listOf(checks.nullableString),
    }),
  ),
  DEFAULT_MODEL_METADATA: DEFAULT_MODEL_METADATA.key,
  DEFAULT_MODEL_PARAMS: keyOf(
    defineSetting<Record<string, unknown> | null>({
      key: 'models.default_params',
      env: 'DEFAULT_MODEL_PARAMS',
      default: {},
      parse: parsers.jsonOr({}, isObject),
      check: nullableObject,
    }),
  ),
} as const;

export const SUBAGENTS_CONFIG_KEYS = {
  ENABLE_SUBAGENTS: keyOf(flag('subagents.enable', 'ENABLE_SUBAGENTS', false)),
  SUBAGENTS_BACKGROUND_ENABLED: keyOf(flag('subagents.background_enabled', 'SUBAGENTS_BACKGROUND_ENABLED', false)),
  SUBAGENTS_MAX_CONCURRENT: keyOf(int('subagents.max_concurrent', 'SUBAGENTS_MAX_CONCURRENT', 20)),
  SUBAGENTS_MAX_ASYNC: keyOf(int('subagents.max_async', 'SUBAGENTS_MAX_ASYNC', 20)),
  SUBAGENTS_MAX_ITERATIONS: keyOf(int('subagents.max_iterations', 'SUBAGENTS_MAX_ITERATIONS', 30)),
  SUBAGENTS_MAX_OUTPUT: keyOf(int('subagents.max_output', 'SUBAGENTS_MAX_OUTPUT', 30000)),
  SUBAGENTS_SYSTEM_PROMPT: keyOf(text('subagents.system_prompt', 'SUBAGENTS_SYSTEM_PROMPT', '')),
} as const;

const DEFAULT_PROMPT_SUGGESTIONS = [
  {
    title: ['Help me study', 'vocabulary for a college entrance exam'],
    content: "Help me study vocabulary: write a sentence for me to fill in the blank, and I'll try to pick the correct option.",
  },
  {
    title: ['Give me ideas', "for what to do with my kids' art"],
    content: "What are 5 creative things I could do with my kids' art? I don't want to throw them away, but it's also so much clutter.",
  },
  { title: ['Tell me a fun fact', 'about the Roman Empire'], content: 'Tell me a random fun fact about the Roman Empire' },
  {
    title: ['Show me a code snippet', "of a website's sticky header"],
    content: "Show me a code snippet of a website's sticky header in CSS and JavaScript.",
  },
  {
    title: ['Explain options trading', "if I'm familiar with buying and selling stocks"],
    content: "Explain options trading in simple terms if I'm familiar with buying and selling stocks.",
  },
  {
    title: ['Overcome procrastination', 'give me tips'],
    content: 'Could you start by asking me about instances when I procrastinate the most and then give me some suggestions to overcome it?',
  },
];

/** An empty list in the environment means "the built-in suggestions", as in the reference. */
export const PROMPT_SUGGESTIONS = defineSetting<Record<string, unknown>[]>({
  key: 'ui.prompt_suggestions',
  env: 'DEFAULT_PROMPT_SUGGESTIONS',
  default: DEFAULT_PROMPT_SUGGESTIONS,
  parse: (raw) => {
    const parsed = parsers.jsonOr<Record<string, unknown>[]>([], Array.isArray)(raw);
    return parsed.length > 0 ? parsed : DEFAULT_PROMPT_SUGGESTIONS;
  },
  check: listOf(objectWith({ title: stringList, content: checks.string })),
});

export const BANNERS = defineSetting<Record<string, unknown>[]>({
  key: 'ui.banners',
  env: 'WEBUI_BANNERS',
  default: [],
  parse: parsers.jsonOr([], Array.isArray),
  check: listOf(
    objectWith({
      id: checks.string,
      type: checks.string,
      title: (v) => (v === undefined ? null : checks.nullableString(v)),
      content: checks.string,
      dismissible: checks.bool,
      timestamp: checks.int,
    }),
  ),
});
