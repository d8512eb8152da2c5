import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * The client of the streaming scenarios, the same code whether it talks to Parley
 * or straight to the fake provider: POSTs a Chat Completions body and reads the
 * Server-Sent Events answer to its end.
 */

/** Keep-alive connections, as SDK clients use them; `maxSockets` bounds concurrency per server. */
export const keepAliveAgent = (maxSockets = Infinity) => new Agent({ keepAlive: true, maxSockets });

/**
 * Resolves (never rejects) to `{ status, firstChunkMs, totalMs, deltas, done, error }`:
 * milliseconds from sending the request to the first data of the answer's body and
 * to its end, the content deltas received, and whether `data: [DONE]` came.
 */
export function streamChat(url, body, { headers = {}, agent }) {
  const payload = JSON.stringify(body);
  return new Promise((resolve) => {
    const started = performance.now();
    const result = { status: 0, firstChunkMs: NaN, totalMs: NaN, deltas: 0, done: false, error: null };
    const finish = (error) => {
      result.totalMs = performance.now() - started;
      result.error ??= error ?? null;
      resolve(result);
    };
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } },
      (res) => {
        result.status = res.statusCode;
        res.setEncoding('utf8');
        let pending = '';
        res.on('data', (text) => {
          if (Number.isNaN(result.firstChunkMs)) result.firstChunkMs = performance.now() - started;
          pending += text;
          const events = pending.split('\n\n');
          pending = events.pop();
          for (const event of events) countEvent(event, result);
        });
        res.once('end', () => finish(res.statusCode === 200 ? null : `HTTP ${res.statusCode}: ${pending.slice(0, 200)}`));
        res.once('error', (error) => finish(error.message));
      },
    );
    req.once('error', (error) => finish(error.message));
    req.end(payload);
  });
}

function countEvent(event, result) {
  for (const line of event.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (data === '[DONE]') {
      result.done = true;
      continue;
    }
    try {
      if (JSON.parse(data).choices?.[0]?.delta?.content) result.deltas++;
    } catch {
      result.error ??= `not JSON: ${data.slice(0, 100)}`;
    }
  }
}
