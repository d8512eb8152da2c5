import type { Readable } from 'node:stream';

/**
 * The events of a provider's Chat Completions stream, one parsed JSON value per
 * `data:` line (`[DONE]` ends it). Some providers put a bare JSON error line in
 * the stream; it comes out as is. Lines that are not JSON are skipped.
 */
export async function* streamEvents(body: Readable): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buffer = '';
  const parse = (line: string): unknown => {
    const trimmed = line.trim();
    if (!trimmed) return undefined;
    const data = trimmed.startsWith('data:') ? trimmed.slice(5).trim() : trimmed.startsWith('{') ? trimmed : null;
    if (data === null || data === '[DONE]') return undefined;
    try {
      return JSON.parse(data) as unknown;
    } catch {
      return undefined;
    }
  };
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk as Uint8Array, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const value = parse(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
      if (value !== undefined) yield value;
      newline = buffer.indexOf('\n');
    }
  }
  const rest = parse(buffer + decoder.decode());
  if (rest !== undefined) yield rest;
}
