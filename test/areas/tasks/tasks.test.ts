import { describe, expect, it } from 'vitest';
import { DEFAULT_TEMPLATES } from '../../../src/areas/tasks/templates.js';
import { defaultScript, fakeModel, lastUserText } from '../../helpers/fake-model.js';
import { useServer } from '../../helpers/world.js';

/** `/api/v1/tasks` (routers/tasks.py): the config form and the task completions. */
const DEFAULT_CONFIG = {
  TASK_MODEL: '',
  TASK_MODEL_EXTERNAL: '',
  TITLE_GENERATION_PROMPT_TEMPLATE: '',
  IMAGE_PROMPT_GENERATION_PROMPT_TEMPLATE: '',
  ENABLE_AUTOCOMPLETE_GENERATION: false,
  AUTOCOMPLETE_GENERATION_INPUT_MAX_LENGTH: -1,
  AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE: '',
  TAGS_GENERATION_PROMPT_TEMPLATE: '',
  FOLLOW_UP_GENERATION_PROMPT_TEMPLATE: '',
  ENABLE_FOLLOW_UP_GENERATION: true,
  ENABLE_TAGS_GENERATION: true,
  ENABLE_TITLE_GENERATION: true,
  ENABLE_SEARCH_QUERY_GENERATION: true,
  ENABLE_RETRIEVAL_QUERY_GENERATION: true,
  QUERY_GENERATION_PROMPT_TEMPLATE: '',
  TOOLS_FUNCTION_CALLING_PROMPT_TEMPLATE: '',
  ENABLE_VOICE_MODE_PROMPT: true,
  VOICE_MODE_PROMPT_TEMPLATE: '',
};

describe('/api/v1/tasks', () => {
  const world = useServer({ fakes: fakeModel(['fake-model', 'task-model']), admin: 'Tasks Admin', users: { alice: ['user', 'Tasks Alice'] } });
  const lastPrompt = () => lastUserText(world.model.requests.at(-1).messages);
  const update = (changes: Record<string, unknown>) => world.api.post('/api/v1/tasks/config/update', { ...DEFAULT_CONFIG, ...changes }, { token: world.admin.token });

  describe('config', () => {
    it('is readable by users, with the reference defaults', async () => {
      const res = await world.api.get('/api/v1/tasks/config', { token: world.alice.token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(DEFAULT_CONFIG);
    });

    it('is updated by admins with the whole form; 0.11.0 requires the autocomplete template', async () => {
      for (const missing of ['AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE', 'ENABLE_VOICE_MODE_PROMPT', 'TASK_MODEL']) {
        const { [missing]: _gone, ...form } = { ...DEFAULT_CONFIG, ENABLE_TITLE_GENERATION: false } as Record<string, unknown>;
        const res = await world.api.post('/api/v1/tasks/config/update', form, { token: world.admin.token });
        expect(res.status).toBe(422);
        expect(res.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', missing] });
      }
      expect((await update({ ENABLE_TITLE_GENERATION: false })).status).toBe(200);
      expect((await world.api.get('/api/v1/tasks/config', { token: world.admin.token })).body.ENABLE_TITLE_GENERATION).toBe(false);
      expect((await update({ AUTOCOMPLETE_GENERATION_PROMPT_TEMPLATE: null })).status).toBe(422);
      expect((await world.api.post('/api/v1/tasks/config/update', DEFAULT_CONFIG, { token: world.alice.token })).status).toBe(401);
      const saved = await update({ TASK_MODEL: null, VOICE_MODE_PROMPT_TEMPLATE: 'Speak softly' });
      expect(saved.body).toEqual({ ...DEFAULT_CONFIG, TASK_MODEL: null, VOICE_MODE_PROMPT_TEMPLATE: 'Speak softly' });
      // Nothing the reference publishes.
      expect(world.events.filter((e) => e.event.startsWith('config.'))).toEqual([]);
      await update({});
    });

    it('no longer has POST /active/chats (removed in 0.11.0)', async () => {
      const res = await world.api.post('/api/v1/tasks/active/chats', { chat_ids: [] }, { token: world.admin.token });
      expect([404, 405]).toContain(res.status);
    });
  });

  describe('completions', () => {
    const messages = [
      { role: 'user', content: 'How do I bake bread?' },
      { role: 'assistant', content: 'Flour, water, salt and time.' },
    ];

    it('titles: the task prompt with the conversation, the answer as the provider gave it', async () => {
      const res = await world.api.post('/api/v1/tasks/title/completions', { model: 'fake-model', messages }, { token: world.alice.token });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: "Model '' was not found" });
      const ok = await world.api.post('/api/v1/tasks/title/completions', { model: 'fake-model', messages }, { token: world.admin.token });
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.choices[0].message.content).toBe(JSON.stringify({ title: 'A Fake Title' }));
      expect(lastPrompt()).toContain('Generate a concise title');
      expect(lastPrompt()).toContain('USER: How do I bake bread?\nASSISTANT: Flour, water, salt and time.');
      expect(world.model.requests.at(-1)).toMatchObject({ model: 'fake-model', stream: false, max_tokens: 1000 });
      expect((await world.api.post('/api/v1/tasks/title/completions', { model: '', messages }, { token: world.admin.token })).body).toEqual({
        detail: 'No model specified for title generation. Please ensure a model is selected for this chat.',
      });
    });

    it('uses the external task model when one is set', async () => {
      await update({ TASK_MODEL_EXTERNAL: 'task-model', TITLE_GENERATION_PROMPT_TEMPLATE: 'Title for {{prompt}} by {{USER_NAME}}' });
      try {
        await world.api.post('/api/v1/tasks/title/completions', { model: 'fake-model', messages }, { token: world.admin.token });
        expect(world.model.requests.at(-1).model).toBe('task-model');
        expect(lastPrompt()).toBe(`Title for How do I bake bread? by ${world.admin.name}`);
      } finally {
        await update({});
      }
    });

    it('tags and follow-ups; switched off they say so', async () => {
      const tags = await world.api.post('/api/v1/tasks/tags/completions', { model: 'fake-model', messages }, { token: world.admin.token });
      expect(JSON.parse(tags.body.choices[0].message.content)).toEqual({ tags: ['Testing', 'Fakes'] });
      const followUps = await world.api.post('/api/v1/tasks/follow_up/completions', { model: 'fake-model', messages }, { token: world.admin.token });
      expect(JSON.parse(followUps.body.choices[0].message.content).follow_ups).toHaveLength(2);
      await update({ ENABLE_TAGS_GENERATION: false, ENABLE_FOLLOW_UP_GENERATION: false, ENABLE_TITLE_GENERATION: false });
      try {
        const before = world.model.requests.length;
        for (const [path, detail] of [
          ['tags', 'Tags generation is disabled'],
          ['follow_up', 'Follow-up generation is disabled'],
          ['title', 'Title generation is disabled'],
        ]) {
          const res = await world.api.post(`/api/v1/tasks/${path}/completions`, { model: 'fake-model', messages }, { token: world.admin.token });
          expect([res.status, res.body]).toEqual([200, { detail }]);
        }
        expect(world.model.requests.length).toBe(before);
      } finally {
        await update({});
      }
    });

    it('queries, with their switches', async () => {
      const res = await world.api.post('/api/v1/tasks/queries/completions', { model: 'fake-model', messages, type: 'web_search' }, { token: world.admin.token });
      expect(res.status).toBe(200);
      expect(lastPrompt()).toContain('{ "queries": ["query1", "query2"] }');
      await update({ ENABLE_SEARCH_QUERY_GENERATION: false, ENABLE_RETRIEVAL_QUERY_GENERATION: false });
      try {
        expect((await world.api.post('/api/v1/tasks/queries/completions', { model: 'fake-model', messages, type: 'web_search' }, { token: world.admin.token })).body).toEqual({
          detail: 'Search query generation is disabled',
        });
        expect((await world.api.post('/api/v1/tasks/queries/completions', { model: 'fake-model', messages, type: 'retrieval' }, { token: world.admin.token })).body).toEqual({
          detail: 'Query generation is disabled',
        });
      } finally {
        await update({});
      }
    });

    it('autocompletion: off by default, then bounded by the input limit', async () => {
      const form = { model: 'fake-model', prompt: 'The sun was setting', type: 'General', messages };
      const off = await world.api.post('/api/v1/tasks/auto/completions', form, { token: world.admin.token });
      expect([off.status, off.body]).toEqual([400, { detail: 'Autocompletion generation is disabled' }]);
      await update({ ENABLE_AUTOCOMPLETE_GENERATION: true, AUTOCOMPLETE_GENERATION_INPUT_MAX_LENGTH: 10 });
      try {
        const long = await world.api.post('/api/v1/tasks/auto/completions', form, { token: world.admin.token });
        expect([long.status, long.body]).toEqual([400, { detail: 'Input prompt exceeds maximum length of 10' }]);
        const ok = await world.api.post('/api/v1/tasks/auto/completions', { ...form, prompt: 'The sun' }, { token: world.admin.token });
        expect(ok.status).toBe(200);
        expect(lastPrompt()).toContain('<type>General</type>');
        expect(lastPrompt()).toContain('<text>The sun</text>');
      } finally {
        await update({});
      }
    });

    it('emoji, image prompts and mixtures of answers', async () => {
      expect((await world.api.post('/api/v1/tasks/emoji/completions', { model: 'fake-model', prompt: 'I am so happy' }, { token: world.admin.token })).status).toBe(200);
      expect(world.model.requests.at(-1).max_tokens).toBe(4);
      expect(lastPrompt()).toBe(DEFAULT_TEMPLATES.EMOJI.replace('{{prompt}}', 'I am so happy'));
      expect((await world.api.post('/api/v1/tasks/image_prompt/completions', { model: 'fake-model', messages }, { token: world.admin.token })).status).toBe(200);
      expect(lastPrompt()).toContain('Generate a detailed prompt for am image generation task');
      world.model.script = (body) => (body.stream ? { text: 'merged answer' } : defaultScript(body));
      try {
        const res = await fetch(`${world.server.url}/api/v1/tasks/moa/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${world.admin.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'fake-model', prompt: 'Which is best?', responses: ['A', 'B'], stream: true }),
        });
        expect(res.headers.get('content-type')).toContain('text/event-stream');
        expect(await res.text()).toContain('merged');
        expect(lastPrompt()).toContain('"""A"""\n\n"""B"""');
        expect(lastPrompt()).toContain('"Which is best?"');
      } finally {
        world.model.script = defaultScript;
      }
    });
  });

  describe('/api/tasks', () => {
    it('lists and stops tasks for admins only', async () => {
      expect((await world.api.get('/api/tasks', { token: world.alice.token })).status).toBe(401);
      expect((await world.api.get('/api/tasks', { token: world.admin.token })).body).toEqual({ tasks: [] });
      expect((await world.api.post('/api/tasks/stop/nope', undefined, { token: world.alice.token })).status).toBe(401);
      expect((await world.api.post('/api/tasks/stop/nope', undefined, { token: world.admin.token })).body).toEqual({ status: false, message: 'Task with ID nope not found.' });
      expect((await world.api.get('/api/tasks/chat/local:nobody', { token: world.alice.token })).body).toEqual({ task_ids: [] });
      expect((await world.api.post('/api/tasks/chat/unknown-chat/stop', undefined, { token: world.admin.token })).status).toBe(404);
    });
  });
});
