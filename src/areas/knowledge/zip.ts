/** A zip of text files (the knowledge export), built with jszip, loaded at first use. */
export async function zipOf(entries: { name: string; content: string }[]): Promise<Buffer> {
  const { default: JSZip } = await import('jszip');
  const zip = new JSZip();
  for (const entry of entries) zip.file(entry.name, entry.content);
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}
