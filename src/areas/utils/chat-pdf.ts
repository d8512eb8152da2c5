import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * A chat as a PDF (utils/pdf_generator.py): the title, then each message's role
 * (and model, for answers), its time and its text, as plain text (no Markdown
 * rendering, as the reference). pdfmake is loaded at the first PDF. The font is
 * Roboto, shipped with pdfmake: Latin, Greek and Cyrillic scripts with their
 * accents; characters outside it (CJK, emoji) have no glyph in the PDF.
 */
export interface ChatTranscript {
  title: string;
  messages: Record<string, unknown>[];
}

const fontDir = () => path.join(path.dirname(createRequire(import.meta.url).resolve('pdfmake/package.json')), 'fonts', 'Roboto');

type PdfMake = typeof import('pdfmake');
let loading: Promise<{ pdfmake: PdfMake; fonts: string[] }> | null = null;

/** pdfmake with Roboto, reading no file but the fonts and fetching no URL (a message cannot point it at either). */
function pdfLibrary(): Promise<{ pdfmake: PdfMake; fonts: string[] }> {
  loading ??= import('pdfmake')
    .then((module) => {
      const pdfmake = ((module as { default?: PdfMake }).default ?? module) as PdfMake;
      const dir = fontDir();
      const files = { normal: 'Roboto-Regular.ttf', bold: 'Roboto-Medium.ttf', italics: 'Roboto-Italic.ttf', bolditalics: 'Roboto-MediumItalic.ttf' };
      const fonts = Object.values(files).map((file) => path.join(dir, file));
      pdfmake.setFonts({ Roboto: Object.fromEntries(Object.entries(files).map(([style, file]) => [style, path.join(dir, file)])) });
      pdfmake.setUrlAccessPolicy(() => false);
      pdfmake.setLocalAccessPolicy((file: string) => fonts.includes(path.resolve(file)));
      return { pdfmake, fonts };
    })
    .catch((error: unknown) => {
      loading = null;
      throw error;
    });
  return loading;
}

/** The text of a message's content: a string, or the text parts of a list. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
      .filter(Boolean)
      .join('\n');
  }
  return '';
}

/** `YYYY-MM-DD, HH:MM:SS` (UTC) of an epoch in seconds, or nothing for a missing or impossible one. */
function timeText(timestamp: unknown): string {
  const seconds = Number(timestamp);
  if (!Number.isFinite(seconds) || seconds <= 0) return '';
  const date = new Date(seconds * 1000);
  if (Number.isNaN(date.getTime())) return '';
  return date.toISOString().replace('T', ', ').slice(0, 20);
}

const titleCase = (role: string) => role.replace(/\w\S*/g, (word) => word[0].toUpperCase() + word.slice(1).toLowerCase());

export async function chatPdf(chat: ChatTranscript): Promise<Buffer> {
  const { pdfmake } = await pdfLibrary();
  const content: unknown[] = [{ text: chat.title, style: 'title' }];
  for (const message of chat.messages) {
    const role = typeof message.role === 'string' ? message.role : 'user';
    const model = role === 'assistant' && typeof message.model === 'string' ? message.model : '';
    content.push(
      { text: [{ text: titleCase(role), bold: true }, model ? { text: `  ${model}`, fontSize: 9, color: '#555555' } : ''], margin: [0, 12, 0, 2] },
      ...(timeText(message.timestamp) ? [{ text: timeText(message.timestamp), fontSize: 9, color: '#555555', margin: [0, 0, 0, 4] }] : []),
      { text: contentText(message.content) },
    );
  }
  const document = pdfmake.createPdf({
    info: { title: chat.title, producer: 'Parley' },
    content,
    defaultStyle: { font: 'Roboto', fontSize: 11 },
    styles: { title: { fontSize: 16, bold: true, margin: [0, 0, 0, 8] } },
  } as never);
  return Buffer.from(await document.getBuffer());
}
