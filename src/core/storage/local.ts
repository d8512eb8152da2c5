import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ByteRange, Storage, StoredObject } from './storage.js';

/**
 * Bytes on local disk in one folder (DATA_DIR/uploads, 0700 like the data
 * folder itself). Every path is checked to stay inside it.
 */
/**
 * Bytes an upload may have in flight to the disk: the socket is read on while the disk catches
 * up (the default 16 KiB stalls the upload on every write).
 */
const WRITE_BUFFER_BYTES = 1 << 20;

export class LocalStorage implements Storage {
  constructor(readonly dir: string) {}

  /**
   * A name or stored path inside the folder, or an error. Rows keep absolute paths (as the
   * reference's do): one recorded under another `uploads` folder (a backup restored into
   * another DATA_DIR, a moved install) is read from this folder by its file name.
   */
  resolve(stored: string): string {
    let resolved = path.resolve(this.dir, stored);
    if (path.isAbsolute(stored) && !resolved.startsWith(this.dir + path.sep) && path.basename(path.dirname(stored)) === 'uploads') {
      resolved = path.resolve(this.dir, path.basename(stored));
    }
    if (!resolved.startsWith(this.dir + path.sep)) throw new Error(`The path ${stored} is not in the upload folder`);
    return resolved;
  }

  async put(name: string, content: NodeJS.ReadableStream, options: { maxBytes?: number; tooLarge?: () => Error } = {}): Promise<StoredObject> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const target = this.resolve(name);
    const hash = createHash('sha256');
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    let size = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        if (size > maxBytes) return callback(options.tooLarge?.() ?? new Error('too large'));
        hash.update(chunk);
        callback(null, chunk);
      },
    });
    try {
      await pipeline(content, counted, createWriteStream(target, { mode: 0o600, highWaterMark: WRITE_BUFFER_BYTES }));
    } catch (error) {
      // A refused or broken upload leaves no partial file behind.
      await rm(target, { force: true });
      throw error;
    }
    return { path: target, size, sha256: hash.digest('hex') };
  }

  async size(stored: string): Promise<number | null> {
    const info = await stat(this.resolve(stored)).catch(() => null);
    return info?.isFile() ? info.size : null;
  }

  read(stored: string, range?: ByteRange) {
    return createReadStream(this.resolve(stored), range ? { start: range.start, end: range.end } : {});
  }

  async localPath(stored: string): Promise<string> {
    return this.resolve(stored);
  }

  async releaseLocalPath(): Promise<void> {}

  async delete(stored: string): Promise<void> {
    await rm(this.resolve(stored), { force: true });
  }

  async close(): Promise<void> {}

  async deleteAll(): Promise<void> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    await Promise.all(names.map((name) => rm(path.join(this.dir, name), { recursive: true, force: true })));
  }
}
