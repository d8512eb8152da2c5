import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { badRequest } from '../../core/http/errors.js';
import type { Connection } from '../../core/upstream/connections.js';
import type { CallContext } from '../../core/upstream/headers.js';
import type { UpstreamService } from '../../core/upstream/service.js';

/**
 * Model files brought to an Ollama server (`/ollama/models/download` and
 * `/upload`): the file is kept under DATA_DIR/uploads, pushed to Ollama as a
 * blob, and (for uploads) turned into a model; progress is reported as
 * server-sent events, as the reference does.
 */
const ALLOWED_SOURCES = ['https://huggingface.co/', 'https://github.com/'];
const CHUNK = 1024 * 1024;

const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

export class ModelFiles {
  constructor(
    private readonly upstream: UpstreamService,
    private readonly dataDir: string,
  ) {}

  private async uploadsDir(): Promise<string> {
    const dir = path.join(this.dataDir, 'uploads');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /**
   * Pushes a file to Ollama's blob store (reporting progress while it is hashed,
   * when asked) and removes it once Ollama has it. Returns the blob's digest.
   */
  private async *pushBlob(connection: Connection, file: string, context: CallContext, report: boolean): AsyncGenerator<string, string> {
    const size = (await stat(file)).size;
    const hash = createHash('sha256');
    let read = 0;
    for await (const chunk of createReadStream(file, { highWaterMark: CHUNK })) {
      hash.update(chunk as Buffer);
      read += (chunk as Buffer).length;
      if (report) yield event({ progress: size ? Math.round((read / size) * 10000) / 100 : 100, total: size, completed: read });
    }
    const digest = `sha256:${hash.digest('hex')}`;
    const response = await this.upstream.client.send({
      url: this.upstream.url(connection, `/api/blobs/${digest}`),
      method: 'POST',
      headers: { 'content-length': String(size), ...(connection.key ? { authorization: `Bearer ${connection.key}` } : {}) },
      body: createReadStream(file, { highWaterMark: CHUNK }),
      signal: context.signal,
      timeoutMs: this.upstream.options.timeoutMs,
    });
    await response.body.text();
    if (response.status >= 400) throw new Error('Ollama: Could not create blob, Please try again.');
    await rm(file, { force: true });
    return digest;
  }

  /** `POST /ollama/models/download`: a GGUF file from Hugging Face or GitHub, resumed if partly there. */
  async download(connection: Connection, url: string, context: CallContext): Promise<AsyncGenerator<string> | null> {
    if (!ALLOWED_SOURCES.some((host) => url.startsWith(host))) throw badRequest('Invalid file_url. Only URLs from allowed hosts are permitted.');
    let name = '';
    try {
      name = path.basename(new URL(url).pathname);
    } catch {
      name = '';
    }
    if (!name) return null;
    const file = path.join(await this.uploadsDir(), name);
    const upstream = this.upstream;
    const self = this;
    return (async function* () {
      let current = await stat(file).then((s) => s.size, () => 0);
      const response = await upstream.client.send({
        url,
        headers: current > 0 ? { range: `bytes=${current}-` } : {},
        signal: context.signal,
        timeoutMs: 600_000,
      });
      const total = Number(response.headers['content-length'] ?? 0) + current;
      const out = createWriteStream(file, { flags: current > 0 && response.status === 206 ? 'a' : 'w' });
      if (response.status !== 206) current = 0;
      try {
        for await (const chunk of response.body) {
          current += (chunk as Buffer).length;
          if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
          yield event({ progress: Math.round((current / (total || current)) * 10000) / 100, completed: current, total });
        }
      } finally {
        await new Promise<void>((resolve) => out.end(() => resolve()));
      }
      const blob = yield* self.pushBlob(connection, file, context, false);
      yield event({ done: true, blob, name });
    })();
  }

  /** `POST /ollama/models/upload`: the uploaded file becomes a blob, then a model named after the file. */
  async upload(connection: Connection, filename: string, content: Readable, context: CallContext): Promise<AsyncGenerator<string>> {
    const name = path.basename(filename);
    if (!name) throw badRequest('Missing file');
    const file = path.join(await this.uploadsDir(), name);
    try {
      await new Promise<void>((resolve, reject) => {
        const out = createWriteStream(file);
        content.pipe(out);
        content.once('error', (error) => {
          out.destroy();
          reject(error);
        });
        out.once('error', reject);
        out.once('finish', resolve);
      });
    } catch (error) {
      // A refused (too large) or broken upload leaves no partial file behind.
      await rm(file, { force: true });
      throw error;
    }
    const upstream = this.upstream;
    const self = this;
    return (async function* () {
      try {
        const blob = yield* self.pushBlob(connection, file, context, true);
        const model = name.replace(/\.[^.]*$/, '');
        const created = await upstream.client.send({
          url: upstream.url(connection, '/api/create'),
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(connection.key ? { authorization: `Bearer ${connection.key}` } : {}) },
          body: JSON.stringify({ model, files: { [name]: blob } }),
          signal: context.signal,
          timeoutMs: upstream.options.timeoutMs,
        });
        const text = await created.body.text();
        if (created.status >= 400) throw new Error(`Failed to create model in Ollama. ${text}`);
        upstream.catalog.invalidate();
        yield event({ done: true, blob, name, model_created: model });
      } catch (error) {
        yield event({ error: error instanceof Error ? error.message : String(error) });
      }
    })();
  }
}
