/**
 * Small real documents made at test time, for extraction tests: a PDF with
 * one page of text per entry (bench/lib/pdf.js, which the bench uses too),
 * and a DOCX (a zip of the three parts Word needs) with one paragraph each.
 */
export { makePdf } from '../../bench/lib/pdf.js';

/** A DOCX of one paragraph per entry; a paragraph with a style (`Title`, `Heading1`, ...) names it by its id. */
export async function makeDocx(paragraphs: (string | { text: string; style: string })[]): Promise<Buffer> {
  const { default: JSZip } = await import('jszip');
  const zip = new JSZip();
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  zip.file(
    '[Content_Types].xml',
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
  );
  zip.file(
    '_rels/.rels',
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
      '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
  );
  zip.file(
    'word/document.xml',
    '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>' +
      paragraphs
        .map((p) => (typeof p === 'string' ? { text: p, style: null } : p))
        .map(({ text, style }) => `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ''}<w:r><w:t>${escape(text)}</w:t></w:r></w:p>`)
        .join('') +
      '</w:body></w:document>',
  );
  return zip.generateAsync({ type: 'nodebuffer' });
}

const xmlEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

async function zipOf(files: Record<string, string>): Promise<Buffer> {
  const { default: JSZip } = await import('jszip');
  const zip = new JSZip();
  for (const [name, content] of Object.entries(files)) zip.file(name, content);
  return zip.generateAsync({ type: 'nodebuffer' });
}

/** An XLSX with one sheet per entry (rows of cells): text cells shared, numbers inline as values. */
export function makeXlsx(sheets: Record<string, (string | number)[][]>): Promise<Buffer> {
  const shared: string[] = [];
  const files: Record<string, string> = {};
  const names = Object.keys(sheets);
  files['xl/workbook.xml'] = `<workbook><sheets>${names.map((name, i) => `<sheet name="${xmlEscape(name)}" sheetId="${i + 1}"/>`).join('')}</sheets></workbook>`;
  names.forEach((name, i) => {
    const rows = sheets[name].map(
      (row) =>
        `<row>${row
          .map((cell) => (typeof cell === 'number' ? `<c><v>${cell}</v></c>` : `<c t="s"><v>${shared.push(cell) - 1}</v></c>`))
          .join('')}</row>`,
    );
    files[`xl/worksheets/sheet${i + 1}.xml`] = `<worksheet><sheetData>${rows.join('')}</sheetData></worksheet>`;
  });
  files['xl/sharedStrings.xml'] = `<sst>${shared.map((text) => `<si><t>${xmlEscape(text)}</t></si>`).join('')}</sst>`;
  return zipOf(files);
}

/** A PPTX with one slide per entry, one paragraph per line. */
export function makePptx(slides: string[][]): Promise<Buffer> {
  const files: Record<string, string> = {};
  slides.forEach((lines, i) => {
    files[`ppt/slides/slide${i + 1}.xml`] =
      `<p:sld xmlns:a="a" xmlns:p="p"><p:cSld><p:spTree><p:sp><p:txBody>${lines.map((line) => `<a:p><a:r><a:t>${xmlEscape(line)}</a:t></a:r></a:p>`).join('')}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`;
  });
  return zipOf(files);
}

/** An ODT with a heading and paragraphs. */
export function makeOdt(heading: string, paragraphs: string[]): Promise<Buffer> {
  return zipOf({
    mimetype: 'application/vnd.oasis.opendocument.text',
    'content.xml': `<office:document-content xmlns:office="o" xmlns:text="t"><office:body><office:text><text:h text:outline-level="1">${xmlEscape(heading)}</text:h>${paragraphs
      .map((p) => `<text:p>${xmlEscape(p)}</text:p>`)
      .join('')}</office:text></office:body></office:document-content>`,
  });
}

/**
 * An EPUB: container.xml naming a package document in OEBPS/, whose spine
 * lists the chapters in reading order (on purpose not the manifest's order),
 * one XHTML page each with a heading and paragraphs.
 */
export function makeEpub(chapters: { title: string; paragraphs: string[] }[]): Promise<Buffer> {
  const ids = chapters.map((_, i) => `ch${i + 1}`);
  const files: Record<string, string> = {
    mimetype: 'application/epub+zip',
    'META-INF/container.xml':
      '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
    'OEBPS/content.opf': `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest>${[...ids]
      .reverse()
      .map((id) => `<item id="${id}" href="text/${id}.xhtml" media-type="application/xhtml+xml"/>`)
      .join('')}<item id="css" href="style.css" media-type="text/css"/></manifest><spine>${ids.map((id) => `<itemref idref="${id}"/>`).join('')}</spine></package>`,
    'OEBPS/style.css': 'p { margin: 0 }',
  };
  chapters.forEach((chapter, i) => {
    files[`OEBPS/text/${ids[i]}.xhtml`] =
      `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>${xmlEscape(chapter.title)}</title><style>p{}</style></head><body><h1>${xmlEscape(chapter.title)}</h1>${chapter.paragraphs
        .map((p) => `<p>${xmlEscape(p)}</p>`)
        .join('')}</body></html>`;
  });
  return zipOf(files);
}

/** A MIME mail (RFC 5322) with a text body, an HTML alternative or only HTML, and named attachments. */
export function makeEml(mail: { from: string; to: string; subject: string; text?: string; html?: string; attachments?: string[] }): Buffer {
  const boundary = 'parley-boundary';
  const parts: string[] = [];
  if (mail.text !== undefined) parts.push(`Content-Type: text/plain; charset=utf-8\r\n\r\n${mail.text}`);
  if (mail.html !== undefined) parts.push(`Content-Type: text/html; charset=utf-8\r\n\r\n${mail.html}`);
  for (const name of mail.attachments ?? []) {
    parts.push(`Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="${name}"\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.from(`bytes of ${name}`).toString('base64')}`);
  }
  const head = [`From: ${mail.from}`, `To: ${mail.to}`, `Subject: ${mail.subject}`, 'Date: Tue, 24 Nov 2026 10:00:00 +0000', 'MIME-Version: 1.0'];
  const body = parts.map((part) => `--${boundary}\r\n${part}\r\n`).join('') + `--${boundary}--\r\n`;
  return Buffer.from(`${head.join('\r\n')}\r\nContent-Type: multipart/mixed; boundary="${boundary}"\r\n\r\n${body}`);
}
