import { randomUUID } from 'node:crypto';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { HttpError, badRequest, notFound } from '../../core/http/errors.js';
import type { Budget, ModelPrices, UsageLimit, UsageLimitForm } from './schemas.js';
import { MODEL_PRICES } from './settings.js';
import { LimitsStore } from './store.js';

const DAY = 86400;

/** The current period of a limit: its start and the moment it resets (UTC days and calendar months). */
function periodOf(period: UsageLimit['period'], now: number): { start: number; reset: number } {
  if (period === 'day') {
    const start = Math.floor(now / DAY) * DAY;
    return { start, reset: start + DAY };
  }
  const date = new Date(now * 1000);
  return { start: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / 1000, reset: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / 1000 };
}

const PERIODS: UsageLimit['period'][] = ['day', 'month'];

/**
 * Usage limits (beyond the reference): budgets of requests, tokens and cost per
 * user or per group (each member's own budget), per UTC day or calendar month.
 * Requests are counted in `usage_counter` when admitted; tokens are those of the
 * user's stored answers (`message_rollup`), cost those tokens at the admin's
 * prices. Everything is in the database, so every instance sees the same
 * figures. `admit` is the one hook the chat pipeline and the proxies call before
 * asking a provider. See docs/evaluations.md.
 */
export class LimitsService {
  constructor(private readonly core: Core) {}

  private store(): LimitsStore {
    return new LimitsStore(this.core.db);
  }

  // ---- admin -------------------------------------------------------------------

  async list(): Promise<{ limits: UsageLimit[]; prices: ModelPrices }> {
    return { limits: await this.store().all(), prices: this.prices() };
  }

  private checked(form: UsageLimitForm): Omit<UsageLimit, 'id' | 'created_at' | 'updated_at'> {
    const { max_requests = null, max_tokens = null, max_cost = null } = form;
    if (max_requests === null && max_tokens === null && max_cost === null) throw badRequest('A limit needs max_requests, max_tokens or max_cost');
    return { scope: form.scope, subject_id: form.subject_id, period: form.period, max_requests, max_tokens, max_cost };
  }

  async create(form: UsageLimitForm): Promise<UsageLimit> {
    const now = this.core.clock.now();
    const limit: UsageLimit = { id: randomUUID(), ...this.checked(form), created_at: now, updated_at: now };
    await this.store().insert(limit);
    return limit;
  }

  async update(id: string, form: UsageLimitForm): Promise<UsageLimit> {
    const store = this.store();
    const existing = await store.byId(id);
    if (!existing) throw notFound();
    const limit: UsageLimit = { ...existing, ...this.checked(form), updated_at: this.core.clock.now() };
    await store.update(limit);
    return limit;
  }

  async delete(id: string): Promise<boolean> {
    if (!(await this.store().delete(id))) throw notFound();
    return true;
  }

  prices(): ModelPrices {
    return this.core.settings.get(MODEL_PRICES) ?? {};
  }

  async setPrices(prices: ModelPrices): Promise<ModelPrices> {
    await this.core.settings.set({ [MODEL_PRICES.key]: prices }, this.core.clock.now());
    return this.prices();
  }

  // ---- budgets -----------------------------------------------------------------

  /** Every limit that applies to the user, with what the user used of it in the current period. */
  async budgets(user: UserRecord): Promise<Budget[]> {
    const limits = await this.store().applying(user.id);
    if (limits.length === 0) return [];
    const now = this.core.clock.now();
    const used = new Map<string, Budget['used']>();
    for (const period of PERIODS) {
      if (!limits.some((l) => l.period === period)) continue;
      const { start } = periodOf(period, now);
      used.set(period, await this.usedSince(user.id, period, start));
    }
    return limits.map((limit) => {
      const { start, reset } = periodOf(limit.period, now);
      return { ...limit, used: used.get(limit.period)!, period_start: start, reset_at: reset };
    });
  }

  private async usedSince(userId: string, period: string, start: number): Promise<Budget['used']> {
    const store = this.store();
    const prices = this.prices();
    const [requests, tokens] = await Promise.all([store.requests(userId, period, start), store.tokensSince(userId, Math.floor(start / DAY))]);
    let total = 0;
    let cost = 0;
    for (const { model_id, input, output } of tokens) {
      total += input + output;
      const price = prices[model_id];
      if (price) cost += (input * price.input + output * price.output) / 1_000_000;
    }
    return { requests, tokens: total, cost: Math.round(cost * 1e6) / 1e6 };
  }

  /**
   * Before a provider is asked for `requests` answers: 429 when a budget of the
   * user is spent (the limit and its reset time in `detail`), else the requests
   * are counted.
   */
  async admit(user: UserRecord, requests = 1): Promise<void> {
    for (const budget of await this.budgets(user)) {
      const reached =
        budget.max_requests !== null && budget.used.requests + requests > budget.max_requests
          ? `${budget.max_requests} requests`
          : budget.max_tokens !== null && budget.used.tokens >= budget.max_tokens
            ? `${budget.max_tokens} tokens`
            : budget.max_cost !== null && budget.used.cost >= budget.max_cost
              ? `a cost of ${budget.max_cost}`
              : null;
      if (reached) {
        const reset = new Date(budget.reset_at * 1000).toISOString();
        throw new HttpError(429, `Usage limit reached: ${reached} per ${budget.period} (${budget.scope} limit). It resets at ${reset}.`);
      }
    }
    const now = this.core.clock.now();
    for (const period of PERIODS) await this.store().countRequests(user.id, period, periodOf(period, now).start, requests);
  }
}
