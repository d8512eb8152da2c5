import { Readable } from 'node:stream';
import type { UserRecord } from '../../core/auth/user.js';
import { HttpError, badRequest, notFound } from '../../core/http/errors.js';
import { type Provider, stripPrefix } from '../../core/upstream/connections.js';
import type { CallContext } from '../../core/upstream/headers.js';
import { type Answer, UPSTREAM_ERROR, type UpstreamService } from '../../core/upstream/service.js';
import { anthropicToOpenAI, openAIStreamToAnthropic, openAIToAnthropic, unconvertedParams } from '../../core/providers/anthropic.js';
import type { OpenAIProvider } from '../../core/providers/openai.js';
import type { ChatProvider } from '../../core/providers/provider.js';
import type { ModelsService } from './service.js';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Models answered by pipe functions (functions area): a provider kind of its own. */
export interface PipeProvider {
  /** The pipe serving a model id, or null when none does. */
  serving(modelId: string): Promise<unknown | null>;
  chat(user: UserRecord, pipe: unknown, payload: Json, context: CallContext): Promise<Answer>;
}

export interface CompletionOptions {
  /** Internal callers that already checked access (the chat pipeline's tasks). */
  bypassAccess?: boolean;
  bypassSystemPrompt?: boolean;
}

/**
 * Provider-independent model calls: "complete this OpenAI-style request on
 * model X for user U", embeddings, and Anthropic-style messages, whatever the
 * model's provider. The chat pipeline calls `complete`; `/api/embeddings` and
 * `/api/v1/messages` are served from here. The workspace model's rules (base
 * model, parameters, system prompt, access) are applied here, then the model's
 * provider (core/providers) shapes the request for its connection and sends it.
 */
export class CompletionsService {
  private pipes: PipeProvider | null = null;

  constructor(
    private readonly upstream: UpstreamService,
    private readonly models: ModelsService,
    private readonly providers: Record<Provider, ChatProvider> & { openai: OpenAIProvider },
  ) {}

  /** Where pipe models are answered (set once by the composition root). */
  setPipeProvider(pipes: PipeProvider): void {
    this.pipes = pipes;
  }

  /** Which provider serves a model (a preset: its base model's provider); 404 when none does. */
  async providerOf(modelId: string, context: CallContext): Promise<Provider> {
    const info = await this.models.byId(modelId);
    const target = info?.base_model_id ?? modelId;
    for (const refresh of [false, true]) {
      const lists = await this.upstream.models(context, refresh);
      if (lists.openai.has(target)) return 'openai';
      if (lists.ollama.has(target)) return 'ollama';
    }
    throw notFound(UPSTREAM_ERROR.MODEL_NOT_FOUND(modelId));
  }

  /**
   * An OpenAI Chat Completions request on any model, answered in OpenAI's format
   * (an event stream when `stream` is true). Access is checked unless the caller
   * already did (`bypassAccess`); the client's signal in `context` cancels it.
   */
  async complete(user: UserRecord, payload: Json, context: CallContext, options: CompletionOptions = {}): Promise<Answer> {
    const { metadata: rawMetadata, ...rest } = payload;
    const metadata = isObject(rawMetadata) ? rawMetadata : {};
    const requested = String(rest.model ?? '');
    const pipe = await this.pipeServing(requested);
    if (pipe) {
      // As generate_function_chat_completion: the preset's parameters and system prompt, access, then the pipe.
      const prepared = await this.models.prepare(user, rest, { style: 'openai', metadata, bypassSystemPrompt: options.bypassSystemPrompt });
      await this.models.requireUse(user, prepared.info, options.bypassAccess);
      // The chat's ids (context) and the request's own metadata: the pipe's __metadata__ and event channel.
      return this.pipes!.chat(user, pipe, prepared.payload, { ...context, metadata: { ...context.metadata, ...metadata } });
    }
    const provider = this.providers[await this.providerOf(requested, context)];
    provider.requireEnabled();
    const prepared = await this.models.prepare(user, rest, { style: 'openai', metadata, bypassSystemPrompt: options.bypassSystemPrompt });
    const route = await provider.locate(user, prepared.targetId, requested, context);
    await this.models.requireUse(user, prepared.info, options.bypassAccess);
    return provider.chat(route, user, prepared.payload, { ...context, metadata });
  }

  /** 404 (as providerOf) unless a pipe or a provider serves the model. */
  async requireServed(modelId: string, context: CallContext): Promise<void> {
    if (!(await this.pipeServing(modelId))) await this.providerOf(modelId, context);
  }

  /** The pipe serving a model or its preset's base model, if any. */
  private async pipeServing(modelId: string): Promise<unknown | null> {
    if (!this.pipes) return null;
    const info = await this.models.byId(modelId);
    return this.pipes.serving(info?.base_model_id ?? modelId);
  }

  /** `POST /api/embeddings`: OpenAI-style embeddings on any model (utils/embeddings.generate_embeddings). */
  async embeddings(user: UserRecord, body: Json, context: CallContext): Promise<Answer> {
    const requested = String(body.model ?? '');
    const name = await this.providerOf(requested, context);
    const provider = this.providers[name];
    const info = await this.models.byId(requested);
    await this.models.requireUse(user, info);
    const model = info?.base_model_id ?? requested;
    provider.requireEnabled();
    const route = await provider.locate(user, model, requested, context);
    // Ollama's embed route checks the base model's access too (routers/ollama.py), so a preset does not lend its grants.
    if (name === 'ollama' && model !== requested) await this.models.requireUse(user, await this.models.byId(model));
    return provider.embeddings(route, { ...body, model }, context);
  }

  /**
   * `POST /api/v1/messages`: an Anthropic Messages request on any model. Anthropic
   * connections get it as sent; others get it as Chat Completions and the answer
   * is converted back, streamed event by event.
   */
  async messages(user: UserRecord, body: Json, context: CallContext): Promise<Answer> {
    const requested = String(body.model ?? '');
    const provider = await this.providerOf(requested, context);
    const info = await this.models.byId(requested);
    const target = info?.base_model_id ?? requested;
    let passthroughParams: unknown = [];
    if (provider === 'openai') {
      const route = await this.providers.openai.locate(user, target, requested, context);
      if (this.providers.openai.speaksMessages(route.connection)) {
        await this.models.requireUse(user, info);
        return this.providers.openai.messages(route, { ...body, model: target }, context);
      }
      passthroughParams = route.connection.config.passthrough_params ?? [];
    }
    const openaiPayload = anthropicToOpenAI(body);
    const allowed = new Set((typeof passthroughParams === 'string' ? passthroughParams.split(',') : Array.isArray(passthroughParams) ? passthroughParams : []).map((p) => String(p).trim()));
    const extra = unconvertedParams(body);
    for (const [key, value] of Object.entries(extra)) if (allowed.has('*') || allowed.has(key)) openaiPayload[key] = value;
    if (openaiPayload.stream === true && isObject(info?.meta.capabilities) && info.meta.capabilities.usage === true) {
      openaiPayload.stream_options = { ...(isObject(openaiPayload.stream_options) ? openaiPayload.stream_options : {}), include_usage: true };
    }
    const answer = await this.complete(user, openaiPayload, context);
    if (answer.kind === 'stream') {
      return { ...answer, contentType: 'text/event-stream', body: Readable.from(openAIStreamToAnthropic(answer.body, requested), { objectMode: false }) };
    }
    if (answer.status < 400 && isObject(answer.body)) return { ...answer, body: openAIToAnthropic(answer.body, requested) };
    return answer;
  }

  /**
   * `POST /api/models/unload` (admin): frees a model's memory on its provider,
   * following presets to their base model. Ollama: every connection serving it;
   * llama.cpp connections: their `/models/unload`; other providers cannot.
   */
  async unload(modelId: string, context: CallContext): Promise<unknown> {
    let id = modelId;
    const seen = new Set<string>();
    let lists = await this.upstream.models(context);
    while (!lists.ollama.has(id) && !lists.openai.has(id) && !seen.has(id)) {
      seen.add(id);
      const info = await this.models.byId(id);
      if (!info?.base_model_id) break;
      id = info.base_model_id;
    }
    if (!lists.ollama.has(id) && !lists.openai.has(id)) lists = await this.upstream.models(context, true);
    const unloadTimeoutMs = 30_000;
    const ollamaModel = lists.ollama.get(id);
    if (ollamaModel) {
      const errors: { url_idx: number; error: string }[] = [];
      for (const idx of ollamaModel.urls) {
        const connection = this.upstream.connection('ollama', idx);
        try {
          const answer = await this.upstream.send(connection, '/api/generate', {
            json: { model: stripPrefix(id, connection.config.prefix_id), keep_alive: 0, prompt: '' },
            context,
            timeoutMs: unloadTimeoutMs,
          });
          const text = await answer.body.text();
          if (answer.status >= 400) errors.push({ url_idx: idx, error: text });
        } catch (error) {
          errors.push({ url_idx: idx, error: error instanceof HttpError ? String(error.detail) : String(error) });
        }
      }
      if (errors.length > 0) throw new HttpError(500, `Failed to unload model on ${errors.length} node(s): ${JSON.stringify(errors)}`);
      return { status: true };
    }
    const openaiModel = lists.openai.get(id);
    if (openaiModel) {
      const connection = this.upstream.connection('openai', openaiModel.urlIdx);
      const provider = String(connection.config.provider ?? '');
      if (provider !== 'llama.cpp') throw badRequest(`Provider "${provider || 'default'}" does not support model unloading`);
      const root = connection.url.replace(/\/+$/, '').replace(/\/v1$/, '');
      const answer = await this.upstream.openai(connection, '', {
        url: `${root}/models/unload`,
        json: { model: stripPrefix(id, connection.config.prefix_id) },
        context,
        timeoutMs: unloadTimeoutMs,
      });
      if (answer.kind === 'json' && answer.status >= 400) throw new HttpError(answer.status, (answer.body as Json).detail ?? UPSTREAM_ERROR.SERVER_CONNECTION_ERROR);
      return answer.kind === 'json' ? answer.body : { status: true };
    }
    throw notFound(`Model "${id}" not found`);
  }
}
