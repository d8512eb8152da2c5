import { checks, defineSetting, parsers } from '../../config/settings.js';

/** How many characters of user memories, and of other memories, the system context takes (at least 250 each, as the reference). */
export const MEMORIES_USER_CHAR_LIMIT = defineSetting({ key: 'memories.user_char_limit', env: 'MEMORIES_USER_CHAR_LIMIT', default: 2000, parse: parsers.int, check: checks.int });
export const MEMORIES_CONTEXT_CHAR_LIMIT = defineSetting({ key: 'memories.context_char_limit', env: 'MEMORIES_CONTEXT_CHAR_LIMIT', default: 2000, parse: parsers.int, check: checks.int });
