import type { SettingsStore } from '../../config/settings.js';
import { readBody, type UpstreamClient, UpstreamFailure } from '../upstream/client.js';
import {
  RAG_AZURE_OPENAI_API_KEY,
  RAG_AZURE_OPENAI_API_VERSION,
  RAG_AZURE_OPENAI_BASE_URL,
  RAG_EMBEDDING_BATCH_SIZE,
  RAG_EMBEDDING_ENGINE,
  RAG_EMBEDDING_MODEL,
  RAG_OLLAMA_API_KEY,
  RAG_OLLAMA_BASE_URL,
  RAG_OPENAI_API_BASE_URL,
  RAG_OPENAI_API_KEY,
} from './settings.js';

/**
 * Embeddings through the configured engine (RAG_EMBEDDING_ENGINE): `openai` (POST
 * {base}/embeddings), `ollama` (POST {base}/api/embed), `azure_openai` (POST
 * {base}/openai/deployments/{model}/embeddings?api-version=), in batches of
 * RAG_EMBEDDING_BATCH_SIZE, with the reference's query and content prefixes. '' is no engine:
 * retrieval is lexical only (Parley has no in-process model).
 */
export type EmbeddingEngine = 'openai' | 'ollama' | 'azure_openai';

/** What the prefixes mark: a question, or a chunk being stored (RAG_EMBEDDING_QUERY_PREFIX / _CONTENT_PREFIX). */
export type EmbeddingPurpose = 'query' | 'content';

export class EmbeddingError extends Error {}

export interface Embedder {
  /** Names the vector space: vectors of two different `space`s are never compared. */
  space: string;
  embed(texts: string[], purpose: EmbeddingPurpose): Promise<Float32Array[]>;
}

export interface EmbeddingOptions {
  queryPrefix: string | null;
  contentPrefix: string | null;
  /** A body field the prefix is sent in instead of being prepended (RAG_EMBEDDING_PREFIX_FIELD_NAME). */
  prefixField: string | null;
  timeoutMs: number;
}

export function readEmbeddingOptions(env: Record<string, string | undefined>, defaultTimeoutMs: number): EmbeddingOptions {
  const seconds = Number.parseInt(env.RAG_EMBEDDING_TIMEOUT ?? '', 10);
  return {
    queryPrefix: env.RAG_EMBEDDING_QUERY_PREFIX ?? null,
    contentPrefix: env.RAG_EMBEDDING_CONTENT_PREFIX ?? null,
    prefixField: env.RAG_EMBEDDING_PREFIX_FIELD_NAME ?? null,
    timeoutMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : defaultTimeoutMs,
  };
}

interface EngineCall {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  vectorsOf(answer: any): unknown;
}

const trimSlash = (url: string) => url.replace(/\/+$/, '');

function engineCall(engine: EmbeddingEngine, settings: SettingsStore, model: string, input: string[]): EngineCall {
  if (engine === 'ollama') {
    const key = settings.get(RAG_OLLAMA_API_KEY);
    return {
      url: `${trimSlash(settings.get(RAG_OLLAMA_BASE_URL))}/api/embed`,
      headers: key ? { authorization: `Bearer ${key}` } : {},
      body: { input, model },
      vectorsOf: (answer) => answer?.embeddings,
    };
  }
  if (engine === 'azure_openai') {
    const version = encodeURIComponent(settings.get(RAG_AZURE_OPENAI_API_VERSION));
    return {
      url: `${trimSlash(settings.get(RAG_AZURE_OPENAI_BASE_URL))}/openai/deployments/${encodeURIComponent(model)}/embeddings?api-version=${version}`,
      headers: { 'api-key': settings.get(RAG_AZURE_OPENAI_API_KEY) },
      body: { input },
      vectorsOf: (answer) => (Array.isArray(answer?.data) ? answer.data.map((item: any) => item?.embedding) : undefined),
    };
  }
  return {
    url: `${trimSlash(settings.get(RAG_OPENAI_API_BASE_URL))}/embeddings`,
    headers: { authorization: `Bearer ${settings.get(RAG_OPENAI_API_KEY)}` },
    body: { input, model },
    vectorsOf: (answer) => (Array.isArray(answer?.data) ? answer.data.map((item: any) => item?.embedding) : undefined),
  };
}

function describeFailure(status: number, answer: unknown): string {
  const body = answer as any;
  const message = body?.error?.message ?? body?.error ?? body?.detail ?? (typeof body === 'string' ? body.slice(0, 300) : null);
  return `Embedding request failed with status ${status}${message ? `: ${typeof message === 'string' ? message : JSON.stringify(message)}` : ''}`;
}

/** The embedder for the current settings; null when no engine is configured. */
export function currentEmbedder(settings: SettingsStore, client: UpstreamClient, options: EmbeddingOptions): Embedder | null {
  const engine = settings.get(RAG_EMBEDDING_ENGINE);
  if (engine !== 'openai' && engine !== 'ollama' && engine !== 'azure_openai') return null;
  const model = settings.get(RAG_EMBEDDING_MODEL);
  const batchSize = Math.max(1, settings.get(RAG_EMBEDDING_BATCH_SIZE));

  const embedBatch = async (texts: string[], prefix: string | null): Promise<Float32Array[]> => {
    const input = prefix !== null && options.prefixField === null ? texts.map((text) => prefix + text) : texts;
    const call = engineCall(engine, settings, model, input);
    if (prefix !== null && options.prefixField !== null) call.body[options.prefixField] = prefix;
    let answer: unknown;
    let status = 0;
    // One retry when the connection failed: a kept-alive connection the provider closed meanwhile.
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await client.send({
          url: call.url,
          method: 'POST',
          headers: { 'content-type': 'application/json', ...call.headers },
          body: JSON.stringify(call.body),
          timeoutMs: options.timeoutMs,
        });
        status = response.status;
        answer = await readBody(client, response);
        break;
      } catch (error) {
        if (attempt === 1 && error instanceof UpstreamFailure && error.kind === 'unreachable') continue;
        throw new EmbeddingError(`Embedding request failed: ${(error as Error).message}`);
      }
    }
    if (status >= 400) throw new EmbeddingError(describeFailure(status, answer));
    const vectors = call.vectorsOf(answer);
    if (!Array.isArray(vectors) || vectors.length !== texts.length || !vectors.every((v) => Array.isArray(v) && v.length > 0 && v.every(Number.isFinite))) {
      throw new EmbeddingError(`Unexpected embeddings response from the ${engine} engine`);
    }
    return vectors.map((vector: number[]) => Float32Array.from(vector));
  };

  return {
    space: `${engine}:${model}`,
    async embed(texts, purpose) {
      const prefix = purpose === 'query' ? options.queryPrefix : options.contentPrefix;
      const vectors: Float32Array[] = [];
      for (let start = 0; start < texts.length; start += batchSize) vectors.push(...(await embedBatch(texts.slice(start, start + batchSize), prefix)));
      return vectors;
    },
  };
}
