import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PythonHost, type PythonHostOptions } from '../../../src/core/python/host.js';

/** The plugin host's corpus: the worked examples, the runtime tool and what extraction makes of each. */
export const TOOLS_DIR = path.join(import.meta.dirname, 'tools');

export function toolSource(name: string): string {
  return readFileSync(path.join(TOOLS_DIR, name.endsWith('.py') ? name : `${name}.py`), 'utf8');
}

export function expectedExtraction(name: string): { frontmatter: Record<string, string>; specs: unknown[]; has_user_valves: boolean } {
  return JSON.parse(readFileSync(path.join(TOOLS_DIR, 'expected', `${name}.json`), 'utf8'));
}

/** Event callbacks for a tool call that record what the tool emits and asks (and answer yes). */
export function recordingCallbacks() {
  const emitted: unknown[] = [];
  const asked: unknown[] = [];
  return {
    emitted,
    asked,
    callbacks: {
      eventEmitter: async (event: unknown) => void emitted.push(event),
      eventCall: async (event: unknown) => {
        asked.push(event);
        return true;
      },
    },
  };
}

/** What the runtime tool's `progress` emits with `steps: 2`, and the one question it asks. */
export const PROGRESS_OF_TWO = {
  events: [
    { type: 'status', data: { description: 'step 0', done: false } },
    { type: 'status', data: { description: 'step 1', done: false } },
    { type: 'status', data: { description: 'done', done: true } },
  ],
  questions: [{ type: 'confirmation', data: { title: 'Go?', message: 'Continue' } }],
};

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A host on a throwaway data folder; `dispose` closes it and checks no worker outlives it. */
export function testHost(options: Partial<PythonHostOptions> = {}): { host: PythonHost; dataDir: string; dispose(): Promise<void> } {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-python-'));
  const host = new PythonHost({ dataDir, pipInstall: false, ...options });
  return {
    host,
    dataDir,
    async dispose() {
      const pids = host.workerPids();
      await host.close();
      const survivors = pids.filter(isAlive);
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(`${dataDir}.plugin-venv`, { recursive: true, force: true });
      if (survivors.length > 0) throw new Error(`python workers still alive after close: ${survivors.join(', ')}`);
    },
  };
}
