import { describe, expect, it } from 'vitest';
import { ChildServer, useBuiltServerStore } from '../../helpers/child-server.js';
import { isTaskPrompt, startFakeModel } from '../../helpers/fake-model.js';
import { onlyOpenAI } from '../../helpers/fake-upstreams.js';
import { ApiClient } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The scheduler across a real SIGKILL: the run the dead process held is run by the next one, once. */
describe('a server killed with SIGKILL during an automation run', () => {
  const store = useBuiltServerStore('parley-automations-crash');

  it('runs the interrupted slot again once its lease ran out, and only once', { timeout: 120_000 }, async () => {
    const model = await startFakeModel();
    let calls = 0;
    // The first answer takes long enough for the kill to land in the middle of the run.
    model.script = async (body) => {
      if (isTaskPrompt(body)) return { text: '{}' };
      calls++;
      if (calls === 1) await sleep(15_000);
      return { text: `answer ${calls}` };
    };
    const env = {
      DATA_DIR: store.dataDir,
      WEBUI_SECRET_KEY: 'automations-crash-key',
      ...onlyOpenAI(model.url),
      BYPASS_MODEL_ACCESS_CONTROL: 'true',
      ENABLE_EVALUATION_ARENA_MODELS: 'false',
      SCHEDULER_POLL_INTERVAL: '0.2',
      SCHEDULER_LEASE_SECONDS: '2',
      ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
    };
    let child = await ChildServer.start(store.entry, env);
    try {
      const admin = await signup(new ApiClient(child.url), 'Crash Automation Admin');
      const start = new Date(Date.now() + 1500).toISOString().replace(/[-:]/g, '').slice(0, 15);
      const created = await new ApiClient(child.url).post(
        '/api/v1/automations/create',
        { name: 'Crashing', data: { prompt: 'Hello', model_id: 'fake-model', rrule: `DTSTART:${start}\nRRULE:FREQ=DAILY` } },
        { token: admin.token },
      );
      expect(created.status, created.text).toBe(200);
      const deadline = Date.now() + 30_000;
      while (calls === 0 && Date.now() < deadline) await sleep(50);
      expect(calls).toBe(1);
      await child.kill();

      child = await ChildServer.start(store.entry, env);
      const api = new ApiClient(child.url);
      const runs = async () => (await api.get(`/api/v1/automations/${created.body.id}/runs`, { token: admin.token })).body as any[];
      const until = Date.now() + 30_000;
      while ((await runs()).length === 0 && Date.now() < until) await sleep(100);
      // Another poll or two: still one run.
      await sleep(1000);
      expect(await runs()).toMatchObject([{ status: 'success', output: 'answer 2' }]);
      expect(calls).toBe(2);
      const automation = (await api.get(`/api/v1/automations/${created.body.id}`, { token: admin.token })).body;
      expect(automation.next_run_at / 1_000_000).toBeGreaterThan(Date.now() + 23 * 3600 * 1000);
    } finally {
      await child.kill().catch(() => undefined);
      await model.close();
    }
  });
});
