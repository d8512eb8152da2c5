import type { EventPayload } from '../../../src/core/events/publish.js';
import { type FakeUpstream, startFakeOllama, startFakeOpenAI } from '../../helpers/fake-upstreams.js';
import { destroyServer, recordEvents, startServer, type TestServer } from '../../helpers/server.js';

/** A Parley wired to one fake OpenAI-style provider and one fake Ollama, recording every event it publishes. */
export interface ModelWorld {
  server: TestServer;
  openai: FakeUpstream;
  ollama: FakeUpstream;
  events: EventPayload[];
  close(): Promise<void>;
}

export async function startModelWorld(env: Record<string, string> = {}, models: { openai?: string[]; ollama?: string[] } = {}): Promise<ModelWorld> {
  const openai = await startFakeOpenAI(models.openai);
  const ollama = await startFakeOllama(models.ollama);
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
  const events = recordEvents(server);
  return {
    server,
    openai,
    ollama,
    events,
    async close() {
      await destroyServer(server);
      await openai.close();
      await ollama.close();
    },
  };
}

/** Reads a streamed body chunk by chunk, with when each chunk arrived. */
export async function readChunks(response: Response): Promise<{ text: string; chunks: string[] }> {
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) chunks.push(decoder.decode(chunk, { stream: true }));
  return { text: chunks.join(''), chunks };
}

/** Server-sent `data:` payloads of an event stream, parsed (`[DONE]` kept as a string). */
export function sseData(text: string): unknown[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trim())
    .map((data) => (data === '[DONE]' ? data : JSON.parse(data)));
}
