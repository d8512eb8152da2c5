import type { UserRecord } from '../../core/auth/user.js';
import type { CallContext } from '../../core/upstream/headers.js';
import { type Json, type Message, contentText, isObject } from '../chats/history.js';
import type { TasksService } from '../tasks/service.js';
import type { WebService } from '../web/service.js';

/**
 * `features.web_search` of a chat request (middleware.py chat_web_search_handler):
 * the task model writes search queries (ENABLE_SEARCH_QUERY_GENERATION; the user's
 * message when it is off or fails), the web is searched and the pages loaded and
 * indexed, and the request's `files` get one `web_search` entry (the collection, or
 * the pages themselves when embedding is bypassed) that the attachment step turns
 * into context and `sources`. Status events tell the frontend each step ("Searching
 * the web", the queries, "Searched N sites"); a failure is a status, never the answer's end.
 *
 * The reference runs this only with `function_calling: legacy` and otherwise hands
 * the model its built-in search tool. Parley skips it where the answer has that tool
 * (builtin-tools.ts: a web client's answer in native function calling) and runs it
 * for every other request that asks for the feature (API clients included).
 */

export interface WebSearchStep {
  user: UserRecord;
  modelId: string;
  messages: Message[];
  chatId: string;
  context: CallContext;
  /** The request's `files`, to which the search's entry is added. */
  files: Json[];
  /** The message's status emitter (null without a message to show them on). */
  status: ((data: Json) => Promise<void>) | null;
}

export async function addWebSearch(deps: { tasks: TasksService; web: WebService }, step: WebSearchStep): Promise<void> {
  const status = async (data: Json) => step.status?.(data);
  await status({ action: 'web_search', description: 'Searching the web', done: false });
  const userMessage = lastUserMessage(step.messages);
  let queries = await generatedQueries(deps.tasks, step, userMessage);
  if (queries.length === 1 && queries[0].trim() === '') queries = [userMessage];
  if (queries.length === 0) {
    await status({ action: 'web_search', description: 'No search query generated', done: true });
    return;
  }
  await status({ action: 'web_search_queries_generated', queries, done: false });
  try {
    // As the reference: a search that is off or not permitted fails like any other.
    if (!(await deps.web.maySearch(step.user))) throw new Error('Web search is off or not permitted');
    const results = await deps.web.searchAndLoad(queries);
    const entry = { name: queries.join(', '), type: 'web_search', urls: results.filenames, queries };
    if ('collection_names' in results) for (const collection of results.collection_names) step.files.push({ collection_name: collection, ...entry });
    else if (results.docs.length > 0) step.files.push({ docs: results.docs, ...entry });
    await status({ action: 'web_search', description: 'Searched {{count}} sites', urls: results.filenames, items: results.items, done: true });
  } catch {
    await status({ action: 'web_search', description: 'An error occurred while searching the web', queries, done: true, error: true });
  }
}

/** The task model's `{"queries": [...]}`; its whole answer as one query when that is not JSON; the user's message when the task is off or fails. */
async function generatedQueries(tasks: TasksService, step: WebSearchStep, userMessage: string): Promise<string[]> {
  try {
    const answer = await tasks.run('queries', step.user, { model: step.modelId, messages: step.messages, prompt: userMessage, type: 'web_search', chat_id: step.chatId }, step.context);
    if (answer.kind !== 'json' || answer.status >= 400 || !isObject(answer.body) || !Array.isArray(answer.body.choices)) return [userMessage];
    const message = isObject(answer.body.choices[0]) && isObject(answer.body.choices[0].message) ? answer.body.choices[0].message : {};
    const text = typeof message.content === 'string' ? message.content : '';
    const start = text.lastIndexOf('{');
    const end = text.lastIndexOf('}');
    try {
      const parsed = JSON.parse(text.slice(start, end + 1)) as unknown;
      const queries = isObject(parsed) && Array.isArray(parsed.queries) ? parsed.queries : [];
      return queries.filter((query): query is string => typeof query === 'string');
    } catch {
      return [text];
    }
  } catch {
    return [userMessage];
  }
}

function lastUserMessage(messages: Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return contentText(messages[i]);
  return '';
}
