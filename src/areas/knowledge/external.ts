import { randomUUID } from 'node:crypto';
import { checks, defineSetting } from '../../config/settings.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, badRequest, notFound } from '../../core/http/errors.js';
import type { Embedder } from '../../core/retrieval/embeddings.js';
import { type ExternalChunk, type ExternalConnection, ExternalRetrievalError, type ExternalSource, retrieveExternal } from './external-stores.js';
import type {
  ExternalKnowledgeConnectionForm,
  ExternalKnowledgeCreateForm,
  ExternalKnowledgeSourceCreateForm,
  ExternalKnowledgeSourceForm,
  ExternalKnowledgeSourceTestForm,
} from './schemas.js';
import type { KnowledgeService } from './service.js';
import type { KnowledgeRecord } from './store.js';

type Json = Record<string, unknown>;

/** `external_knowledge.connections`: the external vector stores an admin connected (routers/knowledge.py). */
export const EXTERNAL_CONNECTIONS = defineSetting<Json[]>({ key: 'external_knowledge.connections', default: [], check: connectionsCheck });

/** An import is held to what the connection routes store: objects with an id, a known provider and an endpoint. */
function connectionsCheck(value: unknown): string | null {
  const listed = checks.list(value);
  if (listed) return listed;
  const bad = (value as unknown[]).findIndex(
    (item) =>
      item === null ||
      typeof item !== 'object' ||
      typeof (item as Json).id !== 'string' ||
      !PROVIDERS.has(String((item as Json).provider)) ||
      typeof (item as Json).endpoint !== 'string',
  );
  return bad < 0 ? null : `item ${bad} must be a connection with an id, a provider (qdrant, milvus, pgvector) and an endpoint`;
}

const PROVIDERS = new Set(['qdrant', 'milvus', 'pgvector']);

export const EXTERNAL_ERROR = {
  PROVIDER: 'Unsupported external knowledge provider.',
  NAME: 'Knowledge source name is required.',
  ENDPOINT: 'Knowledge source endpoint is required.',
  SOURCE_TYPE: 'Only collection sources are supported.',
  COLLECTION: 'Collection name is required.',
  CONTENT_FIELD: 'Content field is required.',
  VECTOR_FIELD: 'Vector field is required.',
  IN_USE: 'External connection is still used by knowledge bases.',
  CONNECTION_NOT_FOUND: 'External connection not found.',
  TEST_QUERY: 'Test query is required.',
  KNOWLEDGE_NAME: 'Knowledge name is required.',
  NO_RESULTS: 'Test query returned no results.',
} as const;

/** A connection as the API shows it: its credentials replaced by whether it has any. */
function sanitize(connection: Json): Json {
  const { auth_config: auth, ...rest } = connection;
  return { ...rest, auth_configured: Boolean(auth && typeof auth === 'object' && Object.keys(auth).length > 0) };
}

function validated(form: ExternalKnowledgeConnectionForm): { provider: string; config: Json } {
  const provider = form.provider.toLowerCase().trim();
  if (!PROVIDERS.has(provider)) throw badRequest(EXTERNAL_ERROR.PROVIDER);
  if (!form.name.trim()) throw badRequest(EXTERNAL_ERROR.NAME);
  if (!form.endpoint.trim()) throw badRequest(EXTERNAL_ERROR.ENDPOINT);
  const allowed = new Set(provider === 'milvus' ? ['timeout', 'db_name'] : ['timeout']);
  return { provider, config: Object.fromEntries(Object.entries(form.config ?? {}).filter(([key]) => allowed.has(key))) };
}

/** A source with its type checked and its config reduced to the fields the provider reads. */
function normalizedSource(source: ExternalKnowledgeSourceForm, provider: string): ExternalSource {
  const type = (source.type ?? 'collection').trim() || 'collection';
  const name = source.name.trim();
  if (type !== 'collection') throw badRequest(EXTERNAL_ERROR.SOURCE_TYPE);
  if (!name) throw badRequest(EXTERNAL_ERROR.COLLECTION);
  const allowed = new Set(['content_field', 'metadata_field', 'document_id_field']);
  if (provider === 'qdrant' || provider === 'milvus') allowed.add('vector_field');
  if (provider === 'pgvector') for (const key of ['table_name', 'collection_field', 'vector_field']) allowed.add(key);
  const config: Json = {};
  for (const [key, value] of Object.entries(source.config ?? {})) {
    if (!allowed.has(key) || value === null || value === undefined) continue;
    if (typeof value === 'string') {
      if (value.trim()) config[key] = value.trim();
    } else config[key] = value;
  }
  if (!config.content_field) throw badRequest(EXTERNAL_ERROR.CONTENT_FIELD);
  if ((provider === 'milvus' || provider === 'pgvector') && !config.vector_field) throw badRequest(EXTERNAL_ERROR.VECTOR_FIELD);
  return { type, name, config };
}

const externalMeta = (connection: Json, source: ExternalSource): Json => ({
  source: 'external',
  read_only: true,
  external: { connection_id: connection.id, source, provider: connection.provider, auth_mode: 'service_account', capabilities: { retrieve: true } },
});

/**
 * External knowledge (routers/knowledge.py, 0.10.1): connections to vector stores an
 * admin runs elsewhere (Qdrant, Milvus, pgvector), kept in the config store, and
 * read-only knowledge bases over one of their collections, queried with this server's
 * embedding engine (external-stores.ts). A source is saved only once a test query finds
 * something in it, as the reference.
 */
export class ExternalKnowledgeService {
  constructor(
    private readonly core: Core,
    private readonly knowledge: KnowledgeService,
    /** The embedding engine of the retrieval settings (null: none configured). */
    private readonly embedder: () => Embedder | null,
  ) {
    // A deleted external knowledge base takes its connection with it, as the reference.
    knowledge.onExternalDeleted = async (record: KnowledgeRecord) => {
      const external = record.meta?.external as Json | undefined;
      const id = external?.connection_id;
      if (typeof id === 'string') await this.save(this.connections().filter((c) => c.id !== id));
    };
  }

  private connections(): Json[] {
    return [...(this.core.settings.get(EXTERNAL_CONNECTIONS) ?? [])];
  }

  private async save(connections: Json[]): Promise<void> {
    await this.core.settings.set({ [EXTERNAL_CONNECTIONS.key]: connections }, this.core.clock.now());
  }

  private find(id: string): Json | undefined {
    return this.connections().find((c) => c.id === id);
  }

  private build(form: ExternalKnowledgeConnectionForm, user: UserRecord, id?: string): Json {
    const { provider, config } = validated(form);
    const now = this.core.clock.now();
    return {
      id: id ?? randomUUID(),
      name: form.name.trim(),
      provider,
      endpoint: form.endpoint.trim(),
      auth_config: provider === 'pgvector' ? {} : (form.auth_config ?? {}),
      config,
      capabilities: form.capabilities || { retrieve: true },
      health: null,
      enabled: form.enabled ?? true,
      created_by: user.id,
      created_at: now,
      updated_at: now,
    };
  }

  /** An update keeps the stored credentials when the form leaves `auth_config` out. */
  private rebuilt(form: ExternalKnowledgeConnectionForm, existing: Json): Json {
    const { provider, config } = validated(form);
    const auth = provider === 'pgvector' ? {} : (form.auth_config ?? existing.auth_config ?? {});
    return {
      ...existing,
      name: form.name.trim(),
      provider,
      endpoint: form.endpoint.trim(),
      auth_config: auth,
      config,
      capabilities: form.capabilities || { retrieve: true },
      enabled: form.enabled ?? true,
      updated_at: this.core.clock.now(),
    };
  }

  private async publish(user: UserRecord, event: string, connection: Json): Promise<void> {
    await this.core.events.publish({ event, actor: user, subjectId: String(connection.id), data: { name: connection.name, provider: connection.provider } });
  }

  list(): { items: Json[]; total: number } {
    const items = this.connections().map(sanitize);
    return { items, total: items.length };
  }

  get(id: string): Json {
    const connection = this.find(id);
    if (!connection) throw notFound();
    return sanitize(connection);
  }

  async create(user: UserRecord, form: ExternalKnowledgeConnectionForm): Promise<Json> {
    const connection = this.build(form, user);
    await this.save([...this.connections(), connection]);
    await this.publish(user, 'knowledge.external_connection.created', connection);
    return sanitize(connection);
  }

  async update(user: UserRecord, id: string, form: ExternalKnowledgeConnectionForm): Promise<Json> {
    const connections = this.connections();
    const index = connections.findIndex((c) => c.id === id);
    if (index < 0) throw notFound();
    connections[index] = this.rebuilt(form, connections[index]);
    await this.save(connections);
    await this.publish(user, 'knowledge.external_connection.updated', connections[index]);
    return sanitize(connections[index]);
  }

  async delete(user: UserRecord, id: string): Promise<boolean> {
    const connection = this.find(id);
    if (!connection) throw notFound();
    if ((await this.knowledge.externalUses(id)) > 0) throw badRequest(EXTERNAL_ERROR.IN_USE);
    await this.save(this.connections().filter((c) => c.id !== id));
    await this.publish(user, 'knowledge.external_connection.deleted', connection);
    return true;
  }

  /** `POST /external/connections/{id}/test`: the reference's health check (enabled, with an endpoint), recorded on the connection. */
  async test(id: string): Promise<Json> {
    const connections = this.connections();
    const connection = connections.find((c) => c.id === id);
    if (!connection) throw notFound();
    const now = this.core.clock.now();
    const health = { ok: Boolean(connection.enabled && connection.endpoint), provider: connection.provider, checked_at: now };
    connection.health = health;
    connection.updated_at = now;
    await this.save(connections);
    return health;
  }

  /** Chunks of a source for the queries; a store that fails or cannot be asked is a 400 with its reason. */
  private async retrieve(connection: Json, source: ExternalSource, owner: { id: string; name: string }, queries: string[], count: number): Promise<ExternalChunk[]> {
    try {
      return await retrieveExternal(connection as unknown as ExternalConnection, source, owner, queries, count, this.embedder());
    } catch (error) {
      if (error instanceof ExternalRetrievalError) throw badRequest(error.message);
      throw badRequest(ERROR.DEFAULT((error as Error).message));
    }
  }

  /** A test query against a source definition (`_test_external_source_definition`): its documents, metadata and distances. */
  private async retrieveTest(connection: Json, form: ExternalKnowledgeSourceForm, query: string, count: number) {
    if (!query.trim()) throw badRequest(EXTERNAL_ERROR.TEST_QUERY);
    const source = normalizedSource(form, String(connection.provider));
    const chunks = await this.retrieve(connection, source, { id: 'external-test', name: String(connection.name) }, [query.trim()], count);
    return { documents: chunks.map((c) => c.content), metadatas: chunks.map((c) => c.metadata), distances: chunks.map((c) => c.distance) };
  }

  /**
   * The chunks of an external knowledge base for the queries (the chat pipeline's counterpart
   * of a local knowledge base's collection, retrieve_external_knowledge); null when `knowledgeId`
   * names no external knowledge base the user may read.
   */
  async query(user: UserRecord, knowledgeId: string, queries: string[], count: number): Promise<ExternalChunk[] | null> {
    const knowledge = await this.knowledge.readable(user, knowledgeId);
    if (!knowledge || knowledge.meta?.source !== 'external') return null;
    const external = (knowledge.meta?.external ?? {}) as Json;
    const connection = typeof external.connection_id === 'string' ? this.find(external.connection_id) : undefined;
    if (!connection) throw notFound(EXTERNAL_ERROR.CONNECTION_NOT_FOUND);
    return this.retrieve(connection, external.source as ExternalSource, knowledge, queries, count);
  }

  /** `POST /external/source/test`. */
  testSource(user: UserRecord, form: ExternalKnowledgeSourceTestForm) {
    let connection: Json;
    if (form.connection_id) {
      const existing = this.find(form.connection_id);
      if (!existing) throw notFound(EXTERNAL_ERROR.CONNECTION_NOT_FOUND);
      connection = this.rebuilt(form.connection, existing);
    } else connection = this.build(form.connection, user, 'external-test');
    return this.retrieveTest(connection, form.source, form.query, form.count ?? 5);
  }

  /** `POST /external/connections/{id}/retrieve-test`. */
  retrieveTestOf(id: string, form: { query: string; source?: ExternalKnowledgeSourceForm | null; count?: number }) {
    const connection = this.find(id);
    if (!connection) throw notFound();
    return this.retrieveTest(connection, form.source ?? { name: 'test', config: { content_field: 'payload.text' } }, form.query, form.count ?? 5);
  }

  /** `POST /external/knowledge/create`: a read-only knowledge base over a collection of a stored connection. */
  async createKnowledge(user: UserRecord, form: ExternalKnowledgeCreateForm) {
    const connection = this.find(form.connection_id);
    if (!connection) throw notFound();
    if (!form.name.trim()) throw badRequest(EXTERNAL_ERROR.KNOWLEDGE_NAME);
    const source = normalizedSource(form.source, String(connection.provider));
    return this.knowledge.createExternal(user, { name: form.name, description: form.description ?? '', access_grants: form.access_grants }, externalMeta(connection, source));
  }

  /** Runs the form's test query; a source that finds nothing is refused. */
  private async requireResults(connection: Json, form: ExternalKnowledgeSourceCreateForm): Promise<ExternalSource> {
    const result = await this.retrieveTest(connection, form.source, form.test_query, form.test_count ?? 5);
    if (result.documents.length === 0) throw badRequest(EXTERNAL_ERROR.NO_RESULTS);
    return normalizedSource(form.source, String(connection.provider));
  }

  /** `POST /external/source/create`: a new connection and a knowledge base over one of its collections, once a test query finds something. */
  async createSource(user: UserRecord, form: ExternalKnowledgeSourceCreateForm) {
    if (!form.name.trim()) throw badRequest(EXTERNAL_ERROR.KNOWLEDGE_NAME);
    const connection = this.build(form.connection, user);
    const source = await this.requireResults(connection, form);
    await this.save([...this.connections(), connection]);
    try {
      return await this.knowledge.createExternal(user, { name: form.name, description: form.description ?? '', access_grants: form.access_grants }, externalMeta(connection, source));
    } catch (error) {
      await this.save(this.connections().filter((c) => c.id !== connection.id));
      throw error;
    }
  }

  /** `PATCH /external/source/{id}`: the knowledge base's connection, source, name, description and grants, once a test query finds something. */
  async updateSource(user: UserRecord, id: string, form: ExternalKnowledgeSourceCreateForm) {
    const knowledge = await this.knowledge.requireExternal(id);
    if (!form.name.trim()) throw badRequest(EXTERNAL_ERROR.KNOWLEDGE_NAME);
    const connectionId = (knowledge.meta?.external as Json | undefined)?.connection_id;
    const connections = this.connections();
    const index = connections.findIndex((c) => c.id === connectionId);
    if (index < 0) throw notFound(EXTERNAL_ERROR.CONNECTION_NOT_FOUND);
    const previous = connections[index];
    const connection = this.rebuilt(form.connection, previous);
    const source = await this.requireResults(connection, form);
    connections[index] = connection;
    await this.save(connections);
    try {
      return await this.knowledge.updateExternal(user, id, { name: form.name, description: form.description ?? '', access_grants: form.access_grants }, externalMeta(connection, source));
    } catch (error) {
      connections[index] = previous;
      await this.save(connections);
      throw error;
    }
  }
}
