import { describe, expect, it } from 'vitest';
import { defaultScript, lastUserText, startFakeModel, type FakeModel } from '../../helpers/fake-model.js';
import { onlyOpenAI } from '../../helpers/fake-upstreams.js';
import { uploadFile } from '../../helpers/files.js';
import { as } from '../../helpers/users.js';
import { type Fakes, useServer } from '../../helpers/world.js';
import { openBrowser, webRequest } from '../completions/setup.js';
import { type FakeEngines, startFakeEngines } from './fake-engines.js';

const IMAGE_PROMPT_TASK = 'Generate a detailed prompt for am image generation task';
/** The web client's answers get the built-in image tools unless function calling is `legacy`, where the image step runs (middleware.py). */
const LEGACY = { function_calling: 'legacy' };
const CREATED = '<context>The requested image has been created by the system successfully';

/** The image engines, and a model that writes `{"prompt": ...}` when asked for an image prompt. */
const enginesAndModel: Fakes<{ engines: FakeEngines; model: FakeModel }> = {
  start: async () => {
    const model = await startFakeModel();
    model.script = (body) => (lastUserText(body?.messages).includes(IMAGE_PROMPT_TASK) ? { text: 'Here: {"prompt": "a watercolor lighthouse at dusk"}' } : defaultScript(body));
    return { engines: await startFakeEngines(), model };
  },
  env: ({ model }) => ({ ...onlyOpenAI(model.url), ENABLE_EVALUATION_ARENA_MODELS: 'false' }),
};

describe('features.image_generation in a chat', () => {
  const world = useServer({ fakes: enginesAndModel });
  const configure = async (patch: Record<string, unknown>) => {
    const current = (await world.api.get('/api/v1/images/config', as(world.admin))).body;
    const res = await world.api.post('/api/v1/images/config/update', { ...current, ...patch }, as(world.admin));
    expect(res.status, res.text).toBe(200);
  };
  const openai = () => ({
    ENABLE_IMAGE_GENERATION: true,
    IMAGE_GENERATION_ENGINE: 'openai',
    IMAGE_GENERATION_MODEL: 'dall-e-3',
    IMAGES_OPENAI_API_BASE_URL: `${world.engines.url}/openai/v1`,
    IMAGES_OPENAI_API_KEY: 'sk-images',
  });

  /** Sends a web client's message with the feature on; answers what the browser and the model saw. */
  const ask = async (content: string, userFiles: unknown[] = [], params: Record<string, unknown> = LEGACY) => {
    const browser = await openBrowser(world.server.url, world.admin.token);
    try {
      const answersBefore = world.model.chatRequests().length;
      const { body, assistantId } = webRequest(browser.socket, { content, extra: { features: { image_generation: true }, background_tasks: {}, params } });
      // The frontend keeps a message's attachments on the message itself.
      if (userFiles.length > 0) Object.assign(body.user_message, { files: userFiles });
      const res = await world.api.post('/api/chat/completions', body, as(world.admin));
      expect(res.status, res.text).toBe(200);
      await browser.next((e) => e.message_id === assistantId && e.type === 'chat:completion' && e.data?.done === true, 'the answer');
      const events = browser.received.filter((e) => e.message_id === assistantId);
      const sent = world.model.chatRequests().slice(answersBefore).at(-1);
      const chat = await world.api.get(`/api/v1/chats/${res.body.chat_id}`, as(world.admin));
      return { events, sent, stored: chat.body.chat.history.messages[assistantId] };
    } finally {
      browser.close();
    }
  };

  it('writes the image prompt, generates, shows the image with status and files events, and tells the model', async () => {
    await configure(openai());
    const { events, sent, stored } = await ask('Draw me a lighthouse');
    expect(world.model.requests.some((r) => lastUserText(r.messages).includes(IMAGE_PROMPT_TASK))).toBe(true);
    expect(world.engines.seen('/openai/v1/images/generations').at(-1)!.body).toMatchObject({ prompt: 'a watercolor lighthouse at dusk', n: 1 });
    expect(events.filter((e) => e.type === 'status').map((e) => e.data)).toEqual([
      { description: 'Creating image', done: false },
      { description: 'Image created', done: true },
    ]);
    const files = events.find((e) => e.type === 'files')!.data.files;
    expect(files).toEqual([{ type: 'image', url: expect.stringMatching(/^\/api\/v1\/files\/[0-9a-f-]{36}\/content$/) }]);
    const system = sent.messages.find((m: any) => m.role === 'system');
    expect(system.content).toContain(CREATED);
    // The answer keeps the image and the statuses, and the image is the user's file.
    expect(stored.files).toEqual(files);
    expect(stored.statusHistory.map((s: any) => s.description)).toEqual(['Creating image', 'Image created']);
    const image = await fetch(`${world.server.url}${files[0].url}`, { headers: { authorization: `Bearer ${world.admin.token}` } });
    expect(Buffer.from(await image.arrayBuffer()).equals(world.engines.png.openai)).toBe(true);
    const file = await world.api.get(`/api/v1/files/${files[0].url.split('/')[4]}`, as(world.admin));
    expect(file.body.meta.data).toMatchObject({ chat_id: expect.any(String), message_id: expect.any(String) });
  });

  it('uses the user message as the prompt when prompt generation is off', async () => {
    await configure({ ...openai(), ENABLE_IMAGE_PROMPT_GENERATION: false });
    const before = world.model.requests.filter((r) => lastUserText(r.messages).includes(IMAGE_PROMPT_TASK)).length;
    await ask('A cat on a red sofa');
    expect(world.engines.seen('/openai/v1/images/generations').at(-1)!.body.prompt).toBe('A cat on a red sofa');
    expect(world.model.requests.filter((r) => lastUserText(r.messages).includes(IMAGE_PROMPT_TASK)).length).toBe(before);
    await configure({ ENABLE_IMAGE_PROMPT_GENERATION: true });
  });

  it("a failed generation is a status and the model is told the engine's error; the answer still completes", async () => {
    await configure(openai());
    world.engines.failNext = { status: 400, body: { error: { message: 'Safety system rejected the prompt' } } };
    const { events, sent, stored } = await ask('Draw something forbidden');
    expect(events.filter((e) => e.type === 'status').at(-1)!.data).toEqual({ description: 'An error occurred while generating an image', done: true });
    expect(events.some((e) => e.type === 'files')).toBe(false);
    expect(sent.messages.find((m: any) => m.role === 'system').content).toContain('Tell the user that the following error occurred: [ERROR: Safety system rejected the prompt]');
    expect(stored.done).toBe(true);
  });

  it('edits the images of the conversation when editing is on', async () => {
    await configure({ ...openai(), ENABLE_IMAGE_EDIT: true, IMAGE_EDIT_MODEL: 'dall-e-2', IMAGES_EDIT_OPENAI_API_BASE_URL: `${world.engines.url}/openai/v1` });
    const upload = await uploadFile(world.server.url, world.admin, 'photo.png', world.engines.png.gemini, 'image/png', { query: '?process=false' });
    const before = world.engines.seen('/openai/v1/images/edits').length;
    const { events, sent } = await ask('Make it red', [{ type: 'image', url: upload.body.id }]);
    expect(events.filter((e) => e.type === 'status').at(-1)!.data).toEqual({ description: 'Image created', done: true });
    expect(sent.messages.find((m: any) => m.role === 'system').content).toContain('<context>The requested image has been edited');
    expect(world.engines.seen('/openai/v1/images/edits').length).toBe(before + 1);
    const edit = world.engines.seen('/openai/v1/images/edits').at(-1)!;
    expect(edit.body).toMatchObject({ prompt: 'Make it red', model: 'dall-e-2', response_format: 'b64_json' });
    expect(edit.body['image[]'].bytes.equals(world.engines.png.gemini)).toBe(true);
    await configure({ ENABLE_IMAGE_EDIT: false });
  });

  it("in a web client's answer: the model calls generate_image, the image is shown, and no image step runs", async () => {
    await configure(openai());
    const script = world.model.script;
    world.model.script = (body) => {
      if (!body.tools) return defaultScript(body);
      if (body.messages.some((m: any) => m.role === 'tool')) return { text: 'Here is your lighthouse.' };
      return { toolCalls: [{ name: 'generate_image', arguments: { prompt: 'a lighthouse drawn by the model' } }] };
    };
    try {
      const before = world.model.requests.filter((r) => lastUserText(r.messages).includes(IMAGE_PROMPT_TASK)).length;
      const { events, sent, stored } = await ask('Draw a lighthouse', [], {});
      expect(world.model.requests.filter((r) => lastUserText(r.messages).includes(IMAGE_PROMPT_TASK)).length).toBe(before);
      expect(world.engines.seen('/openai/v1/images/generations').at(-1)!.body.prompt).toBe('a lighthouse drawn by the model');
      expect(events.some((e) => e.type === 'status' && e.data.description === 'Creating image')).toBe(false);
      const files = events.find((e) => e.type === 'files')!.data.files;
      expect(files).toEqual([{ type: 'image', url: expect.stringMatching(/^\/api\/v1\/files\/[0-9a-f-]{36}\/content$/) }]);
      expect(stored.files).toEqual(files);
      const result = JSON.parse(sent.messages.find((m: any) => m.role === 'tool').content);
      expect(result).toMatchObject({ status: 'success', images: [{ url: files[0].url }] });
      expect(sent.tools.map((t: any) => t.function.name)).toContain('generate_image');
      expect(sent.tools.map((t: any) => t.function.name)).not.toContain('edit_image');
    } finally {
      world.model.script = script;
    }
  });

  it('does nothing when the feature is off, and refuses a user without the permission with a status', async () => {
    await configure({ ...openai(), ENABLE_IMAGE_GENERATION: false });
    const before = world.engines.seen('/openai/v1/images/generations').length;
    const { events, sent } = await ask('Draw a dog');
    expect(world.engines.seen('/openai/v1/images/generations').length).toBe(before);
    expect(events.filter((e) => e.type === 'status').at(-1)!.data.description).toBe('An error occurred while generating an image');
    expect(sent.messages.find((m: any) => m.role === 'system').content).toContain('Image generation is off or not permitted');
  });
});
