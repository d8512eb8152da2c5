import { createReadStream, createWriteStream } from 'node:fs';
import { rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import type { LocalStorage } from './local.js';
import type { ByteRange, Storage, StoredObject } from './storage.js';

/** The reference's S3 variables (config.py). */
export interface S3Options {
  bucket: string;
  region: string | null;
  endpoint: string | null;
  accessKeyId: string | null;
  secretAccessKey: string | null;
  keyPrefix: string;
  /** S3_ADDRESSING_STYLE=path: `endpoint/bucket/key`, as most S3-compatible servers want. */
  pathStyle: boolean;
  accelerate: boolean;
}

export function readS3Options(raw: Record<string, string | undefined>): S3Options {
  const bucket = raw.S3_BUCKET_NAME?.trim();
  if (!bucket) throw new Error('STORAGE_PROVIDER=s3 needs S3_BUCKET_NAME');
  return {
    bucket,
    region: raw.S3_REGION_NAME?.trim() || null,
    endpoint: raw.S3_ENDPOINT_URL?.trim() || null,
    accessKeyId: raw.S3_ACCESS_KEY_ID || null,
    secretAccessKey: raw.S3_SECRET_ACCESS_KEY || null,
    keyPrefix: (raw.S3_KEY_PREFIX ?? '').replace(/^\/+|\/+$/g, ''),
    pathStyle: raw.S3_ADDRESSING_STYLE?.trim().toLowerCase() === 'path',
    accelerate: raw.S3_USE_ACCELERATE_ENDPOINT?.trim().toLowerCase() === 'true',
  };
}

const isMissing = (error: unknown) => {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
};

/**
 * Bytes in an S3-compatible bucket (the reference's S3StorageProvider): an
 * upload is written to the local folder first (size limit and hash as for
 * local storage), then sent to the bucket with its length, and the local copy
 * removed. Paths are `s3://<bucket>/<prefix>/<name>`; a path of the local
 * folder (bytes stored before the switch, or by plugins) is served from disk.
 */
export class S3Storage implements Storage {
  private loaded: Promise<{ sdk: typeof import('@aws-sdk/client-s3'); client: S3Client }> | null = null;

  constructor(
    private readonly options: S3Options,
    private readonly local: LocalStorage,
  ) {}

  /** The SDK, loaded at first use (it is large, and most servers keep files on disk), and its client. */
  private s3() {
    this.loaded ??= import('@aws-sdk/client-s3').then((sdk) => ({ sdk, client: this.createClient(sdk) }));
    return this.loaded;
  }

  private createClient(sdk: typeof import('@aws-sdk/client-s3')): S3Client {
    const options = this.options;
    return new sdk.S3Client({
      region: options.region ?? 'us-east-1',
      endpoint: options.endpoint ?? undefined,
      forcePathStyle: options.pathStyle,
      useAccelerateEndpoint: options.accelerate,
      // Without keys, the SDK's default chain (environment, instance or workload role) applies, as boto3's.
      credentials: options.accessKeyId && options.secretAccessKey ? { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } : undefined,
      // Checksums only where S3 requires them: many S3-compatible servers refuse the newer ones.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private keyOf(name: string): string {
    return this.options.keyPrefix ? `${this.options.keyPrefix}/${name}` : name;
  }

  /** The key of an `s3://bucket/key` path; null for a local path. */
  private keyIn(stored: string): string | null {
    const prefix = `s3://${this.options.bucket}/`;
    if (stored.startsWith(prefix)) return stored.slice(prefix.length);
    if (stored.startsWith('s3://')) throw new Error(`The path ${stored} is not in bucket ${this.options.bucket}`);
    return null;
  }

  async put(name: string, content: Readable, options: { maxBytes?: number; tooLarge?: () => Error } = {}): Promise<StoredObject> {
    const staged = await this.local.put(name, content, options);
    const key = this.keyOf(name);
    try {
      const { sdk, client } = await this.s3();
      await client.send(
        new sdk.PutObjectCommand({ Bucket: this.options.bucket, Key: key, Body: createReadStream(staged.path), ContentLength: staged.size }),
      );
    } finally {
      await this.local.delete(staged.path);
    }
    return { ...staged, path: `s3://${this.options.bucket}/${key}` };
  }

  async size(stored: string): Promise<number | null> {
    const key = this.keyIn(stored);
    if (key === null) return this.local.size(stored);
    try {
      const { sdk, client } = await this.s3();
      const head = await client.send(new sdk.HeadObjectCommand({ Bucket: this.options.bucket, Key: key }));
      return head.ContentLength ?? 0;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  read(stored: string, range?: ByteRange): Readable {
    const key = this.keyIn(stored);
    if (key === null) return this.local.read(stored, range);
    const out = new PassThrough();
    this.s3()
      .then(({ sdk, client }) => client.send(new sdk.GetObjectCommand({ Bucket: this.options.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined })))
      .then((object) => pipeline(object.Body as Readable, out))
      .catch((error: Error) => out.destroy(error));
    return out;
  }

  /** Downloads the object into the local folder (under its last key segment) once, and answers that path. */
  async localPath(stored: string): Promise<string> {
    const key = this.keyIn(stored);
    if (key === null) return this.local.localPath(stored);
    const target = this.local.resolve(path.posix.basename(key));
    if (await stat(target).then((s) => s.isFile(), () => false)) return target;
    const { sdk, client } = await this.s3();
    const object = await client.send(new sdk.GetObjectCommand({ Bucket: this.options.bucket, Key: key }));
    const partial = `${target}.part`;
    await pipeline(object.Body as Readable, createWriteStream(partial, { mode: 0o600 }));
    await rename(partial, target);
    return target;
  }

  async releaseLocalPath(stored: string): Promise<void> {
    const key = this.keyIn(stored);
    if (key !== null) await this.local.delete(this.local.resolve(path.posix.basename(key)));
  }

  async delete(stored: string): Promise<void> {
    const key = this.keyIn(stored);
    if (key !== null) {
      const { sdk, client } = await this.s3();
      await client.send(new sdk.DeleteObjectCommand({ Bucket: this.options.bucket, Key: key }));
      await this.local.delete(this.local.resolve(path.posix.basename(key)));
    } else await this.local.delete(stored);
  }

  /** Every object under the key prefix (never another application's), and the local folder. */
  async deleteAll(): Promise<void> {
    const { sdk, client } = await this.s3();
    let token: string | undefined;
    do {
      const page = await client.send(
        new sdk.ListObjectsV2Command({ Bucket: this.options.bucket, Prefix: this.options.keyPrefix ? `${this.options.keyPrefix}/` : undefined, ContinuationToken: token }),
      );
      const keys = (page.Contents ?? []).flatMap((object) => (object.Key ? [{ Key: object.Key }] : []));
      if (keys.length > 0) await client.send(new sdk.DeleteObjectsCommand({ Bucket: this.options.bucket, Delete: { Objects: keys } }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    await this.local.deleteAll();
  }

  async close(): Promise<void> {
    if (this.loaded) (await this.loaded).client.destroy();
  }
}
