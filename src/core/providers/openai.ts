import type { SettingsStore } from '../../config/settings.js';
import type { UserRecord } from '../auth/user.js';
import { HttpError, badRequest, notFound } from '../http/errors.js';
import { type Connection, stripPrefix } from '../upstream/connections.js';
import { type CallContext, isAzure } from '../upstream/headers.js';
import { type Answer, UPSTREAM_ERROR, type UpstreamService } from '../upstream/service.js';
import { OPENAI_ENABLE } from '../upstream/settings.js';
import { adaptForReasoningModel, azurePayload, deploymentOf, fromResponsesResult, isAzureV1, isReasoningModel, logitBiasOf, toResponsesPayload } from './openai-payload.js';
import type { ChatProvider, ModelRoute } from './provider.js';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** OpenAI-compatible connections (OpenAI, Azure, the Responses API, llama.cpp, ...): requests shaped for each and sent. */
export class OpenAIProvider implements ChatProvider {
  constructor(
    private readonly upstream: UpstreamService,
    private readonly settings: SettingsStore,
  ) {}

  enabled(): boolean {
    return this.settings.get(OPENAI_ENABLE) === true;
  }

  requireEnabled(): void {
    if (!this.enabled()) throw new HttpError(503, UPSTREAM_ERROR.OPENAI_API_DISABLED);
  }

  async locate(_user: UserRecord, modelId: string, requested: string, context: CallContext): Promise<ModelRoute> {
    let model = (await this.upstream.models(context)).openai.get(modelId);
    if (!model) model = (await this.upstream.models(context, true)).openai.get(modelId);
    if (!model) throw notFound(UPSTREAM_ERROR.MODEL_NOT_FOUND(requested));
    return { connection: this.upstream.connection('openai', model.urlIdx), model, requested };
  }

  /** Where a call for a model goes, with Azure's deployment URLs and the Responses API's path. */
  target(connection: Connection, payload: Json, path: '/chat/completions' | '/responses' | '/embeddings'): { url: string; payload: Json; responses: boolean } {
    const base = connection.url.replace(/\/+$/, '');
    const responses = path === '/chat/completions' && connection.config.api_type === 'responses';
    const finalPath = responses ? '/responses' : path;
    let body = payload;
    if (!isAzure(connection)) return { url: `${base}${finalPath}`, payload: responses ? toResponsesPayload(body) : body, responses };
    if (isAzureV1(connection.url)) return { url: `${base}${finalPath}`, payload: responses ? toResponsesPayload(body) : body, responses };
    const apiVersion = String(connection.config.api_version || '2023-03-15-preview');
    const deployment = deploymentOf(body.model);
    if (!deployment) throw badRequest('Invalid model name: must not be empty or contain path separators or traversal sequences');
    if (path === '/chat/completions') body = azurePayload(body, apiVersion);
    if (responses) body = toResponsesPayload(body);
    return { url: `${connection.url}/openai/deployments/${deployment}${finalPath}?api-version=${apiVersion}`, payload: body, responses };
  }

  async chat(route: ModelRoute, user: UserRecord, body: Json, context: CallContext): Promise<Answer> {
    const { connection, model } = route;
    let payload: Json = { ...body, model: stripPrefix(String(body.model), connection.config.prefix_id) };
    if (model.pipeline) payload.user = { name: user.name, id: user.id, email: user.email, role: user.role };
    if (isReasoningModel(String(payload.model))) payload = adaptForReasoningModel(payload);
    else if (!connection.url.includes('api.openai.com') && 'max_completion_tokens' in payload) {
      payload.max_tokens = payload.max_completion_tokens;
      delete payload.max_completion_tokens;
    }
    if ('max_tokens' in payload && 'max_completion_tokens' in payload) delete payload.max_tokens;
    if (payload.logit_bias) payload.logit_bias = logitBiasOf(payload.logit_bias);

    const target = this.target(connection, payload, '/chat/completions');
    payload = target.payload;
    if (!target.responses && Array.isArray(payload.messages)) {
      payload.messages = payload.messages.map((message) =>
        isObject(message) && message.role === 'tool' && Array.isArray(message.content)
          ? { ...message, content: message.content.filter((p) => isObject(p) && (p.type === 'text' || p.type === 'input_text')).map((p) => String((p as Json).text ?? '')).join('') }
          : message,
      );
    }
    const stream = payload.stream === true;
    if (!stream) delete payload.stream_options;
    const answer = await this.upstream.openai(connection, '', { url: target.url, json: payload, context, stream, requestedModel: String(payload.model) });
    if (target.responses && answer.kind === 'json' && answer.status < 400 && isObject(answer.body)) {
      return { ...answer, body: fromResponsesResult(answer.body) };
    }
    return answer;
  }

  async embeddings(route: ModelRoute, body: Json, context: CallContext): Promise<Answer> {
    const target = this.target(route.connection, body, '/embeddings');
    return this.upstream.openai(route.connection, '', { url: target.url, json: target.payload, context, requestedModel: String(body.model) });
  }

  /** Whether the connection answers Anthropic Messages requests itself (Anthropic's API, LiteLLM); others get Chat Completions. */
  speaksMessages(connection: Connection): boolean {
    return connection.url.includes('api.anthropic.com') || String(connection.config.provider ?? '').toLowerCase() === 'litellm';
  }

  /** An Anthropic Messages body (model id as listed) sent as it is to a connection that speaks them. */
  messages(route: ModelRoute, body: Json, context: CallContext): Promise<Answer> {
    const { connection } = route;
    const payload: Json = { ...body, model: stripPrefix(String(body.model), connection.config.prefix_id) };
    return this.upstream.openai(connection, '/messages', { json: payload, context, stream: payload.stream === true, requestedModel: route.requested });
  }
}
