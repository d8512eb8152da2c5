import { StringDecoder } from 'node:string_decoder';
import type { WireError } from './errors.js';

/**
 * The messages between Node and a Python worker: one JSON object per line on
 * the worker's stdin/stdout, requests in both directions (plugin-host/parley_host/protocol.py).
 * Each side numbers its own requests; a response answers a request of the side receiving it.
 */
export interface RequestMessage {
  type: 'request';
  id: number;
  method: string;
  params: Record<string, unknown>;
}

export interface ResponseMessage {
  type: 'response';
  id: number;
  result?: unknown;
  error?: WireError | { message?: string; status?: number };
}

export interface NotifyMessage {
  type: 'notify';
  method: string;
  params: Record<string, unknown>;
}

export interface ReadyMessage {
  type: 'ready';
  pid: number;
  protocol: number;
  python: string;
  executable: string;
  pydantic: string;
}

export interface FatalMessage {
  type: 'fatal';
  code: string;
  message: string;
}

export type WorkerMessage = RequestMessage | ResponseMessage | ReadyMessage | FatalMessage;

export function encodeMessage(message: RequestMessage | ResponseMessage | NotifyMessage): string {
  return `${JSON.stringify(message)}\n`;
}

/** Splits a byte stream into lines, UTF-8 sequences cut between chunks included. */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private rest = '';

  push(chunk: Buffer): string[] {
    const text = this.rest + this.decoder.write(chunk);
    const lines = text.split('\n');
    this.rest = lines.pop() ?? '';
    return lines;
  }
}
