import { type Json, isObject } from '../chats/history.js';
import { type OutputItem, appendText, openText, outputId } from './output.js';

/**
 * A model's reasoning kept out of its visible answer (utils/middleware.py):
 * upstream `reasoning_content` / `reasoning` / `thinking` deltas, and text the
 * model wraps in reasoning tags (`<think>…</think>`, …), become `reasoning`
 * output items with their duration; `<code_interpreter>` blocks (when the
 * code interpreter is on) become `open_webui:code_interpreter` items. Tags may
 * start anywhere in the text and arrive split across stream chunks: text that
 * could be the beginning of a tag is held back until the next chunk settles it.
 */
export interface TagPair {
  start: string;
  end: string;
}

/** The reference's DEFAULT_REASONING_TAGS. */
export const DEFAULT_REASONING_TAGS: TagPair[] = [
  ['<think>', '</think>'],
  ['<thinking>', '</thinking>'],
  ['<reason>', '</reason>'],
  ['<reasoning>', '</reasoning>'],
  ['<thought>', '</thought>'],
  ['<Thought>', '</Thought>'],
  ['<|begin_of_thought|>', '<|end_of_thought|>'],
  ['◁think▷', '◁/think▷'],
].map(([start, end]) => ({ start, end }));

const SOLUTION_TAGS: TagPair[] = [{ start: '<|begin_of_solution|>', end: '<|end_of_solution|>' }];
export const CODE_INTERPRETER_TAGS: TagPair[] = [{ start: '<code_interpreter>', end: '</code_interpreter>' }];

/** Attributes of a start tag wait at most this long for its `>` before the text counts as text. */
const MAX_HELD = 256;

type BlockKind = 'reasoning' | 'solution' | 'code_interpreter';

interface Matcher {
  kind: BlockKind;
  tags: TagPair;
  /** `<name attr="…">` matches `<name>` tags; other tags match literally. */
  pattern: RegExp;
}

interface OpenBlock {
  kind: BlockKind;
  end: string;
  item: OutputItem | null;
  text: string;
}

/** `params.reasoning_tags`: false turns detection off, a `[start, end]` pair replaces the defaults. */
export function reasoningTags(params: Json): TagPair[] {
  const value = params.reasoning_tags;
  if (value === false) return [];
  if (Array.isArray(value) && value.length === 2 && value.every((t) => typeof t === 'string' && t)) return [{ start: value[0], end: value[1] }];
  return DEFAULT_REASONING_TAGS;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function matcher(kind: BlockKind, tags: TagPair): Matcher {
  const { start } = tags;
  const named = start.startsWith('<') && start.endsWith('>') && !start.startsWith('<|');
  return { kind, tags, pattern: new RegExp(named ? `<${escape(start.slice(1, -1))}(\\s[^>]*)?>` : escape(start)) };
}

function attributesOf(raw: string | undefined): Json {
  const attributes: Json = {};
  for (const [, key, value] of (raw ?? '').matchAll(/(\w+)\s*=\s*"([^"]+)"/g)) attributes[key] = value;
  return attributes;
}

const now = () => Date.now() / 1000;

/** What one piece of streamed content added: visible text and reasoning (for API clients' chunks). */
export interface TaggedDelta {
  text: string;
  reasoning: string;
}

export class TaggedOutput {
  private readonly matchers: Matcher[];
  private held = '';
  private block: OpenBlock | null = null;
  /** A `<code_interpreter>` block was closed: the model's turn is over until its code has run. */
  codeReady: OutputItem | null = null;

  constructor(
    readonly output: OutputItem[],
    options: { reasoningTags: TagPair[]; codeInterpreter: boolean },
  ) {
    this.matchers = [
      ...options.reasoningTags.map((t) => matcher('reasoning', t)),
      ...(options.reasoningTags.length > 0 ? SOLUTION_TAGS.map((t) => matcher('solution', t)) : []),
      ...(options.codeInterpreter ? CODE_INTERPRETER_TAGS.map((t) => matcher('code_interpreter', t)) : []),
    ];
  }

  /** Upstream reasoning deltas (`reasoning_content`, `reasoning`, Ollama's `thinking`). */
  reasoning(text: string): void {
    const last = this.output.at(-1);
    if (last?.type === 'reasoning' && last.status === 'in_progress' && isObject(last.attributes) && last.attributes.type === 'reasoning_content') {
      const part = (last.content as Json[])[0];
      part.text = `${String(part.text ?? '')}${text}`;
      return;
    }
    this.output.push(reasoningItem('<think>', '</think>', { type: 'reasoning_content' }, text));
  }

  /** Answer text: routed to the message, a reasoning item or a code block. Nothing is taken after a closed code block. */
  content(delta: string): TaggedDelta {
    const added: TaggedDelta = { text: '', reasoning: '' };
    if (this.codeReady) return added;
    this.closeUpstreamReasoning();
    let buffer = this.held + delta;
    this.held = '';
    while (buffer) {
      if (this.block) {
        const index = buffer.indexOf(this.block.end);
        if (index < 0) {
          const keep = partialSuffix(buffer, (tail) => this.block!.end.startsWith(tail));
          this.addToBlock(buffer.slice(0, buffer.length - keep.length), added);
          this.held = keep;
          return added;
        }
        this.addToBlock(buffer.slice(0, index), added);
        buffer = buffer.slice(index + this.block.end.length);
        this.closeBlock();
        if (this.codeReady) return added;
        continue;
      }
      const found = this.firstStart(buffer);
      if (!found) {
        const keep = partialSuffix(buffer, (tail) => this.couldStart(tail));
        this.addText(buffer.slice(0, buffer.length - keep.length), added);
        this.held = keep;
        return added;
      }
      this.addText(buffer.slice(0, found.index), added);
      this.openBlock(found.matcher, attributesOf(found.attributes));
      buffer = buffer.slice(found.index + found.length);
    }
    return added;
  }

  /** The end of the stream: held text is text after all, an unclosed block is closed as it stands. */
  finish(): TaggedDelta {
    const added: TaggedDelta = { text: '', reasoning: '' };
    const held = this.held;
    this.held = '';
    if (held && !this.codeReady) {
      if (this.block) this.addToBlock(held, added);
      else this.addText(held, added);
    }
    if (this.block) this.closeBlock();
    this.closeUpstreamReasoning();
    return added;
  }

  private firstStart(buffer: string): { matcher: Matcher; index: number; length: number; attributes?: string } | null {
    let best: { matcher: Matcher; index: number; length: number; attributes?: string } | null = null;
    for (const m of this.matchers) {
      const match = m.pattern.exec(buffer);
      if (match && (!best || match.index < best.index)) best = { matcher: m, index: match.index, length: match[0].length, attributes: match[1] };
    }
    return best;
  }

  /** Whether `tail` (from a `<` or `◁` to the end of the text) may still become a start tag. */
  private couldStart(tail: string): boolean {
    return this.matchers.some(({ tags: { start } }) => {
      if (start.startsWith(tail)) return true;
      const name = start.slice(0, -1);
      return start.endsWith('>') && tail.startsWith(name) && /\s/.test(tail.charAt(name.length)) && !tail.includes('>');
    });
  }

  private addText(text: string, added: TaggedDelta): void {
    if (!text) return;
    appendText(this.output, text);
    added.text += text;
  }

  private openBlock(m: Matcher, attributes: Json): void {
    // Whitespace before the tag is no message of its own.
    const open = openText(this.output);
    if (open && !String(open.part.text ?? '').trim()) this.output.pop();
    const { start, end } = m.tags;
    let item: OutputItem | null = null;
    if (m.kind === 'reasoning') item = reasoningItem(start, end, attributes, '');
    else if (m.kind === 'code_interpreter') {
      item = {
        type: 'open_webui:code_interpreter',
        id: outputId('ci'),
        status: 'in_progress',
        start_tag: start,
        end_tag: end,
        attributes,
        lang: typeof attributes.lang === 'string' ? attributes.lang : 'python',
        code: '',
        output: null,
        started_at: now(),
      };
    }
    if (item) this.output.push(item);
    this.block = { kind: m.kind, end, item, text: '' };
  }

  private addToBlock(text: string, added: TaggedDelta): void {
    const block = this.block!;
    if (!text) return;
    if (block.kind === 'solution') return this.addText(text, added);
    block.text += text;
    if (block.kind === 'reasoning') {
      // Leading whitespace after the tag is not shown while it streams.
      (block.item!.content as Json[])[0].text = block.text.trimStart();
      added.reasoning += text;
    } else block.item!.code = block.text;
  }

  private closeBlock(): void {
    const block = this.block!;
    this.block = null;
    if (!block.item) return;
    const item = block.item;
    const text = block.text.trim();
    if (!text) {
      this.output.splice(this.output.indexOf(item), 1);
      return;
    }
    item.ended_at = now();
    item.duration = Math.round(Number(item.ended_at) - Number(item.started_at));
    if (block.kind === 'reasoning') {
      item.content = [{ type: 'output_text', text }];
      item.status = 'completed';
    } else {
      item.code = text;
      this.codeReady = item;
    }
  }

  private closeUpstreamReasoning(): void {
    const last = this.output.at(-1);
    if (last?.type === 'reasoning' && last.status === 'in_progress' && isObject(last.attributes) && last.attributes.type === 'reasoning_content') {
      last.status = 'completed';
      last.ended_at = now();
      last.duration = Math.round(Number(last.ended_at) - Number(last.started_at));
    }
  }
}

function reasoningItem(start: string, end: string, attributes: Json, text: string): OutputItem {
  return {
    type: 'reasoning',
    id: outputId('r'),
    status: 'in_progress',
    start_tag: start,
    end_tag: end,
    attributes,
    content: [{ type: 'output_text', text }],
    summary: null,
    started_at: now(),
  };
}

/** The longest end of `text`, starting at a `<` or `◁` in its last MAX_HELD characters, that `could` still complete. */
function partialSuffix(text: string, could: (tail: string) => boolean): string {
  for (let i = Math.max(0, text.length - MAX_HELD); i < text.length; i++) {
    const c = text[i];
    if ((c === '<' || c === '◁') && could(text.slice(i))) return text.slice(i);
  }
  return '';
}
