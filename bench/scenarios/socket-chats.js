import { modelId, streamPrompt } from '../lib/fake-upstream.js';
import { median, row } from '../lib/report.js';
import { connectSocket } from '../lib/sockets.js';

const CHATS = 100;
const TOKENS = 200;
const DELAY_MS = 10;
const ROUNDS = 3;
const ANSWER_TIMEOUT_MS = 120_000;
const NAME = `${CHATS} chats over socket.io`;
const MODEL = modelId(0);

/** One user's chat as the web client has it: the request, then `events` until its answer is done (or fails). */
async function chat(ctx, user, round) {
  const assistantId = `a-${round}-${user.id}`;
  let events = 0;
  let resolveDone;
  const done = new Promise((resolve) => (resolveDone = resolve));
  const onEvent = (payload) => {
    if (payload.message_id !== assistantId) return;
    events++;
    const { type, data } = payload.data;
    if (type === 'chat:message:error') resolveDone({ error: JSON.stringify(data) });
    if (type === 'chat:completion' && data?.done) resolveDone({ text: data.output.map((item) => item.content?.[0]?.text ?? '').join('') });
  };
  user.socket.on('events', onEvent);
  let timer;
  try {
    const res = await ctx.call(
      'POST',
      '/api/chat/completions',
      {
        stream: true,
        model: MODEL,
        messages: [],
        params: {},
        session_id: user.socket.id,
        id: assistantId,
        parent_id: null,
        user_message: { id: `u-${round}-${user.id}`, parentId: null, childrenIds: [], role: 'user', content: streamPrompt(TOKENS, DELAY_MS), models: [MODEL] },
        background_tasks: {},
      },
      { token: user.token },
    );
    if (res.status !== 200) return { error: `HTTP ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`, events };
    const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve({ error: `no answer within ${ANSWER_TIMEOUT_MS / 1000} s` }), ANSWER_TIMEOUT_MS)));
    const result = await Promise.race([done, timeout]);
    const words = result.text ? result.text.split(' ').length : 0;
    if (!result.error && words !== TOKENS) return { error: `answer had ${words} of ${TOKENS} words`, events };
    return { ...result, events };
  } finally {
    clearTimeout(timer);
    user.socket.off('events', onEvent);
  }
}

/**
 * Many users chatting at once through the web client's path (issue 7): each has
 * a socket, sends `POST /api/chat/completions` with its `session_id`, and reads
 * the answer streamed as `chat:completion` events until `done`. The fake model
 * streams 200 words, one every 10 ms. Reports failed answers (an error event, a
 * missing or short answer), the time until every answer of a round was done, and
 * Parley's CPU time per streamed token (one event per token: the default
 * `CHAT_RESPONSE_STREAM_DELTA_CHUNK_SIZE` of 1, as the reference sends them).
 */
export default {
  name: NAME,
  async setup(ctx) {
    const [admin] = await Promise.all([ctx.admin(), ctx.upstream()]);
    // A workspace row for the provider model with a public read grant, so plain users may chat with it.
    await ctx.post(
      '/api/v1/models/create',
      { id: MODEL, name: 'Bench', meta: {}, params: {}, access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] },
      { token: admin.token },
    );
    const users = [];
    await ctx.repeat(CHATS, async (i) => {
      const added = await ctx.post('/api/v1/auths/add', { name: `Chatter ${i}`, email: `chatter${i}@bench.example`, password: 'bench-Passw0rd!', role: 'user' }, { token: admin.token });
      users.push({ id: added.id, token: added.token });
    });
    return { users };
  },
  async measure(ctx, { users }) {
    for (const user of users) user.socket = await connectSocket(ctx.url, user.token);
    const rounds = [];
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        const cpuBefore = ctx.parley.cpuSeconds();
        const started = performance.now();
        const results = await Promise.all(users.map((user) => chat(ctx, user, round)));
        const seconds = (performance.now() - started) / 1000;
        const cpuSeconds = ctx.parley.cpuSeconds() - cpuBefore;
        const failures = results.filter((r) => r.error);
        const tokens = (CHATS - failures.length) * TOKENS;
        rounds.push({
          seconds,
          failures: failures.length,
          firstFailure: failures[0]?.error ?? null,
          events: results.reduce((sum, r) => sum + r.events, 0),
          cpuSeconds,
          cpuMicrosPerToken: tokens > 0 ? (cpuSeconds / tokens) * 1e6 : NaN,
        });
      }
    } finally {
      for (const user of users) user.socket.close();
    }
    const rows = [
      row({
        figure: `${NAME}: failed answers, ${ROUNDS} rounds`,
        parley: rounds.reduce((sum, r) => sum + r.failures, 0),
        unit: 'count',
        target: '0',
        check: (n) => n === 0,
      }),
      row({ figure: `${NAME}: time to all done, median`, parley: median(rounds.map((r) => r.seconds)), unit: 'seconds' }),
      row({ figure: `${NAME}: Parley CPU per streamed token`, parley: median(rounds.map((r) => r.cpuMicrosPerToken)), unit: 'micros' }),
    ];
    return { rows, details: { chats: CHATS, tokensPerAnswer: TOKENS, delayMs: DELAY_MS, rounds } };
  },
};
