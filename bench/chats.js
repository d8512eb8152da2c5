import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { io } from 'socket.io-client';
import { createContext } from './lib/context.js';
import { machineCpuSeconds, ownCpuSeconds, pinSelf, pinning, startServer } from './lib/processes.js';
import { median } from './lib/report.js';

/**
 * `npm run build && node bench/chats.js`: many users chatting at once through
 * the web client's path: each has a socket, sends `POST /api/chat/completions`
 * with its `session_id`, and reads the answer streamed as `chat:completion`
 * events, until `done`. The model is a fake that streams `--tokens` words,
 * one every `--delay` ms (`--chunk n`: one socket event per n changes). Reports errors (any missing or failed answer), the
 * time until every answer was done, and Parley's CPU time per streamed token.
 * See docs/chat-pipeline.md.
 */
const { values: flags } = parseArgs({
  options: {
    chats: { type: 'string', default: '100' },
    tokens: { type: 'string', default: '200' },
    delay: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    // CHAT_RESPONSE_STREAM_DELTA_CHUNK_SIZE for Parley: changes of an answer per socket event.
    chunk: { type: 'string', default: '1' },
  },
});
const CHATS = Number(flags.chats);
const TOKENS = Number(flags.tokens);
const DELAY_MS = Number(flags.delay);
const ROUNDS = Number(flags.rounds);
const root = fileURLToPath(new URL('..', import.meta.url));

/** An OpenAI-style model streaming TOKENS words, one every DELAY_MS. */
async function startModel() {
  const server = createServer(async (req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'bench-model', object: 'model', created: 1, owned_by: 'bench' }] }));
      return;
    }
    for await (const _ of req);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta, finish = null) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'bench-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    for (let i = 0; i < TOKENS && !res.destroyed; i++) {
      res.write(chunk({ content: i === 0 ? 'word0' : ` word${i}` }));
      await new Promise((resolve) => setTimeout(resolve, DELAY_MS));
    }
    res.end(`${chunk({}, 'stop')}data: [DONE]\n\n`);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

function connect(url, token) {
  const socket = io(url, { path: '/ws/socket.io', transports: ['websocket'], auth: { token }, reconnection: false, forceNew: true });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', reject);
  });
}

/** One user's chat: the request, then events until its answer is done (or fails). */
async function chat(ctx, user, round) {
  const assistantId = `a-${round}-${user.id}`;
  const userMessageId = `u-${round}-${user.id}`;
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
  const res = await ctx.call(
    'POST',
    '/api/chat/completions',
    {
      stream: true,
      model: 'bench-model',
      messages: [],
      params: {},
      session_id: user.socket.id,
      id: assistantId,
      parent_id: null,
      user_message: { id: userMessageId, parentId: null, childrenIds: [], role: 'user', content: `hello ${round}`, models: ['bench-model'] },
      background_tasks: {},
    },
    { token: user.token },
  );
  if (res.status !== 200) return { error: `HTTP ${res.status}: ${JSON.stringify(res.body)}`, events };
  const timeout = new Promise((resolve) => setTimeout(() => resolve({ error: 'no answer within 120 s' }), 120_000));
  const result = await Promise.race([done, timeout]);
  user.socket.off('events', onEvent);
  const words = result.text ? result.text.split(' ').length : 0;
  if (!result.error && words !== TOKENS) return { error: `answer had ${words} of ${TOKENS} words`, events };
  return { ...result, events };
}

async function main() {
  pinSelf();
  const model = await startModel();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-chats-'));
  const parley = await startServer({
    name: 'parley',
    args: [path.join(root, 'dist', 'main.js')],
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: dataDir,
      WEBUI_SECRET_KEY: 'bench-secret',
      OPENAI_API_BASE_URLS: model.url,
      OPENAI_API_KEYS: 'sk-bench',
      ENABLE_OLLAMA_API: 'false',
      CHAT_RESPONSE_STREAM_DELTA_CHUNK_SIZE: flags.chunk,
    },
  });
  const rows = [];
  try {
    const ctx = createContext(parley.url);
    const admin = await ctx.admin();
    await ctx.post(
      '/api/v1/models/create',
      { id: 'bench-model', name: 'Bench', meta: {}, params: {}, access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }] },
      { token: admin.token },
    );
    const users = [];
    await ctx.repeat(
      CHATS,
      async (i) => {
        const added = await ctx.post('/api/v1/auths/add', { name: `Chatter ${i}`, email: `chatter${i}@bench.example`, password: 'bench-Passw0rd!', role: 'user' }, { token: admin.token });
        users.push({ id: added.id, token: added.token });
      },
      { concurrency: 8 },
    );
    for (const user of users) user.socket = await connect(parley.url, user.token);

    for (let round = 1; round <= ROUNDS; round++) {
      const cpuBefore = parley.cpuSeconds();
      const machineBefore = machineCpuSeconds().busy;
      const ownBefore = ownCpuSeconds();
      const started = performance.now();
      const results = await Promise.all(users.map((user) => chat(ctx, user, round)));
      const seconds = (performance.now() - started) / 1000;
      const cpu = parley.cpuSeconds() - cpuBefore;
      const others = machineCpuSeconds().busy - machineBefore - cpu - (ownCpuSeconds() - ownBefore);
      const errors = results.filter((r) => r.error);
      const tokens = (CHATS - errors.length) * TOKENS;
      rows.push({
        round,
        seconds,
        errors: errors.length,
        firstError: errors[0]?.error ?? null,
        events: results.reduce((sum, r) => sum + (r.events ?? 0), 0),
        cpuSeconds: cpu,
        cpuMicrosPerToken: tokens > 0 ? (cpu / tokens) * 1e6 : null,
        otherCores: others / seconds,
      });
      const last = rows.at(-1);
      console.log(
        `round ${round}: ${CHATS} chats x ${TOKENS} tokens in ${seconds.toFixed(2)} s, ${last.errors} errors${last.firstError ? ` (${last.firstError})` : ''}, ` +
          `${last.events} events, server CPU ${cpu.toFixed(2)} s = ${last.cpuMicrosPerToken?.toFixed(1) ?? '-'} µs per token; other processes ${last.otherCores.toFixed(2)} cores`,
      );
    }
    for (const user of users) user.socket.close();
  } finally {
    await parley.stop();
    await model.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const summary = {
    chats: CHATS,
    tokensPerAnswer: TOKENS,
    delayMs: DELAY_MS,
    deltaChunkSize: Number(flags.chunk),
    pinned: pinning,
    node: process.version,
    cpu: os.cpus()[0]?.model,
    errors: rows.reduce((sum, r) => sum + r.errors, 0),
    medianSeconds: median(rows.map((r) => r.seconds)),
    medianCpuMicrosPerToken: median(rows.map((r) => r.cpuMicrosPerToken).filter((v) => v !== null)),
    rounds: rows,
  };
  console.log(
    `\n${CHATS} concurrent chats over socket.io: ${summary.errors} errors; median ${summary.medianSeconds.toFixed(2)} s per round; ` +
      `server CPU per streamed token (median) ${summary.medianCpuMicrosPerToken?.toFixed(1)} µs`,
  );
  mkdirSync(path.join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(path.join(root, 'bench', 'results', 'chats.json'), `${JSON.stringify(summary, null, 2)}\n`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
