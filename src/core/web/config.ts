import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { checks, defineSetting, parsers, type SettingDefinition, type SettingsStore } from '../../config/settings.js';
import { YOUTUBE_LOADER_LANGUAGE, YOUTUBE_LOADER_PROXY_URL } from '../retrieval/settings.js';

/**
 * The `web` part of the retrieval config (`GET/POST /api/v1/retrieval/config`,
 * routers/retrieval.py WebConfig): web search, the page loader and YouTube. Every
 * field is a persistent setting under the reference's key (config.py DEFAULT_CONFIG,
 * `web.*` since it renamed `rag.web.*`), seeded from the reference's variable.
 * Parley stores and reports every field the frontend shows; the engines and loaders
 * it runs are listed in docs/web-search.md.
 */

type Kind = 'bool' | 'string' | 'nullableString' | 'int' | 'nullableInt' | 'list' | 'object';

interface Field {
  key: string;
  env?: string;
  kind: Kind;
  default: unknown;
}

const bool = (key: string, env: string, fallback: boolean): Field => ({ key, env, kind: 'bool', default: fallback });
const text = (key: string, env: string, fallback = ''): Field => ({ key, env, kind: 'string', default: fallback });
const int = (key: string, env: string, fallback: number): Field => ({ key, env, kind: 'int', default: fallback });

/** WebConfig's fields, in the reference's order. */
const FIELDS = {
  ENABLE_WEB_SEARCH: bool('web.search.enable', 'ENABLE_WEB_SEARCH', false),
  ENABLE_WEB_SEARCH_CONFIRMATION: bool('web.search.confirmation.enable', 'ENABLE_WEB_SEARCH_CONFIRMATION', false),
  WEB_SEARCH_CONFIRMATION_CONTENT: text('web.search.confirmation.content', 'WEB_SEARCH_CONFIRMATION_CONTENT', 'Your query will be sent to the configured web search provider.'),
  WEB_SEARCH_ENGINE: text('web.search.engine', 'WEB_SEARCH_ENGINE'),
  WEB_SEARCH_TRUST_ENV: bool('web.search.trust_env', 'WEB_SEARCH_TRUST_ENV', true),
  WEB_SEARCH_RESULT_COUNT: int('web.search.result_count', 'WEB_SEARCH_RESULT_COUNT', 3),
  WEB_SEARCH_CONCURRENT_REQUESTS: int('web.search.concurrent_requests', 'WEB_SEARCH_CONCURRENT_REQUESTS', 0),
  WEB_FETCH_MAX_CONTENT_LENGTH: { key: 'web.fetch.max_content_length', env: 'WEB_FETCH_MAX_CONTENT_LENGTH', kind: 'nullableInt', default: null },
  WEB_LOADER_CONCURRENT_REQUESTS: int('web.loader.concurrent_requests', 'WEB_LOADER_CONCURRENT_REQUESTS', 10),
  WEB_SEARCH_DOMAIN_FILTER_LIST: { key: 'web.search.domain.filter_list', env: 'WEB_SEARCH_DOMAIN_FILTER_LIST', kind: 'list', default: [] },
  BYPASS_WEB_SEARCH_EMBEDDING_AND_RETRIEVAL: bool('web.search.bypass_embedding_and_retrieval', 'BYPASS_WEB_SEARCH_EMBEDDING_AND_RETRIEVAL', false),
  BYPASS_WEB_SEARCH_WEB_LOADER: bool('web.search.bypass_web_loader', 'BYPASS_WEB_SEARCH_WEB_LOADER', false),
  OLLAMA_CLOUD_WEB_SEARCH_API_KEY: text('web.search.ollama_cloud_api_key', 'OLLAMA_CLOUD_API_KEY'),
  SEARXNG_QUERY_URL: text('web.search.searxng_query_url', 'SEARXNG_QUERY_URL'),
  SEARXNG_LANGUAGE: text('web.search.searxng_language', 'SEARXNG_LANGUAGE', 'all'),
  YACY_QUERY_URL: text('web.search.yacy_query_url', 'YACY_QUERY_URL'),
  YACY_USERNAME: text('web.search.yacy_username', 'YACY_USERNAME'),
  YACY_PASSWORD: text('web.search.yacy_password', 'YACY_PASSWORD'),
  GOOGLE_PSE_API_KEY: text('web.search.google_pse_api_key', 'GOOGLE_PSE_API_KEY'),
  GOOGLE_PSE_ENGINE_ID: text('web.search.google_pse_engine_id', 'GOOGLE_PSE_ENGINE_ID'),
  BRAVE_SEARCH_API_KEY: text('web.search.brave_search_api_key', 'BRAVE_SEARCH_API_KEY'),
  BRAVE_SEARCH_CONTEXT_TOKENS: int('web.search.brave_search_context_tokens', 'BRAVE_SEARCH_CONTEXT_TOKENS', 8192),
  KAGI_SEARCH_API_KEY: text('web.search.kagi_search_api_key', 'KAGI_SEARCH_API_KEY'),
  MOJEEK_SEARCH_API_KEY: text('web.search.mojeek_search_api_key', 'MOJEEK_SEARCH_API_KEY'),
  BOCHA_SEARCH_API_KEY: text('web.search.bocha_search_api_key', 'BOCHA_SEARCH_API_KEY'),
  SERPSTACK_API_KEY: text('web.search.serpstack_api_key', 'SERPSTACK_API_KEY'),
  SERPSTACK_HTTPS: bool('web.search.serpstack_https', 'SERPSTACK_HTTPS', true),
  SERPER_API_KEY: text('web.search.serper_api_key', 'SERPER_API_KEY'),
  SERPHOUSE_API_KEY: text('web.search.serphouse_api_key', 'SERPHOUSE_API_KEY'),
  SERPHOUSE_DOMAIN: text('web.search.serphouse_domain', 'SERPHOUSE_DOMAIN', 'google.com'),
  SERPLY_API_KEY: text('web.search.serply_api_key', 'SERPLY_API_KEY'),
  DDGS_BACKEND: text('web.search.ddgs_backend', 'DDGS_BACKEND', 'auto'),
  TAVILY_API_KEY: text('web.search.tavily_api_key', 'TAVILY_API_KEY'),
  SEARCHAPI_API_KEY: text('web.search.searchapi_api_key', 'SEARCHAPI_API_KEY'),
  SEARCHAPI_ENGINE: text('web.search.searchapi_engine', 'SEARCHAPI_ENGINE'),
  SERPAPI_API_KEY: text('web.search.serpapi_api_key', 'SERPAPI_API_KEY'),
  SERPAPI_ENGINE: text('web.search.serpapi_engine', 'SERPAPI_ENGINE'),
  JINA_API_KEY: text('web.search.jina_api_key', 'JINA_API_KEY'),
  JINA_API_BASE_URL: text('web.search.jina_api_base_url', 'JINA_API_BASE_URL'),
  BING_SEARCH_V7_ENDPOINT: text('web.search.bing_search_v7_endpoint', 'BING_SEARCH_V7_ENDPOINT', 'https://api.bing.microsoft.com/v7.0/search'),
  BING_SEARCH_V7_SUBSCRIPTION_KEY: text('web.search.bing_search_v7_subscription_key', 'BING_SEARCH_V7_SUBSCRIPTION_KEY'),
  EXA_API_KEY: text('web.search.exa_api_key', 'EXA_API_KEY'),
  PERPLEXITY_API_KEY: text('web.search.perplexity_api_key', 'PERPLEXITY_API_KEY'),
  PERPLEXITY_MODEL: text('web.search.perplexity_model', 'PERPLEXITY_MODEL', 'sonar'),
  PERPLEXITY_SEARCH_CONTEXT_USAGE: text('web.search.perplexity_search_context_usage', 'PERPLEXITY_SEARCH_CONTEXT_USAGE', 'medium'),
  PERPLEXITY_SEARCH_API_URL: text('web.search.perplexity_search_api_url', 'PERPLEXITY_SEARCH_API_URL', 'https://api.perplexity.ai/search'),
  MICROSOFT_WEB_IQ_API_BASE_URL: text('web.search.microsoft_web_iq_api_base_url', 'MICROSOFT_WEB_IQ_API_BASE_URL', 'https://api.microsoft.ai/v3'),
  MICROSOFT_WEB_IQ_API_KEY: text('web.search.microsoft_web_iq_api_key', 'MICROSOFT_WEB_IQ_API_KEY'),
  MICROSOFT_WEB_IQ_LANGUAGE: text('web.search.microsoft_web_iq_language', 'MICROSOFT_WEB_IQ_LANGUAGE', 'en'),
  SOUGOU_API_SID: text('web.search.sougou_api_sid', 'SOUGOU_API_SID'),
  SOUGOU_API_SK: text('web.search.sougou_api_sk', 'SOUGOU_API_SK'),
  WEB_LOADER_ENGINE: text('web.loader.engine', 'WEB_LOADER_ENGINE'),
  WEB_LOADER_TIMEOUT: text('web.loader.timeout', 'WEB_LOADER_TIMEOUT'),
  ENABLE_WEB_LOADER_SSL_VERIFICATION: bool('web.loader.ssl_verification', 'ENABLE_WEB_LOADER_SSL_VERIFICATION', true),
  PLAYWRIGHT_WS_URL: text('web.loader.playwright_ws_url', 'PLAYWRIGHT_WS_URL'),
  PLAYWRIGHT_TIMEOUT: int('web.loader.playwright_timeout', 'PLAYWRIGHT_TIMEOUT', 10000),
  FIRECRAWL_API_KEY: text('web.loader.firecrawl_api_key', 'FIRECRAWL_API_KEY'),
  FIRECRAWL_API_BASE_URL: text('web.loader.firecrawl_api_url', 'FIRECRAWL_API_BASE_URL', 'https://api.firecrawl.dev'),
  FIRECRAWL_TIMEOUT: text('web.loader.firecrawl_timeout', 'FIRECRAWL_TIMEOUT'),
  TAVILY_EXTRACT_DEPTH: text('web.search.tavily_extract_depth', 'TAVILY_EXTRACT_DEPTH', 'basic'),
  EXTERNAL_WEB_SEARCH_URL: text('web.search.external_web_search_url', 'EXTERNAL_WEB_SEARCH_URL'),
  EXTERNAL_WEB_SEARCH_API_KEY: text('web.search.external_web_search_api_key', 'EXTERNAL_WEB_SEARCH_API_KEY'),
  EXTERNAL_WEB_LOADER_URL: text('web.loader.external_web_loader_url', 'EXTERNAL_WEB_LOADER_URL'),
  EXTERNAL_WEB_LOADER_API_KEY: text('web.loader.external_web_loader_api_key', 'EXTERNAL_WEB_LOADER_API_KEY'),
  YOUTUBE_LOADER_LANGUAGE: { key: 'rag.youtube_loader_language', env: 'YOUTUBE_LOADER_LANGUAGE', kind: 'list', default: ['en'] },
  YOUTUBE_LOADER_PROXY_URL: text('rag.youtube_loader_proxy_url', 'YOUTUBE_LOADER_PROXY_URL'),
  // The reference keeps this one in memory only (app.state); Parley stores it like the others.
  YOUTUBE_LOADER_TRANSLATION: { key: 'rag.youtube_loader_translation', kind: 'nullableString', default: null },
  YANDEX_WEB_SEARCH_URL: text('web.search.yandex_web_search_url', 'YANDEX_WEB_SEARCH_URL'),
  YANDEX_WEB_SEARCH_API_KEY: text('web.search.yandex_web_search_api_key', 'YANDEX_WEB_SEARCH_API_KEY'),
  YANDEX_WEB_SEARCH_CONFIG: text('web.search.yandex_web_search_config', 'YANDEX_WEB_SEARCH_CONFIG'),
  YOUCOM_API_KEY: text('web.search.youcom_api_key', 'YOUCOM_API_KEY'),
  LINKUP_API_KEY: text('web.search.linkup_api_key', 'LINKUP_API_KEY'),
  LINKUP_SEARCH_PARAMS: { key: 'web.search.linkup_search_params', env: 'LINKUP_SEARCH_PARAMS', kind: 'object', default: {} },
} satisfies Record<string, Field>;

export type WebField = keyof typeof FIELDS;

/** Settings the retrieval core already declares (the same keys), reused rather than declared twice. */
const DECLARED: Partial<Record<WebField, SettingDefinition>> = {
  YOUTUBE_LOADER_LANGUAGE: YOUTUBE_LOADER_LANGUAGE as SettingDefinition,
  YOUTUBE_LOADER_PROXY_URL: YOUTUBE_LOADER_PROXY_URL as SettingDefinition,
};

function settingOf(field: WebField, spec: Field): SettingDefinition {
  const declared = DECLARED[field];
  if (declared) return declared;
  const base = { key: spec.key, env: spec.env, default: spec.default };
  switch (spec.kind) {
    case 'bool':
      return defineSetting({ ...base, parse: parsers.bool, check: checks.bool });
    case 'int':
      return defineSetting({ ...base, parse: parsers.int, check: checks.int });
    case 'nullableInt':
      return defineSetting({ ...base, parse: (raw) => (Number.isFinite(Number.parseInt(raw, 10)) ? Number.parseInt(raw, 10) : null), check: checks.nullableInt });
    case 'list':
      return defineSetting({ ...base, parse: parsers.jsonOr<unknown[]>([], Array.isArray), check: checks.list });
    case 'object':
      return defineSetting({ ...base, parse: parsers.jsonOr({}, (v) => v !== null && typeof v === 'object' && !Array.isArray(v)), check: checks.object });
    case 'nullableString':
      return defineSetting({ ...base, check: checks.nullableString });
    default:
      return defineSetting({ ...base, check: checks.string });
  }
}

export const WEB_SETTINGS = Object.fromEntries(Object.entries(FIELDS).map(([field, spec]) => [field, settingOf(field as WebField, spec)])) as Record<WebField, SettingDefinition>;

const nullable = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));

function formSchemaOf(spec: Field): TSchema {
  switch (spec.kind) {
    case 'bool':
      return nullable(Type.Boolean());
    case 'int':
    case 'nullableInt':
      return nullable(Type.Integer());
    case 'list':
      // WebConfig: `list[str | None]`; a null where the list is required is refused (422).
      return Type.Optional(Type.Array(Type.Union([Type.String(), Type.Null()])));
    case 'object':
      return nullable(Type.Object({}, { additionalProperties: true }));
    default:
      return nullable(Type.String());
  }
}

/** The `web` form of `POST /api/v1/retrieval/config/update` (every field optional, as WebConfig). */
export const webConfigForm = Type.Object(
  Object.fromEntries(Object.entries(FIELDS).map(([field, spec]) => [field, formSchemaOf(spec)])) as Record<WebField, TSchema>,
);
export type WebConfigForm = Static<typeof webConfigForm>;

/** The `web` part of the config answers. */
export type WebConfig = Record<WebField, unknown>;

/** The `web` object the config routes answer with. */
export function readWebConfig(settings: SettingsStore): WebConfig {
  return Object.fromEntries(Object.keys(FIELDS).map((field) => [field, settings.get(WEB_SETTINGS[field as WebField])])) as WebConfig;
}

/**
 * The settings a `web` form writes: every field it carries, as the reference assigns
 * each one (a field the form leaves out keeps its value). Give them to
 * `settings.set` with the rest of the config update, in one write.
 */
export function webConfigUpdates(form: WebConfigForm): Record<string, unknown> {
  const updates: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(form)) {
    if (value === undefined || !(field in FIELDS)) continue;
    updates[WEB_SETTINGS[field as WebField].key] = Array.isArray(value) ? value.filter((entry) => entry !== null) : value;
  }
  return updates;
}

/** The typed values the web code reads at each use (settings change at run time). */
export function webSettings(settings: SettingsStore) {
  const get = <T>(field: WebField) => settings.get<T>(WEB_SETTINGS[field].key);
  return {
    string: (field: WebField) => get<string | null>(field) ?? '',
    number: (field: WebField) => get<number | null>(field),
    flag: (field: WebField) => get<boolean | null>(field) === true,
    list: (field: WebField) => (get<unknown[] | null>(field) ?? []).filter((entry): entry is string => typeof entry === 'string' && entry !== ''),
    object: (field: WebField) => get<Record<string, unknown> | null>(field) ?? {},
  };
}
export type WebSettings = ReturnType<typeof webSettings>;
