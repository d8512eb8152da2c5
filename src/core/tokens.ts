import { getEncoding, type Tiktoken } from 'js-tiktoken';

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

let encoding: Tiktoken | null = null;

export function countTokens(text: string): number {
  if (!text) return 0;
  encoding ??= getEncoding('cl100k_base');
  return encoding.encode(text, [], []).length;
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
