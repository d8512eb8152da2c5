import type { UserRecord } from '../../core/auth/user.js';
import { contentText, isObject, type Json, type Message } from '../chats/history.js';
import { replaceMessagesVariable, replacePromptVariable } from '../chats/templates.js';
import { renderSystemPrompt } from '../models/params.js';

/**
 * The task prompts: the reference's built-in templates (config.py DEFAULT_*)
 * and how each is filled in (utils/task.py): `{{prompt}}` and `{{MESSAGES}}`
 * variants first, then the user and date variables.
 */
export const DEFAULT_TEMPLATES = {
  TITLE: `### Task:
Generate a concise title summarizing the chat history.
### Guidelines:
- The title should clearly represent the main theme or subject of the conversation.
- Keep it short: 2-4 words is best.
- Do not use emojis, quotation marks, or special formatting.
- Write the title in the chat's primary language; default to English if multilingual.
- Prioritize accuracy over creativity.
- Your entire response must consist solely of the JSON object, without any introductory or concluding text.
- The output must be a single, raw JSON object, without any markdown code fences or other encapsulating text.
- Ensure no conversational text, affirmations, or explanations precede or follow the raw JSON output, as this will cause direct parsing failure.
### Output:
JSON format: { "title": "your concise title here" }
### Examples:
- { "title": "Stock Trends" },
- { "title": "Chocolate Chip Cookies" },
- { "title": "Music Streaming" },
- { "title": "Remote Work" }
### Chat History:
<chat_history>
{{MESSAGES:END:2}}
</chat_history>`,
  TAGS: `### Task:
Generate 1-3 broad tags categorizing the main themes of the chat history, along with 1-3 more specific subtopic tags.

### Guidelines:
- Start with high-level domains (e.g. Science, Technology, Philosophy, Arts, Politics, Business, Health, Sports, Entertainment, Education)
- Consider including relevant subfields/subdomains if they are strongly represented throughout the conversation
- If content is too short (less than 3 messages) or too diverse, use only ["General"]
- Use the chat's primary language; default to English if multilingual
- Prioritize accuracy over specificity

### Output:
JSON format: { "tags": ["tag1", "tag2", "tag3"] }

### Chat History:
<chat_history>
{{MESSAGES:END:6}}
</chat_history>`,
  IMAGE_PROMPT: `### Task:
Generate a detailed prompt for am image generation task based on the given language and context. Describe the image as if you were explaining it to someone who cannot see it. Include relevant details, colors, shapes, and any other important elements.

### Guidelines:
- Be descriptive and detailed, focusing on the most important aspects of the image.
- Avoid making assumptions or adding information not present in the image.
- Use the chat's primary language; default to English if multilingual.
- If the image is too complex, focus on the most prominent elements.

### Output:
Strictly return in JSON format:
{
    "prompt": "Your detailed description here."
}

### Chat History:
<chat_history>
{{MESSAGES:END:6}}
</chat_history>`,
  FOLLOW_UP: `### Task:
Suggest 3-5 relevant follow-up questions or prompts that the user might naturally ask next in this conversation as a **user**, based on the chat history, to help continue or deepen the discussion.
### Guidelines:
- Write all follow-up questions from the user’s point of view, directed to the assistant.
- Make questions concise, clear, and directly related to the discussed topic(s).
- Only suggest follow-ups that make sense given the chat content and do not repeat what was already covered.
- If the conversation is very short or not specific, suggest more general (but relevant) follow-ups the user might ask.
- Use the conversation's primary language; default to English if multilingual.
- Response must be a JSON object with a "follow_ups" key containing an array of strings, no extra text or formatting.
### Output:
JSON format: { "follow_ups": ["Question 1?", "Question 2?", "Question 3?"] }
### Chat History:
<chat_history>
{{MESSAGES:END:6}}
</chat_history>`,
  QUERY: `### Task:
Analyze the chat history to determine the necessity of generating search queries, in the given language. By default, **prioritize generating 1-3 broad and relevant search queries** unless it is absolutely certain that no additional information is required. The aim is to retrieve comprehensive, updated, and valuable information even with minimal uncertainty. If no search is unequivocally needed, return an empty list.

### Guidelines:
- Respond **EXCLUSIVELY** with a JSON object. Any form of extra commentary, explanation, or additional text is strictly prohibited.
- When generating search queries, respond in the format: { "queries": ["query1", "query2"] }, ensuring each query is distinct, concise, and relevant to the topic.
- If and only if it is entirely certain that no useful results can be retrieved by a search, return: { "queries": [] }.
- Err on the side of suggesting search queries if there is **any chance** they might provide useful or updated information.
- Be concise and focused on composing high-quality search queries, avoiding unnecessary elaboration, commentary, or assumptions.
- Today's date is: {{CURRENT_DATE}}.
- Always prioritize providing actionable and broad queries that maximize informational coverage.

### Output:
Strictly return in JSON format: 
{
  "queries": ["query1", "query2"]
}

### Chat History:
<chat_history>
{{MESSAGES:END:6}}
</chat_history>
`,
  AUTOCOMPLETE: `### Task:
You are an autocompletion system. Continue the text in \`<text>\` based on the **completion type** in \`<type>\` and the given language.  

### **Instructions**:
1. Analyze \`<text>\` for context and meaning.  
2. Use \`<type>\` to guide your output:  
   - **General**: Provide a natural, concise continuation.  
   - **Search Query**: Complete as if generating a realistic search query.  
3. Start as if you are directly continuing \`<text>\`. Do **not** repeat, paraphrase, or respond as a model. Simply complete the text.  
4. Ensure the continuation:
   - Flows naturally from \`<text>\`.  
   - Avoids repetition, overexplaining, or unrelated ideas.  
5. If unsure, return: \`{ "text": "" }\`.  

### **Output Rules**:
- Respond only in JSON format: \`{ "text": "<your_completion>" }\`.

### **Examples**:
#### Example 1:  
Input:  
<type>General</type>  
<text>The sun was setting over the horizon, painting the sky</text>  
Output:  
{ "text": "with vibrant shades of orange and pink." }

#### Example 2:  
Input:  
<type>Search Query</type>  
<text>Top-rated restaurants in</text>  
Output:  
{ "text": "New York City for Italian cuisine." }  

---
### Context:
<chat_history>
{{MESSAGES:END:6}}
</chat_history>
<type>{{TYPE}}</type>  
<text>{{PROMPT}}</text>  
#### Output:
`,
  VOICE_MODE: `You are a friendly, concise voice assistant.

Everything you say will be spoken aloud.
Keep responses short, clear, and natural.

STYLE:
- Use simple words and short sentences.
- Sound warm and conversational.
- Avoid long explanations, lists, or complex phrasing.

BEHAVIOR:
- Give the quickest helpful answer first.
- Offer extra detail only if needed.
- Ask for clarification only when necessary.

VOICE OPTIMIZATION:
- Break information into small, easy-to-hear chunks.
- Avoid dense wording or anything that sounds like reading text.

ERROR HANDLING:
- If unsure, say so briefly and offer options.
- If something is unsafe or impossible, decline kindly and suggest a safe alternative.

Stay consistent, helpful, and easy to listen to.`,
  TOOLS: `Available Tools: {{TOOLS}}

Your task is to choose and return the correct tool(s) from the list of available tools based on the query. Follow these guidelines:

- Return only the JSON object, without any additional text or explanation.

- If no tools match the query, return an empty array: 
   {
     "tool_calls": []
   }

- If one or more tools match the query, construct a JSON response containing a "tool_calls" array with objects that include:
   - "name": The tool's name.
   - "parameters": A dictionary of required parameters and their corresponding values.

The format for the JSON response is strictly:
{
  "tool_calls": [
    {"name": "toolName1", "parameters": {"key1": "value1"}},
    {"name": "toolName2", "parameters": {"key2": "value2"}}
  ]
}`,
  EMOJI: `Your task is to reflect the speaker's likely facial expression through a fitting emoji. Interpret emotions from the message and reflect their facial expression using fitting, diverse emojis (e.g., 😊, 😢, 😡, 😱).

Message: \`\`\`{{prompt}}\`\`\``,
  MOA: `You have been provided with a set of responses from various models to the latest user query: "{{prompt}}"

Your task is to synthesize these responses into a single, high-quality response. It is crucial to critically evaluate the information provided in these responses, recognizing that some of it may be biased or incorrect. Your response should not simply replicate the given answers but should offer a refined, accurate, and comprehensive reply to the instruction. Ensure your response is well-structured, coherent, and adheres to the highest standards of accuracy and reliability.

Responses from models: {{responses}}`,
} as const;

/** The text of the last user message (get_last_user_message), or null without one. */
export function lastUserText(messages: Message[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (isObject(message) && message.role === 'user') return contentText(message) || null;
  }
  return null;
}

/** Titles, tags, follow-ups, image prompts and queries: the conversation's templates. */
export function conversationPrompt(template: string, messages: Message[], user: UserRecord): string {
  let text = replacePromptVariable(template, lastUserText(messages) ?? '');
  text = replaceMessagesVariable(text, messages);
  return renderSystemPrompt(text, user);
}

export function autocompletePrompt(template: string, prompt: string, messages: Message[] | null, type: string | null, user: UserRecord): string {
  let text = template.split('{{TYPE}}').join(type ?? '');
  text = replacePromptVariable(text, prompt);
  text = replaceMessagesVariable(text, messages);
  return renderSystemPrompt(text, user);
}

export function emojiPrompt(prompt: string, user: UserRecord): string {
  return renderSystemPrompt(replacePromptVariable(DEFAULT_TEMPLATES.EMOJI, prompt), user);
}

/**
 * The messages of the legacy tool-choosing task (middleware.py get_tools_function_calling_payload):
 * the template with the tools' specs as the system message, then the last four messages before
 * the query, each `ROLE: """text"""`, and the query.
 */
export function toolChoiceMessages(template: string, specs: Json[], messages: Message[]): Message[] {
  const query = lastUserText(messages) ?? '';
  const earlier = query && messages.at(-1)?.role === 'user' ? messages.slice(0, -1) : messages;
  const history = earlier
    .slice(-4)
    .map((m) => `${String(m.role ?? '').toUpperCase()}: """${contentText(m)}"""`)
    .join('\n');
  return [
    { role: 'system', content: template.split('{{TOOLS}}').join(JSON.stringify(specs)) },
    { role: 'user', content: history ? `History:\n${history}\nQuery: ${query}` : `Query: ${query}` },
  ];
}

/** The mixture-of-agents prompt: the query and every model's answer in triple quotes (no user variables, as the reference). */
export function moaPrompt(prompt: string, responses: string[]): string {
  const text = replacePromptVariable(DEFAULT_TEMPLATES.MOA, prompt);
  return text.split('{{responses}}').join(responses.map((r) => `"""${r}"""`).join('\n\n'));
}
