import { Readable } from 'node:stream';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { HttpError } from '../../core/http/errors.js';
import { readMultipart } from '../../core/http/multipart.js';
import type { App } from '../../core/http/server.js';
import { callContext } from '../../core/upstream/relay.js';
import { AddPipelineForm, DeletePipelineForm, OptionalUrlIdxQuery, PipelineIdParams, PipelineServersResponse, UrlIdxQuery, ValvesForm } from './schemas.js';
import type { PipelinesService } from './service.js';

/** A pipeline is one Python file: more than this is not one (413). */
const MAX_PIPELINE_BYTES = 16 * 1024 * 1024;

const missing = (field: string) => ({ type: 'missing', loc: ['body', field], msg: 'Field required', input: null });

/** The bytes of an uploaded file part, refused past the limit. */
async function collect(content: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of content) {
    size += (chunk as Buffer).length;
    if (size > MAX_PIPELINE_BYTES) throw new HttpError(413, `A pipeline file may be at most ${MAX_PIPELINE_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** `/api/v1/pipelines` (routers/pipelines.py): every route is the admin's. */
async function pipelinesRoutes(app: App, ctx: AreaContext<{ pipelines: PipelinesService }>): Promise<void> {
  const { pipelines } = ctx.services;
  const admin = ctx.auth.admin;
  const tags = ['pipelines'];

  app.get('/list', { onRequest: admin, schema: { tags, response: { 200: PipelineServersResponse } } }, (request, reply) => pipelines.servers(callContext(request, reply)));

  app.post('/upload', { onRequest: admin, config: { bodyClass: 'upload' }, schema: { tags } }, async (request) => {
    const body = request.body instanceof Readable ? request.body : null;
    const form = body && (await readMultipart(body, request.headers['content-type'] ?? '', 'file', async (file) => ({ filename: file.filename, content: await collect(file.content) })));
    const urlIdx = form?.fields.urlIdx;
    const errors = [...(urlIdx === undefined ? [missing('urlIdx')] : []), ...(form?.file ? [] : [missing('file')])];
    if (errors.length > 0) throw new HttpError(422, errors);
    if (!/^-?\d+$/.test(urlIdx!.trim())) {
      throw new HttpError(422, [{ type: 'int_parsing', loc: ['body', 'urlIdx'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: urlIdx }]);
    }
    return pipelines.upload(request.user!, Number(urlIdx), form!.file!.filename, form!.file!.content);
  });

  app.post('/add', { onRequest: admin, schema: { tags, body: AddPipelineForm } }, (request) => pipelines.add(request.user!, request.body.url, request.body.urlIdx));

  app.delete('/delete', { onRequest: admin, schema: { tags, body: DeletePipelineForm } }, (request) =>
    pipelines.remove(request.user!, request.body.id, request.body.urlIdx),
  );

  app.get('/', { onRequest: admin, schema: { tags, querystring: OptionalUrlIdxQuery } }, (request) => pipelines.pipelines(request.query.urlIdx));

  app.get('/:pipeline_id/valves', { onRequest: admin, schema: { tags, params: PipelineIdParams, querystring: UrlIdxQuery } }, (request) =>
    pipelines.valves(request.query.urlIdx, request.params.pipeline_id),
  );

  app.get('/:pipeline_id/valves/spec', { onRequest: admin, schema: { tags, params: PipelineIdParams, querystring: UrlIdxQuery } }, (request) =>
    pipelines.valvesSpec(request.query.urlIdx, request.params.pipeline_id),
  );

  app.post('/:pipeline_id/valves/update', { onRequest: admin, schema: { tags, params: PipelineIdParams, querystring: UrlIdxQuery, body: ValvesForm } }, (request) =>
    pipelines.updateValves(request.user!, request.query.urlIdx, request.params.pipeline_id, request.body as Record<string, unknown>),
  );
}

export const pipelinesArea = defineArea('/api/v1/pipelines', pipelinesRoutes);
