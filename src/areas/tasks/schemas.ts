import { type Static, Type } from '@sinclair/typebox';
import { JsonObject, Nullable } from '../../core/http/schema.js';

/**
 * TaskConfigForm (routers/tasks.py): every field is required, `null` allowed
 * only where the reference has `Optional`. 0.11.0 requires
 * AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE and adds ENABLE_VOICE_MODE_PROMPT.
 */
export const TaskConfigForm = Type.Object({
  TASK_MODEL: Nullable(Type.String()),
  TASK_MODEL_EXTERNAL: Nullable(Type.String()),
  ENABLE_TITLE_GENERATION: Type.Boolean(),
  TITLE_GENERATION_PROMPT_TEMPLATE: Type.String(),
  IMAGE_PROMPT_GENERATION_PROMPT_TEMPLATE: Type.String(),
  ENABLE_AUTOCOMPLETE_GENERATION: Type.Boolean(),
  AUTOCOMPLETE_GENERATION_INPUT_MAX_LENGTH: Type.Integer(),
  AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE: Type.String(),
  TAGS_GENERATION_PROMPT_TEMPLATE: Type.String(),
  FOLLOW_UP_GENERATION_PROMPT_TEMPLATE: Type.String(),
  ENABLE_FOLLOW_UP_GENERATION: Type.Boolean(),
  ENABLE_TAGS_GENERATION: Type.Boolean(),
  ENABLE_SEARCH_QUERY_GENERATION: Type.Boolean(),
  ENABLE_RETRIEVAL_QUERY_GENERATION: Type.Boolean(),
  QUERY_GENERATION_PROMPT_TEMPLATE: Type.String(),
  TOOLS_FUNCTION_CALLING_PROMPT_TEMPLATE: Type.String(),
  ENABLE_VOICE_MODE_PROMPT: Type.Boolean(),
  VOICE_MODE_PROMPT_TEMPLATE: Nullable(Type.String()),
});
export type TaskConfigForm = Static<typeof TaskConfigForm>;

/** The stored values (the same fields; a stored value may be of any JSON type after an import). */
export const TaskConfigResponse = Type.Object(Object.fromEntries(Object.keys(TaskConfigForm.properties).map((key) => [key, Type.Unknown()])));

export const TaskBody = JsonObject();

export const TaskList = Type.Object({ tasks: Type.Array(Type.String()) });
export const ChatTaskIds = Type.Object({ task_ids: Type.Array(Type.String()) });
export const StopResponse = Type.Object({ status: Type.Boolean(), message: Type.String() });
export const TaskIdParams = Type.Object({ task_id: Type.String() });
export const ChatIdParams = Type.Object({ chat_id: Type.String() });
