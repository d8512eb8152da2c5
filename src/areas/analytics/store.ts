import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson } from '../../core/db/json.js';

const DAY = 86400;

/** Who and when an analytics figure covers: epoch seconds, both ends included; a group's members only. */
export interface AnalyticsScope {
  start?: number;
  end?: number;
  groupId?: string;
}

export interface FactTotals {
  messages: number;
  input_tokens: number;
  output_tokens: number;
  token_messages: number;
}

const num = (value: unknown) => Number(value ?? 0);

/**
 * The assistant messages of a scope as rows of (day, model_id, user_id, chat_id,
 * messages, tokens): whole UTC days from `message_rollup`, the partial days at
 * the ends from `chat_message` (one row per message). Summing or counting
 * distinct values over it gives exact figures while reading only the rollup for
 * everything but the ends.
 */
function facts(scope: AnalyticsScope): RawBuilder<unknown> {
  const { start, end } = scope;
  // Whole days [firstDay, lastDay]; raw messages before and after them.
  const firstDay = start === undefined ? null : Math.ceil(start / DAY);
  const lastDay = end === undefined ? null : Math.floor((end + 1) / DAY) - 1;
  const rollupWhere: RawBuilder<unknown>[] = [];
  if (firstDay !== null) rollupWhere.push(sql`day >= ${firstDay}`);
  if (lastDay !== null) rollupWhere.push(sql`day <= ${lastDay}`);
  const edges: RawBuilder<unknown>[] = [];
  if (firstDay !== null && lastDay !== null && firstDay > lastDay) {
    edges.push(sql`(created_at >= ${start} AND created_at <= ${end})`);
    rollupWhere.push(sql`1 = 0`);
  } else {
    if (start !== undefined && start < firstDay! * DAY) edges.push(sql`(created_at >= ${start} AND created_at < ${firstDay! * DAY})`);
    if (end !== undefined && end >= (lastDay! + 1) * DAY) edges.push(sql`(created_at >= ${(lastDay! + 1) * DAY} AND created_at <= ${end})`);
  }
  const members = scope.groupId ? sql`user_id IN (SELECT user_id FROM group_member WHERE group_id = ${scope.groupId})` : sql`1 = 1`;
  const rollup = sql`SELECT day, model_id, user_id, chat_id, messages, input_tokens, output_tokens, token_messages FROM message_rollup
    WHERE ${rollupWhere.length > 0 ? sql.join(rollupWhere, sql` AND `) : sql`1 = 1`} AND ${members}`;
  // One branch per end, so that each is a range of the (role, created_at) index.
  const messages = edges.map(
    (range) => sql`SELECT created_at / ${sql.lit(DAY)}, coalesce(model_id, ''), user_id, chat_id, 1, coalesce(input_tokens, 0), coalesce(output_tokens, 0),
      CASE WHEN coalesce(input_tokens, output_tokens) IS NULL THEN 0 ELSE 1 END
    FROM chat_message WHERE role = 'assistant' AND ${range} AND ${members}`,
  );
  return sql.join([rollup, ...messages], sql` UNION ALL `);
}

/** Read-only aggregates over stored chat messages, feedback excluded (the evaluations area owns it). */
export class AnalyticsStore {
  constructor(private readonly db: Db) {}

  private async rows<T>(query: RawBuilder<T>): Promise<T[]> {
    return (await query.execute(this.db)).rows;
  }

  /** Messages, distinct users and chats per model (messages without a model left out). */
  async byModel(scope: AnalyticsScope): Promise<{ model_id: string; count: number; unique_users: number; unique_chats: number }[]> {
    const rows = await this.rows<Record<string, unknown>>(sql`SELECT model_id, sum(messages) AS count, count(DISTINCT user_id) AS unique_users, count(DISTINCT chat_id) AS unique_chats
      FROM (${facts(scope)}) f WHERE model_id <> '' GROUP BY model_id ORDER BY count DESC, model_id`);
    return rows.map((r) => ({ model_id: String(r.model_id), count: num(r.count), unique_users: num(r.unique_users), unique_chats: num(r.unique_chats) }));
  }

  async summary(scope: AnalyticsScope): Promise<{ total_messages: number; total_chats: number; total_models: number; total_users: number }> {
    const [row] = await this.rows<Record<string, unknown>>(sql`SELECT sum(messages) AS messages, count(DISTINCT chat_id) AS chats,
        count(DISTINCT CASE WHEN model_id <> '' THEN model_id END) AS models, count(DISTINCT user_id) AS users FROM (${facts(scope)}) f`);
    return { total_messages: num(row?.messages), total_chats: num(row?.chats), total_models: num(row?.models), total_users: num(row?.users) };
  }

  /** Messages and tokens per user, most messages first. */
  async byUser(scope: AnalyticsScope, limit: number): Promise<({ user_id: string; name: string | null; email: string | null; count: number } & FactTotals)[]> {
    const rows = await this.rows<Record<string, unknown>>(sql`SELECT f.user_id, u.name, u.email, f.messages, f.input_tokens, f.output_tokens, f.token_messages
      FROM (SELECT user_id, sum(messages) AS messages, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(token_messages) AS token_messages
            FROM (${facts(scope)}) f GROUP BY user_id) f
      LEFT JOIN "user" u ON u.id = f.user_id ORDER BY f.messages DESC, f.user_id LIMIT ${limit}`);
    return rows.map((r) => ({
      user_id: String(r.user_id),
      name: (r.name as string | null) ?? null,
      email: (r.email as string | null) ?? null,
      count: num(r.messages),
      messages: num(r.messages),
      input_tokens: num(r.input_tokens),
      output_tokens: num(r.output_tokens),
      token_messages: num(r.token_messages),
    }));
  }

  /** Tokens per model, over the messages that have token counts. */
  async tokensByModel(scope: AnalyticsScope): Promise<({ model_id: string } & FactTotals)[]> {
    const rows = await this.rows<Record<string, unknown>>(sql`SELECT model_id, sum(messages) AS messages, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
        sum(token_messages) AS token_messages FROM (${facts(scope)}) f WHERE model_id <> '' GROUP BY model_id`);
    return rows
      .map((r) => ({ model_id: String(r.model_id), messages: num(r.messages), input_tokens: num(r.input_tokens), output_tokens: num(r.output_tokens), token_messages: num(r.token_messages) }))
      .filter((r) => r.token_messages > 0);
  }

  /** Messages per UTC day and model. */
  async daily(scope: AnalyticsScope): Promise<{ day: number; model_id: string; count: number }[]> {
    const rows = await this.rows<Record<string, unknown>>(sql`SELECT day, model_id, sum(messages) AS count FROM (${facts(scope)}) f WHERE model_id <> '' GROUP BY day, model_id`);
    return rows.map((r) => ({ day: num(r.day), model_id: String(r.model_id), count: num(r.count) }));
  }

  /** Messages per UTC hour and model, from the messages themselves. */
  async hourly(scope: AnalyticsScope): Promise<{ hour: number; model_id: string; count: number }[]> {
    const where: RawBuilder<unknown>[] = [sql`role = 'assistant'`, sql`model_id IS NOT NULL`];
    if (scope.start !== undefined) where.push(sql`created_at >= ${scope.start}`);
    if (scope.end !== undefined) where.push(sql`created_at <= ${scope.end}`);
    if (scope.groupId) where.push(sql`user_id IN (SELECT user_id FROM group_member WHERE group_id = ${scope.groupId})`);
    const rows = await this.rows<Record<string, unknown>>(sql`SELECT created_at / 3600 AS hour, model_id, count(*) AS count FROM chat_message
      WHERE ${sql.join(where, sql` AND `)} GROUP BY created_at / 3600, model_id`);
    return rows.map((r) => ({ hour: num(r.hour), model_id: String(r.model_id), count: num(r.count) }));
  }

  /** Stored messages, newest first, of a chat, a model or a user. */
  async messages(filter: { chatId?: string; modelId?: string; userId?: string; start?: number; end?: number; skip: number; limit: number }) {
    let query = this.db.selectFrom('chat_message').selectAll();
    if (filter.chatId) query = query.where('chat_id', '=', filter.chatId);
    if (filter.modelId) query = query.where('model_id', '=', filter.modelId);
    if (filter.userId) query = query.where('user_id', '=', filter.userId);
    if (filter.start !== undefined) query = query.where('created_at', '>=', filter.start);
    if (filter.end !== undefined) query = query.where('created_at', '<=', filter.end);
    const ordered = filter.chatId ? query.orderBy('created_at').orderBy('id') : query.orderBy('created_at', 'desc').orderBy('id').offset(filter.skip).limit(filter.limit);
    return (await ordered.execute()).map((r) => ({ ...r, usage: fromJson<Record<string, unknown> | null>(r.usage, null) }));
  }

  /** Chats with answers of a model, with their owner and first user message. */
  async chatsOfModel(
    modelId: string,
    filter: { start?: number; end?: number; orderBy: 'title' | 'updated_at' | 'user_name'; direction: 'asc' | 'desc'; skip: number; limit: number },
  ): Promise<{ chats: { chat_id: string; user_id: string; user_name: string | null; first_message: string | null; updated_at: number }[]; total: number }> {
    const used: RawBuilder<unknown>[] = [sql`m.chat_id = c.id`, sql`m.model_id = ${modelId}`];
    if (filter.start !== undefined) used.push(sql`m.created_at >= ${filter.start}`);
    if (filter.end !== undefined) used.push(sql`m.created_at <= ${filter.end}`);
    const where = sql`EXISTS (SELECT 1 FROM chat_message m WHERE ${sql.join(used, sql` AND `)})`;
    const order = { title: sql`c.title`, updated_at: sql`c.updated_at`, user_name: sql`u.name` }[filter.orderBy];
    const direction = filter.direction === 'asc' ? sql`ASC` : sql`DESC`;
    const rows = await this.rows<Record<string, unknown>>(sql`SELECT c.id, c.user_id, u.name AS user_name, c.updated_at,
        (SELECT content FROM chat_message f WHERE f.chat_id = c.id AND f.role = 'user'
          ORDER BY f.created_at, CASE WHEN f.parent_id IS NULL THEN 0 ELSE 1 END, f.id LIMIT 1) AS first_message
      FROM chat c LEFT JOIN "user" u ON u.id = c.user_id WHERE ${where}
      ORDER BY ${order} ${direction}, c.id LIMIT ${filter.limit} OFFSET ${filter.skip}`);
    const [count] = await this.rows<Record<string, unknown>>(sql`SELECT count(*) AS n FROM chat c WHERE ${where}`);
    return {
      total: num(count?.n),
      chats: rows.map((r) => ({
        chat_id: String(r.id),
        user_id: String(r.user_id),
        user_name: (r.user_name as string | null) ?? null,
        first_message: (r.first_message as string | null) ?? null,
        updated_at: num(r.updated_at),
      })),
    };
  }

  /** The tags of the chats with answers of a model, most used first. */
  async tagsOfModel(modelId: string, limit: number): Promise<{ tag: string; count: number }[]> {
    const rows = await this.rows<Record<string, unknown>>(sql`SELECT tag_id, count(*) AS n FROM chat_tag
      WHERE chat_id IN (SELECT DISTINCT chat_id FROM chat_message WHERE model_id = ${modelId}) GROUP BY tag_id ORDER BY n DESC, tag_id LIMIT ${limit}`);
    return rows.map((r) => ({ tag: String(r.tag_id), count: num(r.n) }));
  }
}
