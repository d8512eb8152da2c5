import { type Static, Type } from '@sinclair/typebox';
import { JsonObject } from '../../core/http/schema.js';

/** The chat request: a free-form dict in the reference (the frontend's fields are listed in docs/chat-pipeline.md). */
export const ChatCompletionBody = JsonObject();

/** The web client mode's immediate answer. */
export const TasksStarted = Type.Object({ status: Type.Boolean(), task_ids: Type.Array(Type.String()), chat_id: Type.String() });

export const ActionParams = Type.Object({ action_id: Type.String() });
export type ActionParams = Static<typeof ActionParams>;
