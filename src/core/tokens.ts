import { createRequire } from 'node:module';
import type { Tiktoken } from 'js-tiktoken/lite';

/** The tiktoken encodings js-tiktoken ships ranks for. */
const ENCODINGS = new Set(['cl100k_base', 'o200k_base', 'p50k_base', 'p50k_edit', 'r50k_base', 'gpt2']);
const requireAtFirstUse = createRequire(import.meta.url);
const encodings = new Map<string, Tiktoken>();

/**
 * A tiktoken encoding by name. Its ranks (megabytes of text, tens of megabytes once parsed) are
 * read at its first use, synchronously, not at start: most instances never estimate a token count.
 */
export function encodingOf(name: string): Tiktoken {
  let encoding = encodings.get(name);
  if (!encoding) {
    if (!ENCODINGS.has(name)) throw new Error(`Unknown tiktoken encoding: ${name}`);
    const { Tiktoken } = requireAtFirstUse('js-tiktoken/lite') as typeof import('js-tiktoken/lite');
    encoding = new Tiktoken(requireAtFirstUse(`js-tiktoken/ranks/${name}`) as ConstructorParameters<typeof Tiktoken>[0]);
    encodings.set(name, encoding);
  }
  return encoding;
}

/**
 * Token counts of an answer: the provider's `usage` when it reported one (under
 * OpenAI's, Anthropic's or Ollama's names, as normalize_usage reads them), else
 * an estimate with the cl100k_base tokenizer, marked as such.
 */
export interface TokenCounts {
  input: number;
  output: number;
  estimated: boolean;
}

export function countTokens(text: string): number {
  if (!text) return 0;
  return encodingOf('cl100k_base').encode(text, [], []).length;
}

const count = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : null);

/** The counts a provider reported, or null when `usage` names none. */
export function reportedTokens(usage: unknown): TokenCounts | null {
  if (usage === null || typeof usage !== 'object' || Array.isArray(usage)) return null;
  const u = usage as Record<string, unknown>;
  const input = count(u.input_tokens) ?? count(u.prompt_tokens) ?? count(u.prompt_eval_count);
  const output = count(u.output_tokens) ?? count(u.completion_tokens) ?? count(u.eval_count);
  if (input === null && output === null) return null;
  return { input: input ?? 0, output: output ?? 0, estimated: false };
}
