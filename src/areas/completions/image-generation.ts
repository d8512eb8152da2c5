import type { UserRecord } from '../../core/auth/user.js';
import { HttpError } from '../../core/http/errors.js';
import type { CallContext } from '../../core/upstream/headers.js';
import { type Json, type Message, isObject } from '../chats/history.js';
import type { ImagesService } from '../images/service.js';
import { MAX_IMAGES } from '../images/schemas.js';
import type { TasksService } from '../tasks/service.js';
import { lastUserText } from '../tasks/templates.js';

/**
 * `features.image_generation` of a chat request (middleware.py
 * chat_image_generation_handler): images of the conversation's last two turns
 * that carry any are edited when editing is on; otherwise the task model writes
 * the image prompt (ENABLE_IMAGE_PROMPT_GENERATION; the user's message when it is
 * off or fails) and an image is generated. The frontend is told with status
 * events ("Creating image", "Image created") and a `files` event with the images,
 * which also stores them on the answer; the model is told in the system message
 * that the image is shown (or why it failed), so it answers about it.
 *
 * The reference runs this only with `function_calling: legacy` and otherwise hands
 * the model its `generate_image` and `edit_image` tools. Parley skips it where the
 * answer has those tools (builtin-tools.ts: a web client's answer in native function
 * calling) and runs it for every other answer that has a message to show the image on.
 */
export interface ImageGenerationStep {
  user: UserRecord;
  modelId: string;
  messages: Message[];
  chatId: string;
  messageId: string;
  context: CallContext;
  /** The answer's event emitter (status and files events). */
  emit: (event: Json) => Promise<void>;
}

/** How many of the latest turns with images are edited (the reference's limit). */
const IMAGE_TURNS = 2;

const CREATED = 'The requested image has been created by the system successfully and is now being shown to the user. Let the user know that the image they requested has been generated and is now shown in the chat.';
const EDITED = 'The requested image has been edited and created and is now being shown to the user. Let them know that it has been generated.';

/** Runs the step; answers the text for the system message. */
export async function generateChatImage(deps: { images: ImagesService; tasks: TasksService }, step: ImageGenerationStep): Promise<string> {
  const status = (data: Json) => step.emit({ type: 'status', data });
  await status({ description: 'Creating image', done: false });
  const userMessage = lastUserText(step.messages) ?? '';
  const inputs = conversationImages(step.messages);
  const editing = inputs.length > 0 && deps.images.editEnabled;
  const metadata = { chat_id: step.chatId, message_id: step.messageId };
  try {
    // As the generation route: off, or not permitted, fails like any other error.
    if (!(editing || deps.images.generationEnabled) || !(await deps.images.mayGenerate(step.user))) throw new Error('Image generation is off or not permitted');
    const images = editing
      ? await deps.images.edits(step.user, { prompt: userMessage, image: inputs }, metadata)
      : await deps.images.generations(step.user, { prompt: await imagePrompt(deps, step, userMessage), n: 1 }, metadata);
    await status({ description: 'Image created', done: true });
    await step.emit({ type: 'files', data: { files: images.map((image) => ({ type: 'image', url: image.url })) } });
    return `<context>${editing ? EDITED : CREATED}</context>`;
  } catch (error) {
    const message = error instanceof HttpError ? (typeof error.detail === 'string' ? error.detail : JSON.stringify(error.detail)) : error instanceof Error ? error.message : String(error);
    await status({ description: 'An error occurred while generating an image', done: true });
    return `<context>Image generation was attempted but failed${editing ? '' : ' because of an error'}. The system is currently unable to generate the image. Tell the user that the following error occurred: ${message}</context>`;
  }
}

/** The task model's `{"prompt": "..."}`; the user's message when the task is off, fails or answers otherwise. */
async function imagePrompt(deps: { images: ImagesService; tasks: TasksService }, step: ImageGenerationStep, userMessage: string): Promise<string> {
  if (!deps.images.promptGenerationEnabled) return userMessage;
  try {
    const answer = await deps.tasks.run('image_prompt', step.user, { model: step.modelId, messages: step.messages, chat_id: step.chatId }, step.context);
    if (answer.kind !== 'json' || answer.status >= 400 || !isObject(answer.body) || !Array.isArray(answer.body.choices)) return userMessage;
    const choice = answer.body.choices[0];
    const text = isObject(choice) && isObject(choice.message) && typeof choice.message.content === 'string' ? choice.message.content : '';
    const parsed = JSON.parse(text.slice(text.lastIndexOf('{'), text.lastIndexOf('}') + 1)) as unknown;
    return isObject(parsed) && typeof parsed.prompt === 'string' && parsed.prompt.trim() ? parsed.prompt : userMessage;
  } catch {
    return userMessage;
  }
}

/**
 * The images of the latest turns that have any, newest first (get_images_from_messages): the
 * conversation carries a message's image files as its `image_url` parts (file ids, content
 * paths, data URIs or web addresses), and a request's own messages may still name them in `files`.
 */
function conversationImages(messages: Message[]): string[] {
  const turns: string[][] = [];
  for (let i = messages.length - 1; i >= 0 && turns.length < IMAGE_TURNS; i--) {
    const { content, files } = messages[i];
    const parts = (Array.isArray(content) ? content : []).filter(isObject).filter((part) => part.type === 'image_url');
    const attached = (Array.isArray(files) ? files : []).filter(isObject).filter((file) => file.type === 'image' || String(file.content_type ?? '').startsWith('image/'));
    const urls = [...parts.map((part) => (isObject(part.image_url) ? part.image_url.url : part.image_url)), ...attached.map((file) => file.url)].filter(
      (url): url is string => typeof url === 'string' && url !== '',
    );
    if (urls.length > 0) turns.push([...new Set(urls)]);
  }
  return turns.flat().slice(0, MAX_IMAGES);
}
