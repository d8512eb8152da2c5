import type { Embedder } from '../../core/retrieval/embeddings.js';

type Json = Record<string, unknown>;

/**
 * Queries of external vector stores (retrieval/external.py): Qdrant and Milvus over their
 * HTTP APIs, pgvector over a PostgreSQL connection. The query is embedded with this
 * server's embedding engine (the external collection must hold vectors of the same
 * model), and each hit is normalised to a chunk with `name`, `source`, `file_id`... as the
 * reference's `_normalize_result`.
 */

/** A connection as stored (`external_knowledge.connections`). */
export interface ExternalConnection {
  id: string;
  name: string;
  provider: string;
  endpoint: string;
  auth_config?: Json | null;
  config?: Json | null;
  enabled?: boolean;
}

/** A source: a collection of the connection, and the fields its records keep text, metadata and ids in. */
export interface ExternalSource {
  type: string;
  name: string;
  config: Json;
}

export interface ExternalChunk {
  content: string;
  metadata: Json;
  distance: unknown;
}

/** The knowledge base a result is attributed to. */
export interface ExternalOwner {
  id: string;
  name: string;
}

export class ExternalRetrievalError extends Error {}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const DEFAULT_TIMEOUT_SECONDS = 30;

/** A dotted path into a record ('payload.text'); `fallback` when absent. */
function at(data: unknown, path: string | undefined, fallback: unknown = undefined): unknown {
  if (!path) return fallback;
  let value = data;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return fallback;
    value = (value as Json)[part];
    if (value === undefined) return fallback;
  }
  return value;
}

interface Mapping {
  content_field: string;
  metadata_field: string;
  document_id_field: string;
  score_field: string;
}

function normalize(result: Json, mapping: Mapping, owner: ExternalOwner, distance: unknown): ExternalChunk {
  const content = at(result, mapping.content_field, '');
  const title = at(result, 'title', null);
  const source = at(result, 'source', null);
  const url = at(result, 'url', null);
  const documentId = at(result, mapping.document_id_field, null);
  const page = at(result, 'page', null);
  const raw = at(result, mapping.metadata_field, {}) ?? {};
  const metadata: Json = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? { ...(raw as Json) } : { external_metadata: raw };
  const sourceName = source || title || metadata.source || metadata.name || owner.name;
  Object.assign(metadata, {
    name: title || sourceName,
    source: sourceName,
    url,
    file_id: documentId ?? `external-${owner.id}`,
    knowledge_id: owner.id,
    knowledge_name: owner.name,
    external: true,
  });
  if (page !== null) metadata.page = page;
  if (documentId !== null) metadata.document_id = documentId;
  return { content: typeof content === 'string' ? content : JSON.stringify(content), metadata, distance: at(result, mapping.score_field, distance) };
}

const rootField = (path: unknown) => (typeof path === 'string' && path ? path.split('.')[0] : null);

function safeIdentifier(value: unknown, label: string): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) throw new ExternalRetrievalError(`Invalid ${label}`);
  return value;
}

async function postJson(url: string, body: Json, headers: Record<string, string>, timeoutSeconds: number): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutSeconds * 1000),
    });
  } catch (error) {
    throw new ExternalRetrievalError(`The external store could not be reached: ${(error as Error).message}`);
  }
  const text = await response.text();
  if (!response.ok) throw new ExternalRetrievalError(`The external store answered ${response.status}: ${text.slice(0, 300)}`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ExternalRetrievalError('The external store answered with something other than JSON');
  }
}

const baseUrl = (endpoint: string) => endpoint.replace(/\/+$/, '');
const timeoutOf = (connection: ExternalConnection) => {
  const value = Number(connection.config?.timeout);
  return Number.isFinite(value) && value > 0 ? value : DEFAULT_TIMEOUT_SECONDS;
};

/** Qdrant's query API (`POST /collections/{name}/points/query`). */
async function qdrant(connection: ExternalConnection, source: ExternalSource, owner: ExternalOwner, vector: number[], count: number): Promise<ExternalChunk[]> {
  const apiKey = connection.auth_config?.api_key;
  const using = typeof source.config.vector_field === 'string' ? source.config.vector_field : undefined;
  const answer = await postJson(
    `${baseUrl(connection.endpoint)}/collections/${encodeURIComponent(source.name)}/points/query`,
    { query: vector, ...(using ? { using } : {}), limit: count, with_payload: true },
    typeof apiKey === 'string' && apiKey ? { 'api-key': apiKey } : {},
    timeoutOf(connection),
  );
  const points = at(answer, 'result.points', at(answer, 'result', []));
  const mapping: Mapping = {
    content_field: String(source.config.content_field || 'payload.text'),
    metadata_field: String(source.config.metadata_field || 'payload.metadata'),
    document_id_field: String(source.config.document_id_field || 'id'),
    score_field: 'score',
  };
  return (Array.isArray(points) ? points : []).map((point: Json) => normalize(point, mapping, owner, point.score));
}

/** Milvus's REST API (`POST /v2/vectordb/entities/search`). */
async function milvus(connection: ExternalConnection, source: ExternalSource, owner: ExternalOwner, vector: number[], count: number): Promise<ExternalChunk[]> {
  const token = connection.auth_config?.api_key || connection.auth_config?.token;
  const vectorField = String(source.config.vector_field || 'vector');
  const contentField = String(source.config.content_field || 'data.text');
  const metadataField = String(source.config.metadata_field || 'metadata');
  const outputFields = [...new Set([rootField(contentField), rootField(metadataField), rootField(source.config.document_id_field)])].filter(
    (field): field is string => field !== null && field !== vectorField,
  );
  const answer = await postJson(
    `${baseUrl(connection.endpoint)}/v2/vectordb/entities/search`,
    {
      collectionName: source.name,
      data: [vector],
      annsField: vectorField,
      limit: count,
      outputFields,
      ...(connection.config?.db_name ? { dbName: connection.config.db_name } : {}),
    },
    typeof token === 'string' && token ? { authorization: `Bearer ${token}` } : {},
    timeoutOf(connection),
  );
  const code = at(answer, 'code', 0);
  if (code !== 0) throw new ExternalRetrievalError(`Milvus answered code ${String(code)}: ${String(at(answer, 'message', ''))}`);
  const hits = at(answer, 'data', []);
  const mapping: Mapping = { content_field: contentField, metadata_field: metadataField, document_id_field: String(source.config.document_id_field || 'id'), score_field: 'distance' };
  return (Array.isArray(hits) ? hits : []).map((hit: Json) => {
    const entity = hit.entity !== null && typeof hit.entity === 'object' ? (hit.entity as Json) : {};
    return normalize({ ...hit, ...entity, id: hit.id ?? entity.id, distance: hit.distance }, mapping, owner, hit.distance);
  });
}

/** A table with a pgvector column, over a PostgreSQL connection (`endpoint` is its URL); names checked as identifiers. */
async function pgvector(connection: ExternalConnection, source: ExternalSource, owner: ExternalOwner, vector: number[], count: number): Promise<ExternalChunk[]> {
  const c = source.config;
  const table = String(c.table_name || 'document_chunk')
    .split('.')
    .map((part) => `"${safeIdentifier(part, 'table name')}"`)
    .join('.');
  const column = (value: unknown, fallback: string, label: string) => `"${safeIdentifier(value || fallback, label)}"`;
  const metadata = c.metadata_field === '' ? `'{}'::jsonb` : column(c.metadata_field, 'vmetadata', 'metadata field');
  const statement = `select ${column(c.document_id_field, 'id', 'document id field')} as id, ${column(c.content_field, 'text', 'content field')} as content,
    ${metadata} as metadata, ${column(c.vector_field, 'vector', 'vector field')} <=> $1::vector as distance
    from ${table} where ${column(c.collection_field, 'collection_name', 'collection field')} = $2 order by distance asc limit $3`;
  // Loaded at first use, as the database module loads it: a SQLite deployment never needs it.
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: connection.endpoint, connectionTimeoutMillis: timeoutOf(connection) * 1000 });
  try {
    await client.connect();
    const result = await client.query(statement, [`[${vector.join(',')}]`, source.name, count]);
    const mapping: Mapping = { content_field: 'content', metadata_field: 'metadata', document_id_field: 'id', score_field: 'distance' };
    return result.rows.map((row: Json) => normalize(row, mapping, owner, row.distance));
  } catch (error) {
    if (error instanceof ExternalRetrievalError) throw error;
    throw new ExternalRetrievalError(`pgvector query failed: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

const PROVIDERS = { qdrant, milvus, pgvector } as const;

/** The best `count` chunks of the source for the queries (retrieve_external_knowledge_for_connection). */
export async function retrieveExternal(
  connection: ExternalConnection,
  source: ExternalSource,
  owner: ExternalOwner,
  queries: string[],
  count: number,
  embedder: Embedder | null,
): Promise<ExternalChunk[]> {
  if (connection.enabled === false) throw new ExternalRetrievalError('External knowledge connection is disabled');
  const provider = PROVIDERS[connection.provider.toLowerCase() as keyof typeof PROVIDERS];
  if (!provider) throw new ExternalRetrievalError(`Unsupported external knowledge provider: ${connection.provider}`);
  if (!embedder) throw new ExternalRetrievalError('Embedding function is not configured');
  const chunks: ExternalChunk[] = [];
  for (const query of queries) {
    const [vector] = await embedder.embed([query], 'query');
    chunks.push(...(await provider(connection, source, owner, Array.from(vector), count)));
  }
  return chunks.slice(0, count);
}
