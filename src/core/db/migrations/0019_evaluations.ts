import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Feedback, analytics rollups and usage limits (issue 22).
 *
 * - `feedback`: a rating of an answer (routers/evaluations.py): `data` (rating,
 *   model, siblings, reason, tags), `meta` and the chat `snapshot` as JSON text;
 *   `model_id` copies `data.model_id` so filters and the model list read a column.
 * - `chat_message` gains the answer's token counts as columns (`input_tokens`,
 *   `output_tokens`; `tokens_estimated` when counted by the tokenizer because the
 *   provider reported no usage), backfilled from the stored `usage` JSON.
 * - `message_rollup`: assistant messages and tokens per UTC day, model, user and
 *   chat, kept in step with `chat_message` by triggers (every write path, cascades
 *   included). Analytics read whole days here and only the partial days at the
 *   ends of a range from `chat_message`, so distinct counts stay exact.
 * - `usage_limit` (budgets an admin sets per user or group) and `usage_counter`
 *   (what each user spent per day and month), shared by every instance.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  await db.schema
    .createTable('feedback')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('version', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('model_id', 'text')
    .addColumn('data', 'text')
    .addColumn('meta', 'text')
    .addColumn('snapshot', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('feedback_user_updated_idx').on('feedback').columns(['user_id', 'updated_at']).execute();
  await db.schema.createIndex('feedback_updated_idx').on('feedback').columns(['updated_at']).execute();
  await db.schema.createIndex('feedback_model_idx').on('feedback').columns(['model_id', 'created_at']).execute();

  await db.schema.alterTable('chat_message').addColumn('input_tokens', 'bigint').execute();
  await db.schema.alterTable('chat_message').addColumn('output_tokens', 'bigint').execute();
  await db.schema.alterTable('chat_message').addColumn('tokens_estimated', 'boolean', (c) => c.notNull().defaultTo(false)).execute();
  // The ends of an analytics range, and the message browser by model.
  await db.schema
    .createIndex('chat_message_role_created_idx')
    .on('chat_message')
    .columns(['role', 'created_at', 'model_id', 'user_id', 'chat_id', 'input_tokens', 'output_tokens'])
    .execute();
  await db.schema.createIndex('chat_message_model_created_idx').on('chat_message').columns(['model_id', 'created_at']).execute();
  // Provider usage under either naming (normalize_usage): OpenAI's, Anthropic's, Ollama's.
  const field = (key: string) => (postgres ? sql`(usage::jsonb ->> ${sql.lit(key)})::bigint` : sql`json_extract(usage, ${sql.lit(`$.${key}`)})`);
  await sql`UPDATE chat_message SET
      input_tokens = coalesce(${field('input_tokens')}, ${field('prompt_tokens')}, ${field('prompt_eval_count')}),
      output_tokens = coalesce(${field('output_tokens')}, ${field('completion_tokens')}, ${field('eval_count')})
    WHERE usage IS NOT NULL`.execute(db);

  await db.schema
    .createTable('message_rollup')
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('model_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('chat_id', 'text', (c) => c.notNull().references('chat.id').onDelete('cascade'))
    .addColumn('messages', 'bigint', (c) => c.notNull())
    .addColumn('input_tokens', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('token_messages', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_rollup_pk', ['day', 'model_id', 'user_id', 'chat_id'])
    .execute();
  await db.schema.createIndex('message_rollup_chat_idx').on('message_rollup').columns(['chat_id']).execute();
  // A user's tokens of a day or month (usage reports, token and cost budgets).
  await db.schema.createIndex('message_rollup_user_day_idx').on('message_rollup').columns(['user_id', 'day']).execute();
  await sql`INSERT INTO message_rollup (day, model_id, user_id, chat_id, messages, input_tokens, output_tokens, token_messages)
    SELECT created_at / 86400, coalesce(model_id, ''), user_id, chat_id, count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
      count(coalesce(input_tokens, output_tokens))
    FROM chat_message WHERE role = 'assistant' GROUP BY created_at / 86400, coalesce(model_id, ''), user_id, chat_id`.execute(db);
  if (postgres) await postgresRollupTriggers(db);
  else await sqliteRollupTriggers(db);

  await db.schema
    .createTable('usage_limit')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('max_requests', 'bigint')
    .addColumn('max_tokens', 'bigint')
    .addColumn('max_cost', 'double precision')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('usage_limit_subject_idx').on('usage_limit').columns(['scope', 'subject_id']).execute();
  await db.schema
    .createTable('usage_counter')
    .addColumn('user_id', 'text', (c) => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('period_start', 'bigint', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('requests', 'bigint', (c) => c.notNull())
    .addColumn('tokens', 'bigint', (c) => c.notNull())
    .addColumn('cost', 'double precision', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_counter_pk', ['user_id', 'period', 'period_start'])
    .execute();
}

const COUNTED = (row: 'NEW' | 'OLD') => `CASE WHEN coalesce(${row}.input_tokens, ${row}.output_tokens) IS NULL THEN 0 ELSE 1 END`;
const ROLLUP_ADD = `INSERT INTO message_rollup (day, model_id, user_id, chat_id, messages, input_tokens, output_tokens, token_messages)
    VALUES (NEW.created_at / 86400, coalesce(NEW.model_id, ''), NEW.user_id, NEW.chat_id, 1, coalesce(NEW.input_tokens, 0), coalesce(NEW.output_tokens, 0), ${COUNTED('NEW')})
    ON CONFLICT (day, model_id, user_id, chat_id) DO UPDATE SET messages = message_rollup.messages + 1,
      input_tokens = message_rollup.input_tokens + excluded.input_tokens, output_tokens = message_rollup.output_tokens + excluded.output_tokens,
      token_messages = message_rollup.token_messages + excluded.token_messages`;
const ROLLUP_KEY = `day = OLD.created_at / 86400 AND model_id = coalesce(OLD.model_id, '') AND user_id = OLD.user_id AND chat_id = OLD.chat_id`;
const ROLLUP_REMOVE = [
  `UPDATE message_rollup SET messages = messages - 1, input_tokens = input_tokens - coalesce(OLD.input_tokens, 0),
      output_tokens = output_tokens - coalesce(OLD.output_tokens, 0), token_messages = token_messages - ${COUNTED('OLD')} WHERE ${ROLLUP_KEY}`,
  `DELETE FROM message_rollup WHERE ${ROLLUP_KEY} AND messages <= 0`,
];

async function sqliteRollupTriggers(db: Kysely<unknown>): Promise<void> {
  const trigger = (name: string, event: string, when: string, body: string[]) =>
    sql.raw(`CREATE TRIGGER ${name} AFTER ${event} ON chat_message FOR EACH ROW WHEN ${when} BEGIN ${body.join('; ')}; END`).execute(db);
  await trigger('chat_message_rollup_insert', 'INSERT', `NEW.role = 'assistant'`, [ROLLUP_ADD]);
  await trigger('chat_message_rollup_delete', 'DELETE', `OLD.role = 'assistant'`, ROLLUP_REMOVE);
  await trigger('chat_message_rollup_update_old', 'UPDATE', `OLD.role = 'assistant'`, ROLLUP_REMOVE);
  await trigger('chat_message_rollup_update_new', 'UPDATE', `NEW.role = 'assistant'`, [ROLLUP_ADD]);
}

async function postgresRollupTriggers(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(
      `CREATE FUNCTION chat_message_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.role = 'assistant' THEN ${ROLLUP_REMOVE.join('; ')}; END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.role = 'assistant' THEN ${ROLLUP_ADD}; END IF;
        RETURN NULL;
      END $$`,
    )
    .execute(db);
  await sql.raw(`CREATE TRIGGER chat_message_rollup AFTER INSERT OR UPDATE OR DELETE ON chat_message FOR EACH ROW EXECUTE FUNCTION chat_message_rollup()`).execute(db);
}
