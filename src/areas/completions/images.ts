import { buffer } from 'node:stream/consumers';
import type { UserRecord } from '../../core/auth/user.js';
import { type Json, type Message, isObject } from '../chats/history.js';
import type { FilesService } from '../files/service.js';
import { rasterOf } from '../../core/raster.js';

/**
 * Images of a conversation as the model receives them (the reference's
 * convert_url_images_to_base64 and get_image_base64_from_file_id): an
 * `image_url` part naming a stored file (the frontend's `url: <file id>`, or
 * `/api/v1/files/<id>/content`) becomes a data URI of its bytes when the user
 * may read the file, and is left out otherwise; nothing is ever read from a path
 * or URL in the request. Images wider or taller than FILE_IMAGE_COMPRESSION_WIDTH
 * / _HEIGHT are scaled down to fit, keeping their proportions, as the frontend's
 * compressImage. http(s) URLs go to the provider as sent (it fetches them).
 */
export interface ImageBounds {
  width: number | null;
  height: number | null;
}

/** Larger images are not inlined: they could not have been sent in a request either (the `large` body class). */
const MAX_IMAGE_BYTES = 32 * 1024 * 1024;
/** Decoding a larger image could take gigabytes (a small PNG can declare 30,000² pixels). */
const MAX_IMAGE_PIXELS = 64_000_000;
const FILE_URL = /^(?:\/api\/v1\/files\/)?([A-Za-z0-9_-]{1,128})(?:\/content)?$/;
const DATA_URI = /^data:([^;,]*);base64,/i;

export class ConversationImages {
  constructor(
    private readonly files: FilesService,
    private readonly bounds: () => ImageBounds,
    private readonly warn: (details: Json, message: string) => void,
  ) {}

  /** The messages with their image parts inlined (a copy; messages without images are the same objects). */
  async inline(user: UserRecord, messages: Message[]): Promise<Message[]> {
    return Promise.all(messages.map((message) => (Array.isArray(message.content) && message.content.some(isImagePart) ? this.inlineMessage(user, message) : message)));
  }

  private async inlineMessage(user: UserRecord, message: Message): Promise<Message> {
    const parts = await Promise.all(
      (message.content as unknown[]).map(async (part) => {
        if (!isImagePart(part)) return part;
        const url = imageUrl(part);
        const inlined = await this.dataUri(user, url).catch((error: unknown) => {
          this.warn({ err: error instanceof Error ? error.message : String(error) }, 'An image of the conversation could not be read; it is left out');
          return null;
        });
        if (inlined === undefined) return part;
        return inlined === null ? null : { ...part, image_url: { ...(isObject(part.image_url) ? part.image_url : {}), url: inlined } };
      }),
    );
    return { ...message, content: parts.filter((part) => part !== null) };
  }

  /** The image as a data URI; undefined to leave the part as it is (a web URL); null to leave it out. */
  private async dataUri(user: UserRecord, url: string): Promise<string | null | undefined> {
    if (/^https?:\/\//i.test(url)) return undefined;
    const data = DATA_URI.exec(url);
    if (data) {
      const { width, height } = this.bounds();
      return width || height ? this.scaled(Buffer.from(url.slice(data[0].length), 'base64'), data[1] || 'image/png') : undefined;
    }
    const id = FILE_URL.exec(url)?.[1];
    if (!id) return null;
    const file = await this.files.content(user, id).catch(() => null);
    if (!file || !file.contentType?.startsWith('image/') || file.size > MAX_IMAGE_BYTES) return null;
    return this.scaled(await buffer(file.open()), file.contentType);
  }

  /** The bytes as a data URI, scaled down to the configured bounds when they are larger (PNG, JPEG, GIF, WebP). */
  private async scaled(bytes: Buffer, contentType: string): Promise<string> {
    const raster = rasterOf(bytes);
    const { width, height } = this.bounds();
    if (!raster || (!width && !height)) return `data:${raster ? `image/${raster}` : contentType};base64,${bytes.toString('base64')}`;
    // sharp (libvips, a native library of tens of megabytes) is loaded at the first image to scale, not at start.
    const { default: sharp } = await import('sharp');
    const image = sharp(bytes, { limitInputPixels: MAX_IMAGE_PIXELS }).autoOrient();
    const meta = await image.metadata();
    const [w, h] = (meta.orientation ?? 1) >= 5 ? [meta.height, meta.width] : [meta.width, meta.height];
    if ((!width || w <= width) && (!height || h <= height)) return `data:image/${raster};base64,${bytes.toString('base64')}`;
    const resized = await image.resize({ width: width ?? undefined, height: height ?? undefined, fit: 'inside', withoutEnlargement: true }).toFormat(raster).toBuffer();
    return `data:image/${raster};base64,${resized.toString('base64')}`;
  }
}

function isImagePart(part: unknown): part is Json {
  return isObject(part) && part.type === 'image_url' && imageUrl(part) !== '';
}

function imageUrl(part: Json): string {
  const value = isObject(part.image_url) ? part.image_url.url : part.image_url;
  return typeof value === 'string' ? value : '';
}
