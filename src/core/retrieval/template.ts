import { checks, defineSetting } from '../../config/settings.js';

/**
 * The RAG template: how retrieved context is put before the model (config.py
 * DEFAULT_RAG_TEMPLATE, utils/task.py rag_template). The chat pipeline fills it with
 * the `<source>` list and the user's question.
 */
export const DEFAULT_RAG_TEMPLATE = `### Task:
Respond to the user query using the provided context, incorporating inline citations in the format [id] **only when the <source> tag includes an explicit id attribute** (e.g., <source id="1">).

### Guidelines:
- If you don't know the answer, clearly state that.
- If uncertain, ask the user for clarification.
- Respond in the same language as the user's query.
- If the context is unreadable or of poor quality, inform the user and provide the best possible answer.
- If the answer isn't present in the context but you possess the knowledge, explain this to the user and provide the answer using your own understanding.
- **Only include inline citations using [id] (e.g., [1], [2]) when the <source> tag includes an id attribute.**
- Do not cite if the <source> tag does not contain an id attribute.
- Do not use XML tags in your response.
- Ensure citations are concise and directly related to the information provided.

### Example of Citation:
If the user asks about a specific topic and the information is found in a source with a provided id attribute, the response should include the citation like in the following example:
* "According to the study, the proposed method increases efficiency by 20% [1]."

### Output:
Provide a clear and direct response to the user's query, including inline citations in the format [id] only when the <source> tag with id attribute is present in the context.

<context>
{{CONTEXT}}
</context>
`;

/** `rag.template` (RAG_TEMPLATE), the `RAG_TEMPLATE` field of `/api/v1/retrieval/config`; blank means the default. */
export const RAG_TEMPLATE = defineSetting<string>({ key: 'rag.template', env: 'RAG_TEMPLATE', default: DEFAULT_RAG_TEMPLATE, check: checks.string });

/** The template to fill: the configured one, or the default when it is blank (as the reference). */
export function ragTemplateText(configured: string | null | undefined): string {
  return configured && configured.trim() ? configured : DEFAULT_RAG_TEMPLATE;
}

const PLACEHOLDER = /\[context\]|\{\{CONTEXT\}\}|\[query\]|\{\{QUERY\}\}/g;

/**
 * The template with `[context]`/`{{CONTEXT}}` replaced by the context and
 * `[query]`/`{{QUERY}}` by the query, in one pass over the template only: a
 * placeholder inside the context (a document about templates) or the query is left
 * as written. The reference means the same with its temporary placeholders (its
 * order of replacements ends up filling the context's `[query]` instead).
 */
export function fillRagTemplate(template: string, context: string, query: string): string {
  return template.replace(PLACEHOLDER, (placeholder) => (placeholder === '[context]' || placeholder === '{{CONTEXT}}' ? context : query));
}
