import type { Realtime } from '../../core/realtime/server.js';
import type { ChatsService } from '../chats/service.js';
import { MessageEvents } from '../chats/message-events.js';
import type { CompletionsService } from '../models/completions.js';
import type { ModelsService } from '../models/service.js';
import type { EventsService } from '../events/service.js';
import { EventFunctions } from './events.js';
import { PipeModels } from './pipes.js';
import type { FunctionsService } from './service.js';

/**
 * Makes pipe functions models: listed in the merged model list and answered
 * by the completions service like a provider's, their events reaching the chat.
 */
export function connectPipes(deps: {
  functions: FunctionsService;
  models: ModelsService;
  completions: CompletionsService;
  realtime: Realtime;
  chats: ChatsService;
  log: { warn(details: unknown, message: string): void };
}): PipeModels {
  const { functions, models, completions, realtime, chats, log } = deps;
  const pipes = new PipeModels(
    functions,
    (user, metadata) => {
      const [chatId, messageId, sessionId] = [String(metadata.chat_id), String(metadata.message_id), String(metadata.session_id)];
      const events = new MessageEvents(realtime, chats, user.id, chatId, messageId);
      return {
        emitter: (event) => events.fromTool(event),
        call: (event) => realtime.callSession(sessionId, user.id, 'events', { chat_id: chatId, message_id: messageId, data: event }),
      };
    },
    log,
  );
  models.setPipeSource(pipes);
  completions.setPipeProvider(pipes);
  return pipes;
}

/** Makes active event functions receivers of the event bus, beside the webhooks (events.ts). */
export async function connectEventFunctions(functions: FunctionsService, events: EventsService): Promise<EventFunctions> {
  const receivers = new EventFunctions(functions);
  await receivers.refresh();
  events.connectLocalReceivers(receivers);
  return receivers;
}
