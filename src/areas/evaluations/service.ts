import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import type { Embedder } from '../../core/retrieval/embeddings.js';
import type { ChatsService } from '../chats/service.js';
import { ARENA_ENABLE, ARENA_MODELS } from '../models/settings.js';
import { timeOrderedId } from '../users/service.js';
import { allTags, eloStandings, queryWeights, topTags } from './leaderboard.js';
import type { EvaluationConfig, FeedbackForm, FeedbackListQuery, FeedbackListResponse, FeedbackModel, HistoryEntry, LeaderboardResponse, UpdateConfigForm } from './schemas.js';
import { type FeedbackRecord, FeedbackStore, type FeedbackPageFilter } from './store.js';

type Json = Record<string, unknown>;

/** Feedbacks per page (PAGE_ITEM_COUNT). */
const PAGE_SIZE = 30;
const DAY = 86400;
const ORDERS = new Set(['username', 'model_id', 'rating', 'updated_at']);

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The stored `data` and `snapshot`: the declared fields always present (null when unset), as pydantic dumps them. */
const ratingData = (data: Json): Json => ({ rating: null, model_id: null, sibling_model_ids: null, reason: null, comment: null, ...data });
const snapshotData = (snapshot: Json): Json => ({ chat: null, ...snapshot });

const utcDate = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);

/**
 * Feedback on answers and the arena leaderboard (`/api/v1/evaluations`). A user
 * rates answers of chats they can read and manages their own feedback; admins
 * see, export and delete everyone's. See docs/evaluations.md.
 */
export class EvaluationsService {
  constructor(
    private readonly core: Core,
    private readonly chats: ChatsService,
    private readonly embedder: () => Embedder | null,
  ) {}

  private store(db = this.core.db): FeedbackStore {
    return new FeedbackStore(db, this.core.database.dialect);
  }

  /** A feedback names the chat it rates in `meta.chat_id`: only a chat the user can read. */
  private async requireReadableChat(user: UserRecord, form: FeedbackForm): Promise<void> {
    const chatId = (form.meta as Json | null | undefined)?.chat_id;
    if (chatId === undefined || chatId === null) return;
    if (typeof chatId !== 'string' || !(await this.chats.readable(user, chatId))) throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  private publish(user: UserRecord, event: string, subjectId: string, subjectType = 'feedback', data?: Json) {
    return this.core.events.publish({ event, actor: user, subjectId, subjectType, ...(data ? { data } : {}) });
  }

  // ---- feedback --------------------------------------------------------------

  async create(user: UserRecord, form: FeedbackForm): Promise<FeedbackModel> {
    await this.requireReadableChat(user, form);
    const now = this.core.clock.now();
    const feedback: FeedbackRecord = {
      // Time-ordered: the leaderboard replays matches in the order they were rated.
      id: timeOrderedId(this.core.clock.nowMs()),
      user_id: user.id,
      version: 0,
      type: form.type,
      data: form.data ? ratingData(form.data) : null,
      meta: form.meta ?? null,
      snapshot: form.snapshot ? snapshotData(form.snapshot) : null,
      created_at: now,
      updated_at: now,
    };
    await this.store().insert(feedback);
    await this.publish(user, 'feedback.created', feedback.id, 'feedback', { rating: feedback.data?.rating ?? null });
    return feedback;
  }

  /** Admins read any feedback; a user only their own (404 otherwise). */
  async get(user: UserRecord, id: string): Promise<FeedbackModel> {
    const feedback = await this.store().byId(id, isAdmin(user) ? undefined : user.id);
    if (!feedback) throw notFound();
    return feedback;
  }

  /** Replaces the parts the form gives (data, meta, snapshot), as update_feedback_by_id. */
  async update(user: UserRecord, id: string, form: FeedbackForm): Promise<FeedbackModel> {
    const store = this.store();
    const feedback = await store.byId(id, isAdmin(user) ? undefined : user.id);
    if (!feedback) throw notFound();
    await this.requireReadableChat(user, form);
    if (form.data && Object.keys(form.data).length > 0) feedback.data = ratingData(form.data);
    if (form.meta && Object.keys(form.meta).length > 0) feedback.meta = form.meta;
    if (form.snapshot && Object.keys(form.snapshot).length > 0) feedback.snapshot = snapshotData(form.snapshot);
    feedback.updated_at = this.core.clock.now();
    await store.update(feedback);
    await this.publish(user, 'feedback.updated', feedback.id, 'feedback', { rating: feedback.data?.rating ?? null });
    return feedback;
  }

  async delete(user: UserRecord, id: string): Promise<boolean> {
    if (!(await this.store().delete(id, isAdmin(user) ? undefined : user.id))) throw notFound();
    await this.publish(user, 'feedback.deleted', id);
    return true;
  }

  /** `DELETE /feedbacks` (the user's own) and `DELETE /feedbacks/all` (admin: everyone's). */
  async deleteAll(user: UserRecord, everyone: boolean): Promise<boolean> {
    const deleted = await this.store().deleteAll(everyone ? undefined : user.id);
    if (deleted) await this.publish(user, 'feedback.deleted_all', everyone ? 'all' : user.id, everyone ? 'feedback' : 'user');
    return deleted;
  }

  async ofUser(user: UserRecord, page = 1): Promise<FeedbackListResponse> {
    return this.store().page({ userId: user.id, orderBy: 'updated_at', direction: 'desc', skip: (Math.max(1, page) - 1) * PAGE_SIZE, limit: PAGE_SIZE });
  }

  /** `GET /feedbacks/list` (admin): newest first unless ordered by name, model, rating or time. */
  async list(query: FeedbackListQuery): Promise<FeedbackListResponse> {
    const orderBy = query.order_by && ORDERS.has(query.order_by) ? (query.order_by as FeedbackPageFilter['orderBy']) : 'created_at';
    const direction = query.order_by && ORDERS.has(query.order_by) && query.direction === 'asc' ? 'asc' : 'desc';
    return this.store().page({ modelId: query.model_id || undefined, orderBy, direction, skip: (Math.max(1, query.page ?? 1) - 1) * PAGE_SIZE, limit: PAGE_SIZE });
  }

  export(modelId?: string): Promise<FeedbackRecord[]> {
    return this.store().all(modelId || undefined);
  }

  ids() {
    return this.store().ids();
  }

  modelIds(): Promise<string[]> {
    return this.store().modelIds();
  }

  // ---- leaderboard -------------------------------------------------------------

  /** Elo standings of every rated model, best first; a query re-weights feedbacks by how near their tags are to it. */
  async leaderboard(query?: string): Promise<LeaderboardResponse> {
    const feedbacks = await this.store().leaderboardData();
    const weights = query?.trim() ? await this.similarities(feedbacks, query.trim()) : undefined;
    const tags = topTags(feedbacks);
    const entries = [...eloStandings(feedbacks, weights)].map(([model_id, s]) => ({
      model_id,
      rating: Math.round(s.rating),
      won: s.won,
      lost: s.lost,
      count: s.won + s.lost,
      top_tags: tags.get(model_id) ?? [],
    }));
    return { entries: entries.sort((a, b) => b.rating - a.rating) };
  }

  /** Weights from the configured embedding engine; none (plain Elo) without one or when it fails, as the reference. */
  private async similarities(feedbacks: { id: string; data: Json | null }[], query: string): Promise<Map<string, number> | undefined> {
    const embedder = this.embedder();
    const tags = allTags(feedbacks);
    if (!embedder || tags.length === 0) return undefined;
    try {
      const [queryVector, ...tagVectors] = await embedder.embed([query, ...tags], 'query');
      return queryWeights(feedbacks, tags, tagVectors, queryVector!);
    } catch (error) {
      this.core.log.warn({ err: error }, 'leaderboard query embedding failed; ranking without it');
      return undefined;
    }
  }

  /** A model's wins and losses per UTC day over the last `days` days (0: since its first feedback). */
  async history(modelId: string, days = 30): Promise<{ model_id: string; history: HistoryEntry[] }> {
    const now = this.core.clock.now();
    const rows = await this.store().ofModel(modelId, days > 0 ? now - days * DAY : null);
    const counts = new Map<string, { won: number; lost: number }>();
    for (const { created_at, data } of rows) {
      const rating = String(data?.rating ?? '');
      if (rating !== '1' && rating !== '-1') continue;
      const day = counts.get(utcDate(created_at)) ?? { won: 0, lost: 0 };
      if (rating === '1') day.won++;
      else day.lost++;
      counts.set(utcDate(created_at), day);
    }
    const first = days > 0 ? now - (days - 1) * DAY : rows.length > 0 ? rows[0]!.created_at : now;
    const history: HistoryEntry[] = [];
    for (let t = Math.floor(first / DAY) * DAY; utcDate(t) <= utcDate(now); t += DAY) {
      const date = utcDate(t);
      history.push({ date, ...(counts.get(date) ?? { won: 0, lost: 0 }) });
    }
    return { model_id: modelId, history };
  }

  // ---- config ----------------------------------------------------------------

  config(): EvaluationConfig {
    const models = this.core.settings.get(ARENA_MODELS);
    return { ENABLE_EVALUATION_ARENA_MODELS: this.core.settings.get(ARENA_ENABLE) === true, EVALUATION_ARENA_MODELS: (Array.isArray(models) ? models : []).filter(isObject) };
  }

  /** Sets the fields given; arena models need an id each (the model list is keyed by it). */
  async updateConfig(user: UserRecord, form: UpdateConfigForm): Promise<EvaluationConfig> {
    const updates: Json = {};
    if (form.ENABLE_EVALUATION_ARENA_MODELS !== undefined && form.ENABLE_EVALUATION_ARENA_MODELS !== null) updates[ARENA_ENABLE.key] = form.ENABLE_EVALUATION_ARENA_MODELS;
    if (form.EVALUATION_ARENA_MODELS !== undefined && form.EVALUATION_ARENA_MODELS !== null) {
      if (form.EVALUATION_ARENA_MODELS.some((m: Json) => typeof m.id !== 'string' || !m.id)) throw badRequest('Every arena model needs an id');
      updates[ARENA_MODELS.key] = form.EVALUATION_ARENA_MODELS;
    }
    await this.core.settings.set(updates, this.core.clock.now());
    const config = this.config();
    await this.core.events.publish({
      event: 'config.updated',
      actor: user,
      subjectId: 'evaluation',
      subjectType: 'config',
      data: { keys: Object.keys(updates), arena_enabled: config.ENABLE_EVALUATION_ARENA_MODELS, arena_model_count: config.EVALUATION_ARENA_MODELS.length },
    });
    return config;
  }
}
