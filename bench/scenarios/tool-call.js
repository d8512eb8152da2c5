import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, percentile, row } from '../lib/report.js';

const CALLS = 500; // per host, after WARMUP
const WARMUP = 50;
const TARGET_RATIO = 1.5;
const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Warm tool-call round trip (issue 14, "Numbers"): `get_weather` of the worked
 * example with valves and user valves, one call at a time, through the plugin
 * host bundled from src/ as `npm run build` bundles it, with the workers' isolation in force (bubblewrap here)
 * against the same host with PLUGIN_SANDBOX=none, which is the round trip before
 * isolation (docs/plugin-host.md § Numbers). The two hosts take turns call by
 * call, so drift falls on both. Target: at most 1.5× the unisolated median.
 */
/** The plugin host module bundled into .tmp/ (inside the repository, where it finds plugin-host/); its URL. */
async function bundledHost() {
  const { build } = await import('esbuild');
  const outfile = path.join(root, '.tmp', 'bench', 'python-host.js');
  await build({ entryPoints: [path.join(root, 'src', 'core', 'python', 'host.ts')], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'warning' });
  return pathToFileURL(outfile).href;
}

export default {
  name: 'warm tool call',
  async measure() {
    const { PythonHost } = await import(await bundledHost());
    const tool = { id: 'weather', owner: 'bench', content: readFileSync(path.join(root, 'test', 'core', 'python', 'tools', 'example1_weather.py'), 'utf8') };
    const context = { caller: { id: 'bench' }, user: { id: 'bench', name: 'Bench' }, userValves: { units: 'metric' } };
    const hosts = ['auto', 'none'].map((sandbox) => {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-tools-'));
      return { dataDir, host: new PythonHost({ dataDir, pipInstall: false, poolSize: 1, sandbox }), times: [] };
    });
    const [isolated, bare] = hosts;
    try {
      for (let i = 0; i < WARMUP + CALLS; i++) {
        for (const entry of i % 2 ? [bare, isolated] : [isolated, bare]) {
          const started = performance.now();
          await entry.host.callTool(tool, 'get_weather', { city: 'Oslo', days: 2 }, context);
          if (i >= WARMUP) entry.times.push(performance.now() - started);
        }
      }
    } finally {
      for (const { host, dataDir } of hosts) {
        await host.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
    const mode = isolated.host.isolation().mode;
    const unisolated = median(bare.times);
    const rows = [
      row({
        figure: `warm tool call round trip (isolation: ${mode}; floor: none): median`,
        parley: median(isolated.times),
        floor: unisolated,
        unit: 'ms',
        target: `≤ ${TARGET_RATIO}× unisolated`,
        check: (ms) => ms <= TARGET_RATIO * unisolated,
      }),
      row({ figure: `warm tool call round trip (isolation: ${mode}; floor: none): p95`, parley: percentile(isolated.times, 0.95), floor: percentile(bare.times, 0.95), unit: 'ms' }),
    ];
    const summary = (times) => ({ calls: times.length, ms: { min: Math.min(...times), p50: median(times), p95: percentile(times, 0.95), p99: percentile(times, 0.99) } });
    return { rows, details: { mode, warmup: WARMUP, isolated: summary(isolated.times), unisolated: summary(bare.times) } };
  },
};
