/**
 * A PDF with one page of text per entry (Helvetica, the offsets of its xref
 * computed; `locked`: password-protected; `title`: the document info's Title),
 * for the bench's extraction figure and the tests (test/helpers/documents.ts).
 * A page is a line of 12-point text, or lines each in its own size (headings).
 * @param {(string | { text: string, size: number }[])[]} pages
 * @param {{ locked?: boolean, title?: string }} [options]
 * @returns {Buffer}
 */
export function makePdf(pages, options = {}) {
  const objects = [];
  const pageIds = pages.map((_, i) => 4 + i * 2);
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  const escape = (text) => text.replace(/[\\()]/g, (c) => `\\${c}`);
  pages.forEach((text, i) => {
    const lines = typeof text === 'string' ? [{ text, size: 12 }] : text;
    const stream = lines.map((line, n) => `BT /F1 ${line.size} Tf 72 ${720 - n * 24} Td (${escape(line.text)}) Tj ET`).join('\n');
    objects[4 + i * 2] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`;
    objects[5 + i * 2] = `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`;
  });
  const info = options.title === undefined ? '' : ` /Info ${objects.length} 0 R`;
  if (info) objects.push(`<< /Title (${escape(options.title)}) >>`);
  let pdf = '%PDF-1.4\n';
  const offsets = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = pdf.length;
    pdf += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) pdf += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  // Locked: a standard security handler whose user password is not the empty one (its /U matches no key).
  const lock = options.locked
    ? ` /Encrypt << /Filter /Standard /V 1 /R 2 /O <${'11'.repeat(32)}> /U <${'22'.repeat(32)}> /P -4 >> /ID [<${'33'.repeat(16)}> <${'33'.repeat(16)}>]`
    : '';
  pdf += `trailer\n<< /Size ${objects.length} /Root 1 0 R${info}${lock} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}
