import type { Core } from '../../core/context.js';
import { badRequest } from '../../core/http/errors.js';
import type { EvaluationsService } from '../evaluations/service.js';
import type { ChatMessageModel, DailyQuery, DailyStatsResponse, MessagesQuery, ModelChatsQuery, ScopeQuery, TokenUsageResponse, UsersQuery } from './schemas.js';
import { AnalyticsStore, type AnalyticsScope } from './store.js';

const DAY = 86400;
const HOUR = 3600;
const CHAT_ORDERS = new Set(['title', 'updated_at', 'user_name']);
/** A filled series stops at this many points (a wide hourly range would otherwise be huge). */
const MAX_FILLED_POINTS = 24 * 366;

const utcDate = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);
const utcHour = (seconds: number) => `${new Date(seconds * 1000).toISOString().slice(0, 13).replace('T', ' ')}:00`;

/**
 * Admin analytics (`/api/v1/analytics`, 0.11.0): what was asked of which model,
 * by whom, and at what token cost, from the stored chat messages. Dates are UTC
 * days. See docs/analytics.md.
 */
export class AnalyticsService {
  constructor(
    private readonly core: Core,
    private readonly evaluations: EvaluationsService,
  ) {}

  private store(): AnalyticsStore {
    return new AnalyticsStore(this.core.db);
  }

  private scope(query: ScopeQuery): AnalyticsScope {
    if (query.start_date !== undefined && query.end_date !== undefined && query.start_date > query.end_date) throw badRequest('start_date must be before end_date');
    return { start: query.start_date || undefined, end: query.end_date || undefined, groupId: query.group_id || undefined };
  }

  async models(query: ScopeQuery) {
    return { models: await this.store().byModel(this.scope(query)) };
  }

  async users(query: UsersQuery) {
    const users = await this.store().byUser(this.scope(query), query.limit ?? 50);
    return {
      users: users.map((u) => ({ user_id: u.user_id, name: u.name, email: u.email, count: u.count, input_tokens: u.input_tokens, output_tokens: u.output_tokens, total_tokens: u.input_tokens + u.output_tokens })),
    };
  }

  summary(query: ScopeQuery) {
    return this.store().summary(this.scope(query));
  }

  /** Messages per model and day (or hour); with both dates, every day of the range is present. */
  async daily(query: DailyQuery): Promise<DailyStatsResponse> {
    const scope = this.scope(query);
    const hourly = query.granularity === 'hourly';
    const series = new Map<string, Record<string, number>>();
    const add = (key: string, model: string, count: number) => {
      const models = series.get(key) ?? {};
      models[model] = (models[model] ?? 0) + count;
      series.set(key, models);
    };
    if (hourly) for (const r of await this.store().hourly(scope)) add(utcHour(r.hour * HOUR), r.model_id, r.count);
    else for (const r of await this.store().daily(scope)) add(utcDate(r.day * DAY), r.model_id, r.count);
    if (scope.start !== undefined && scope.end !== undefined) {
      const step = hourly ? HOUR : DAY;
      const label = hourly ? utcHour : utcDate;
      for (let t = Math.floor(scope.start / step) * step, n = 0; t <= scope.end && n < MAX_FILLED_POINTS; t += step, n++) if (!series.has(label(t))) series.set(label(t), {});
    }
    return { data: [...series.keys()].sort().map((date) => ({ date, models: series.get(date)! })) };
  }

  async tokens(query: ScopeQuery): Promise<TokenUsageResponse> {
    const rows = await this.store().tokensByModel(this.scope(query));
    const models = rows
      .map((r) => ({ model_id: r.model_id, input_tokens: r.input_tokens, output_tokens: r.output_tokens, total_tokens: r.input_tokens + r.output_tokens, message_count: r.token_messages }))
      .sort((a, b) => b.total_tokens - a.total_tokens || a.model_id.localeCompare(b.model_id));
    const input = models.reduce((sum, m) => sum + m.input_tokens, 0);
    const output = models.reduce((sum, m) => sum + m.output_tokens, 0);
    return { models, total_input_tokens: input, total_output_tokens: output, total_tokens: input + output };
  }

  /** A chat's messages, or a model's or user's (paged); nothing without one of them, as the reference. */
  async messages(query: MessagesQuery): Promise<ChatMessageModel[]> {
    if (!query.chat_id && !query.model_id && !query.user_id) return [];
    const rows = await this.store().messages({
      chatId: query.chat_id || undefined,
      modelId: query.chat_id ? undefined : query.model_id || undefined,
      userId: query.chat_id || query.model_id ? undefined : query.user_id || undefined,
      start: query.chat_id ? undefined : query.start_date || undefined,
      end: query.chat_id ? undefined : query.end_date || undefined,
      skip: query.skip ?? 0,
      limit: query.limit ?? 50,
    });
    return rows.map((r) => ({
      // The reference's composite id of a message row.
      id: `${r.chat_id}-${r.id}`,
      chat_id: r.chat_id,
      user_id: r.user_id,
      role: r.role,
      parent_id: r.parent_id,
      content: r.content ?? '',
      output: null,
      model_id: r.model_id,
      files: null,
      sources: null,
      embeds: null,
      done: r.done === true || r.done === 1,
      status_history: null,
      error: null,
      usage: r.usage,
      context_summary: null,
      created_at: Number(r.created_at),
      updated_at: Number(r.updated_at),
    }));
  }

  chats(modelId: string, query: ModelChatsQuery) {
    return this.store().chatsOfModel(modelId, {
      start: query.start_date || undefined,
      end: query.end_date || undefined,
      orderBy: CHAT_ORDERS.has(query.order_by ?? '') ? (query.order_by as 'title' | 'updated_at' | 'user_name') : 'updated_at',
      direction: query.direction === 'asc' ? 'asc' : 'desc',
      skip: query.skip ?? 0,
      limit: query.limit ?? 50,
    });
  }

  /** The model's feedback history (the evaluations area's) and its chats' top ten tags. */
  async overview(modelId: string, days = 30) {
    const { history } = await this.evaluations.history(modelId, days);
    return { history, tags: await this.store().tagsOfModel(modelId, 10) };
  }
}
