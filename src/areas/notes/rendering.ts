import * as Y from 'yjs';

/**
 * The note's text as the editor keeps it (y-prosemirror: the fragment `prosemirror`
 * of XML elements named after Tiptap's node types, text carrying marks as
 * attributes), rendered to the three forms the note stores in `data.content`:
 * ProseMirror JSON, HTML and markdown. The server renders the merged document, so
 * the saved note holds every editor's edits, not the last sender's view.
 */
export interface NoteContent {
  json: Record<string, unknown>;
  html: string;
  md: string;
}

/** The fragment y-prosemirror binds the editor to (Collaboration.ts in the frontend). */
export const EDITOR_FRAGMENT = 'prosemirror';

type Marks = Record<string, Record<string, unknown> | null>;
interface TextRun {
  text: string;
  marks: Marks;
}

const BLOCK_TAGS: Record<string, string> = {
  paragraph: 'p',
  blockquote: 'blockquote',
  bulletList: 'ul',
  orderedList: 'ol',
  listItem: 'li',
  taskList: 'ul',
  taskItem: 'li',
  table: 'table',
  tableRow: 'tr',
  tableCell: 'td',
  tableHeader: 'th',
};
const MARK_TAGS: Record<string, string> = { bold: 'strong', italic: 'em', strike: 's', underline: 'u', code: 'code' };

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function runsOf(text: Y.XmlText): TextRun[] {
  return (text.toDelta() as { insert: unknown; attributes?: Marks }[])
    .filter((op) => typeof op.insert === 'string')
    .map((op) => ({ text: op.insert as string, marks: op.attributes ?? {} }));
}

function toJsonNode(node: Y.XmlElement | Y.XmlText): Record<string, unknown>[] {
  if (node instanceof Y.XmlText) {
    return runsOf(node).map((run) => {
      const marks = Object.entries(run.marks).map(([type, attrs]) => (attrs && Object.keys(attrs).length > 0 ? { type, attrs } : { type }));
      return marks.length > 0 ? { type: 'text', text: run.text, marks } : { type: 'text', text: run.text };
    });
  }
  const attrs = node.getAttributes();
  const content = node.toArray().flatMap((child) => (child instanceof Y.XmlElement || child instanceof Y.XmlText ? toJsonNode(child) : []));
  return [{ type: node.nodeName, ...(Object.keys(attrs).length > 0 ? { attrs } : {}), ...(content.length > 0 ? { content } : {}) }];
}

function inlineHtml(runs: TextRun[]): string {
  return runs
    .map(({ text, marks }) => {
      let html = escapeHtml(text);
      for (const [mark, attrs] of Object.entries(marks)) {
        if (mark === 'link') html = `<a href="${escapeHtml(String(attrs?.href ?? ''))}">${html}</a>`;
        else if (MARK_TAGS[mark]) html = `<${MARK_TAGS[mark]}>${html}</${MARK_TAGS[mark]}>`;
      }
      return html;
    })
    .join('');
}

function inlineMd(runs: TextRun[]): string {
  return runs
    .map(({ text, marks }) => {
      let md = text;
      if ('code' in marks) md = `\`${md}\``;
      if ('bold' in marks) md = `**${md}**`;
      if ('italic' in marks) md = `*${md}*`;
      if ('strike' in marks) md = `~~${md}~~`;
      if ('link' in marks) md = `[${md}](${String(marks.link?.href ?? '')})`;
      return md;
    })
    .join('');
}

function children(node: Y.XmlElement | Y.XmlFragment): (Y.XmlElement | Y.XmlText)[] {
  return node.toArray().filter((child): child is Y.XmlElement | Y.XmlText => child instanceof Y.XmlElement || child instanceof Y.XmlText);
}

function toHtml(node: Y.XmlElement | Y.XmlText): string {
  if (node instanceof Y.XmlText) return inlineHtml(runsOf(node));
  const inner = children(node).map(toHtml).join('');
  const name = node.nodeName;
  if (name === 'heading') {
    const level = Math.min(6, Math.max(1, Number(node.getAttribute('level')) || 1));
    return `<h${level}>${inner}</h${level}>`;
  }
  if (name === 'codeBlock') return `<pre><code>${inner}</code></pre>`;
  if (name === 'horizontalRule') return '<hr>';
  if (name === 'hardBreak') return '<br>';
  if (name === 'image') return `<img src="${escapeHtml(String(node.getAttribute('src') ?? ''))}">`;
  const tag = BLOCK_TAGS[name] ?? 'div';
  return `<${tag}>${inner}</${tag}>`;
}

function toMd(node: Y.XmlElement | Y.XmlText, prefix = ''): string {
  if (node instanceof Y.XmlText) return inlineMd(runsOf(node));
  const inline = () => children(node).map((child) => toMd(child, prefix)).join('');
  switch (node.nodeName) {
    case 'heading':
      return `${'#'.repeat(Math.min(6, Math.max(1, Number(node.getAttribute('level')) || 1)))} ${inline()}`;
    case 'codeBlock':
      return `\`\`\`${String(node.getAttribute('language') ?? '')}\n${children(node).map((c) => (c instanceof Y.XmlText ? c.toString().replace(/<[^>]*>/g, '') : '')).join('')}\n\`\`\``;
    case 'blockquote':
      return blocksMd(node)
        .split('\n')
        .map((line) => `> ${line}`)
        .join('\n');
    case 'bulletList':
    case 'taskList':
    case 'orderedList':
      return children(node)
        .map((item, index) => {
          const checked = item instanceof Y.XmlElement && item.nodeName === 'taskItem' ? (item.getAttribute('checked') ? '[x] ' : '[ ] ') : '';
          const marker = node.nodeName === 'orderedList' ? `${index + 1}. ` : '- ';
          const body = item instanceof Y.XmlElement ? blocksMd(item) : toMd(item);
          return `${marker}${checked}${body.split('\n').join(`\n${' '.repeat(marker.length)}`)}`;
        })
        .join('\n');
    case 'horizontalRule':
      return '---';
    case 'hardBreak':
      return '\n';
    case 'image':
      return `![](${String(node.getAttribute('src') ?? '')})`;
    default:
      return inline();
  }
}

function blocksMd(node: Y.XmlElement | Y.XmlFragment): string {
  return children(node)
    .map((child) => toMd(child))
    .join(node instanceof Y.XmlFragment ? '\n\n' : '\n');
}

/** The note's content from its document. */
export function renderNoteDocument(doc: Y.Doc): NoteContent {
  const fragment = doc.getXmlFragment(EDITOR_FRAGMENT);
  return {
    json: { type: 'doc', content: children(fragment).flatMap(toJsonNode) },
    html: children(fragment).map(toHtml).join(''),
    md: blocksMd(fragment),
  };
}
