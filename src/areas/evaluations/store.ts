import { sql } from 'kysely';
import type { Db, DialectName } from '../../core/db/database.js';
import { fromJson, toJson } from '../../core/db/json.js';

type Json = Record<string, unknown>;

export interface FeedbackRecord {
  id: string;
  user_id: string;
  version: number;
  type: string;
  data: Json | null;
  meta: Json | null;
  snapshot: Json | null;
  created_at: number;
  updated_at: number;
}

export interface FeedbackAuthor {
  id: string;
  name: string;
  email: string;
  role: string;
  last_active_at: number;
  updated_at: number;
  created_at: number;
}

export type FeedbackWithAuthor = Omit<FeedbackRecord, 'snapshot'> & { user: FeedbackAuthor | null };

export interface FeedbackPageFilter {
  userId?: string;
  modelId?: string;
  orderBy?: 'username' | 'model_id' | 'rating' | 'updated_at' | 'created_at';
  direction: 'asc' | 'desc';
  skip: number;
  limit: number;
}

const modelIdOf = (data: Json | null) => (data && typeof data.model_id === 'string' ? data.model_id : null);

function record(row: { id: string; user_id: string; version: number | string; type: string; data: string | null; meta: string | null; snapshot?: string | null; created_at: number | string; updated_at: number | string }): FeedbackRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    version: Number(row.version),
    type: row.type,
    data: fromJson(row.data, null),
    meta: fromJson(row.meta, null),
    snapshot: fromJson(row.snapshot ?? null, null),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** The `feedback` table. */
export class FeedbackStore {
  constructor(
    private readonly db: Db,
    private readonly dialect: DialectName,
  ) {}

  async insert(feedback: FeedbackRecord): Promise<void> {
    await this.db
      .insertInto('feedback')
      .values({ ...feedback, model_id: modelIdOf(feedback.data), data: toJson(feedback.data), meta: toJson(feedback.meta), snapshot: toJson(feedback.snapshot) })
      .execute();
  }

  async byId(id: string, userId?: string): Promise<FeedbackRecord | null> {
    let query = this.db.selectFrom('feedback').selectAll().where('id', '=', id);
    if (userId) query = query.where('user_id', '=', userId);
    const row = await query.executeTakeFirst();
    return row ? record(row) : null;
  }

  async update(feedback: FeedbackRecord): Promise<void> {
    await this.db
      .updateTable('feedback')
      .set({ model_id: modelIdOf(feedback.data), data: toJson(feedback.data), meta: toJson(feedback.meta), snapshot: toJson(feedback.snapshot), updated_at: feedback.updated_at })
      .where('id', '=', feedback.id)
      .execute();
  }

  async delete(id: string, userId?: string): Promise<boolean> {
    let query = this.db.deleteFrom('feedback').where('id', '=', id);
    if (userId) query = query.where('user_id', '=', userId);
    const result = await query.executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Every feedback, or a user's; true when any was deleted. */
  async deleteAll(userId?: string): Promise<boolean> {
    let query = this.db.deleteFrom('feedback');
    if (userId) query = query.where('user_id', '=', userId);
    const result = await query.executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async all(modelId?: string): Promise<FeedbackRecord[]> {
    let query = this.db.selectFrom('feedback').selectAll();
    if (modelId) query = query.where('model_id', '=', modelId);
    return (await query.orderBy('updated_at', 'desc').orderBy('id').execute()).map(record);
  }

  async ids(): Promise<{ id: string; user_id: string; created_at: number; updated_at: number }[]> {
    const rows = await this.db.selectFrom('feedback').select(['id', 'user_id', 'created_at', 'updated_at']).orderBy('updated_at', 'desc').orderBy('id').execute();
    return rows.map((r) => ({ id: r.id, user_id: r.user_id, created_at: Number(r.created_at), updated_at: Number(r.updated_at) }));
  }

  async modelIds(): Promise<string[]> {
    const rows = await this.db.selectFrom('feedback').select('model_id').distinct().where('model_id', 'is not', null).orderBy('model_id').execute();
    return rows.map((r) => r.model_id!).filter(Boolean);
  }

  /** What the leaderboard reads: `data` only, oldest first (Elo depends on the order of the matches). */
  async leaderboardData(): Promise<{ id: string; data: Json | null }[]> {
    const rows = await this.db.selectFrom('feedback').select(['id', 'data']).orderBy('created_at').orderBy('id').execute();
    return rows.map((r) => ({ id: r.id, data: fromJson(r.data, null) }));
  }

  /** A model's feedbacks since `since` (all when null): time and data. */
  async ofModel(modelId: string, since: number | null): Promise<{ created_at: number; data: Json | null }[]> {
    let query = this.db.selectFrom('feedback').select(['created_at', 'data']).where('model_id', '=', modelId);
    if (since !== null) query = query.where('created_at', '>=', since);
    return (await query.orderBy('created_at').execute()).map((r) => ({ created_at: Number(r.created_at), data: fromJson(r.data, null) }));
  }

  private ratingText() {
    return this.dialect === 'postgres' ? sql<string>`(feedback.data::jsonb ->> 'rating')` : sql<string>`cast(json_extract(feedback.data, '$.rating') as text)`;
  }

  /** A page of feedbacks (no snapshots) with their authors, and how many match. */
  async page(filter: FeedbackPageFilter): Promise<{ items: FeedbackWithAuthor[]; total: number }> {
    let query = this.db.selectFrom('feedback').innerJoin('user', 'user.id', 'feedback.user_id');
    if (filter.userId) query = query.where('feedback.user_id', '=', filter.userId);
    if (filter.modelId) query = query.where('feedback.model_id', '=', filter.modelId);
    const total = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    const order = {
      username: sql`"user".name`,
      model_id: sql`feedback.model_id`,
      rating: this.ratingText(),
      updated_at: sql`feedback.updated_at`,
      created_at: sql`feedback.created_at`,
    }[filter.orderBy ?? 'created_at'];
    const rows = await query
      .select([
        'feedback.id',
        'feedback.user_id',
        'feedback.version',
        'feedback.type',
        'feedback.data',
        'feedback.meta',
        'feedback.created_at',
        'feedback.updated_at',
        'user.name as user_name',
        'user.email as user_email',
        'user.role as user_role',
        'user.last_active_at as user_last_active_at',
        'user.updated_at as user_updated_at',
        'user.created_at as user_created_at',
      ])
      .orderBy(order, filter.direction)
      .orderBy('feedback.id')
      .offset(filter.skip)
      .limit(filter.limit)
      .execute();
    return {
      total: Number(total?.n ?? 0),
      items: rows.map((r) => {
        const { snapshot: _snapshot, ...feedback } = record(r);
        return {
          ...feedback,
          user: {
            id: r.user_id,
            name: r.user_name,
            email: r.user_email,
            role: r.user_role,
            last_active_at: Number(r.user_last_active_at),
            updated_at: Number(r.user_updated_at),
            created_at: Number(r.user_created_at),
          },
        };
      }),
    };
  }
}
