import { convert, type HtmlToTextOptions } from 'html-to-text';

/** Entities of XML text (office.ts): the named ones XML and pages use most, and numeric ones. */
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, code: string) => {
    if (code[0] === '#') {
      const point = code[1].toLowerCase() === 'x' ? Number.parseInt(code.slice(2), 16) : Number.parseInt(code.slice(1), 10);
      return point > 0 && point <= 0x10ffff ? String.fromCodePoint(point) : '';
    }
    return ENTITIES[code.toLowerCase()] ?? entity;
  });
}

/** A block on its own line, without the blank lines and capitals html-to-text gives headings by default. */
const line = (selector: string) => ({ selector, options: { uppercase: false, leadingLineBreaks: 1, trailingLineBreaks: 1 } });

/** Text, not a rendering: no wrapping, no link targets or images, nothing of scripts, styles or templates. */
const TEXT_OPTIONS: HtmlToTextOptions = {
  wordwrap: false,
  selectors: [
    { selector: 'a', options: { ignoreHref: true } },
    ...['img', 'noscript', 'template', 'script', 'style'].map((selector) => ({ selector, format: 'skip' })),
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p'].map(line),
    { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
  ],
};

/** The visible text of an HTML page or XHTML document (html-to-text): blocks a line each, entities decoded. */
export function htmlToText(html: string): string {
  return convert(html, TEXT_OPTIONS).trim();
}
