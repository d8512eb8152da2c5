import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bundleParley, ChildServer } from '../helpers/child-server.js';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { onlyOpenAI } from '../helpers/fake-upstreams.js';
import { ApiClient } from '../helpers/server.js';
import { signup } from '../helpers/users.js';

/**
 * A build replacing the bundle under a running instance (issue 15, item 9): the instance
 * imports undici's chunk at its first outgoing request, possibly after the build, and must
 * still find it; a failed import must be tried again at the next request.
 */
describe('the build output under a running instance', () => {
  let bundle: { file: string; remove(): void };
  let dir: string;
  let model: FakeModel;
  let dataDir: string;
  let child: ChildServer | undefined;

  /** The undici chunk the current parley.js imports. */
  const undiciChunk = () => readFileSync(bundle.file, 'utf8').match(/parley-undici-[A-Z0-9]+\.js/)![0];

  const start = async () => {
    child = await ChildServer.start(bundle.file, { DATA_DIR: dataDir, WEBUI_SECRET_KEY: 'build-output-key', MODELS_CACHE_TTL: '0', ...onlyOpenAI(model.url) });
    const api = new ApiClient(child.url);
    const admin = await signup(api, 'Build Admin');
    const modelIds = async () => {
      const res = await api.get('/api/models', { token: admin.token });
      expect(res.status, res.text).toBe(200);
      return res.body.data.map((m: { id: string }) => m.id);
    };
    return { modelIds };
  };

  beforeAll(async () => {
    [bundle, model] = await Promise.all([bundleParley(), startFakeModel(['built-model'])]);
    dir = path.dirname(bundle.file);
  }, 120_000);

  afterEach(async () => {
    await child?.kill();
    child = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  afterAll(async () => {
    await model?.close();
    bundle?.remove();
  });

  beforeEach(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'parley-build-output-'));
  });

  it('keeps the chunks of an earlier build, so an instance started from it still reaches providers', { timeout: 90_000 }, async () => {
    // An earlier build whose undici chunk had another name: what a running instance of it imports.
    const current = undiciChunk();
    const earlier = current.replace(/-[A-Z0-9]+\.js$/, '-EARLIER1.js');
    renameSync(path.join(dir, current), path.join(dir, earlier));
    writeFileSync(bundle.file, readFileSync(bundle.file, 'utf8').replaceAll(current, earlier));
    const { modelIds } = await start();

    // A chunk no build has written for over a week is the only kind a build removes.
    const forgotten = path.join(dir, 'parley-chunk-FORGOTTEN.js');
    writeFileSync(forgotten, 'export {};\n');
    const weekAgo = new Date(Date.now() - 8 * 24 * 3600 * 1000);
    utimesSync(forgotten, weekAgo, weekAgo);

    await bundleParley(dir);
    const files = readdirSync(dir);
    expect(files).toContain(earlier);
    expect(files).toContain(current);
    expect(files).not.toContain('parley-chunk-FORGOTTEN.js');
    // No staging folder is left beside the output.
    expect(readdirSync(path.dirname(dir)).filter((name) => name.startsWith(`.${path.basename(dir)}.build-`))).toEqual([]);

    // The running instance's first outgoing request, after the build.
    expect(await modelIds()).toContain('built-model');
  });

  it('tries a failed import of the HTTP client again at the next request', { timeout: 90_000 }, async () => {
    await bundleParley(dir); // parley.js names the current chunks again
    const chunk = path.join(dir, undiciChunk());
    const { modelIds } = await start();

    renameSync(chunk, `${chunk}.away`);
    try {
      expect(await modelIds()).not.toContain('built-model');
    } finally {
      renameSync(`${chunk}.away`, chunk);
    }
    expect(await modelIds()).toContain('built-model');
  });
});
