import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { load } from './lib/load.js';
import { freePort, sleep, startServer } from './lib/processes.js';
import { markdownTable, median, percentile, row, textTable } from './lib/report.js';

/**
 * `npm run bench:scale` (issue 25; docs/bench.md § Scale): Parley on PostgreSQL and Redis at
 * 1,000,000 chats and 10,000,000 messages, against the same user's figures at 10,000 chats; the
 * migrations of an upgrade at that size; one instance against two; durable webhook deliveries.
 * Writes bench/results/scale.{json,md}. Separate from `npm run bench` because seeding takes minutes.
 */
const { values: flags } = parseArgs({
  options: {
    chats: { type: 'string', default: '1000000' },
    samples: { type: 'string', default: '300' },
    seconds: { type: 'string', default: '10' },
    events: { type: 'string', default: '1000' },
    // Leaves PostgreSQL running (its URL is printed) to look into the plans afterwards.
    keep: { type: 'boolean', default: false },
  },
});
const TOTAL_CHATS = Number(flags.chats);
const SAMPLES = Number(flags.samples);
const LOAD_SECONDS = Number(flags.seconds);
const EVENTS = Number(flags.events);
/** Webhooks subscribed to the events: each event is delivered this many times. */
const HOOKS = 10;
/** The paced runs: events made at this rate (× HOOKS deliveries per second), to time first attempts below saturation. */
const PACED_EVENTS_PER_SECOND = 100;
const PACED_EVENTS = 500;
const MESSAGES_PER_CHAT = 10;
/** The user whose list, search and open are timed has this many chats in both databases. */
const OWN_CHATS = 10_000;
/** The other users' chats fill the large database up to TOTAL_CHATS. */
const CHATS_PER_OTHER_USER = 100;
/** The schema of the previous release: the large database is seeded at it, then upgraded (timed). */
const BASELINE_MIGRATION = '0019_evaluations';
/** Distinct search words: `kwN` is in the messages of the chats numbered N modulo this. */
const SEARCH_WORDS = 5000;
const SEED_BATCH = 50_000;

const root = fileURLToPath(new URL('..', import.meta.url));
const NODE_FLAGS = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).config.node_flags.split(' ').filter(Boolean);
const scratch = mkdtempSync(path.join(os.tmpdir(), 'parley-scale-'));
const began = Date.now();
const log = (message) => process.stderr.write(`scale ${String(Math.round((Date.now() - began) / 1000)).padStart(4)} s: ${message}\n`);
const cleanups = [];
const SECRET = 'bench-scale-secret';
const ANY_CPU = `0-${os.cpus().length - 1}`;

/** The migrator and the migrations as bundled from src/ (run in this process, timed on their own). */
async function bundledMigrations() {
  const { build } = await import('esbuild');
  const entry = path.join(root, '.tmp', 'bench', 'scale-entry.ts');
  const outfile = path.join(root, '.tmp', 'bench', 'scale.js');
  mkdirSync(path.dirname(entry), { recursive: true });
  writeFileSync(
    entry,
    [
      `export { migrate, openDatabase } from '${path.join(root, 'src/core/db/database.ts')}';`,
      `export { migrationProvider } from '${path.join(root, 'src/core/db/migrations/index.ts')}';`,
      `export { Migrator } from 'kysely';`,
    ].join('\n'),
  );
  await build({ entryPoints: [entry], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'warning' });
  return import(pathToFileURL(outfile).href);
}

function startPostgres() {
  const [dir, port] = execFileSync('bash', [path.join(root, 'scripts/postgres.sh'), 'start'], { encoding: 'utf8' }).trim().split(/\s+/);
  if (flags.keep) log(`PostgreSQL stays at postgres://postgres@127.0.0.1:${port} (stop: bash scripts/postgres.sh stop ${dir})`);
  else cleanups.push(() => execFileSync('bash', [path.join(root, 'scripts/postgres.sh'), 'stop', dir]));
  return `postgres://postgres@127.0.0.1:${port}`;
}

async function startRedis() {
  execFileSync('bash', [path.join(root, 'scripts/ensure-redis.sh')], { stdio: 'ignore' });
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  cleanups.push(() => child.kill());
  await sleep(300);
  return `redis://127.0.0.1:${port}`;
}

async function startParley(databaseUrl, redisUrl) {
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: mkdtempSync(path.join(scratch, 'data-')),
    WEBUI_SECRET_KEY: SECRET,
    DATABASE_URL: databaseUrl,
    EVENT_WEBHOOK_ALLOW_LOCAL: 'true',
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
  };
  const server = await startServer({ name: 'Parley', args: [...NODE_FLAGS, path.join(root, 'dist', 'parley.js')], env, cwd: root, cpu: ANY_CPU, timeoutMs: 120_000 });
  cleanups.push(() => server.stop());
  return server;
}

async function call(server, method, route, { token, body } = {}) {
  const response = await fetch(server.url + route, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route} answered ${response.status}: ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** A conversation of MESSAGES_PER_CHAT messages, user and assistant in turn, each a few hundred characters. */
function conversation() {
  const messages = {};
  let parentId = null;
  for (let i = 0; i < MESSAGES_PER_CHAT; i++) {
    const id = `m${i}`;
    const role = i % 2 ? 'assistant' : 'user';
    messages[id] = { id, parentId, childrenIds: i + 1 < MESSAGES_PER_CHAT ? [`m${i + 1}`] : [], role, content: `Message ${i} of the conversation. ${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(4)}`, timestamp: 1_700_000_000 + i, ...(role === 'assistant' ? { model: 'bench-model' } : {}) };
    parentId = id;
  }
  return { title: 'Template', models: ['bench-model'], history: { currentId: parentId, messages } };
}

const quote = (name) => `"${name}"`;

async function columnsOf(client, table) {
  const { rows } = await client.query(`select column_name from information_schema.columns where table_schema = 'public' and table_name = $1 order by ordinal_position`, [table]);
  return rows.map((r) => r.column_name);
}

/** Copies rows read from another database into `table`, keeping only the columns it has (an older schema has fewer). */
async function copyRows(client, table, rows) {
  const columns = new Set(await columnsOf(client, table));
  for (const source of rows) {
    const names = Object.keys(source).filter((name) => columns.has(name));
    await client.query(`insert into ${quote(table)} (${names.map(quote).join(', ')}) values (${names.map((_, i) => `$${i + 1}`).join(', ')})`, names.map((n) => source[n]));
  }
}

/**
 * Inserts one row per `g` in [from, to] for each template row of `table` (`templateWhere` picks them),
 * every column copied from the template but those `overrides` gives an SQL expression of `t` and `g`.
 */
async function replicate(client, table, templateWhere, overrides, from, to) {
  const columns = await columnsOf(client, table);
  const select = columns.map((c) => overrides[c] ?? `t.${quote(c)}`);
  await client.query(
    `insert into ${quote(table)} (${columns.map(quote).join(', ')}) select ${select.join(', ')} from ${quote(table)} t cross join generate_series(${from}::int, ${to}::int) g where ${templateWhere}`,
  );
}

/** Chats `prefix-g` for g in [from, to], owned by `owner` (an SQL expression of g), each a copy of the template chat. */
async function seedChats(client, template, prefix, owner, from, to) {
  for (let start = from; start <= to; start += SEED_BATCH) {
    const end = Math.min(to, start + SEED_BATCH - 1);
    const id = `'${prefix}-' || g`;
    const time = `${1_700_000_000} + g`;
    await client.query('begin');
    await replicate(client, 'chat', `t.id = '${template.id}'`, { id, user_id: owner, title: `'Chat ' || g`, share_id: 'null', created_at: time, updated_at: time }, start, end);
    await replicate(client, 'chat_content', `t.chat_id = '${template.id}'`, { chat_id: id }, start, end);
    await replicate(
      client,
      'chat_message',
      `t.chat_id = '${template.id}'`,
      { chat_id: id, user_id: owner, content: `t.content || ' kw' || (g % ${SEARCH_WORDS})`, created_at: time, updated_at: time },
      start,
      end,
    );
    await client.query('commit');
    if ((end - from + 1) % 200_000 < SEED_BATCH || end === to) log(`  ${prefix}: ${end - from + 1} of ${to - from + 1} chats`);
  }
}

/**
 * p50 and p99 of SAMPLES sequential requests, each path from `pathOf(i)`, after a short warm-up, and
 * the server's CPU time per request (which, unlike the times, hardly moves when the machine is busy).
 */
async function latencies(server, token, pathOf) {
  for (let i = 0; i < 20; i++) await call(server, 'GET', pathOf(i), { token });
  const times = [];
  const cpuBefore = server.cpuSeconds();
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    await call(server, 'GET', pathOf(i + 20), { token });
    times.push(performance.now() - started);
  }
  return { p50: median(times), p99: percentile(times, 0.99), cpuMicros: ((server.cpuSeconds() - cpuBefore) / SAMPLES) * 1e6 };
}

const userRoutes = {
  'chat list (GET /api/v1/chats/?page=1)': () => '/api/v1/chats/?page=1',
  'chat search (GET /api/v1/chats/search?text=kwN)': (i) => `/api/v1/chats/search?text=kw${(i * 37) % SEARCH_WORDS}`,
  'chat open (GET /api/v1/chats/{id})': (i) => `/api/v1/chats/own-${1 + ((i * 7919) % (OWN_CHATS - 1))}`,
};

async function measureUser(server, token) {
  const figures = {};
  for (const [name, pathOf] of Object.entries(userRoutes)) figures[name] = await latencies(server, token, pathOf);
  return figures;
}

/** req/s of the chat list from a load generator per instance, all at once. */
async function throughput(servers, token) {
  const request = { method: 'GET', path: '/api/v1/chats/?page=1', headers: { authorization: `Bearer ${token}` } };
  await Promise.all(servers.map((s) => load(s, request, { seconds: 2, connections: 16 })));
  const results = await Promise.all(servers.map((s) => load(s, request, { seconds: LOAD_SECONDS, connections: 16 })));
  return {
    rps: results.reduce((sum, r) => sum + r.rps, 0),
    failures: results.reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0),
    serverCpuMicros: median(results.map((r) => r.serverCpuMicrosPerRequest)),
  };
}

/** A receiver of webhook deliveries that notes when each arrived, at which path (webhook) and about which chat. */
async function startReceiver() {
  const arrivals = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const at = performance.now();
      let chatId = null;
      try {
        chatId = JSON.parse(body)?.subject?.id ?? null;
      } catch {}
      arrivals.push({ at, hook: req.url, id: req.headers['webhook-id'], chatId });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => server.close());
  return { url: `http://127.0.0.1:${server.address().port}`, arrivals };
}

/**
 * EVENTS `chat.created` events made through `servers` in turn (16 requests in flight), each
 * delivered to HOOKS webhooks of the receiver: deliveries per second from the first request to the
 * last delivery, the time from the request that caused an event to each first attempt, how many
 * events were made per second, and deliveries that arrived twice.
 */
async function webhookRun(servers, token, receiver, { paced = false } = {}) {
  receiver.arrivals.length = 0;
  const sentAt = new Map();
  let next = 0;
  const started = performance.now();
  const count = paced ? PACED_EVENTS : EVENTS;
  const make = async (i) => {
    const at = performance.now();
    const chat = await call(servers[i % servers.length], 'POST', '/api/v1/chats/new', { token, body: { chat: { title: `Hook ${i}` } } });
    sentAt.set(chat.id, at);
  };
  const worker = async () => {
    for (let i = next++; i < count; i = next++) await make(i);
  };
  const pacedEvents = () =>
    Promise.all(Array.from({ length: count }, (_, i) => sleep(started + (i * 1000) / PACED_EVENTS_PER_SECOND - performance.now()).then(() => make(i))));
  await (paced ? pacedEvents() : Promise.all(Array.from({ length: 16 }, worker)));
  const madeSeconds = (performance.now() - started) / 1000;
  const key = (arrival) => `${arrival.hook} ${arrival.chatId}`;
  const deadline = performance.now() + 120_000;
  while (new Set(receiver.arrivals.map(key)).size < count * HOOKS && performance.now() < deadline) await sleep(50);
  const first = new Map();
  for (const arrival of receiver.arrivals) if (!first.has(key(arrival))) first.set(key(arrival), arrival);
  const delays = [...first.values()].filter((a) => sentAt.has(a.chatId)).map((a) => a.at - sentAt.get(a.chatId));
  const last = Math.max(...[...first.values()].map((a) => a.at));
  return {
    perSecond: first.size / ((last - started) / 1000),
    eventsPerSecond: count / madeSeconds,
    delivered: first.size,
    duplicates: receiver.arrivals.length - first.size,
    p50: median(delays),
    p99: percentile(delays, 0.99),
  };
}

async function main() {
  log(`${TOTAL_CHATS.toLocaleString('en-US')} chats with ${MESSAGES_PER_CHAT} messages each; the timed user has ${OWN_CHATS.toLocaleString('en-US')}`);
  const { Migrator, migrate, migrationProvider, openDatabase } = await bundledMigrations();
  const serverUrl = startPostgres();
  const redisUrl = await startRedis();
  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await admin.connect();
  await admin.query('create database small');
  await admin.query('create database large');
  await admin.end();
  const smallUrl = `${serverUrl}/small`;
  const largeUrl = `${serverUrl}/large`;

  // The large database starts at the previous release's schema; the small one at the current one.
  const large = openDatabase({ databaseUrl: largeUrl, dataDir: scratch });
  const baseline = await new Migrator({ db: large.db, provider: migrationProvider }).migrateTo(BASELINE_MIGRATION);
  if (baseline.error) throw baseline.error;

  log('the small database: the user, a template chat, then its copies');
  const small = await startParley(smallUrl, redisUrl);
  const session = await call(small, 'POST', '/api/v1/auths/signup', { body: { name: 'Scale Admin', email: 'scale@bench.local', password: 'Bench-password-1' } });
  const token = session.token;
  const template = await call(small, 'POST', '/api/v1/chats/new', { token, body: { chat: conversation() } });
  const smallDb = new pg.Client({ connectionString: smallUrl });
  await smallDb.connect();
  const owner = `'${session.id}'`;
  await seedChats(smallDb, template, 'own', owner, 1, OWN_CHATS - 1);
  await smallDb.query('analyze');
  const templateRows = {};
  for (const [table, key] of [['user', 'id'], ['auth', 'id'], ['chat', 'id'], ['chat_content', 'chat_id'], ['chat_message', 'chat_id']]) {
    templateRows[table] = (await smallDb.query(`select * from ${quote(table)} where ${key} = $1`, [table === 'user' || table === 'auth' ? session.id : template.id])).rows;
  }
  await smallDb.end();

  log('timing the user at 10,000 chats');
  const atSmall = await measureUser(small, token);
  await small.stop();

  log(`the large database at ${BASELINE_MIGRATION}: the same user and chats, then the other users'`);
  const largeDb = new pg.Client({ connectionString: largeUrl });
  await largeDb.connect();
  for (const table of ['user', 'auth', 'chat', 'chat_content', 'chat_message']) await copyRows(largeDb, table, templateRows[table]);
  const seedStarted = performance.now();
  await seedChats(largeDb, template, 'own', owner, 1, OWN_CHATS - 1);
  const otherChats = TOTAL_CHATS - OWN_CHATS;
  const otherUsers = Math.ceil(otherChats / CHATS_PER_OTHER_USER);
  await largeDb.query('begin');
  await replicate(largeDb, 'user', `t.id = ${owner}`, { id: `'user-' || g`, email: `'user-' || g || '@bench.local'`, name: `'User ' || g`, username: 'null', role: `'user'` }, 0, otherUsers - 1);
  await largeDb.query('commit');
  await seedChats(largeDb, template, 'other', `'user-' || (g / ${CHATS_PER_OTHER_USER})`, 0, otherChats - 1);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const analyzeStarted = performance.now();
  await largeDb.query('vacuum analyze');
  const analyzeSeconds = (performance.now() - analyzeStarted) / 1000;
  const { rows: counts } = await largeDb.query('select (select count(*) from chat) as chats, (select count(*) from chat_message) as messages');
  log(`seeded ${counts[0].chats} chats and ${counts[0].messages} messages in ${seedSeconds.toFixed(0)} s; vacuum analyze ${analyzeSeconds.toFixed(0)} s`);
  await largeDb.end();

  log('upgrading the large database to the current schema');
  const migrateStarted = performance.now();
  await migrate(large.db);
  const migrateSeconds = (performance.now() - migrateStarted) / 1000;
  const pending = Object.keys(await migrationProvider.getMigrations()).filter((name) => name > BASELINE_MIGRATION).length;
  await large.close();

  log('timing the user at the large size');
  const first = await startParley(largeUrl, redisUrl);
  const atLarge = await measureUser(first, token);

  log('one instance: throughput and webhook deliveries');
  const receiver = await startReceiver();
  for (let i = 0; i < HOOKS; i++) {
    await call(first, 'POST', '/api/events/webhooks', { token, body: { name: `scale ${i}`, url: `${receiver.url}/hook-${i}`, events: ['chat.created'] } });
  }
  const oneLoad = await throughput([first], token);
  const oneHooks = await webhookRun([first], token, receiver);
  const onePaced = await webhookRun([first], token, receiver, { paced: true });

  log('two instances: throughput and webhook deliveries');
  const second = await startParley(largeUrl, redisUrl);
  const twoLoad = await throughput([first, second], token);
  const twoHooks = await webhookRun([first, second], token, receiver);
  const twoPaced = await webhookRun([first, second], token, receiver, { paced: true });

  const millions = `${(TOTAL_CHATS / 1e6).toLocaleString('en-US')}M chats`;
  const rows = [];
  for (const name of Object.keys(userRoutes)) {
    for (const q of ['p50', 'p99']) {
      rows.push(
        row({ figure: `${name} at ${millions}: ${q} (floor: at 10,000 chats)`, parley: atLarge[name][q], floor: atSmall[name][q], unit: 'ms', target: '≤ 2.00× floor', check: (_v, ratio) => ratio <= 2 }),
      );
    }
    rows.push(row({ figure: `${name} at ${millions}: server CPU per request (floor: at 10,000 chats)`, parley: atLarge[name].cpuMicros, floor: atSmall[name].cpuMicros, unit: 'micros' }));
  }
  rows.push(
    row({ figure: `migrations of an upgrade from ${BASELINE_MIGRATION} (${pending} migrations) at ${millions}`, parley: migrateSeconds, unit: 'seconds', target: '≤ 10 s', check: (s) => s <= 10 }),
    row({
      figure: 'GET /api/v1/chats/?page=1, two instances (floor: one instance): req/s',
      parley: twoLoad.rps,
      floor: oneLoad.rps,
      unit: 'rps',
      target: '≥ 1.70× floor',
      check: (_v, ratio) => ratio >= 1.7,
      invalid: twoLoad.failures || oneLoad.failures ? `${oneLoad.failures + twoLoad.failures} failed requests` : null,
    }),
    row({ figure: 'GET /api/v1/chats/?page=1: server CPU per request, two instances (floor: one)', parley: twoLoad.serverCpuMicros, floor: oneLoad.serverCpuMicros, unit: 'micros' }),
    row({ figure: 'webhook deliveries per second, one instance', parley: oneHooks.perSecond, unit: 'rps', target: '≥ 1,000/s', check: (v) => v >= 1000 }),
    row({ figure: 'webhook deliveries per second, two instances', parley: twoHooks.perSecond, unit: 'rps', target: '≥ 1,000/s', check: (v) => v >= 1000 }),
    row({ figure: 'webhook, saturated: request to first attempt, p50, two instances (floor: one)', parley: twoHooks.p50, floor: oneHooks.p50, unit: 'ms' }),
    row({ figure: 'webhook, saturated: request to first attempt, p99, two instances (floor: one)', parley: twoHooks.p99, floor: oneHooks.p99, unit: 'ms' }),
    ...[
      ['one instance', onePaced],
      ['two instances', twoPaced],
    ].flatMap(([instances, run]) => [
      row({ figure: `webhook at ${PACED_EVENTS_PER_SECOND * HOOKS} deliveries/s: request to first attempt, p50, ${instances}`, parley: run.p50, unit: 'ms' }),
      row({ figure: `webhook at ${PACED_EVENTS_PER_SECOND * HOOKS} deliveries/s: request to first attempt, p99, ${instances}`, parley: run.p99, unit: 'ms', target: '≤ 100 ms', check: (v) => v <= 100 }),
    ]),
    row({ figure: 'webhook: chat.created events made per second, two instances (floor: one)', parley: twoHooks.eventsPerSecond, floor: oneHooks.eventsPerSecond, unit: 'rps' }),
    row({
      figure: `webhook: deliveries made of ${(EVENTS + PACED_EVENTS) * HOOKS * 2} (floor: sent twice)`,
      parley: [oneHooks, twoHooks, onePaced, twoPaced].reduce((n, run) => n + run.delivered, 0),
      floor: [oneHooks, twoHooks, onePaced, twoPaced].reduce((n, run) => n + run.duplicates, 0),
      unit: 'count',
    }),
    row({ figure: 'seeding the large database (SQL, not the API)', parley: seedSeconds, unit: 'seconds' }),
  );

  const cpu = os.cpus();
  const header = [
    `Parley scale bench, ${new Date().toISOString()}, commit ${execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()}`,
    `${cpu.length} cores (${cpu[0]?.model ?? 'unknown'}), Node ${process.version}; PostgreSQL 15 (fsync off) and Redis on the same machine, instances unpinned`,
    `${counts[0].chats} chats, ${counts[0].messages} messages; latencies: ${SAMPLES} sequential requests; load: autocannon, 16 connections per instance, ${LOAD_SECONDS} s; webhooks: ${EVENTS} chat.created events as fast as 16 requests in flight make them (saturated), then ${PACED_EVENTS} at ${PACED_EVENTS_PER_SECOND}/s, each to ${HOOKS} webhooks`,
  ];
  const results = { date: new Date().toISOString(), totalChats: TOTAL_CHATS, rows, atSmall, atLarge, oneLoad, twoLoad, oneHooks, twoHooks, onePaced, twoPaced, migrateSeconds, seedSeconds, analyzeSeconds };
  const resultsDir = path.join(root, 'bench', 'results');
  writeFileSync(path.join(resultsDir, 'scale.json'), JSON.stringify(results, null, 2) + '\n');
  writeFileSync(path.join(resultsDir, 'scale.md'), [...header.map((line) => `${line}  `), '', markdownTable(rows), ''].join('\n'));
  console.log([...header, '', textTable(rows)].join('\n'));
}

try {
  await main();
} finally {
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch {}
  }
  rmSync(scratch, { recursive: true, force: true });
}
