/** The raster image formats providers take and browsers show, told by their first bytes. */
export type Raster = 'png' | 'jpeg' | 'gif' | 'webp';

/** The format of `bytes`, or null for anything else (SVG and other formats are never trusted as images: SVG can carry script). */
export function rasterOf(bytes: Buffer): Raster | null {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (bytes.subarray(0, 4).toString('latin1') === 'GIF8') return 'gif';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP') return 'webp';
  return null;
}
