import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { readWebConfig, webConfigForm, webConfigUpdates } from '../../src/core/web/config.js';
import { useServer } from '../helpers/world.js';

/** The `web` part of the retrieval config, as the config routes read and write it. */
describe('web config', () => {
  const world = useServer({
    env: { ENABLE_WEB_SEARCH: 'true', WEB_SEARCH_RESULT_COUNT: '5', WEB_SEARCH_DOMAIN_FILTER_LIST: '["example.com","!bad.example.com"]', YOUTUBE_LOADER_LANGUAGE: 'de,en', OLLAMA_CLOUD_API_KEY: 'ok' },
    admin: false,
  });

  it('reads every WebConfig field, seeded from the reference variables', () => {
    const config = readWebConfig(world.server.parley.core.settings);
    expect(config).toMatchObject({
      ENABLE_WEB_SEARCH: true,
      WEB_SEARCH_ENGINE: '',
      WEB_SEARCH_RESULT_COUNT: 5,
      WEB_SEARCH_CONCURRENT_REQUESTS: 0,
      WEB_LOADER_CONCURRENT_REQUESTS: 10,
      WEB_FETCH_MAX_CONTENT_LENGTH: null,
      WEB_SEARCH_DOMAIN_FILTER_LIST: ['example.com', '!bad.example.com'],
      ENABLE_WEB_LOADER_SSL_VERIFICATION: true,
      SEARXNG_LANGUAGE: 'all',
      BING_SEARCH_V7_ENDPOINT: 'https://api.bing.microsoft.com/v7.0/search',
      PERPLEXITY_SEARCH_API_URL: 'https://api.perplexity.ai/search',
      OLLAMA_CLOUD_WEB_SEARCH_API_KEY: 'ok',
      YOUTUBE_LOADER_LANGUAGE: ['de', 'en'],
      YOUTUBE_LOADER_TRANSLATION: null,
      LINKUP_SEARCH_PARAMS: {},
    });
    expect(Object.keys(config)).toHaveLength(Object.keys(webConfigForm.properties).length);
  });

  it('validates a form and writes the fields it carries', async () => {
    expect(Value.Check(webConfigForm, { WEB_SEARCH_DOMAIN_FILTER_LIST: null })).toBe(false);
    expect(Value.Check(webConfigForm, { WEB_SEARCH_RESULT_COUNT: '3' })).toBe(false);
    const form = { ENABLE_WEB_SEARCH: false, WEB_SEARCH_ENGINE: 'brave', BRAVE_SEARCH_API_KEY: 'k', WEB_SEARCH_DOMAIN_FILTER_LIST: ['a.example', null], WEB_FETCH_MAX_CONTENT_LENGTH: null };
    expect(Value.Check(webConfigForm, form)).toBe(true);
    const updates = webConfigUpdates(form);
    expect(updates).toEqual({
      'web.search.enable': false,
      'web.search.engine': 'brave',
      'web.search.brave_search_api_key': 'k',
      'web.search.domain.filter_list': ['a.example'],
      'web.fetch.max_content_length': null,
    });
    const settings = world.server.parley.core.settings;
    await settings.set(updates, Date.now());
    expect(readWebConfig(settings)).toMatchObject({ ENABLE_WEB_SEARCH: false, WEB_SEARCH_ENGINE: 'brave', WEB_SEARCH_RESULT_COUNT: 5 });
  });
});
