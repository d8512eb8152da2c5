import { describe, expect, it } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import { uploadFile } from '../../helpers/files.js';
import { startServer } from '../../helpers/server.js';
import { as } from '../../helpers/users.js';
import { useServer, withWorld } from '../../helpers/world.js';
import { type FakeEngines, startFakeEngines } from './fake-engines.js';

const engines = { start: async () => ({ engines: await startFakeEngines() }) };
const CONTENT = /^\/api\/v1\/files\/([0-9a-f-]{36})\/content$/;

describe('images', () => {
  const world = useServer({ fakes: engines, users: { member: 'user', other: 'user' }, freshEvents: true });
  const fake = (): FakeEngines => world.engines;
  const configure = async (patch: Record<string, unknown>) => {
    const current = (await world.api.get('/api/v1/images/config', as(world.admin))).body;
    const res = await world.api.post('/api/v1/images/config/update', { ...current, ...patch }, as(world.admin));
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  const openai = () => ({
    ENABLE_IMAGE_GENERATION: true,
    IMAGE_GENERATION_ENGINE: 'openai',
    IMAGE_GENERATION_MODEL: 'dall-e-3',
    IMAGE_SIZE: '1024x1024',
    IMAGES_OPENAI_API_BASE_URL: `${fake().url}/openai/v1/`,
    IMAGES_OPENAI_API_KEY: 'sk-images',
    IMAGES_OPENAI_API_PARAMS: { quality: 'hd' },
  });
  /** The stored file behind a result, read as `account`. */
  const content = (url: string, account = world.member) => fetch(`${world.server.url}${url}`, { headers: { authorization: `Bearer ${account.token}` } });
  const bytesOf = async (url: string, account = world.member) => Buffer.from(await (await content(url, account)).arrayBuffer());

  describe('config', () => {
    it('starts from the reference defaults and is for admins only', async () => {
      const res = await world.api.get('/api/v1/images/config', as(world.admin));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        ENABLE_IMAGE_GENERATION: false,
        ENABLE_IMAGE_PROMPT_GENERATION: true,
        IMAGE_GENERATION_ENGINE: 'openai',
        IMAGE_GENERATION_MODEL: '',
        IMAGE_SIZE: '512x512',
        IMAGE_STEPS: 50,
        IMAGES_OPENAI_API_BASE_URL: 'https://api.openai.com/v1',
        IMAGES_OPENAI_API_PARAMS: {},
        AUTOMATIC1111_API_AUTH: '',
        COMFYUI_WORKFLOW_NODES: [],
        ENABLE_IMAGE_EDIT: false,
        IMAGE_EDIT_ENGINE: 'openai',
      });
      expect(JSON.parse(res.body.COMFYUI_WORKFLOW)['9'].class_type).toBe('SaveImage');
      expect(Object.keys(res.body)).toHaveLength(33);
      expect((await world.api.get('/api/v1/images/config', as(world.member))).status).toBe(401);
      const update = await world.api.post('/api/v1/images/config/update', res.body, as(world.member));
      expect(update.status).toBe(401);
    });

    it('updates every field, publishes config.updated, and /api/config reports the switch', async () => {
      const body = await configure({ ...openai(), IMAGES_OPENAI_API_PARAMS: '{"quality": "hd"}', COMFYUI_BASE_URL: 'http://comfy.local:8188/' });
      expect(body).toMatchObject({ ...openai(), COMFYUI_BASE_URL: 'http://comfy.local:8188' });
      expect((await world.api.get('/api/v1/images/config', as(world.admin))).body.IMAGES_OPENAI_API_PARAMS).toEqual({ quality: 'hd' });
      const event = world.events.find((e) => e.event === 'config.updated');
      expect(event?.subject).toEqual({ type: 'config', id: 'images' });
      expect(event?.data).toMatchObject({ image_generation_enabled: true, image_generation_engine: 'openai' });
      expect((await world.api.get('/api/config', as(world.member))).body.features.enable_image_generation).toBe(true);
      await configure({ ENABLE_IMAGE_GENERATION: false });
      expect((await world.api.get('/api/config', as(world.member))).body.features.enable_image_generation).toBe(false);
    });

    it('refuses bad sizes, steps and params with 400 and changes nothing', async () => {
      const current = (await world.api.get('/api/v1/images/config', as(world.admin))).body;
      const post = (patch: Record<string, unknown>) => world.api.post('/api/v1/images/config/update', { ...current, ...patch }, as(world.admin));
      const auto = await post({ IMAGE_SIZE: 'auto', IMAGE_GENERATION_MODEL: 'dall-e-3' });
      expect([auto.status, auto.body.detail]).toEqual([400, ERROR.INCORRECT_FORMAT('  (auto is only allowed with models matching ^(?:gpt-image)).')]);
      expect((await post({ IMAGE_SIZE: 'auto', IMAGE_GENERATION_MODEL: 'gpt-image-1' })).status).toBe(200);
      const size = await post({ IMAGE_SIZE: 'big' });
      expect([size.status, size.body.detail]).toEqual([400, ERROR.INCORRECT_FORMAT('  (e.g., 512x512).')]);
      expect((await post({ IMAGE_STEPS: -1 })).status).toBe(400);
      expect((await post({ AUTOMATIC1111_PARAMS: 'not json' })).status).toBe(400);
      expect((await post({ COMFYUI_WORKFLOW_NODES: 'prompt' })).status).toBe(422);
      const { ENABLE_IMAGE_EDIT: _dropped, ...missing } = current;
      expect((await world.api.post('/api/v1/images/config/update', missing, as(world.admin))).status).toBe(422);
      const after = (await world.api.get('/api/v1/images/config', as(world.admin))).body;
      expect(after).toEqual({ ...current, IMAGE_SIZE: 'auto', IMAGE_GENERATION_MODEL: 'gpt-image-1' });
      await post({});
    });
  });

  describe('OpenAI', () => {
    it('generates with b64_json, stores the images as files of the user, readable by the owner only', async () => {
      await configure(openai());
      const res = await world.api.post('/api/v1/images/generations', { prompt: 'a red square', n: 2 }, as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(res.body).toHaveLength(2);
      const sent = fake().seen('/openai/v1/images/generations').at(-1)!;
      expect(sent.headers.authorization).toBe('Bearer sk-images');
      expect(sent.body).toEqual({ model: 'dall-e-3', prompt: 'a red square', n: 2, size: '1024x1024', response_format: 'b64_json', quality: 'hd' });
      for (const image of res.body) {
        expect(image.url).toMatch(CONTENT);
        const response = await content(image.url);
        expect(response.headers.get('content-type')).toBe('image/png');
        expect(Buffer.from(await response.arrayBuffer()).equals(fake().png.openai)).toBe(true);
        expect((await content(image.url, world.other)).status).toBe(404);
        const file = await world.api.get(`/api/v1/files/${CONTENT.exec(image.url)![1]}`, as(world.member));
        expect(file.body).toMatchObject({ user_id: world.member.id, filename: 'generated-image.png', meta: { content_type: 'image/png', data: { prompt: 'a red square', model: 'dall-e-3' } } });
      }
      const event = world.events.find((e) => e.event === 'image.generated');
      expect(event?.data).toEqual({ model: null, size: null, n: 2, prompt_preview: 'a red square' });
    });

    it('gpt-image models answer with URLs: fetched with the key on the engine origin, through the URL guard elsewhere', async () => {
      await configure({ ...openai(), IMAGE_GENERATION_MODEL: 'gpt-image-1', IMAGE_SIZE: 'auto' });
      const res = await world.api.post('/api/v1/images/generations', { prompt: 'a square' }, as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(fake().seen('/openai/v1/images/generations').at(-1)!.body).toEqual({ model: 'gpt-image-1', prompt: 'a square', n: 1, size: 'auto', quality: 'hd' });
      expect(fake().seen('/stored/').at(-1)!.headers.authorization).toBe('Bearer sk-images');
      expect((await bytesOf(res.body[0].url)).equals(fake().png.openai)).toBe(true);

      // Another origin on this machine: the guard refuses it (local targets need ENABLE_LOCAL_WEB_FETCH).
      fake().urlOrigin = fake().url.replace('127.0.0.1', 'localhost');
      try {
        const before = fake().seen('/stored/').length;
        const refused = await world.api.post('/api/v1/images/generations', { prompt: 'a square' }, as(world.member));
        expect(refused.status).toBe(502);
        expect(refused.body.detail).toContain('ENABLE_LOCAL_WEB_FETCH');
        expect(fake().seen('/stored/').length).toBe(before);
      } finally {
        fake().urlOrigin = null;
      }
    });

    it("passes the engine's error through with its status and message", async () => {
      await configure(openai());
      fake().failNext = { status: 400, body: { error: { message: 'Your request was rejected by the safety system.', type: 'invalid_request_error' } } };
      const rejected = await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.member));
      expect([rejected.status, rejected.body.detail]).toEqual([400, '[ERROR: Your request was rejected by the safety system.]']);
      fake().failNext = { status: 429, body: { error: { message: 'Rate limit reached' } } };
      expect((await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.member))).status).toBe(429);
    });

    it('edits the user’s own file as multipart; another user’s file and non-images are refused', async () => {
      await configure({ ...openai(), ENABLE_IMAGE_EDIT: true, IMAGE_EDIT_MODEL: 'gpt-image-1', IMAGES_EDIT_OPENAI_API_BASE_URL: `${fake().url}/openai/v1`, IMAGES_EDIT_OPENAI_API_KEY: 'sk-edit' });
      const upload = await uploadFile(world.server.url, world.member, 'photo.png', fake().png.gemini, 'image/png', { query: '?process=false' });
      expect(upload.status).toBe(200);
      const res = await world.api.post('/api/v1/images/edit', { image: upload.body.id, prompt: 'make it red', size: '512x512', background: 'transparent' }, as(world.member));
      expect(res.status, res.text).toBe(200);
      const sent = fake().seen('/openai/v1/images/edits').at(-1)!;
      expect(sent.headers.authorization).toBe('Bearer sk-edit');
      expect(sent.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
      expect(sent.body).toMatchObject({ model: 'gpt-image-1', prompt: 'make it red', size: '512x512', background: 'transparent', image: { type: 'image/png' } });
      expect(sent.body.image.bytes.equals(fake().png.gemini)).toBe(true);
      expect(sent.body).not.toHaveProperty('response_format');
      expect(world.events.some((e) => e.event === 'image.edited')).toBe(true);

      // The frontend's imageEdits sends the form under `form_data`.
      const wrapped = await world.api.post('/api/v1/images/edit', { form_data: { image: upload.body.id, prompt: 'wrapped' } }, as(world.member));
      expect(wrapped.status, wrapped.text).toBe(200);
      expect(fake().seen('/openai/v1/images/edits').at(-1)!.body.prompt).toBe('wrapped');

      const two = await world.api.post('/api/v1/images/edit', { image: [`/api/v1/files/${upload.body.id}/content`, `data:image/png;base64,${fake().png.a1111.toString('base64')}`], prompt: 'merge' }, as(world.member));
      expect(two.status, two.text).toBe(200);
      expect(fake().seen('/openai/v1/images/edits').at(-1)!.body['image[]']).toHaveLength(2);

      const before = fake().seen('/openai/v1/images/edits').length;
      expect((await world.api.post('/api/v1/images/edit', { image: upload.body.id, prompt: 'steal' }, as(world.other))).status).toBe(404);
      const text = await world.api.post('/api/v1/images/edit', { image: `data:image/svg+xml;base64,${Buffer.from('<svg/>').toString('base64')}`, prompt: 'x' }, as(world.member));
      expect([text.status, text.body.detail]).toEqual([400, '[ERROR: Error loading image: image 1 is not a PNG, JPEG, GIF or WebP image]']);
      const local = await world.api.post('/api/v1/images/edit', { image: `${fake().url}/stored/a.png`, prompt: 'x' }, as(world.member));
      expect(local.status).toBe(400);
      expect(local.body.detail).toContain('ENABLE_LOCAL_WEB_FETCH');
      expect(fake().seen('/openai/v1/images/edits').length).toBe(before);
    });

    it('refuses when generation or editing is off, and users without features.image_generation', async () => {
      await configure({ ...openai(), ENABLE_IMAGE_GENERATION: false, ENABLE_IMAGE_EDIT: false });
      const off = await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.admin));
      expect([off.status, off.body.detail]).toEqual([403, ERROR.ACCESS_PROHIBITED]);
      expect((await world.api.post('/api/v1/images/edit', { image: 'x', prompt: 'x' }, as(world.admin))).status).toBe(403);
      await configure(openai());
      const defaults = (await world.api.get('/api/v1/users/default/permissions', as(world.admin))).body;
      await world.api.post('/api/v1/users/default/permissions', { ...defaults, features: { ...defaults.features, image_generation: false } }, as(world.admin));
      try {
        expect((await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.member))).status).toBe(403);
        expect((await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.admin))).status).toBe(200);
      } finally {
        await world.api.post('/api/v1/users/default/permissions', defaults, as(world.admin));
      }
      expect((await world.api.post('/api/v1/images/generations', { prompt: 'x', n: 11 }, as(world.member))).status).toBe(422);
    });

    it('lists the OpenAI models', async () => {
      await configure(openai());
      const res = await world.api.get('/api/v1/images/models', as(world.member));
      expect(res.body.map((m: any) => m.id)).toEqual(['dall-e-2', 'dall-e-3', 'gpt-image-1', 'gpt-image-1.5']);
    });
  });

  describe('Gemini', () => {
    it('generates with :predict (Imagen) and :generateContent, with the API key header', async () => {
      await configure({ ENABLE_IMAGE_GENERATION: true, IMAGE_GENERATION_ENGINE: 'gemini', IMAGE_GENERATION_MODEL: '', IMAGE_SIZE: '512x512', IMAGES_GEMINI_API_BASE_URL: `${fake().url}/gemini/v1beta`, IMAGES_GEMINI_API_KEY: 'g-key', IMAGES_GEMINI_ENDPOINT_METHOD: '' });
      const res = await world.api.post('/api/v1/images/generations', { prompt: 'a green square', n: 2 }, as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(res.body).toHaveLength(2);
      const predict = fake().seen('/gemini/v1beta/models/imagen-3.0-generate-002:predict').at(-1)!;
      expect(predict.headers['x-goog-api-key']).toBe('g-key');
      expect(predict.body).toEqual({ instances: { prompt: 'a green square' }, parameters: { sampleCount: 2, outputOptions: { mimeType: 'image/png' } } });
      expect((await bytesOf(res.body[0].url)).equals(fake().png.gemini)).toBe(true);

      await configure({ IMAGE_GENERATION_MODEL: 'gemini-2.5-flash-image', IMAGES_GEMINI_ENDPOINT_METHOD: 'generateContent' });
      const content2 = await world.api.post('/api/v1/images/generations', { prompt: 'a banana' }, as(world.member));
      expect(content2.status, content2.text).toBe(200);
      expect(fake().seen('/gemini/v1beta/models/gemini-2.5-flash-image:generateContent').at(-1)!.body).toEqual({ contents: [{ parts: [{ text: 'a banana' }] }] });
      expect(world.api.get('/api/v1/images/models', as(world.member)).then((r) => r.body)).resolves.toEqual([{ id: 'imagen-3.0-generate-002', name: 'imagen-3.0 generate-002' }]);
    });
  });

  describe('editing through the other engines', () => {
    const photo = () => `data:image/png;base64,${fake().png.openai.toString('base64')}`;

    it('Gemini: generateContent with the prompt and the images as inline_data', async () => {
      await configure({ ENABLE_IMAGE_EDIT: true, IMAGE_EDIT_ENGINE: 'gemini', IMAGE_EDIT_MODEL: 'gemini-2.5-flash-image', IMAGES_EDIT_GEMINI_API_BASE_URL: `${fake().url}/gemini/v1beta`, IMAGES_EDIT_GEMINI_API_KEY: 'g-edit' });
      const res = await world.api.post('/api/v1/images/edit', { image: [photo()], prompt: 'add a hat' }, as(world.member));
      expect(res.status, res.text).toBe(200);
      const sent = fake().seen('/gemini/v1beta/models/gemini-2.5-flash-image:generateContent').at(-1)!;
      expect(sent.headers['x-goog-api-key']).toBe('g-edit');
      expect(sent.body).toEqual({ contents: [{ parts: [{ text: 'add a hat' }, { inline_data: { mime_type: 'image/png', data: fake().png.openai.toString('base64') } }] }] });
      expect((await bytesOf(res.body[0].url)).equals(fake().png.gemini)).toBe(true);
    });

    it('Automatic1111: img2img with the images as init_images', async () => {
      await configure({ ENABLE_IMAGE_EDIT: true, IMAGE_EDIT_ENGINE: 'automatic1111', IMAGE_EDIT_SIZE: '320x240', AUTOMATIC1111_BASE_URL: `${fake().url}/a1111`, AUTOMATIC1111_PARAMS: {} });
      const res = await world.api.post('/api/v1/images/edit', { image: photo(), prompt: 'sharper', n: 2 }, as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(res.body).toHaveLength(2);
      expect(fake().seen('/a1111/sdapi/v1/img2img').at(-1)!.body).toEqual({ prompt: 'sharper', init_images: [fake().png.openai.toString('base64')], batch_size: 2, width: 320, height: 240 });
    });

    it('OpenAI: a rotated JPEG is turned upright before it is sent', async () => {
      const { default: sharp } = await import('sharp');
      const rotated = await sharp({ create: { width: 4, height: 2, channels: 3, background: { r: 9, g: 9, b: 9 } } }).jpeg().withMetadata({ orientation: 6 }).toBuffer();
      await configure({ ...openai(), ENABLE_IMAGE_EDIT: true, IMAGE_EDIT_ENGINE: 'openai', IMAGE_EDIT_MODEL: 'dall-e-2', IMAGE_EDIT_SIZE: '', IMAGES_EDIT_OPENAI_API_BASE_URL: `${fake().url}/openai/v1` });
      const res = await world.api.post('/api/v1/images/edit', { image: `data:image/jpeg;base64,${rotated.toString('base64')}`, prompt: 'x' }, as(world.member));
      expect(res.status, res.text).toBe(200);
      const sent = fake().seen('/openai/v1/images/edits').at(-1)!.body.image;
      const meta = await sharp(sent.bytes).metadata();
      expect([sent.type, meta.width, meta.height, meta.orientation ?? 1]).toEqual(['image/jpeg', 2, 4, 1]);
    });
  });

  describe('Automatic1111', () => {
    it('lists checkpoints, switches to the asked model, and generates with txt2img', async () => {
      await configure({
        ENABLE_IMAGE_GENERATION: true,
        IMAGE_GENERATION_ENGINE: 'automatic1111',
        IMAGE_GENERATION_MODEL: '',
        IMAGE_SIZE: '640x480',
        IMAGE_STEPS: 30,
        AUTOMATIC1111_BASE_URL: `${fake().url}/a1111`,
        AUTOMATIC1111_API_AUTH: 'user:pass',
        AUTOMATIC1111_PARAMS: { cfg_scale: 7 },
      });
      const models = await world.api.get('/api/v1/images/models', as(world.member));
      expect(models.body).toEqual([
        { id: 'v1-5.safetensors [abc]', name: 'v1-5' },
        { id: 'sdxl.safetensors [def]', name: 'sdxl' },
      ]);
      expect(fake().seen('/a1111/sdapi/v1/sd-models').at(-1)!.headers.authorization).toBe(`Basic ${Buffer.from('user:pass').toString('base64')}`);
      expect((await world.api.get('/api/v1/images/config/url/verify', as(world.admin))).body).toBe(true);

      const res = await world.api.post('/api/v1/images/generations', { prompt: 'a blue square', model: 'sdxl.safetensors [def]', negative_prompt: 'blur', n: 2 }, as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(fake().seen('/a1111/sdapi/v1/options').filter((r) => r.method === 'POST').at(-1)!.body.sd_model_checkpoint).toBe('sdxl.safetensors [def]');
      expect(fake().seen('/a1111/sdapi/v1/txt2img').at(-1)!.body).toEqual({ prompt: 'a blue square', batch_size: 2, width: 640, height: 480, steps: 30, negative_prompt: 'blur', cfg_scale: 7 });
      expect((await bytesOf(res.body[1].url)).equals(fake().png.a1111)).toBe(true);
    });
  });

  describe('ComfyUI', () => {
    const nodes = [
      { type: 'prompt', key: 'text', node_ids: ['6'] },
      { type: 'model', key: 'ckpt_name', node_ids: ['4'] },
      { type: 'width', key: 'width', node_ids: ['5'] },
      { type: 'height', key: 'height', node_ids: ['5'] },
      { type: 'steps', key: 'steps', node_ids: ['3'] },
      { type: 'seed', key: 'seed', node_ids: ['3'] },
      { type: 'negative_prompt', node_ids: ['7'] },
    ];
    const comfy = () => ({
      ENABLE_IMAGE_GENERATION: true,
      IMAGE_GENERATION_ENGINE: 'comfyui',
      IMAGE_GENERATION_MODEL: 'sdxl.safetensors',
      IMAGE_SIZE: '768x512',
      IMAGE_STEPS: 12,
      COMFYUI_BASE_URL: `${fake().url}/comfyui`,
      COMFYUI_API_KEY: 'comfy-key',
      COMFYUI_WORKFLOW_NODES: nodes,
    });

    it('maps the values into the workflow, queues it, follows the websocket and fetches the output through /view', async () => {
      const config = await configure(comfy());
      const res = await world.api.post('/api/v1/images/generations', { prompt: 'a yellow square', negative_prompt: 'text' }, as(world.member));
      expect(res.status, res.text).toBe(200);
      const queued = fake().seen('/comfyui/prompt').at(-1)!;
      expect(queued.headers.authorization).toBe('Bearer comfy-key');
      const ws = fake().seen('/comfyui/ws').at(-1)!;
      expect(ws.path).toBe(`/comfyui/ws?clientId=${queued.body.client_id}`);
      expect(ws.headers.authorization).toBe('Bearer comfy-key');
      const workflow = queued.body.prompt;
      const expected = JSON.parse(config.COMFYUI_WORKFLOW);
      expect(workflow['6'].inputs.text).toBe('a yellow square');
      expect(workflow['7'].inputs.text).toBe('text');
      expect(workflow['4'].inputs.ckpt_name).toBe('sdxl.safetensors');
      expect(workflow['5'].inputs).toEqual({ ...expected['5'].inputs, width: 768, height: 512 });
      expect(workflow['3'].inputs.steps).toBe(12);
      expect(workflow['3'].inputs.seed).toEqual(expect.any(Number));
      expect(fake().comfyMessages.some((m) => JSON.parse(m).data.node === null)).toBe(true);
      const id = queued.path === '/comfyui/prompt' ? fake().seen('/comfyui/history/').at(-1)!.path.split('/').pop() : '';
      expect(fake().seen('/comfyui/view').at(-1)!.path).toBe(`/comfyui/view?filename=ComfyUI_${id}.png&subfolder=&type=output`);
      expect((await bytesOf(res.body[0].url)).equals(fake().png.comfyui)).toBe(true);
    });

    it('refuses a mapping to a node the workflow lacks with 400 naming it, before queuing', async () => {
      await configure({ ...comfy(), COMFYUI_WORKFLOW_NODES: [...nodes, { type: 'prompt', key: 'text', node_ids: ['42'] }] });
      const before = fake().seen('/comfyui/prompt').length;
      const res = await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.member));
      expect(res.status).toBe(400);
      expect(res.body.detail).toBe('[ERROR: The ComfyUI workflow has no node "42" (mapped for prompt); check the node ids in Admin Settings > Images]');
      expect(fake().seen('/comfyui/prompt').length).toBe(before);
      const { COMFYUI_WORKFLOW } = (await world.api.get('/api/v1/images/config', as(world.admin))).body;
      await configure({ ...comfy(), COMFYUI_WORKFLOW: 'not json' });
      const broken = await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.member));
      expect([broken.status, broken.body.detail]).toEqual([400, '[ERROR: The ComfyUI workflow is not valid JSON; paste it in API format in Admin Settings > Images]']);
      await configure({ ...comfy(), COMFYUI_WORKFLOW });
    });

    it("reports the run's execution error", async () => {
      await configure(comfy());
      fake().comfyFailNext = true;
      const res = await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.member));
      expect([res.status, res.body.detail]).toEqual([502, '[ERROR: ComfyUI could not run the workflow: CUDA out of memory]']);
    });

    it('lists the models of the mapped model node from /object_info, and verifies the URL', async () => {
      await configure(comfy());
      expect((await world.api.get('/api/v1/images/models', as(world.member))).body).toEqual([
        { id: 'sd15.safetensors', name: 'sd15.safetensors' },
        { id: 'sdxl.safetensors', name: 'sdxl.safetensors' },
      ]);
      expect((await world.api.get('/api/v1/images/config/url/verify', as(world.admin))).body).toBe(true);
      await configure({ COMFYUI_BASE_URL: `${fake().url}/nothing` });
      expect((await world.api.get('/api/v1/images/config/url/verify', as(world.admin))).status).toBe(400);
    });

    it('edits: uploads the image, maps its name into the edit workflow', async () => {
      const workflow = {
        '1': { inputs: { image: 'input.png' }, class_type: 'LoadImage' },
        '2': { inputs: { prompt: '', clip: ['3', 0] }, class_type: 'TextEncodeQwenImageEdit' },
        '3': { inputs: { unet_name: 'x' }, class_type: 'UNETLoader' },
        '9': { inputs: { images: ['2', 0] }, class_type: 'SaveImage' },
        '10': { inputs: { images: ['2', 0] }, class_type: 'PreviewImage' },
      };
      await configure({
        ENABLE_IMAGE_EDIT: true,
        IMAGE_EDIT_ENGINE: 'comfyui',
        IMAGE_EDIT_MODEL: 'flux-kontext.safetensors',
        IMAGES_EDIT_COMFYUI_BASE_URL: `${fake().url}/comfyui`,
        IMAGES_EDIT_COMFYUI_WORKFLOW: JSON.stringify(workflow),
        IMAGES_EDIT_COMFYUI_WORKFLOW_NODES: [
          { type: 'image', key: 'image', node_ids: ['1'] },
          { type: 'prompt', key: 'prompt', node_ids: ['2'] },
          { type: 'model', key: 'unet_name', node_ids: ['3'] },
        ],
      });
      const res = await world.api.post('/api/v1/images/edit', { image: `data:image/png;base64,${fake().png.openai.toString('base64')}`, prompt: 'paint it' }, as(world.member));
      expect(res.status, res.text).toBe(200);
      expect(fake().seen('/comfyui/api/upload/image').at(-1)!.body).toMatchObject({ type: 'input', image: { filename: 'image-1.png', type: 'image/png' } });
      const sent = fake().seen('/comfyui/prompt').at(-1)!.body.prompt;
      expect([sent['1'].inputs.image, sent['2'].inputs.prompt, sent['3'].inputs.unet_name]).toEqual(['uploaded-image-1.png', 'paint it', 'flux-kontext.safetensors']);
      // The saved output, not the preview of the same run.
      expect(res.body).toHaveLength(1);
      expect(fake().seen('/comfyui/view').at(-1)!.path).toContain('type=output');
    });
  });

  it('an engine that cannot be reached is a 502', async () => {
    await configure({ ...openai(), IMAGES_OPENAI_API_BASE_URL: 'http://127.0.0.1:9' });
    const res = await world.api.post('/api/v1/images/generations', { prompt: 'x' }, as(world.member));
    expect(res.status).toBe(502);
    expect(res.body.detail).toMatch(/^\[ERROR: The image engine could not be reached: /);
  });
});

describe('images settings from the environment', () => {
  it('sends the user identity to OpenAI-compatible engines with ENABLE_FORWARD_USER_INFO_HEADERS', async () => {
    await withWorld({ fakes: engines, env: { ENABLE_FORWARD_USER_INFO_HEADERS: 'true', ENABLE_IMAGE_GENERATION: 'true', IMAGE_GENERATION_ENGINE: 'openai' }, admin: 'Image Admin' }, async (world) => {
      const current = (await world.api.get('/api/v1/images/config', as(world.admin))).body;
      await world.api.post('/api/v1/images/config/update', { ...current, IMAGES_OPENAI_API_BASE_URL: `${world.engines.url}/openai/v1` }, as(world.admin));
      expect((await world.api.post('/api/v1/images/generations', { prompt: 'me' }, as(world.admin))).status).toBe(200);
      const headers = world.engines.seen('/openai/v1/images/generations').at(-1)!.headers;
      expect([headers['x-openwebui-user-name'], headers['x-openwebui-user-id'], headers['x-openwebui-user-role']]).toEqual(['Image Admin', world.admin.id, 'admin']);
    });
  });


  it('seeds every field from the reference variables, falling back to OPENAI_API_* and GEMINI_API_*', async () => {
    const server = await startServer({
      env: {
        ENABLE_IMAGE_GENERATION: 'true',
        IMAGE_GENERATION_ENGINE: 'comfyui',
        OPENAI_API_BASE_URL: 'http://openai.local/v1/',
        OPENAI_API_KEY: 'sk-shared',
        IMAGES_EDIT_OPENAI_API_KEY: 'sk-edit',
        GEMINI_API_BASE_URL: 'http://gemini.local',
        COMFYUI_BASE_URL: 'http://comfy.local',
        COMFYUI_WORKFLOW_NODES: '[{"type": "prompt", "key": "text", "node_ids": ["6"]}]',
        IMAGE_SIZE: '256x256',
        IMAGE_STEPS: '8',
        IMAGES_OPENAI_PARAMS: '{"quality": "low"}',
        AUTOMATIC1111_API_AUTH: 'user:secret',
        ENABLE_IMAGE_EDIT: 'true',
      },
    });
    try {
      const { signup } = await import('../../helpers/users.js');
      const admin = await signup(server.api);
      const res = await server.api.get('/api/v1/images/config', as(admin));
      expect(res.body).toMatchObject({
        ENABLE_IMAGE_GENERATION: true,
        IMAGE_GENERATION_ENGINE: 'comfyui',
        IMAGES_OPENAI_API_BASE_URL: 'http://openai.local/v1',
        IMAGES_OPENAI_API_KEY: 'sk-shared',
        IMAGES_EDIT_OPENAI_API_KEY: 'sk-edit',
        IMAGES_GEMINI_API_BASE_URL: 'http://gemini.local',
        COMFYUI_BASE_URL: 'http://comfy.local',
        COMFYUI_WORKFLOW_NODES: [{ type: 'prompt', key: 'text', node_ids: ['6'] }],
        IMAGE_SIZE: '256x256',
        IMAGE_STEPS: 8,
        IMAGES_OPENAI_API_PARAMS: { quality: 'low' },
        AUTOMATIC1111_API_AUTH: 'user:secret',
        ENABLE_IMAGE_EDIT: true,
      });
      expect((await server.api.get('/api/config', as(admin))).body.features.enable_image_generation).toBe(true);
    } finally {
      await server.close();
    }
  });
});
