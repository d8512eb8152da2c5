import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { bundleParley, ChildServer } from '../helpers/child-server.js';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { onlyOpenAI } from '../helpers/fake-upstreams.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ApiClient, createTestDatabase, dropTestDatabase, listenLocally } from '../helpers/server.js';
import { signup } from '../helpers/users.js';

/**
 * What `npm start` runs: the single-file bundle with package.json's node flags. The
 * packages it leaves outside and loads only when needed (pg, ioredis and the socket.io
 * Redis adapter, undici, prom-client, OpenTelemetry) must still be found and work.
 */
describe('the bundled server', () => {
  let bundle: { file: string; remove(): void };
  let redis: TestRedis;
  let model: FakeModel;
  let databaseUrl: string | null;
  let dataDir: string;
  let child: ChildServer | undefined;

  beforeAll(async () => {
    [bundle, redis, model, databaseUrl] = await Promise.all([bundleParley(), startRedis(), startFakeModel(['bundled-model']), createTestDatabase()]);
    dataDir = mkdtempSync(path.join(tmpdir(), 'parley-bundle-'));
  }, 120_000);

  afterAll(async () => {
    await child?.kill();
    redis?.stop();
    await model?.close();
    await dropTestDatabase(databaseUrl);
    bundle?.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts, signs up, answers a session, its docs and a provider through its lazily loaded packages', { timeout: 60_000 }, async () => {
    // An OTLP collector that only notes what was posted where.
    const exported: string[] = [];
    const collector = createServer((request, response) => {
      exported.push(request.url ?? '');
      request.resume().on('end', () => response.end('{}'));
    });
    const collectorUrl = await listenLocally(collector);
    child = await ChildServer.start(
      bundle.file,
      {
        DATA_DIR: dataDir,
        WEBUI_SECRET_KEY: 'bundle-test-key',
        REDIS_URL: redis.url,
        ...onlyOpenAI(model.url),
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
        ENABLE_METRICS: 'true',
        METRICS_TOKEN: 'bundle-scrape',
        ENABLE_OTEL: 'true',
        ENABLE_OTEL_TRACES: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
      },
      packageJson.config.node_flags.split(' '),
    );
    const api = new ApiClient(child.url);
    const admin = await signup(api, 'Bundle Admin');
    const session = await api.get('/api/v1/auths/', { token: admin.token });
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({ id: admin.id, role: 'admin', token: admin.token });

    expect((await api.get('/docs')).status).toBe(200);
    expect((await api.get('/docs/static/swagger-ui-bundle.js')).status).toBe(200);

    // undici, at the first request to a provider.
    const models = await api.get('/api/models', { token: admin.token });
    expect(models.status, models.text).toBe(200);
    expect(models.body.data.map((m: { id: string }) => m.id)).toContain('bundled-model');

    // pdfmake, at the first chat PDF (outside the bundle: it reads its fonts next to its modules).
    const pdf = await fetch(`${child.url}/api/v1/utils/pdf`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Bundled', messages: [{ role: 'user', content: 'Привет' }] }),
    });
    expect(pdf.status).toBe(200);
    expect(Buffer.from(await pdf.arrayBuffer()).subarray(0, 5).toString()).toBe('%PDF-');

    // ioredis and the adapter: the server's named connections are open.
    const probe = new Redis(redis.url);
    try {
      const clients = String(await probe.client('LIST'));
      for (const name of ['parley-changes', 'parley-socket-pub', 'parley-tasks']) expect(clients).toContain(`name=${name}`);
    } finally {
      probe.disconnect();
    }

    // prom-client, at start with ENABLE_METRICS.
    const metrics = await api.get('/metrics', { token: 'bundle-scrape' });
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('parley_http_request_duration_seconds_count{method="GET",route="/api/models",status="200"} 1');

    expect(await child.stop()).toBe(0);
    child = undefined;
    // OpenTelemetry's SDK and exporter, at start with ENABLE_OTEL: the spans were sent at the latest on stop.
    collector.close();
    expect(exported).toContain('/v1/traces');
  });
});
