import path from 'node:path';
import Database from 'better-sqlite3';
import { median, percentile, row } from '../lib/report.js';

const MESSAGES = 1_000_000;
const PER_CHAT = 20;
const USERS = 20;
const MODELS = 8;
const DAYS = 365;
const FEEDBACKS = 100_000;
const QUERIES = 30;
const NAME = `analytics over ${MESSAGES.toLocaleString('en-US')} messages`;
const DAY = 86400;

/**
 * Admin analytics (issue 22) over a year of chats: 1,000,000 stored messages
 * (50,000 chats of 20 messages, half of them answers by 8 models, 20 users),
 * written straight into the SQLite database (the API would take hours; the
 * triggers keep the rollup as they do for every write), and 100,000 feedbacks.
 * Timed one after another: `GET /api/v1/analytics/summary` and `/models`, over
 * everything and over the last 30 days from mid-day to mid-day (both ends read
 * messages), and `GET /api/v1/evaluations/leaderboard`.
 */
export default {
  name: NAME,
  async setup(ctx) {
    const admin = await ctx.admin();
    const userIds = [admin.id];
    for (let i = 1; i < USERS; i++) {
      const user = await ctx.post('/api/v1/auths/add', { name: `Analyst ${i}`, email: `analyst${i}@bench.local`, password: 'Bench-password-1', role: 'user' }, { token: admin.token });
      userIds.push(user.id);
    }
    const db = new Database(path.join(ctx.parley.dataDir, 'webui.db'));
    db.pragma('busy_timeout = 10000');
    const now = Math.floor(Date.now() / 1000);
    const chat = db.prepare(`INSERT INTO chat (id, user_id, title, archived, pinned, internal, created_at, updated_at, meta) VALUES (?, ?, ?, 0, 0, 0, ?, ?, '{}')`);
    const message = db.prepare(
      `INSERT INTO chat_message (chat_id, id, user_id, role, parent_id, content, model_id, done, usage, input_tokens, output_tokens, tokens_estimated, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, 0, ?, ?)`,
    );
    const chats = MESSAGES / PER_CHAT;
    db.transaction(() => {
      for (let c = 0; c < chats; c++) {
        const chatId = `bench-chat-${c}`;
        const userId = userIds[c % USERS];
        const model = `model-${c % MODELS}`;
        const start = now - Math.floor((c / chats) * DAYS * DAY) - 3600;
        chat.run(chatId, userId, `Chat ${c}`, start, start + PER_CHAT * 30);
        for (let m = 0; m < PER_CHAT; m++) {
          const answer = m % 2 === 1;
          const usage = answer ? JSON.stringify({ prompt_tokens: 100 + m, completion_tokens: 200 + m }) : null;
          message.run(chatId, `m${m}`, userId, answer ? 'assistant' : 'user', m ? `m${m - 1}` : null, `message ${m} of chat ${c}`, answer ? model : null, usage, answer ? 100 + m : null, answer ? 200 + m : null, start + m * 30, start + m * 30);
        }
      }
    })();
    const feedback = db.prepare(`INSERT INTO feedback (id, user_id, version, type, model_id, data, meta, snapshot, created_at, updated_at) VALUES (?, ?, 0, 'rating', ?, ?, '{}', NULL, ?, ?)`);
    db.transaction(() => {
      for (let f = 0; f < FEEDBACKS; f++) {
        const model = `model-${f % MODELS}`;
        const data = { rating: f % 3 === 0 ? -1 : 1, model_id: model, sibling_model_ids: [`model-${(f + 1 + (f % 5)) % MODELS}`], tags: [`topic-${f % 11}`] };
        const at = now - (FEEDBACKS - f) * 60;
        feedback.run(`bench-feedback-${String(f).padStart(7, '0')}`, userIds[f % USERS], model, JSON.stringify(data), at, at);
      }
    })();
    db.close();
    const end = Math.floor(now / DAY) * DAY - DAY / 2;
    return { token: admin.token, range: `start_date=${end - 30 * DAY}&end_date=${end}` };
  },
  async measure(ctx, { token, range }) {
    // The client's kept-alive connection went stale during the long seeding: the first request may fail.
    await ctx.call('GET', '/api/v1/analytics/summary', undefined, { token }).catch(() => null);
    const timings = {};
    const cases = [
      ['summary', '/api/v1/analytics/summary'],
      ['summary, last 30 days', `/api/v1/analytics/summary?${range}`],
      ['per model', '/api/v1/analytics/models'],
      ['per model, last 30 days', `/api/v1/analytics/models?${range}`],
      ['leaderboard of 100,000 feedbacks', '/api/v1/evaluations/leaderboard'],
    ];
    const rows = [];
    for (const [label, url] of cases) {
      const latencies = [];
      for (let i = 0; i < (label.startsWith('leaderboard') ? 10 : QUERIES); i++) {
        const started = performance.now();
        const res = await ctx.call('GET', url, undefined, { token });
        if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
        latencies.push(performance.now() - started);
      }
      timings[label] = latencies;
      rows.push(row({ figure: `${NAME}: ${label} p50`, parley: median(latencies), unit: 'ms' }));
      rows.push(row({ figure: `${NAME}: ${label} p99`, parley: percentile(latencies, 0.99), unit: 'ms' }));
    }
    return { rows, details: { messages: MESSAGES, feedbacks: FEEDBACKS, timings } };
  },
};
