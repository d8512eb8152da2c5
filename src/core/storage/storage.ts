import type { Readable } from 'node:stream';

/** What a finished write stored: where, how many bytes, and their SHA-256. */
export interface StoredObject {
  path: string;
  size: number;
  sha256: string;
}

/** A byte range of a stored object, both ends included (an HTTP Range). */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * File bytes behind one interface (the reference's storage/provider.py):
 * local disk today; an S3-compatible provider fits the same methods. Paths are
 * what `put` returned and what the `file` table keeps.
 */
export interface Storage {
  /**
   * Writes a stream under `name`, refusing it (and keeping nothing) once it
   * passes `maxBytes`; the error `tooLarge()` builds is thrown then.
   */
  put(name: string, content: Readable, options?: { maxBytes?: number; tooLarge?: () => Error }): Promise<StoredObject>;
  /** The size of stored bytes; null when they are gone. */
  size(path: string): Promise<number | null>;
  /** The stored bytes, whole or one range of them. */
  read(path: string, range?: ByteRange): Readable;
  /** A path on this machine to read the bytes from (extraction); `releaseLocalPath` when done with it. */
  localPath(path: string): Promise<string>;
  /** Removes a copy `localPath` made for a remote object; nothing for bytes that live on this disk. */
  releaseLocalPath(path: string): Promise<void>;
  delete(path: string): Promise<void>;
  deleteAll(): Promise<void>;
  /** Lets go of connections (at shutdown). */
  close(): Promise<void>;
}
