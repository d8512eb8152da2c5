#!/usr/bin/env node
// The web frontend's chat journey with a tool, in a real browser (docs/chat-pipeline.md,
// "Browser run with a tool"). Starts everything it needs and stops it again:
//   - a fake OpenAI-shaped model that streams its answers and, when it is offered tools and asked to
//     add two numbers, calls the `add` tool natively (streamed `tool_calls` deltas), then answers
//     quoting the tool's result;
//   - Parley (`dist/parley.js`, the bundle `npm start` runs: run `npm run build` first) on a fresh DATA_DIR and a free port,
//     serving the built Open WebUI frontend FRONTEND_BUILD_DIR names (docs/frontend.md: where to get one);
//   - headless Chromium through playwright-core.
// In the browser: sign up the first admin; through the API with the admin's token: create a Python
// tool and connect the fake model (POST /openai/config/update); in the browser again: pick the
// model, switch the tool on in the chat input's integrations menu, send a message, watch the tool's
// status and the streamed answer, reload, find the chat in the sidebar and open it.
//
//   FRONTEND_BUILD_DIR=<a built frontend> node scripts/browser/chat-with-tool.mjs
//
// Environment: FRONTEND_BUILD_DIR (required), CHROMIUM (default: Debian's
// /usr/bin/chromium), OUT (screenshots and report.json; default a new /tmp/parley-tool-run-* folder),
// KEEP_DATA=1 keeps the DATA_DIR, CPU_THROTTLE=n slows the page's main thread n times (a slow device).
// Exit code 0 when every check passed.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FRONTEND = process.env.FRONTEND_BUILD_DIR;
if (!FRONTEND) {
  console.error('Set FRONTEND_BUILD_DIR to a built Open WebUI frontend (docs/frontend.md says where to get one).');
  process.exit(2);
}
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const OUT = process.env.OUT ?? mkdtempSync(path.join(tmpdir(), 'parley-tool-run-'));
mkdirSync(OUT, { recursive: true });

const MODEL = 'fake-tool-model';
const TOOL_ID = 'calculator';
const QUESTION = 'Please add 19 and 23 with the calculator.';
const TOOL_RESULT = '19 + 23 = 42';
const ANSWER = `The calculator tool says: "${TOOL_RESULT}". So the sum is 42.`;
const TITLE = 'Adding With A Calculator';
const ADMIN = { name: 'Tool Run Admin', email: 'tool-run@example.com', password: 'Tool-Run-Passw0rd!' };

const TOOL_SOURCE = `"""
title: Calculator
author: parley browser run
version: 0.1.0
description: Adds two whole numbers.
"""
import asyncio


class Tools:
    async def add(self, a: int, b: int, __event_emitter__=None) -> str:
        """
        Add two whole numbers.
        :param a: the first number
        :param b: the second number
        """
        await __event_emitter__({"type": "status", "data": {"description": f"Adding {a} and {b}", "done": False}})
        await asyncio.sleep(1)
        await __event_emitter__({"type": "status", "data": {"description": f"Added {a} and {b}", "done": True}})
        return f"{a} + {b} = {a + b}"
`;

for (const [what, where] of [
  ['the built frontend (docs/frontend.md)', FRONTEND],
  ['Chromium (apt-get install -y chromium)', CHROMIUM],
  ['dist/parley.js (npm run build)', path.join(ROOT, 'dist/parley.js')],
]) {
  if (!existsSync(where)) {
    console.error(`missing ${what}: ${where}`);
    process.exit(2);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => new Date().toISOString().slice(11, 23);

async function freePort() {
  const server = createNetServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// ---------------------------------------------------------------- the fake model

const upstreamLog = [];

function lastUserText(messages) {
  const last = [...(messages ?? [])].reverse().find((m) => m?.role === 'user');
  if (!last) return '';
  return typeof last.content === 'string' ? last.content : (last.content ?? []).map((p) => p?.text ?? '').join('');
}

/** What the model says: task prompts get their JSON, a tool request a call, a tool result an answer quoting it. */
function reply(body) {
  const messages = body.messages ?? [];
  const last = messages.at(-1);
  const prompt = lastUserText(messages);
  if (prompt.includes('Generate a concise title')) return { text: JSON.stringify({ title: TITLE }) };
  if (prompt.includes('Generate 1-3 broad tags')) return { text: JSON.stringify({ tags: ['Math', 'Tools'] }) };
  if (prompt.includes('Suggest 3-5 relevant follow-up')) return { text: JSON.stringify({ follow_ups: ['Can you multiply too?'] }) };
  if (last?.role === 'tool') return { text: `The calculator tool says: "${last.content}". So the sum is ${String(last.content).split('= ').at(-1)}.` };
  const offered = (body.tools ?? []).map((t) => t.function?.name);
  const numbers = prompt.match(/-?\d+/g);
  if (last?.role === 'user' && offered.includes('add') && /\badd\b/i.test(prompt) && numbers?.length >= 2) {
    return { call: { name: 'add', arguments: JSON.stringify({ a: Number(numbers[0]), b: Number(numbers[1]) }) } };
  }
  return { text: `You said: ${prompt}` };
}

async function answer(req, res) {
  let raw = '';
  for await (const piece of req) raw += piece;
  const body = JSON.parse(raw);
  const said = reply(body);
  upstreamLog.push({
    at: now(),
    stream: Boolean(body.stream),
    tools: (body.tools ?? []).map((t) => t.function?.name),
    roles: (body.messages ?? []).map((m) => m.role),
    last: String(typeof body.messages?.at(-1)?.content === 'string' ? body.messages.at(-1).content : '').slice(0, 80),
    answered: said.call ? `tool call ${said.call.name}(${said.call.arguments})` : said.text.slice(0, 80),
  });
  const base = { id: `chatcmpl-${Date.now()}`, created: Math.floor(Date.now() / 1000), model: body.model };
  if (!body.stream) {
    const message = said.call
      ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_add_1', type: 'function', function: said.call }] }
      : { role: 'assistant', content: said.text };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: said.call ? 'tool_calls' : 'stop' }] }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (delta, finish = null) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  if (said.call) {
    // As OpenAI streams a call: the id and name first, then the arguments in pieces.
    res.write(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_add_1', type: 'function', function: { name: said.call.name, arguments: '' } }] }));
    for (const piece of said.call.arguments.match(/.{1,6}/g)) {
      await sleep(30);
      res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
    }
    res.end(chunk({}, 'tool_calls') + 'data: [DONE]\n\n');
    return;
  }
  res.write(chunk({ role: 'assistant', content: '' }));
  for (const [i, word] of said.text.split(' ').entries()) {
    await sleep(60);
    res.write(chunk({ content: i === 0 ? word : ` ${word}` }));
  }
  res.end(chunk({}, 'stop') + 'data: [DONE]\n\n');
}

const upstream = createServer((req, res) => {
  const route = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && route === '/v1/models') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: MODEL, object: 'model', created: 1700000000, owned_by: 'fake' }] }));
  } else if (req.method === 'POST' && route === '/v1/chat/completions') {
    answer(req, res).catch((error) => {
      console.error('fake model failed', error);
      res.destroy();
    });
  } else {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: `no route ${req.method} ${route}` }));
  }
});

// ---------------------------------------------------------------- the run

const report = { date: new Date().toISOString(), out: OUT, checks: {}, api: [], socket: [], upstream: upstreamLog, console: [], pageErrors: [] };
const check = (name, ok, detail) => {
  report.checks[name] = detail === undefined ? Boolean(ok) : { ok: Boolean(ok), detail };
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
};

let parley;
let browser;
const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-tool-run-data-'));
try {
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${upstream.address().port}/v1`;

  const port = await freePort();
  const BASE = `http://127.0.0.1:${port}`;
  const logFd = openSync(path.join(OUT, 'parley.log'), 'w');
  parley = spawn(process.execPath, ['dist/parley.js'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir, FRONTEND_BUILD_DIR: FRONTEND, ENABLE_OLLAMA_API: 'false', DATABASE_URL: '' },
    stdio: ['ignore', logFd, logFd],
  });
  parley.on('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') console.error(`Parley exited (${code ?? signal}); see ${OUT}/parley.log`);
  });
  for (let started = Date.now(); ; await sleep(200)) {
    if (parley.exitCode !== null) throw new Error(`Parley did not start; see ${OUT}/parley.log`);
    if (Date.now() - started > 60000) throw new Error('Parley did not answer /health within 60 s');
    if (await fetch(`${BASE}/health`).then((r) => r.ok, () => false)) break;
  }
  console.log(`Parley on ${BASE} (DATA_DIR ${dataDir}), fake model on ${upstreamUrl}, output in ${OUT}`);

  const api = async (method, route, token, body) => {
    const res = await fetch(BASE + route, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'Europe/Berlin' });
  const page = await context.newPage();
  // A slower device: the page's main thread throttled n times (CPU_THROTTLE=n).
  if (Number(process.env.CPU_THROTTLE) > 1) await (await context.newCDPSession(page)).send('Emulation.setCPUThrottlingRate', { rate: Number(process.env.CPU_THROTTLE) });
  let step = 'start';
  const shot = (name) => page.screenshot({ path: path.join(OUT, `${name}.png`) });

  // What the page asked Parley, what went over the socket, and what went wrong in the page.
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (url.origin !== BASE || !/^\/(api|openai|ollama|oauth|ws)(\/|$)/.test(url.pathname)) return;
    report.api.push({ step, method: response.request().method(), path: url.pathname + url.search, status: response.status() });
  });
  page.on('websocket', (ws) => {
    report.socket.push({ step, at: now(), dir: 'open', event: ws.url().replace(BASE.replace('http', 'ws'), '') });
    const record = (dir) => (frame) => {
      const text = String(frame.payload);
      const match = /^4[23](\d*)(\[.*)$/s.exec(text);
      if (!match) return;
      const [event, payload] = JSON.parse(match[2]);
      const entry = { step, at: now(), dir, event: typeof event === 'string' ? event : 'ack' };
      if (event === 'events') {
        entry.type = payload?.data?.type;
        const data = payload?.data?.data;
        if (entry.type === 'status') entry.data = data;
        if (entry.type === 'chat:completion') {
          entry.items = (data?.output ?? []).map((item) => item.type).join(',');
          if (data?.done) entry.done = true;
          if (data?.title) entry.title = data.title;
        }
        if (entry.type === 'chat:title') entry.data = data;
      } else if (typeof event === 'string') {
        entry.data = JSON.stringify(payload ?? null).slice(0, 120);
      }
      report.socket.push(entry);
    };
    ws.on('framesent', record('sent'));
    ws.on('framereceived', record('received'));
  });
  // When the completion request's reply was read, among the socket frames (the app drops events of a chat it does not know yet).
  page.on('requestfinished', (request) => {
    if (new URL(request.url()).pathname !== '/api/chat/completions') return;
    report.socket.push({ step, at: now(), dir: 'http', event: 'POST /api/chat/completions reply read' });
    const { model, tool_ids, session_id, chat_id, background_tasks, stream } = request.postDataJSON() ?? {};
    report.completionRequest = { model, tool_ids, session_id: Boolean(session_id), chat_id: chat_id ?? null, background_tasks, stream };
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') report.console.push({ step, type: msg.type(), text: msg.text().slice(0, 300) });
  });
  page.on('pageerror', (error) => report.pageErrors.push({ step, error: String(error).slice(0, 300) }));

  // 1. Sign up the first admin in the browser (onboarding, then the sign-up form).
  step = 'signup';
  await page.goto(`${BASE}/`, { waitUntil: 'networkidle', timeout: 60000 });
  // The build draws its form panel over the onboarding screen: dispatch the click to the button.
  await page.getByRole('button', { name: 'Get started' }).dispatchEvent('click');
  await page.getByPlaceholder(/Full Name/).fill(ADMIN.name);
  await page.locator('#auth-container input[type="email"], #auth-container input[name="email"]').first().fill(ADMIN.email);
  await page.locator('#auth-container input[name="password"]').fill(ADMIN.password);
  const terms = page.locator('#legal-accept'); // the fork's terms checkbox
  if (await terms.count()) await terms.check({ force: true });
  await page.locator('#auth-container button[type="submit"]').click();
  await page.waitForURL((url) => !url.pathname.startsWith('/auth'), { timeout: 30000 });
  await page.locator('#chat-input').waitFor({ timeout: 30000 });
  const token = await page.evaluate(() => localStorage.token);
  check('signed up in the browser', Boolean(token));

  // 2. Through the API, as the admin: the tool and the provider.
  step = 'setup';
  const tool = await api('POST', '/api/v1/tools/create', token, { id: TOOL_ID, name: 'Calculator', content: TOOL_SOURCE, meta: { description: 'Adds two whole numbers.' } });
  const storedTool = await api('GET', `/api/v1/tools/id/${TOOL_ID}`, token);
  check('tool created', tool.id === TOOL_ID && storedTool.specs?.[0]?.name === 'add', storedTool.specs?.map((spec) => spec.name));
  await api('POST', '/openai/config/update', token, {
    ENABLE_OPENAI_API: true,
    OPENAI_API_BASE_URLS: [upstreamUrl],
    OPENAI_API_KEYS: ['sk-fake'],
    OPENAI_API_CONFIGS: { 0: { enable: true } },
  });
  const models = await api('GET', '/api/models', token);
  check('model listed', models.data.some((m) => m.id === MODEL), models.data.map((m) => m.id));

  // 3. Reload so the app reads the models and tools; close the changelog shown on a first visit.
  step = 'chat-screen';
  await page.reload({ waitUntil: 'networkidle', timeout: 60000 });
  await page.locator('#chat-input').waitFor({ timeout: 30000 });
  const dismiss = (button) => button.waitFor({ timeout: 5000 }).then(() => button.click(), () => undefined);
  await dismiss(page.getByRole('button', { name: "Okay, Let's Go!" }));
  await dismiss(page.getByRole('button', { name: 'Не сейчас' })); // the fork's analytics consent banner
  await shot('1-chat-screen');

  // 4. Pick the model.
  step = 'pick-model';
  await page.locator('#model-selector-model-button').click();
  await page.locator(`[data-testid="model-item"][aria-label*="${MODEL}"]`).first().click();
  await sleep(300);
  check('model picked', (await page.locator('#model-selector-model-button').innerText()).includes(MODEL));

  // 5. Switch the tool on: integrations menu → Tools → Calculator.
  step = 'enable-tool';
  await page.locator('#integration-menu-button').click();
  await page.getByRole('button', { name: /^Tools\s*1$/ }).click();
  await page.getByRole('button', { name: 'Calculator' }).click();
  await sleep(300);
  await shot('2-tools-menu');
  await page.keyboard.press('Escape');
  const availableTools = page.getByRole('button', { name: 'Available Tools' });
  await availableTools.waitFor({ timeout: 5000 });
  check('tool switched on', (await availableTools.innerText()).trim() === '1');

  // 6. Send the message; the tool's status and the streamed answer quoting its result appear.
  step = 'send';
  const input = page.locator('#chat-input');
  await input.focus();
  await page.keyboard.type(QUESTION);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/c\//, { timeout: 15000 });
  const chatId = new URL(page.url()).pathname.split('/').at(-1);
  await page.getByText('Adding 19 and 23').first().waitFor({ timeout: 15000 }).then(
    () => check('tool status shown while it runs', true),
    () => check('tool status shown while it runs', false),
  );
  await shot('3-tool-running');
  await page.getByText(ANSWER).first().waitFor({ timeout: 30000 });
  await sleep(1500); // follow-ups and the last events
  await shot('4-answer');
  check('generated title shown in the page', (await page.title()).includes(TITLE), await page.title());
  check('answer quoting the tool result shown', true, ANSWER);
  check('final status shown', await page.getByText('Added 19 and 23').first().isVisible());
  check('tool call shown in the answer', await page.getByText('View Result from add').first().isVisible());
  const calls = upstreamLog.filter((r) => r.answered.startsWith('tool call'));
  const afterTool = upstreamLog.find((r) => r.roles.at(-1) === 'tool');
  check('model called the tool natively, then got its result', calls.length === 1 && afterTool?.last === TOOL_RESULT, { calls: calls.length, toolMessage: afterTool?.last });
  const storedChat = await api('GET', `/api/v1/chats/${chatId}`, token);
  const storedAnswer = Object.values(storedChat.chat.history.messages).find((m) => m.role === 'assistant');
  check('answer stored with the call and its output', storedAnswer?.done === true && storedAnswer.content.includes(ANSWER), (storedAnswer?.output ?? []).map((i) => i.type));

  // 7. Reload the chat, then find it in the sidebar from a new chat and open it.
  step = 'reload';
  await page.reload({ waitUntil: 'networkidle', timeout: 60000 });
  await page.getByText(ANSWER).first().waitFor({ timeout: 20000 });
  check('answer shown after a reload', true);
  await shot('5-reloaded');
  step = 'sidebar';
  await page.goto(`${BASE}/`, { waitUntil: 'networkidle', timeout: 60000 });
  await page.locator('#chat-input').waitFor({ timeout: 30000 });
  const openSidebar = page.getByRole('button', { name: 'Open Sidebar' }).first();
  if (await openSidebar.count()) await openSidebar.click();
  const item = page.locator(`a[href="/c/${chatId}"]`).first();
  await item.waitFor({ timeout: 15000 });
  const itemText = (await item.innerText()).trim();
  check('chat listed in the sidebar with its title', itemText.includes(TITLE), itemText);
  await shot('6-sidebar');
  await item.click();
  await page.waitForURL(`**/c/${chatId}`, { timeout: 15000 });
  await page.getByText(ANSWER).first().waitFor({ timeout: 20000 });
  check('chat opened from the sidebar', true);
  await shot('7-opened-from-sidebar');
} catch (error) {
  check('run finished', false, String(error).split('\n')[0]);
  const page = browser?.contexts()[0]?.pages()[0];
  if (page) {
    report.stoppedAt = { url: page.url(), text: (await page.evaluate(() => document.body.innerText).catch(() => '')).slice(0, 1000) };
    await page.screenshot({ path: path.join(OUT, '99-stopped.png') }).catch(() => undefined);
  }
} finally {
  await browser?.close().catch(() => undefined);
  if (parley && parley.exitCode === null) {
    parley.kill('SIGTERM');
    await Promise.race([new Promise((resolve) => parley.once('exit', resolve)), sleep(10000)]);
  }
  upstream.closeAllConnections();
  upstream.close();
  if (!process.env.KEEP_DATA) rmSync(dataDir, { recursive: true, force: true });
  report.failedRequests = report.api.filter((r) => r.status >= 400);
  writeFileSync(path.join(OUT, 'report.json'), JSON.stringify(report, null, 1));
  const failed = Object.entries(report.checks).filter(([, v]) => !(v === true || v?.ok));
  console.log(`${failed.length === 0 ? 'all checks passed' : `${failed.length} check(s) failed`}; report: ${path.join(OUT, 'report.json')}`);
  process.exitCode = failed.length === 0 ? 0 : 1;
}
