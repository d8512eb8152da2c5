import { type Static, Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/** Automations (models/automations.py with 0.11.0's `folder_id`); timestamps in nanoseconds. */

const Terminal = Type.Object({ server_id: Type.String(), cwd: Maybe(Type.String()) });

/** AutomationData: what a run sends, and when (an RFC 5545 RRULE in the owner's time zone). */
export const AutomationData = Type.Object(
  { prompt: Type.String({ minLength: 1, maxLength: 100_000 }), model_id: Type.String({ minLength: 1 }), rrule: Type.String({ minLength: 1, maxLength: 2000 }), terminal: Maybe(Terminal) },
  { additionalProperties: true },
);

export const AutomationForm = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 500 }),
  data: AutomationData,
  meta: Maybe(JsonObject()),
  is_active: Maybe(Type.Boolean()),
  folder_id: Maybe(Type.String()),
});
export type AutomationForm = Static<typeof AutomationForm>;

/** AutomationRunModel, with how long the run took and what the model answered (Parley's). */
export const AutomationRunModel = Type.Object({
  id: Type.String(),
  automation_id: Type.String(),
  chat_id: Nullable(Type.String()),
  status: Type.String(),
  error: Nullable(Type.String()),
  output: Nullable(Type.String()),
  duration_ms: Nullable(Type.Integer()),
  created_at: Type.Integer(),
});
export type AutomationRunModel = Static<typeof AutomationRunModel>;

export const AutomationModel = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  data: JsonObject(),
  meta: Nullable(JsonObject()),
  folder_id: Nullable(Type.String()),
  is_active: Type.Boolean(),
  last_run_at: Nullable(Type.Integer()),
  next_run_at: Nullable(Type.Integer()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
export type AutomationModel = Static<typeof AutomationModel>;

export const AutomationResponse = Type.Object({
  ...AutomationModel.properties,
  last_run: Maybe(AutomationRunModel),
  next_runs: Maybe(Type.Array(Type.Integer())),
});
export type AutomationResponse = Static<typeof AutomationResponse>;

export const AutomationListResponse = Type.Object({ items: Type.Array(AutomationResponse), total: Type.Integer() });

export const AutomationListQuery = Type.Object({
  query: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
  page: Type.Optional(Type.Integer({ default: 1 })),
});
export type AutomationListQuery = Static<typeof AutomationListQuery>;

export const AutomationRunsQuery = Type.Object({
  skip: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
});
export type AutomationRunsQuery = Static<typeof AutomationRunsQuery>;
