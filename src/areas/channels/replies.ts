import type { Core } from '../../core/context.js';
import { generate } from '../completions/generation.js';
import { DEFAULT_REASONING_TAGS } from '../completions/reasoning.js';
import type { CompletionsService } from '../models/completions.js';
import type { ModelsService } from '../models/service.js';
import type { Author, ChannelsService, PostedMessage } from './service.js';
import type { MessageRecord } from './store.js';

/** `<@M:model-id|Label>` as the frontend's mention input writes it (utils/channels.py). */
const MENTION = /<@([A-Z]):([^|>]+)(?:\|([^>]+))?>/g;
/** How often a streaming answer is written and sent to the room (the reference's throttle, ~6 a second). */
const STREAM_INTERVAL_MS = 150;
/** How many messages of the thread (or of the channel) the model reads. */
const HISTORY_LIMIT = 50;

/** The model ids a message mentions. */
export function mentionedModels(text: string): string[] {
  return [...text.matchAll(MENTION)].filter((m) => m[1] === 'M').map((m) => m[2]);
}

/** The text with each mention written as its label (or its id). */
export function withoutMentions(text: string): string {
  return text.replace(MENTION, (_all, _type: string, id: string, label?: string) => label || id);
}

/**
 * Models answering in channels (routers/channels.py model_response_handler): a
 * message mentioning `@model` (or replying to a model's message) gets an answer
 * from each model the poster may use, written by the chat pipeline's generation
 * step into a new message that grows as the model streams (`message:update`, ~6 a
 * second, then `meta.done`). CHANNEL_MODEL_RESPONSE_MODE says where the answer
 * goes for a top-level message: `thread` (a reply in its thread, the default) or
 * `channel` (a message in the channel). The model reads the thread (or the latest
 * messages of the channel) as one system prompt, as the reference.
 */
export class ChannelModelReplies {
  private readonly running = new Set<{ abort: AbortController; done: Promise<void> }>();

  constructor(
    private readonly core: Core,
    private readonly channels: ChannelsService,
    private readonly models: ModelsService,
    private readonly completions: CompletionsService,
  ) {
    channels.onPost((posted) => this.start(posted));
  }

  private start(posted: PostedMessage): void {
    const abort = new AbortController();
    const entry = {
      abort,
      done: this.answer(posted, abort.signal).catch((error: unknown) => this.core.log.warn({ err: error instanceof Error ? error.message : String(error) }, 'Channel model reply failed')),
    };
    this.running.add(entry);
    void entry.done.finally(() => this.running.delete(entry));
  }

  private async answer({ user, channel, message }: PostedMessage, signal: AbortSignal): Promise<void> {
    const wanted = new Set<string>();
    const replyTo = message.reply_to_id ? await this.channels.messageRecord(message.reply_to_id) : null;
    if (typeof replyTo?.meta?.model_id === 'string') wanted.add(replyTo.meta.model_id);
    for (const id of mentionedModels(message.content)) wanted.add(id);
    if (wanted.size === 0) return;
    const visible = new Map((await this.models.visible(user, { user })).map((entry) => [entry.id, entry]));
    const threaded = message.parent_id !== null || this.core.settings.get<string>('channels.model_response_mode') !== 'channel';
    const parentId = message.parent_id ?? (threaded ? message.id : null);
    for (const modelId of wanted) {
      const model = visible.get(modelId);
      if (!model || signal.aborted) continue;
      const name = typeof model.model.name === 'string' ? model.model.name : modelId;
      const history = parentId ? await this.channels.threadHistory(channel.id, parentId, HISTORY_LIMIT) : await this.channels.recentHistory(channel.id, HISTORY_LIMIT);
      const { message: reply } = await this.channels.postMessage(user, channel.id, { content: '', parent_id: parentId, data: {}, meta: { model_id: modelId, model_name: name } });
      await this.stream(channel.id, reply.id, {
        system: systemPrompt(name, history.map((h) => `${speakerOf(h.message, h.author)}: ${withoutMentions(h.message.content)}`)),
        user: `${user.name}: ${withoutMentions(message.content)}`,
        modelId,
        signal,
        userRecord: user,
      });
    }
  }

  /** Runs the generation and writes its text into the reply as it grows; a failure ends the reply with `Error: ...`. */
  private async stream(
    channelId: string,
    replyId: string,
    request: { system: string; user: string; modelId: string; signal: AbortSignal; userRecord: PostedMessage['user'] },
  ): Promise<void> {
    const channel = await this.channels.find(channelId);
    if (!channel) return;
    let text = '';
    let lastWrite = 0;
    let writing: Promise<unknown> = Promise.resolve();
    const result = await generate(
      this.completions,
      {
        user: request.userRecord,
        model: request.modelId,
        messages: [
          { role: 'system', content: request.system },
          { role: 'user', content: request.user },
        ],
        params: {},
        stream: true,
        includeUsage: false,
        tools: null,
        clientTools: null,
        maxToolRounds: 0,
        // A model's reasoning stays out of the channel's message.
        tags: { reasoningTags: DEFAULT_REASONING_TAGS, codeInterpreter: null },
        context: { user: request.userRecord, signal: request.signal, metadata: { chat_id: `channel:${channelId}`, message_id: replyId } },
        // No tools are offered, so no tool call is ever run.
        toolExtras: () => ({}) as never,
      },
      {
        progress: () => undefined,
        text: (delta) => {
          text += delta;
          const now = Date.now();
          if (now - lastWrite < STREAM_INTERVAL_MS) return;
          lastWrite = now;
          const snapshot = text;
          writing = writing.then(() => this.channels.streamInto(channel, replyId, snapshot, false));
        },
      },
    );
    await writing;
    await this.channels.streamInto(channel, replyId, result.error ? `Error: ${result.error}` : text, true);
  }

  /** Stops the answers still streaming (shutdown) and waits for them. */
  async close(): Promise<void> {
    for (const entry of this.running) entry.abort.abort();
    await Promise.all([...this.running].map((entry) => entry.done));
  }
}

function speakerOf(message: MessageRecord, author: Author | null): string {
  if (typeof message.meta?.model_id === 'string') return typeof message.meta.model_name === 'string' ? message.meta.model_name : message.meta.model_id;
  return author?.name ?? 'Unknown';
}

/** The reference's system prompt for a model in a thread. */
function systemPrompt(name: string, history: string[]): string {
  const base = `You are ${name}, participating in a threaded conversation. Be concise and conversational.`;
  if (history.length === 0) return base;
  return (
    `${base}Here's the thread history:\n\n\n${history.join('\n\n')}\n\n\n` +
    `Continue the conversation naturally as ${name}, addressing the most recent message while being aware of the full context.`
  );
}
