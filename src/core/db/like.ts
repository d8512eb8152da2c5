/** LIKE pattern text with its wildcards taken literally (used with `escape '\'`). */
export const likeLiteral = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A LIKE pattern matching any lower-cased text that contains `text` (used with `lower(column)` and `escape '\'`). */
export const containsPattern = (text: string): string => `%${likeLiteral(text.toLowerCase())}%`;
