import { type Static, Type } from '@sinclair/typebox';
import { Maybe, Nullable } from '../../core/http/schema.js';

/** Usage limits (beyond the reference): budgets per user or group, per day or month. */

const Scope = Type.Union([Type.Literal('user'), Type.Literal('group')]);
const Period = Type.Union([Type.Literal('day'), Type.Literal('month')]);
const Count = Type.Integer({ minimum: 0 });

export const UsageLimitForm = Type.Object({
  scope: Scope,
  subject_id: Type.String({ minLength: 1 }),
  period: Period,
  max_requests: Maybe(Count),
  max_tokens: Maybe(Count),
  max_cost: Maybe(Type.Number({ minimum: 0 })),
});
export type UsageLimitForm = Static<typeof UsageLimitForm>;

export const UsageLimit = Type.Object({
  id: Type.String(),
  scope: Scope,
  subject_id: Type.String(),
  period: Period,
  max_requests: Nullable(Type.Integer()),
  max_tokens: Nullable(Type.Integer()),
  max_cost: Nullable(Type.Number()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
export type UsageLimit = Static<typeof UsageLimit>;

/** A limit as it applies to one user now: what was used in the current period and when it resets. */
export const Budget = Type.Object({
  ...UsageLimit.properties,
  used: Type.Object({ requests: Type.Integer(), tokens: Type.Integer(), cost: Type.Number() }),
  period_start: Type.Integer(),
  reset_at: Type.Integer(),
});
export type Budget = Static<typeof Budget>;

const Price = Type.Object({ input: Type.Number({ minimum: 0 }), output: Type.Number({ minimum: 0 }) });
export const ModelPrices = Type.Record(Type.String(), Price);
export type ModelPrices = Static<typeof ModelPrices>;

export const LimitsResponse = Type.Object({ limits: Type.Array(UsageLimit), prices: ModelPrices });
export const LimitParams = Type.Object({ id: Type.String() });
