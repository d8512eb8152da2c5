import { bool } from '../../config/env.js';
import { checks, defineSetting, parsers } from '../../config/settings.js';

/** Automatic context compaction (`/api/v1/chats/config`; config.py CONTEXT_COMPACTION_*). */
export const COMPACTION_MODEL = defineSetting({ key: 'chat.context_compaction.model', env: 'CONTEXT_COMPACTION_MODEL', default: '', check: checks.nullableString });
export const COMPACTION_ENABLE = defineSetting({
  key: 'chat.context_compaction.enable',
  env: 'ENABLE_CONTEXT_COMPACTION',
  default: false,
  parse: parsers.bool,
  check: checks.bool,
});
export const COMPACTION_TOKEN_THRESHOLD = defineSetting({
  key: 'chat.context_compaction.token_threshold',
  env: 'CONTEXT_COMPACTION_TOKEN_THRESHOLD',
  default: 80000,
  parse: parsers.int,
  check: checks.intWithin(1),
});
export const COMPACTION_TOKEN_CAP = defineSetting<number | null>({
  key: 'chat.context_compaction.token_cap',
  env: 'CONTEXT_COMPACTION_TOKEN_CAP',
  default: null,
  parse: parsers.int,
  check: checks.intWithin(1, undefined, true),
});
export const COMPACTION_RETENTION_PERCENTAGE = defineSetting({
  key: 'chat.context_compaction.retention_percentage',
  env: 'CONTEXT_COMPACTION_RETENTION_PERCENTAGE',
  default: 40,
  parse: (raw) => Math.min(50, Math.max(10, Number.parseInt(raw, 10) || 40)),
  check: checks.intWithin(10, 50, true),
});
export const COMPACTION_PROMPT_TEMPLATE = defineSetting({
  key: 'chat.context_compaction.prompt_template',
  env: 'CONTEXT_COMPACTION_PROMPT_TEMPLATE',
  default: '',
  check: checks.string,
});

/** Form field of `ChatConfigForm` → setting (routers/chats.py CHAT_CONFIG_KEYS). */
export const CHAT_CONFIG_KEYS = {
  CONTEXT_COMPACTION_MODEL: COMPACTION_MODEL.key,
  ENABLE_CONTEXT_COMPACTION: COMPACTION_ENABLE.key,
  CONTEXT_COMPACTION_TOKEN_THRESHOLD: COMPACTION_TOKEN_THRESHOLD.key,
  CONTEXT_COMPACTION_TOKEN_CAP: COMPACTION_TOKEN_CAP.key,
  CONTEXT_COMPACTION_RETENTION_PERCENTAGE: COMPACTION_RETENTION_PERCENTAGE.key,
  CONTEXT_COMPACTION_PROMPT_TEMPLATE: COMPACTION_PROMPT_TEMPLATE.key,
} as const;

/** Process-level switches (environment only, as in the reference). */
export interface ChatOptions {
  /** Admins may open, list and read any user's chats (ENABLE_ADMIN_CHAT_ACCESS). */
  adminChatAccess: boolean;
  /** Admins may export every chat at once (ENABLE_ADMIN_EXPORT). */
  adminExport: boolean;
}

export function readChatOptions(raw: Record<string, string | undefined>): ChatOptions {
  return { adminChatAccess: bool(raw.ENABLE_ADMIN_CHAT_ACCESS, true), adminExport: bool(raw.ENABLE_ADMIN_EXPORT, true) };
}
