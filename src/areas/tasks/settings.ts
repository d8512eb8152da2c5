import { checks, defineSetting, parsers, type SettingDefinition } from '../../config/settings.js';
import { AUTOCOMPLETE_GENERATION } from '../system/settings.js';

/**
 * Settings of the background tasks (titles, tags, follow-ups, queries,
 * autocompletion, ...): keys, environment variables and defaults as the
 * reference's config.py; `TASK_CONFIG_KEYS` maps the config form's fields to
 * them (routers/tasks.py). An empty template means the built-in one.
 */
const flag = (key: string, env: string, fallback: boolean) => defineSetting({ key, env, default: fallback, parse: parsers.bool, check: checks.bool });
const text = (key: string, env: string) => defineSetting({ key, env, default: '', check: checks.string });
const optionalText = (key: string, env: string) => defineSetting<string | null>({ key, env, default: '', check: checks.nullableString });

export const TASK_SETTINGS = {
  TASK_MODEL: optionalText('task.model.default', 'TASK_MODEL'),
  TASK_MODEL_EXTERNAL: optionalText('task.model.external', 'TASK_MODEL_EXTERNAL'),
  TITLE_GENERATION_PROMPT_TEMPLATE: text('task.title.prompt_template', 'TITLE_GENERATION_PROMPT_TEMPLATE'),
  IMAGE_PROMPT_GENERATION_PROMPT_TEMPLATE: text('task.image.prompt_template', 'IMAGE_PROMPT_GENERATION_PROMPT_TEMPLATE'),
  ENABLE_AUTOCOMPLETE_GENERATION: AUTOCOMPLETE_GENERATION,
  AUTOCOMPLETE_GENERATION_INPUT_MAX_LENGTH: defineSetting({
    key: 'task.autocomplete.input_max_length',
    env: 'AUTOCOMPLETE_GENERATION_INPUT_MAX_LENGTH',
    default: -1,
    parse: parsers.int,
    check: checks.int,
  }),
  AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE: text('task.autocomplete.prompt_template', 'AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE'),
  TAGS_GENERATION_PROMPT_TEMPLATE: text('task.tags.prompt_template', 'TAGS_GENERATION_PROMPT_TEMPLATE'),
  FOLLOW_UP_GENERATION_PROMPT_TEMPLATE: text('task.follow_up.prompt_template', 'FOLLOW_UP_GENERATION_PROMPT_TEMPLATE'),
  ENABLE_FOLLOW_UP_GENERATION: flag('task.follow_up.enable', 'ENABLE_FOLLOW_UP_GENERATION', true),
  ENABLE_TAGS_GENERATION: flag('task.tags.enable', 'ENABLE_TAGS_GENERATION', true),
  ENABLE_TITLE_GENERATION: flag('task.title.enable', 'ENABLE_TITLE_GENERATION', true),
  ENABLE_SEARCH_QUERY_GENERATION: flag('task.query.search.enable', 'ENABLE_SEARCH_QUERY_GENERATION', true),
  ENABLE_RETRIEVAL_QUERY_GENERATION: flag('task.query.retrieval.enable', 'ENABLE_RETRIEVAL_QUERY_GENERATION', true),
  QUERY_GENERATION_PROMPT_TEMPLATE: text('task.query.prompt_template', 'QUERY_GENERATION_PROMPT_TEMPLATE'),
  TOOLS_FUNCTION_CALLING_PROMPT_TEMPLATE: text('task.tools.prompt_template', 'TOOLS_FUNCTION_CALLING_PROMPT_TEMPLATE'),
  ENABLE_VOICE_MODE_PROMPT: flag('task.voice.prompt.enable', 'ENABLE_VOICE_MODE_PROMPT', true),
  VOICE_MODE_PROMPT_TEMPLATE: optionalText('task.voice.prompt_template', 'VOICE_MODE_PROMPT_TEMPLATE'),
} satisfies Record<string, SettingDefinition<unknown>>;

export type TaskConfig = { [K in keyof typeof TASK_SETTINGS]: (typeof TASK_SETTINGS)[K] extends SettingDefinition<infer T> ? T : never };
