import type { SettingsStore } from '../../config/settings.js';
import type { UserRecord } from '../../core/auth/user.js';
import { HttpError, badRequest } from '../../core/http/errors.js';
import type { CallContext } from '../../core/upstream/headers.js';
import type { CompletionsService } from '../models/completions.js';
import { renderSystemPrompt } from '../models/params.js';
import type { ModelsService } from '../models/service.js';
import { type Json, type Message, contentText, currentMessageIdOf, isObject, messageList, messagesOf } from './history.js';
import {
  COMPACTION_ENABLE,
  COMPACTION_MODEL,
  COMPACTION_PROMPT_TEMPLATE,
  COMPACTION_RETENTION_PERCENTAGE,
  COMPACTION_TOKEN_CAP,
  COMPACTION_TOKEN_THRESHOLD,
} from './settings.js';
import { replaceMessagesVariable, replacePromptVariable } from './templates.js';

/**
 * Context compaction (utils/context_compaction.py): when a conversation grows
 * past a token threshold, the older part of the branch is summarised by a task
 * model and the summary is stored on a message (`contextSummary`), from which
 * point the pipeline sends the summary instead of the older messages.
 */
export const DEFAULT_COMPACTION_PROMPT = `### Task:
Summarize the conversation history that will be compacted out of the active chat context.

### Instructions:
- Preserve key decisions, user preferences, and constraints.
- Preserve files, artifacts, tool results, and code changes that matter going forward.
- Preserve the current task state, unresolved questions, and next steps.
- Be factual and specific. Do not invent details.
- Keep the summary concise, but complete enough for the assistant to continue without the removed messages.

### Previous Summary:
{{PREVIOUS_SUMMARY}}

### Messages Being Compacted:
{{COMPACTED_MESSAGES}}

### Recent Messages Kept In Context:
{{RECENT_MESSAGES}}`;

export interface CompactionConfig {
  enable: boolean;
  tokenThreshold: number;
  tokenCap: number;
  retentionPercentage: number;
  promptTemplate: string;
  model: string;
}

export interface ContextUsage {
  tokens: number;
  estimated_tokens: number;
  threshold: number;
  percent: number;
  source: 'estimated';
}

const positiveInt = (value: unknown): number | null => {
  const n = typeof value === 'number' ? Math.trunc(value) : Number.parseInt(String(value ?? ''), 10);
  return Number.isFinite(n) && n > 0 ? n : null;
};

export const clampRetention = (value: unknown): number => Math.min(50, Math.max(10, positiveInt(value) ?? 40));

export function compactionConfig(settings: SettingsStore): CompactionConfig {
  const tokenThreshold = positiveInt(settings.get(COMPACTION_TOKEN_THRESHOLD)) ?? 80000;
  return {
    enable: Boolean(settings.get(COMPACTION_ENABLE)),
    tokenThreshold,
    tokenCap: positiveInt(settings.get(COMPACTION_TOKEN_CAP)) ?? tokenThreshold,
    retentionPercentage: clampRetention(settings.get(COMPACTION_RETENTION_PERCENTAGE)),
    promptTemplate: settings.get<string | null>(COMPACTION_PROMPT_TEMPLATE) ?? '',
    model: settings.get<string | null>(COMPACTION_MODEL) ?? '',
  };
}

/** A chat-level `params.compact_token_threshold` lowers the threshold, never above the cap. */
export function tokenThreshold(config: CompactionConfig, params: Json | undefined): number {
  return Math.min(positiveInt(params?.compact_token_threshold) ?? config.tokenThreshold, config.tokenCap);
}

/** The messages from the last stored summary on, and that summary (_apply_latest_summary_checkpoint). */
export function fromLatestSummary(messages: Message[]): { messages: Message[]; summary: string | null } {
  let index = -1;
  let summary: string | null = null;
  messages.forEach((message, i) => {
    const value = message.contextSummary ?? message.context_summary;
    if (typeof value === 'string' && value.trim()) {
      index = i;
      summary = value;
    }
  });
  return index < 0 ? { messages, summary: null } : { messages: messages.slice(index), summary };
}

function estimateTokens(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text ? Math.max(1, Math.floor(text.length / 4)) : 0;
}

function estimateMessagesTokens(messages: Message[]): number {
  let total = 0;
  for (const message of messages) {
    total += 4;
    if (Array.isArray(message.content)) {
      for (const item of message.content) {
        if (!isObject(item)) total += estimateTokens(item);
        else if (item.type === 'image' || item.type === 'image_url') total += 1000;
        else total += estimateTokens(item.text || item.content || item);
      }
    } else total += estimateTokens(message.content);
    total += estimateTokens(message.output) + estimateTokens(message.tool_calls) + estimateTokens(message.files);
  }
  return total;
}

/** Tokens a provider reported for the message (prompt + completion + cache), or 0. */
function reportedTokens(message: Message): number {
  const usage = message.usage ?? (isObject(message.info) ? message.info.usage : undefined);
  if (!isObject(usage)) return 0;
  const first = (...keys: string[]) => Number(keys.map((k) => usage[k]).find((v) => v) ?? 0) || 0;
  return first('prompt_tokens', 'input_tokens', 'prompt_eval_count', 'prompt_n') + first('completion_tokens', 'output_tokens', 'eval_count', 'predicted_n') + (Number(usage.cache_n) || 0);
}

/** The newest reported usage plus estimates for later messages; otherwise estimates throughout. */
function contextTokens(messages: Message[], summary: string | null, systemPrompt = ''): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const tokens = reportedTokens(messages[i]);
    if (tokens) return tokens + estimateMessagesTokens(messages.slice(i + 1));
  }
  return estimateTokens(systemPrompt) + estimateTokens(summary ?? '') + estimateMessagesTokens(messages);
}

/** The current branch of a chat, root first. */
export function currentBranch(chat: { chat: Json; current_message_id: string | null }): Message[] {
  return messageList(messagesOf(chat.chat), chat.current_message_id || currentMessageIdOf(chat.chat));
}

/** How full the model's context is (`context_usage` of `GET /chats/{id}`); null while compaction is off. */
export function contextUsage(config: CompactionConfig, chat: { chat: Json; current_message_id: string | null }, modelId?: string): ContextUsage | null {
  if (!config.enable) return null;
  const branch = currentBranch(chat);
  if (branch.length === 0) return null;
  const params = { ...(isObject(chat.chat.params) ? chat.chat.params : {}), ...(modelId ? { model: modelId } : {}) };
  const threshold = tokenThreshold(config, params);
  const { messages, summary } = fromLatestSummary(branch);
  const tokens = contextTokens(messages, summary);
  return { tokens, estimated_tokens: tokens, threshold, percent: threshold > 0 ? Math.round((tokens / threshold) * 100) : 0, source: 'estimated' };
}

function answerText(body: unknown): string {
  const response = Array.isArray(body) && body.length === 1 ? body[0] : body;
  if (!isObject(response)) return '';
  const choices = Array.isArray(response.choices) ? response.choices : [];
  if (choices.length > 0) {
    const message = isObject(choices[0]) && isObject(choices[0].message) ? choices[0].message : {};
    return String(message.content || message.reasoning_content || '');
  }
  const parts: string[] = [];
  for (const item of Array.isArray(response.output) ? response.output : []) {
    for (const content of isObject(item) && Array.isArray(item.content) ? item.content : []) {
      if (isObject(content)) parts.push(String(content.text || content.content || ''));
    }
  }
  return parts.filter(Boolean).join('\n');
}

/** Writes compaction summaries through a task model (_generate_summary). */
export class ChatSummarizer {
  constructor(
    private readonly settings: SettingsStore,
    private readonly models: ModelsService,
    private readonly completions: CompletionsService,
  ) {}

  /**
   * The model that writes the summary: the configured compaction model, else the
   * task model for the chat's model (TASK_MODEL for local models,
   * TASK_MODEL_EXTERNAL otherwise), else the chat's model itself.
   */
  private async taskModel(user: UserRecord, modelId: string, context: CallContext): Promise<Json> {
    const models = new Map((await this.models.visible(user, context)).map((entry) => [entry.id, entry.model]));
    const config = compactionConfig(this.settings);
    let taskModelId = modelId;
    if (config.model && models.has(config.model)) taskModelId = config.model;
    else {
      const local = models.get(modelId)?.connection_type === 'local';
      const configured = this.settings.get<string | undefined>(local ? 'task.model.default' : 'task.model.external');
      if (configured && models.has(configured)) taskModelId = configured;
    }
    const model = models.get(taskModelId);
    if (!model) throw badRequest('No available model for context compaction');
    return model;
  }

  async summarize(
    user: UserRecord,
    modelId: string,
    parts: { compacted: Message[]; recent: Message[]; previous: string | null },
    context: CallContext,
  ): Promise<string> {
    const model = await this.taskModel(user, modelId, context);
    const config = compactionConfig(this.settings);
    const all = [...parts.compacted, ...parts.recent];
    const lastUser = [...all].reverse().find((m) => m.role === 'user');
    let prompt = config.promptTemplate.trim() || DEFAULT_COMPACTION_PROMPT;
    prompt = replacePromptVariable(prompt, lastUser ? contentText(lastUser) : '');
    prompt = replaceMessagesVariable(prompt, all);
    prompt = replaceMessagesVariable(prompt, parts.compacted, 'COMPACTED_MESSAGES');
    prompt = replaceMessagesVariable(prompt, parts.recent, 'RECENT_MESSAGES');
    prompt = prompt.split('{{PREVIOUS_SUMMARY}}').join(parts.previous ?? '');
    prompt = renderSystemPrompt(prompt, user);

    const info = isObject(model.info) ? model.info : {};
    const maxTokens = (isObject(info.params) ? info.params.max_tokens : undefined) ?? 1000;
    const payload: Json = {
      model: model.id,
      messages: [{ role: 'user', content: prompt }],
      stream: false,
      [model.owned_by === 'ollama' ? 'max_tokens' : 'max_completion_tokens']: maxTokens,
      metadata: { task: 'context_compaction' },
    };
    const answer = await this.completions.complete(user, payload, context);
    if (answer.kind !== 'json') throw new HttpError(502, 'Unexpected streamed answer from the task model');
    if (answer.status >= 400) {
      const detail = isObject(answer.body) && answer.body.detail !== undefined ? answer.body.detail : answer.body;
      throw new HttpError(answer.status, detail);
    }
    const summary = answerText(answer.body).trim();
    if (summary) return summary;
    // An empty answer still leaves a usable summary: the previous one and the compacted messages, cut short.
    const lines = parts.previous ? [parts.previous] : [];
    for (const message of parts.compacted) {
      const text = contentText(message);
      if (text) lines.push(`- ${String(message.role ?? 'unknown')}: ${text.slice(0, 500)}`);
    }
    return lines.join('\n').slice(0, 4000);
  }
}
