import { posix } from 'node:path';
import { decodeEntities, htmlToText } from './markup.js';

/**
 * Text of the zipped XML formats (the reference hands them to unstructured or
 * pandas): XLSX sheets as tab-separated rows, PPTX slides and ODT paragraphs as
 * lines, EPUB chapters in reading order. Read with jszip, loaded at first use.
 */

type Zip = import('jszip');

async function open(bytes: Buffer): Promise<Zip> {
  const { default: JSZip } = await import('jszip');
  return JSZip.loadAsync(bytes);
}

const read = async (zip: Zip, name: string) => (await zip.file(name)?.async('string')) ?? null;

/** Files of the zip matching `pattern`, in the numeric order of their first number (slide2 before slide10). */
function numbered(zip: Zip, pattern: RegExp): string[] {
  const number = (name: string) => Number(/(\d+)/.exec(path(name))?.[1] ?? 0);
  return Object.keys(zip.files)
    .filter((name) => pattern.test(name))
    .sort((a, b) => number(a) - number(b));
}
const path = (name: string) => name.slice(name.lastIndexOf('/') + 1);

/** The text of every element `tag` (e.g. `a:t`) inside `xml`, entities decoded. */
const texts = (xml: string, tag: string) =>
  [...xml.matchAll(new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => decodeEntities(m[1].replace(/<[^>]*>/g, '')));

/** Sheets in workbook order, each `name` then its rows, cells apart by tabs. */
export async function xlsxText(bytes: Buffer): Promise<string> {
  const zip = await open(bytes);
  const shared = texts((await read(zip, 'xl/sharedStrings.xml')) ?? '', 'si');
  const names = [...((await read(zip, 'xl/workbook.xml')) ?? '').matchAll(/<sheet\b[^>]*\bname="([^"]*)"/g)].map((m) => decodeEntities(m[1]));
  const sheets: string[] = [];
  for (const [index, file] of numbered(zip, /^xl\/worksheets\/sheet\d+\.xml$/).entries()) {
    const xml = (await read(zip, file)) ?? '';
    const rows = [...xml.matchAll(/<row\b[^>]*>([\s\S]*?)<\/row>/g)].map((row) =>
      [...row[1].matchAll(/<c\b([^>]*?)(?:\/>|>([\s\S]*?)<\/c>)/g)]
        .map(([, attributes, body = '']) => {
          if (/\bt="s"/.test(attributes)) return shared[Number(/<v>([^<]*)<\/v>/.exec(body)?.[1])] ?? '';
          if (/\bt="inlineStr"/.test(attributes)) return texts(body, 't').join('');
          return decodeEntities(/<v>([^<]*)<\/v>/.exec(body)?.[1] ?? '');
        })
        .join('\t'),
    );
    sheets.push([names[index] ?? `Sheet${index + 1}`, ...rows].join('\n'));
  }
  return sheets.join('\n\n');
}

/** Slides in order, a line per paragraph, a blank line between slides. */
export async function pptxText(bytes: Buffer): Promise<string> {
  const zip = await open(bytes);
  const slides: string[] = [];
  for (const file of numbered(zip, /^ppt\/slides\/slide\d+\.xml$/)) {
    const xml = (await read(zip, file)) ?? '';
    const paragraphs = [...xml.matchAll(/<a:p\b[^>]*>([\s\S]*?)<\/a:p>/g)].map((p) => texts(p[1], 'a:t').join('')).filter((line) => line.trim());
    slides.push(paragraphs.join('\n'));
  }
  return slides.join('\n\n');
}

/** Headings and paragraphs of an OpenDocument text, a line each. */
export async function odtText(bytes: Buffer): Promise<string> {
  const zip = await open(bytes);
  const xml = (await read(zip, 'content.xml')) ?? '';
  return [...xml.matchAll(/<text:(p|h)\b[^>]*>([\s\S]*?)<\/text:\1>|<text:(?:p|h)\b[^>]*\/>/g)]
    .map((m) => decodeEntities((m[2] ?? '').replace(/<text:tab\/>/g, '\t').replace(/<text:line-break\/>/g, '\n').replace(/<[^>]*>/g, '')))
    .join('\n')
    .trim();
}

/** The attribute `name` of the first `tag` element in `xml` that has it, entities decoded. */
function attributeOf(xml: string, tag: string, name: string): string | null {
  for (const [element] of xml.matchAll(new RegExp(`<(?:\\w+:)?${tag}\\b[^>]*>`, 'g'))) {
    const value = new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)')`).exec(element);
    if (value) return decodeEntities(value[2] ?? value[3]);
  }
  return null;
}

/**
 * The chapters of an EPUB in reading order, a blank line apart: the package
 * document named by META-INF/container.xml, its spine's items looked up in its
 * manifest, each XHTML chapter as text (html-to-text).
 */
export async function epubText(bytes: Buffer): Promise<string> {
  const zip = await open(bytes);
  const rootfile = attributeOf((await read(zip, 'META-INF/container.xml')) ?? '', 'rootfile', 'full-path');
  if (!rootfile) throw new Error('META-INF/container.xml names no package document');
  const opf = await read(zip, rootfile);
  if (opf === null) throw new Error(`the package document ${rootfile} is missing`);
  const manifest = new Map<string, string>();
  for (const [item] of opf.matchAll(/<(?:\w+:)?item\b[^>]*>/g)) {
    const id = attributeOf(item, 'item', 'id');
    const href = attributeOf(item, 'item', 'href');
    if (id && href) manifest.set(id, href);
  }
  const chapters: string[] = [];
  for (const [itemref] of opf.matchAll(/<(?:\w+:)?itemref\b[^>]*>/g)) {
    const href = manifest.get(attributeOf(itemref, 'itemref', 'idref') ?? '');
    if (!href) continue;
    const file = posix.normalize(posix.join(posix.dirname(rootfile), decodeURIComponent(href.split('#')[0])));
    const xhtml = await read(zip, file);
    const text = xhtml === null ? '' : htmlToText(xhtml);
    if (text) chapters.push(text);
  }
  return chapters.join('\n\n');
}
