import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { fakeProviders } from '../helpers/fake-upstreams.js';
import { withWorld } from '../helpers/world.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The README's curl walk-through: the `sh` block after "First steps with curl" that sets BASE. */
function walkThrough(): string {
  const section = README.slice(README.indexOf('## First steps with curl'));
  const block = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).find((text) => text.startsWith('BASE='));
  if (!block) throw new Error('README: no curl walk-through');
  return block;
}

describe('README', () => {
  it('walk-through runs as written against a fresh server with a provider', async () => {
    await withWorld({ fakes: fakeProviders({ openai: ['walk-model'] }), admin: false }, async (world) => {
      // Only the two lines a reader adapts change: where the server is, and the provider's model.
      const script = walkThrough()
        .replace(/^BASE=.*$/m, `BASE=${world.server.url}`)
        .replace(/^MODEL=.*$/m, 'MODEL=walk-model');
      const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], { env: { PATH: process.env.PATH ?? '' } });
      const lines = stdout.trim().split('\n');
      expect(lines[0]).toBe('admin');
      expect(lines[1]).toBe('true');
      expect(lines).toContain('walk-model');
      expect(lines.at(-1)).toBe('You said: Say hello');
      // The key the walk-through made is the admin's, and the provider was asked once.
      expect(world.openai.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
    });
  });

  it('points at /docs and /openapi.json, which a server answers', async () => {
    expect(README).toContain('`/docs`');
    expect(README).toContain('`/openapi.json`');
    await withWorld({ admin: false }, async (world) => {
      expect((await world.api.get('/docs')).status).toBe(200);
      const openapi = await world.api.get('/openapi.json');
      expect(openapi.body.openapi).toBe('3.1.0');
      expect(Object.keys(openapi.body.paths)).toEqual(expect.arrayContaining(['/api/chat/completions', '/api/v1/auths/api_key']));
    });
  });
});
