import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { HttpError } from './errors.js';

/** A file part of a multipart/form-data body, its bytes streamed as they arrive. */
export interface MultipartFilePart {
  field: string;
  filename: string;
  contentType: string | null;
  content: Readable;
}

export interface MultipartBody<T> {
  /** Text fields, by name (the last one wins). */
  fields: Record<string, string>;
  /** What `onFile` returned for the file part, when there was one. */
  file: T | null;
}

/** The 422 of a form without its `file` part, as FastAPI answers a missing `File(...)`. */
export const missingFilePart = () => new HttpError(422, [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required', input: null }]);

/** Text fields are small (form values, JSON metadata); more than this is refused. */
const MAX_FIELD_BYTES = 64 * 1024;

/**
 * Reads a multipart/form-data body once, in order: the file part named `field`
 * is handed to `onFile` as a stream while it arrives (never held whole), other
 * parts are read as bounded text fields. Returns null when the body is not
 * multipart. A failure of `onFile` or of the body ends the read with it.
 */
export async function readMultipart<T>(
  body: Readable,
  contentType: string,
  field: string,
  onFile: (part: MultipartFilePart) => Promise<T>,
): Promise<MultipartBody<T> | null> {
  const match = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!/^multipart\/form-data/i.test(contentType) || !match) return null;
  const boundary = Buffer.from(`\r\n--${match[1] ?? match[2]}`);
  const iterator = body[Symbol.asyncIterator]();
  // The preamble ends with the first boundary, which has no leading CRLF.
  let buffer = Buffer.from('\r\n');
  const more = async () => {
    const { value, done } = await iterator.next();
    if (done) return false;
    buffer = Buffer.concat([buffer, value as Buffer]);
    return true;
  };
  const result: MultipartBody<T> = { fields: {}, file: null };
  let start = buffer.indexOf(boundary);
  while (start < 0) {
    if (!(await more())) return result;
    start = buffer.indexOf(boundary);
  }
  for (;;) {
    buffer = buffer.subarray(start + boundary.length);
    while (buffer.length < 2 && (await more()));
    // `--` after a boundary closes the body.
    if (buffer.subarray(0, 2).toString() === '--') break;
    let headerEnd = buffer.indexOf('\r\n\r\n');
    while (headerEnd < 0) {
      if (buffer.length > MAX_FIELD_BYTES || !(await more())) throw new HttpError(400, 'Malformed multipart body');
      headerEnd = buffer.indexOf('\r\n\r\n');
    }
    const headers = buffer.subarray(0, headerEnd).toString('utf8');
    buffer = buffer.subarray(headerEnd + 4);
    const disposition = /content-disposition:[^\r\n]*/i.exec(headers)?.[0] ?? '';
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1] ?? '';
    const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
    const partType = /content-type:\s*([^\r\n]*)/i.exec(headers)?.[1]?.trim() || null;
    const isFile = name === field && filename !== undefined && result.file === null;
    const content = isFile ? new PassThrough() : null;
    const handled = content ? onFile({ field: name, filename: filename!, contentType: partType, content }) : null;
    // A rejected handler must not leave the read waiting on a stream nobody drains.
    handled?.catch(() => undefined);
    const text: Buffer[] = [];
    let textBytes = 0;
    const emit = async (chunk: Buffer) => {
      if (chunk.length === 0) return;
      if (content) {
        if (!content.write(chunk)) await Promise.race([once(content, 'drain'), handled]);
        return;
      }
      textBytes += chunk.length;
      if (textBytes > MAX_FIELD_BYTES) throw new HttpError(400, `The form field ${name} is too large`);
      text.push(chunk);
    };
    try {
      for (;;) {
        start = buffer.indexOf(boundary);
        if (start >= 0) {
          await emit(buffer.subarray(0, start));
          break;
        }
        // Keep enough bytes to recognise a boundary split across chunks.
        const keep = boundary.length - 1;
        if (buffer.length > keep) {
          await emit(buffer.subarray(0, buffer.length - keep));
          buffer = buffer.subarray(buffer.length - keep);
        }
        if (!(await more())) throw new HttpError(400, 'Multipart body ended inside a part');
      }
    } catch (error) {
      content?.destroy(error as Error);
      await handled?.catch(() => undefined);
      throw error;
    }
    if (content) {
      content.end();
      result.file = await handled!;
    } else if (!isFile && filename === undefined) {
      result.fields[name] = Buffer.concat(text).toString('utf8');
    }
  }
  return result;
}
