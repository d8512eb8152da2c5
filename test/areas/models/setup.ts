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

/** Posts `body` to a streaming route, reads `chunks` chunks of the answer, then goes away as a closed tab does. */
export async function readThenLeave(url: string, token: string, body: unknown, chunks = 1): Promise<void> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  for (let i = 0; i < chunks; i++) await reader.read();
  controller.abort();
}
