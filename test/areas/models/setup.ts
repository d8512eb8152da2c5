import { type FakeUpstream, startFakeOllama, startFakeOpenAI } from '../../helpers/fake-upstreams.js';
import { type TestServer, startServer } from '../../helpers/server.js';

/** A Parley wired to one fake OpenAI-style provider and one fake Ollama. */
export interface ModelWorld {
  server: TestServer;
  openai: FakeUpstream;
  ollama: FakeUpstream;
  close(): Promise<void>;
}

export async function startModelWorld(env: Record<string, string> = {}): Promise<ModelWorld> {
  const openai = await startFakeOpenAI();
  const ollama = await startFakeOllama();
  const { destroyServer } = await import('../../helpers/server.js');
  const server = await startServer({
    env: {
      OPENAI_API_BASE_URLS: openai.url,
      OPENAI_API_KEYS: 'sk-upstream-key-1234',
      OLLAMA_BASE_URLS: ollama.url,
      ENABLE_EVALUATION_ARENA_MODELS: 'false',
      MODELS_CACHE_TTL: '1',
      ...env,
    },
  });
  return {
    server,
    openai,
    ollama,
    async close() {
      await destroyServer(server);
      await openai.close();
      await ollama.close();
    },
  };
}
