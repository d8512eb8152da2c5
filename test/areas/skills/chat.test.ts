import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultScript, fakeModel, isTaskPrompt } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';
import { type Browser, openBrowser, outputText, webRequest } from '../completions/setup.js';

/**
 * `skill_ids` in a completion (middleware.py): for API clients every usable
 * skill joins the system message in full; a web client's answer gets a manifest
 * and the built-in `view_skill` tool, except for skills mentioned as
 * `<$id|label>`, which join in full (the mention becomes its label).
 */
const world = useServer({ fakes: fakeModel(), admin: 'Skills Chat Admin', users: { alice: ['user', 'Alice Chat'] } });
let browser: Browser;

beforeAll(async () => {
  const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
  for (const [id, grants] of [
    ['tone', everyone],
    ['format', everyone],
    ['secret', []],
    ['dormant', everyone],
  ] as const) {
    const res = await world.api.post(
      '/api/v1/skills/create',
      { id, name: `Skill ${id}`, description: `How to ${id}`, content: `Instructions for ${id}.`, access_grants: grants },
      { token: world.admin.token },
    );
    expect(res.status, res.text).toBe(200);
  }
  await world.api.post('/api/v1/skills/id/dormant/toggle', {}, { token: world.admin.token });
  await world.api.post('/api/v1/models/create', { id: 'fake-model', name: 'Fake', meta: {}, params: {}, access_grants: everyone }, { token: world.admin.token });
  browser = await openBrowser(world.server.url, world.alice.token);
});
afterAll(() => browser?.close());

const systemOf = (body: any) => body.messages.find((m: any) => m.role === 'system')?.content ?? '';

describe('skills in a chat', () => {
  it('gives an API client the readable, active skills in full', async () => {
    world.model.script = defaultScript;
    const res = await world.api.post(
      '/api/chat/completions',
      { model: 'fake-model', messages: [{ role: 'user', content: 'hello' }], skill_ids: ['tone', 'secret', 'dormant', 'missing'] },
      { token: world.alice.token },
    );
    expect(res.status, res.text).toBe(200);
    const sent = world.model.chatRequests().at(-1);
    expect(systemOf(sent)).toBe('<skill name="Skill tone">\nInstructions for tone.\n</skill>');
    expect(sent.tools).toBeUndefined();
    expect(sent).not.toHaveProperty('skill_ids');
  });

  it('lists selected skills for a web client, which loads one with view_skill; a mention joins in full', async () => {
    world.model.script = (body: any) => {
      if (isTaskPrompt(body)) return defaultScript(body);
      const results = body.messages.filter((m: any) => m.role === 'tool');
      if (results.length === 0) return { toolCalls: [{ name: 'view_skill', arguments: { id: 'TONE' } }, { name: 'view_skill', arguments: { id: 'secret' } }] };
      return { text: `Loaded: ${results.map((r: any) => r.content).join(' | ')}` };
    };
    const { body, assistantId } = webRequest(browser.socket, { content: 'Use <$format|Format skill> please', extra: { skill_ids: ['tone', 'secret'], background_tasks: {} } });
    const res = await world.api.post('/api/chat/completions', body, { token: world.alice.token });
    expect(res.status, res.text).toBe(200);
    const done = await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done, 'the answer', 20000);

    const [first] = world.model.chatRequests().slice(-2);
    expect(systemOf(first)).toBe(
      '<skill name="Skill format">\nInstructions for format.\n</skill>\n' +
        '<available_skills>\n<skill>\n<id>tone</id>\n<name>Skill tone</name>\n<description>How to tone</description>\n</skill>\n</available_skills>',
    );
    expect(first.messages.at(-1)).toEqual({ role: 'user', content: 'Use Format skill please' });
    expect(first.tools.map((t: any) => t.function.name)).toContain('view_skill');
    expect(outputText(done.data.output)).toBe(
      `Loaded: ${JSON.stringify({ name: 'Skill tone', content: 'Instructions for tone.' })} | ${JSON.stringify({ error: "Skill 'secret' not found" })}`,
    );
  }, 30000);
});
