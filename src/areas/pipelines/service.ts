import { basename } from 'node:path';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { HttpError, badRequest } from '../../core/http/errors.js';
import { type Json, isFilterPipeline } from '../../core/upstream/catalog.js';
import { readBody, type UpstreamResponse } from '../../core/upstream/client.js';
import type { Connection } from '../../core/upstream/connections.js';
import type { CallContext } from '../../core/upstream/headers.js';
import type { UpstreamService } from '../../core/upstream/service.js';

/**
 * Pipelines servers (routers/pipelines.py): OpenAI connections whose `/models`
 * answer carries `pipelines`. The admin routes manage a server's pipelines and
 * valves through its API; chats run its filter pipelines on the way in and out
 * (`/{id}/filter/inlet|outlet`, by priority, for the models they target).
 */
export const PIPELINE_NOT_FOUND = 'Pipeline not found';

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A pipeline's path on its server: one encoded segment; a dot segment (resolved away by the URL) finds no pipeline. */
function pipelinePath(id: string): string {
  if (id === '.' || id === '..') throw new HttpError(404, PIPELINE_NOT_FOUND);
  return `/${encodeURIComponent(id)}`;
}

export interface PipelineServer {
  url: string;
  idx: number;
}

/** What a filter pipeline applies to: the payload's model, with the filters targeting it. */
interface FilterTarget {
  id: string;
  urlIdx: number;
}

export class PipelinesService {
  constructor(
    private readonly core: Core,
    private readonly upstream: UpstreamService,
  ) {}

  /** `GET /list`: the connections that answer `/models` as a Pipelines server. */
  async servers(context: CallContext): Promise<{ data: PipelineServer[] }> {
    const { enabled, connections } = this.upstream.connections('openai');
    if (!enabled) return { data: [] };
    const answers = await Promise.all(connections.map((c) => (c.enabled ? this.upstream.getJson(c, '/models', context) : Promise.resolve(null))));
    return { data: connections.filter((_, i) => isObject(answers[i]) && 'pipelines' in (answers[i] as Json)).map((c) => ({ url: c.url, idx: c.idx })) };
  }

  /** The connection at `urlIdx`, as the reference reads it (URL and key by index, enabled or not); none is a 404. */
  private connection(urlIdx: number | undefined): Connection {
    const connection = urlIdx === undefined ? undefined : this.upstream.connections('openai').connections[urlIdx];
    if (!connection) throw new HttpError(404, PIPELINE_NOT_FOUND);
    return connection;
  }

  /**
   * One call to a Pipelines server with its bearer key (the reference sends no
   * other header). Its error answer keeps its status and `detail`; a server that
   * cannot be reached is 404 `Pipeline not found`, as in the reference.
   */
  private async call(urlIdx: number | undefined, path: string, init: { method?: string; json?: unknown; body?: Buffer; contentType?: string } = {}): Promise<Json> {
    const connection = this.connection(urlIdx);
    let response: UpstreamResponse;
    try {
      response = await this.upstream.client.send({
        url: this.upstream.url(connection, path),
        method: init.method ?? (init.json === undefined && init.body === undefined ? 'GET' : 'POST'),
        headers: {
          authorization: `Bearer ${connection.key}`,
          ...(init.json !== undefined ? { 'content-type': 'application/json' } : init.contentType ? { 'content-type': init.contentType } : {}),
        },
        body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
        timeoutMs: this.upstream.options.timeoutMs,
      });
    } catch (error) {
      this.core.log.warn({ url: connection.url, err: error instanceof Error ? error.message : String(error) }, 'Pipelines server unreachable');
      throw new HttpError(404, PIPELINE_NOT_FOUND);
    }
    const body = await readBody(this.upstream.client, response).catch(() => null);
    if (response.status >= 400) {
      const detail = isObject(body) && body.detail ? body.detail : PIPELINE_NOT_FOUND;
      throw new HttpError(response.status, detail);
    }
    if (!isObject(body)) throw new HttpError(404, PIPELINE_NOT_FOUND);
    return body;
  }

  pipelines(urlIdx: number | undefined): Promise<Json> {
    return this.call(urlIdx, '/pipelines');
  }

  /** `POST /upload`: a `.py` file forwarded to the server as multipart `file`. */
  async upload(user: UserRecord, urlIdx: number, filename: string, content: Buffer): Promise<Json> {
    const name = basename(filename.replace(/\\/g, '/'));
    if (!name.endsWith('.py')) throw badRequest('Only Python (.py) files are allowed.');
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(content)], { type: 'application/octet-stream' }), name);
    const encoded = new Response(form);
    const body = Buffer.from(await encoded.arrayBuffer());
    const data = await this.call(urlIdx, '/pipelines/upload', { body, contentType: encoded.headers.get('content-type') ?? undefined });
    await this.publish(user, 'pipeline.uploaded', String(data.id ?? name), { url_idx: urlIdx, filename: name });
    return data;
  }

  /** `POST /add`: the server downloads a pipeline from `url`. */
  async add(user: UserRecord, url: string, urlIdx: number): Promise<Json> {
    const data = await this.call(urlIdx, '/pipelines/add', { json: { url } });
    await this.publish(user, 'pipeline.added', String(data.id ?? url), { url_idx: urlIdx, url });
    return data;
  }

  async remove(user: UserRecord, id: string, urlIdx: number): Promise<Json> {
    const data = await this.call(urlIdx, '/pipelines/delete', { method: 'DELETE', json: { id } });
    await this.publish(user, 'pipeline.deleted', id, { url_idx: urlIdx });
    return data;
  }

  valves(urlIdx: number | undefined, pipelineId: string): Promise<Json> {
    return this.call(urlIdx, `${pipelinePath(pipelineId)}/valves`);
  }

  valvesSpec(urlIdx: number | undefined, pipelineId: string): Promise<Json> {
    return this.call(urlIdx, `${pipelinePath(pipelineId)}/valves/spec`);
  }

  /** The server validates the valves against its own spec; its refusal is relayed. */
  async updateValves(user: UserRecord, urlIdx: number | undefined, pipelineId: string, valves: Json): Promise<Json> {
    const data = await this.call(urlIdx, `${pipelinePath(pipelineId)}/valves/update`, { json: valves });
    await this.publish(user, 'pipeline.valves_updated', pipelineId, { url_idx: urlIdx ?? null });
    return data;
  }

  private publish(user: UserRecord, event: string, subjectId: string, data: Json): Promise<void> {
    return this.core.events.publish({ event, actor: user, subjectId, data }).then(() => undefined);
  }

  // ---- filters in chats ----------------------------------------------------------------

  /**
   * The filter pipelines that apply to `modelId`, by priority (get_sorted_filters),
   * and the model itself when it is a pipeline (its own inlet/outlet hooks).
   */
  private async filtersFor(modelId: string, context: CallContext): Promise<{ filters: FilterTarget[]; own: FilterTarget | null }> {
    const { openai } = await this.upstream.models(context);
    const filters = [...openai.values()]
      .filter((m) => {
        if (!isFilterPipeline(m)) return false;
        const targets = (m.pipeline as Json).pipelines;
        return Array.isArray(targets) && (targets.length === 1 && targets[0] === '*' ? true : targets.includes(modelId));
      })
      .sort((a, b) => Number((a.pipeline as Json).priority ?? 0) - Number((b.pipeline as Json).priority ?? 0))
      .map((m) => ({ id: m.id, urlIdx: m.urlIdx }));
    const model = openai.get(modelId);
    const own = model && isObject(model.pipeline) ? { id: model.id, urlIdx: model.urlIdx } : null;
    return { filters, own };
  }

  /** Whether any Pipelines server filter (or the model's own pipeline) runs around `modelId`'s answers. */
  async appliesTo(modelId: string, context: CallContext): Promise<boolean> {
    const { filters, own } = await this.filtersFor(modelId, context);
    return filters.length > 0 || own !== null;
  }

  /** The request through every filter pipeline's inlet (the model's own last); null when none applies. */
  async inlet(user: UserRecord, payload: Json, context: CallContext): Promise<Json | null> {
    const { filters, own } = await this.filtersFor(String(payload.model ?? ''), context);
    return this.run(user, payload, own ? [...filters, own] : filters, 'inlet', context);
  }

  /** The answered conversation through every outlet (the model's own first); null when none applies. */
  async outlet(user: UserRecord, payload: Json, context: CallContext): Promise<Json | null> {
    const { filters, own } = await this.filtersFor(String(payload.model ?? ''), context);
    return this.run(user, payload, own ? [own, ...filters] : filters, 'outlet', context);
  }

  /**
   * Each filter's answer is the next one's payload. A filter whose connection
   * has no key is skipped, and so is one that cannot be reached (logged), as in
   * the reference; an error answer refuses with its status and detail.
   */
  private async run(user: UserRecord, payload: Json, filters: FilterTarget[], stage: 'inlet' | 'outlet', context: CallContext): Promise<Json | null> {
    if (filters.length === 0) return null;
    const who = { id: user.id, email: user.email, name: user.name, role: user.role };
    const connections = this.upstream.connections('openai').connections;
    let body = payload;
    for (const filter of filters) {
      const connection = connections[filter.urlIdx];
      if (!connection?.key) continue;
      let response: UpstreamResponse;
      try {
        response = await this.upstream.client.send({
          url: this.upstream.url(connection, `${pipelinePath(filter.id)}/filter/${stage}`),
          method: 'POST',
          headers: { authorization: `Bearer ${connection.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ user: who, body }),
          timeoutMs: this.upstream.options.timeoutMs,
          signal: context.signal,
        });
      } catch (error) {
        this.core.log.warn({ url: connection.url, filter: filter.id, err: error instanceof Error ? error.message : String(error) }, `Pipeline ${stage} filter unreachable; skipped`);
        continue;
      }
      const answer = await readBody(this.upstream.client, response, context.signal).catch(() => null);
      if (response.status >= 400) {
        throw new HttpError(response.status, isObject(answer) && answer.detail ? answer.detail : `Pipeline ${stage} filter ${filter.id} failed (${response.status})`);
      }
      if (isObject(answer)) body = answer;
    }
    return body;
  }
}
