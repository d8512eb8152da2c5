import { type Static, Type } from '@sinclair/typebox';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/** Evaluations (models/feedbacks.py, routers/evaluations.py). */

/** A thumbs up (1), down (-1) or neutral (0), as a number or its text; anything else is a 422. */
const Rating = Type.Union([Type.Integer({ minimum: -1, maximum: 1 }), Type.Union([Type.Literal('1'), Type.Literal('0'), Type.Literal('-1')])]);

/** RatingData (`extra='allow'`: the frontend's `details`, `tags` and the like pass through). */
const RatingData = Type.Object(
  {
    rating: Maybe(Rating),
    model_id: Maybe(Type.String()),
    sibling_model_ids: Maybe(Type.Array(Type.String())),
    reason: Maybe(Type.String()),
    comment: Maybe(Type.String()),
  },
  { additionalProperties: true },
);

/** FeedbackForm (`extra='ignore'`: a client's id, user_id, version and timestamps are dropped). */
export const FeedbackForm = Type.Object({
  type: Type.String(),
  data: Maybe(RatingData),
  meta: Maybe(JsonObject()),
  snapshot: Maybe(Type.Object({ chat: Maybe(JsonObject()) }, { additionalProperties: true })),
});
export type FeedbackForm = Static<typeof FeedbackForm>;

const feedbackFields = {
  id: Type.String(),
  user_id: Type.String(),
  version: Type.Integer(),
  type: Type.String(),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
};

export const FeedbackModel = Type.Object({ ...feedbackFields, snapshot: Nullable(JsonObject()) });
export type FeedbackModel = Static<typeof FeedbackModel>;

const FeedbackUser = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Type.String(),
  role: Type.String(),
  last_active_at: Type.Integer(),
  updated_at: Type.Integer(),
  created_at: Type.Integer(),
});

/** FeedbackListResponse: a page of feedbacks (without snapshots) with their authors, and the total. */
export const FeedbackListResponse = Type.Object({
  items: Type.Array(Type.Object({ ...feedbackFields, user: Nullable(FeedbackUser) })),
  total: Type.Integer(),
});
export type FeedbackListResponse = Static<typeof FeedbackListResponse>;

export const FeedbackIdResponse = Type.Object({ id: Type.String(), user_id: Type.String(), created_at: Type.Integer(), updated_at: Type.Integer() });

export const FeedbackListQuery = Type.Object({
  order_by: Type.Optional(Type.String()),
  direction: Type.Optional(Type.String()),
  page: Type.Optional(Type.Integer({ default: 1 })),
  model_id: Type.Optional(Type.String()),
});
export type FeedbackListQuery = Static<typeof FeedbackListQuery>;

export const PageQuery = Type.Object({ page: Type.Optional(Type.Integer({ default: 1 })) });
export const ModelIdQuery = Type.Object({ model_id: Type.Optional(Type.String()) });
export const FeedbackParams = Type.Object({ id: Type.String() });

const TagCount = Type.Object({ tag: Type.String(), count: Type.Integer() });

export const LeaderboardResponse = Type.Object({
  entries: Type.Array(
    Type.Object({ model_id: Type.String(), rating: Type.Integer(), won: Type.Integer(), lost: Type.Integer(), count: Type.Integer(), top_tags: Type.Array(TagCount) }),
  ),
});
export type LeaderboardResponse = Static<typeof LeaderboardResponse>;
export const LeaderboardQuery = Type.Object({ query: Type.Optional(Type.String({ maxLength: 1000 })) });

export const HistoryEntry = Type.Object({ date: Type.String(), won: Type.Integer(), lost: Type.Integer() });
export type HistoryEntry = Static<typeof HistoryEntry>;
export const ModelHistoryResponse = Type.Object({ model_id: Type.String(), history: Type.Array(HistoryEntry) });
export const ModelHistoryParams = Type.Object({ model_id: Type.String() });
export const ModelHistoryQuery = Type.Object({ days: Type.Optional(Type.Integer({ default: 30, minimum: 0, maximum: 3660 })) });

/** The evaluation config: arena models on or off, and the configured arena models. */
export const EvaluationConfig = Type.Object({
  ENABLE_EVALUATION_ARENA_MODELS: Type.Boolean(),
  EVALUATION_ARENA_MODELS: Type.Array(JsonObject()),
});
export type EvaluationConfig = Static<typeof EvaluationConfig>;
export const UpdateConfigForm = Type.Object({
  ENABLE_EVALUATION_ARENA_MODELS: Maybe(Type.Boolean()),
  EVALUATION_ARENA_MODELS: Maybe(Type.Array(JsonObject())),
});
export type UpdateConfigForm = Static<typeof UpdateConfigForm>;
