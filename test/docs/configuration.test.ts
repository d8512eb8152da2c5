import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildParley } from '../../src/app.js';
import { readEnv } from '../../src/config/env.js';
import { createTestDatabase, dropTestDatabase } from '../helpers/server.js';

/** Every environment variable a starting server reads (process settings, area options, setting seeds). */
async function variablesReadAtStart(): Promise<Set<string>> {
  const read = new Set<string>();
  const recording = (values: Record<string, string | undefined>) =>
    new Proxy(values, {
      get: (target, name) => {
        if (typeof name === 'string') read.add(name);
        return target[name as string];
      },
      has: (target, name) => {
        if (typeof name === 'string') read.add(name);
        return name in target;
      },
    });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-docs-'));
  const databaseUrl = await createTestDatabase();
  try {
    const env = readEnv(recording({ DATA_DIR: dataDir, WEBUI_SECRET_KEY: 'docs', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) }));
    env.raw = recording(env.raw);
    const parley = await buildParley({ env, logLevel: 'silent' });
    await parley.close();
  } finally {
    await dropTestDatabase(databaseUrl);
    rmSync(dataDir, { recursive: true, force: true });
  }
  return read;
}

/** The variables with a row of their own in docs/configuration.md's table of every variable. */
function documentedVariables(): Set<string> {
  const text = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  const table = text.slice(text.indexOf('## Every variable'));
  return new Set([...table.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]));
}

describe('docs/configuration.md', () => {
  it('has a row for every variable Parley reads', async () => {
    const read = [...(await variablesReadAtStart())].filter((name) => /^[A-Z][A-Z0-9_]*$/.test(name));
    expect(read.length).toBeGreaterThan(300);
    const documented = documentedVariables();
    expect(read.filter((name) => !documented.has(name))).toEqual([]);
  });
});
