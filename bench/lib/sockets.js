import { io } from 'socket.io-client';
import { median, percentile, row } from './report.js';

/** A socket.io client as the web client opens one (websocket only, no reconnection), once connected. */
export function connectSocket(url, token) {
  const socket = io(url, { path: '/ws/socket.io', transports: ['websocket'], auth: { token }, reconnection: false, forceNew: true });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', reject);
  });
}

/** Resolves once every socket has had an `event` that `matches` (set up before the send it waits for). */
export function everyoneReceives(sockets, event, matches = () => true) {
  let waiting = sockets.length;
  return new Promise((resolve) => {
    for (const socket of sockets) {
      const listener = (payload) => {
        if (!matches(payload)) return;
        socket.off(event, listener);
        waiting -= 1;
        if (waiting === 0) resolve();
      };
      socket.on(event, listener);
    }
  });
}

/** A fan-out's report: p50 and p99 of the latencies, and Parley's CPU per item sent (`what`: message, update). */
export function fanoutRows(name, latencies, cpuSeconds, what) {
  return [
    row({ figure: `${name}: p50`, parley: median(latencies), unit: 'ms' }),
    row({ figure: `${name}: p99`, parley: percentile(latencies, 0.99), unit: 'ms' }),
    row({ figure: `${name}: Parley CPU per ${what}`, parley: (cpuSeconds / latencies.length) * 1e6, unit: 'micros' }),
  ];
}
