import { randomUUID } from 'node:crypto';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { HttpError } from '../../core/http/errors.js';
import type { Realtime } from '../../core/realtime/server.js';
import { contentText } from '../chats/history.js';
import type { ChatsService } from '../chats/service.js';
import type { ChatPipeline } from '../completions/service.js';
import type { FoldersService } from '../folders/service.js';
import { renderSystemPrompt } from '../models/params.js';
import type { ModelsService } from '../models/service.js';
import type { UsersService } from '../users/service.js';
import { type AutomationRecord, type AutomationRunRecord, AutomationStore } from './store.js';

/** The longest error kept in the run history (the reference's cut). */
const ERROR_MAX = 4000;
/** The longest answer kept in the run history; the whole answer is in the run's chat. */
const OUTPUT_MAX = 20_000;

export interface RunnerDeps {
  users: UsersService;
  access: AccessService;
  chats: ChatsService;
  folders: FoldersService;
  models: ModelsService;
  pipeline: ChatPipeline;
  realtime: Realtime;
}

/**
 * One run of an automation (utils/automations.py execute_automation): as its
 * owner, a new chat (in the automation's folder) titled with its name, the
 * prompt sent through the chat pipeline like the web client's turn (the owner's
 * model access, the model's tools, knowledge and memories), then the run in the
 * history with its status, duration, error and answer, the owner told on their
 * sockets (`automation:result`), and `automation.run_completed` or `run_failed`.
 */
export class AutomationRunner {
  constructor(
    private readonly core: Core,
    private readonly deps: RunnerDeps,
  ) {}

  async run(automation: AutomationRecord): Promise<AutomationRunRecord> {
    const started = this.core.clock.nowMs();
    const owner = await this.deps.users.byId(automation.user_id);
    let chatId: string | null = null;
    let outcome: { output: string | null; error: string | null };
    try {
      if (!owner) throw new Error('User not found');
      if ((owner.role !== 'user' && owner.role !== 'admin') || (!isAdmin(owner) && !(await this.deps.access.hasPermission(owner, 'features.automations')))) {
        throw new Error('Owner no longer permitted to run automations');
      }
      chatId = await this.newChat(owner, automation);
      outcome = await this.complete(owner, automation, chatId);
    } catch (error) {
      outcome = { output: null, error: errorText(error) };
    }
    const run: AutomationRunRecord = {
      id: randomUUID(),
      automation_id: automation.id,
      chat_id: chatId,
      status: outcome.error === null ? 'success' : 'error',
      error: outcome.error === null ? null : outcome.error.slice(0, ERROR_MAX),
      output: outcome.output === null ? null : outcome.output.slice(0, OUTPUT_MAX),
      duration_ms: this.core.clock.nowMs() - started,
      created_at: this.core.clock.nowMs() * 1_000_000,
    };
    const store = new AutomationStore(this.core.db);
    await store.insertRun(run);
    await store.update(automation.id, { last_run_at: run.created_at }, null);
    if (owner) {
      this.deps.realtime.emitToUser(owner.id, 'automation:result', { automation_id: automation.id, name: automation.name, chat_id: chatId, status: run.status, ...(run.error ? { error: run.error } : {}) });
    }
    await this.core.events.publish({
      event: run.status === 'success' ? 'automation.run_completed' : 'automation.run_failed',
      actor: owner,
      subjectId: automation.id,
      subjectType: 'automation',
      data: run.status === 'success' ? { name: automation.name, chat_id: chatId } : { name: automation.name, error: run.error },
    });
    return run;
  }

  /** The run's chat, in the automation's folder while the owner may still file there. */
  private async newChat(owner: UserRecord, automation: AutomationRecord): Promise<string> {
    const folderId = automation.folder_id && (await this.deps.folders.canFileIn(owner, automation.folder_id)) ? automation.folder_id : null;
    const chat = await this.deps.chats.create(owner, {
      chat: { title: automation.name, models: [automation.data.model_id], history: { currentId: null, messages: {} }, messages: [], meta: { automation_id: automation.id } },
      folder_id: folderId,
    });
    // The owner's open clients refresh their chat list (the reference's `chat:list`).
    this.deps.realtime.emitToUser(owner.id, 'events', { chat_id: chat.id, message_id: null, data: { type: 'chat:list' } });
    return chat.id;
  }

  /** One turn of the chat through the pipeline; the stored answer says how it went. */
  private async complete(owner: UserRecord, automation: AutomationRecord, chatId: string): Promise<{ output: string | null; error: string | null }> {
    const modelId = automation.data.model_id;
    const prompt = renderSystemPrompt(automation.data.prompt, owner);
    const userMessageId = randomUUID();
    const answerId = randomUUID();
    const meta = (await this.deps.models.byId(modelId))?.meta ?? {};
    const toolIds = Array.isArray(meta.toolIds) ? meta.toolIds.filter((id): id is string => typeof id === 'string') : [];
    const body = {
      model: modelId,
      messages: [{ role: 'user', content: prompt }],
      stream: false,
      chat_id: chatId,
      id: answerId,
      parent_id: null,
      user_message: { id: userMessageId, parentId: null, role: 'user', content: prompt, models: [modelId], timestamp: this.core.clock.now() },
      ...(toolIds.length > 0 ? { tool_ids: toolIds } : {}),
    };
    const controller = new AbortController();
    try {
      await this.deps.pipeline.complete(owner, body, { token: null, cookie: null, userAgent: 'Parley automation', signal: controller.signal });
    } catch (error) {
      // A failed answer is stored on the message too; a refusal before it (model not found) is only thrown.
      const stored = await this.deps.chats.messageOf(chatId, answerId);
      if (!stored?.error) throw error;
    }
    const answer = (await this.deps.chats.messageOf(chatId, answerId)) ?? {};
    const failure = answer.error as { content?: unknown } | undefined;
    if (failure) return { output: contentText(answer) || null, error: String(failure.content ?? 'The model failed') };
    return { output: contentText(answer), error: null };
  }
}

function errorText(error: unknown): string {
  if (error instanceof HttpError) return typeof error.detail === 'string' ? error.detail : error.message;
  return error instanceof Error ? error.message : String(error);
}
