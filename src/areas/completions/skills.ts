import type { UserRecord } from '../../core/auth/user.js';
import { type Json, type Message, isObject } from '../chats/history.js';
import type { SkillsService } from '../skills/service.js';
import type { SkillRecord } from '../skills/store.js';
import { type ChatFunction, textOutcome } from './tools.js';

/**
 * Skills in a chat (middleware.py process_chat_payload): the request's
 * `skill_ids`, the model's `meta.skillIds` and the skills mentioned in the
 * messages as `<$id|label>`. Mentioned skills, and every skill when the answer has
 * no built-in tools (API clients), join the system message in full; the others are
 * listed in an `<available_skills>` manifest and the model loads one with the
 * `view_skill` tool. Skills the user may not read, and inactive ones, are skipped.
 */
const MENTION = /<\$([^|>]+)(?:\|[^>]*)?>/g;
const MENTION_WITH_LABEL = /<\$[^|>]+(?:\|([^>]*))?>/g;

export interface ChatSkills {
  messages: Message[];
  /** Skills the model may load with `view_skill` (none: no tool). */
  viewable: SkillRecord[];
}

function textParts(message: Message): string[] {
  if (typeof message.content === 'string') return [message.content];
  if (Array.isArray(message.content)) return message.content.filter((p) => isObject(p) && p.type === 'text').map((p) => String((p as Json).text ?? ''));
  return [];
}

function withoutMentions(message: Message): Message {
  const strip = (text: string) => text.replace(MENTION_WITH_LABEL, (_m, label: string | undefined) => label ?? '').trim();
  if (typeof message.content === 'string') return message.content.search(MENTION_WITH_LABEL) >= 0 ? { ...message, content: strip(message.content) } : message;
  if (Array.isArray(message.content)) {
    return { ...message, content: message.content.map((p) => (isObject(p) && p.type === 'text' && typeof p.text === 'string' ? { ...p, text: strip(p.text) } : p)) };
  }
  return message;
}

const stringList = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v !== '') : []);

export async function chatSkills(
  skills: SkillsService,
  user: UserRecord,
  form: Json,
  model: Json,
  messages: Message[],
  builtinTools: boolean,
  addSystemText: (messages: Message[], text: string) => Message[],
): Promise<ChatSkills> {
  const mentioned = new Set(messages.flatMap((m) => textParts(m).flatMap((text) => [...text.matchAll(MENTION)].map((match) => match[1]))));
  const meta = isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {};
  const ids = [...stringList(form.skill_ids), ...stringList(meta.skillIds), ...mentioned];
  if (ids.length === 0) return { messages, viewable: [] };
  const available = await skills.forChat(user, ids);
  let result = messages;
  const viewable: SkillRecord[] = [];
  for (const skill of available) {
    if (mentioned.has(skill.id) || !builtinTools) result = addSystemText(result, `<skill name="${skill.name}">\n${skill.content}\n</skill>`);
    else viewable.push(skill);
  }
  if (viewable.length > 0) {
    const manifest = viewable.map((s) => `<skill>\n<id>${s.id}</id>\n<name>${s.name}</name>\n<description>${s.description ?? ''}</description>\n</skill>\n`).join('');
    result = addSystemText(result, `<available_skills>\n${manifest}</available_skills>`);
  }
  if (mentioned.size > 0) result = result.map(withoutMentions);
  // A message that was only a mention would be empty, which some providers refuse.
  const lastUser = result.map((m) => m.role).lastIndexOf('user');
  if (lastUser >= 0 && textParts(result[lastUser]).join('').trim() === '' && available.length > 0) {
    result = result.map((m, i) => (i === lastUser ? { ...m, content: available.map((s) => s.name).join(', ') } : m));
  }
  return { messages: result, viewable };
}

/** `view_skill` (tools/builtin.py): the full instructions of a skill in the manifest. */
export function viewSkillFunction(skills: SkillsService): ChatFunction {
  return {
    source: 'builtin',
    spec: {
      name: 'view_skill',
      description:
        'Load the full instructions of a skill by its id from the available skills manifest.\nUse this when you need detailed instructions for a skill listed in <available_skills>.',
      parameters: { type: 'object', properties: { id: { type: 'string', description: 'The id of the skill to load (as shown in the manifest)' } }, required: ['id'] },
    },
    async run(args, user: UserRecord) {
      const id = typeof args.id === 'string' ? args.id : '';
      const skill = await skills.viewForChat(user, id.toLowerCase());
      return textOutcome(JSON.stringify(skill ? { name: skill.name, content: skill.content } : { error: `Skill '${id}' not found` }));
    },
  };
}
