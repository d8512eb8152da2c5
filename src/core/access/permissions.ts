import { type TObject, type TOptional, type TBoolean, Type } from '@sinclair/typebox';

/**
 * The user permissions tree: six sections of boolean switches (the reference's
 * DEFAULT_USER_PERMISSIONS in config.py, with the interface's 0.11.0 additions,
 * interface §2.6). Each switch is seeded from its USER_PERMISSIONS_* variable.
 */
export type PermissionsTree = Record<string, Record<string, unknown>>;

interface Switch {
  env: string;
  /** The value when the variable is unset (config.py), and when the admin form leaves the key out. */
  seed: boolean;
}

const off = (env: string): Switch => ({ env, seed: false });
const on = (env: string): Switch => ({ env, seed: true });

const SWITCHES: Record<string, Record<string, Switch>> = {
  workspace: {
    models: off('USER_PERMISSIONS_WORKSPACE_MODELS_ACCESS'),
    knowledge: off('USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ACCESS'),
    prompts: off('USER_PERMISSIONS_WORKSPACE_PROMPTS_ACCESS'),
    tools: off('USER_PERMISSIONS_WORKSPACE_TOOLS_ACCESS'),
    skills: off('USER_PERMISSIONS_WORKSPACE_SKILLS_ACCESS'),
    models_import: off('USER_PERMISSIONS_WORKSPACE_MODELS_IMPORT'),
    models_export: off('USER_PERMISSIONS_WORKSPACE_MODELS_EXPORT'),
    prompts_import: off('USER_PERMISSIONS_WORKSPACE_PROMPTS_IMPORT'),
    prompts_export: off('USER_PERMISSIONS_WORKSPACE_PROMPTS_EXPORT'),
    tools_import: off('USER_PERMISSIONS_WORKSPACE_TOOLS_IMPORT'),
    tools_export: off('USER_PERMISSIONS_WORKSPACE_TOOLS_EXPORT'),
    skills_import: off('USER_PERMISSIONS_WORKSPACE_SKILLS_IMPORT'),
    skills_export: off('USER_PERMISSIONS_WORKSPACE_SKILLS_EXPORT'),
  },
  sharing: {
    models: off('USER_PERMISSIONS_WORKSPACE_MODELS_ALLOW_SHARING'),
    public_models: off('USER_PERMISSIONS_WORKSPACE_MODELS_ALLOW_PUBLIC_SHARING'),
    knowledge: off('USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ALLOW_SHARING'),
    public_knowledge: off('USER_PERMISSIONS_WORKSPACE_KNOWLEDGE_ALLOW_PUBLIC_SHARING'),
    prompts: off('USER_PERMISSIONS_WORKSPACE_PROMPTS_ALLOW_SHARING'),
    public_prompts: off('USER_PERMISSIONS_WORKSPACE_PROMPTS_ALLOW_PUBLIC_SHARING'),
    tools: off('USER_PERMISSIONS_WORKSPACE_TOOLS_ALLOW_SHARING'),
    // 0.10.2's admin form defaulted public_tools and public_notes to true, so a save without them
    // opened public sharing to everyone; the reference fixed it in 0.11.1 (#27716), as here.
    public_tools: off('USER_PERMISSIONS_WORKSPACE_TOOLS_ALLOW_PUBLIC_SHARING'),
    skills: off('USER_PERMISSIONS_WORKSPACE_SKILLS_ALLOW_SHARING'),
    public_skills: off('USER_PERMISSIONS_WORKSPACE_SKILLS_ALLOW_PUBLIC_SHARING'),
    notes: off('USER_PERMISSIONS_NOTES_ALLOW_SHARING'),
    public_notes: off('USER_PERMISSIONS_NOTES_ALLOW_PUBLIC_SHARING'),
    folders: off('USER_PERMISSIONS_FOLDERS_ALLOW_SHARING'),
    public_chats: off('USER_PERMISSIONS_CHAT_ALLOW_PUBLIC_SHARING'),
    // Read by the 0.11.0 web frontend (share-chat "open" visibility).
    open_chats: off('USER_PERMISSIONS_CHAT_ALLOW_OPEN_SHARING'),
    public_calendars: off('USER_PERMISSIONS_CALENDAR_ALLOW_PUBLIC_SHARING'),
  },
  access_grants: {
    allow_users: on('USER_PERMISSIONS_ACCESS_GRANTS_ALLOW_USERS'),
    allow_groups: on('USER_PERMISSIONS_ACCESS_GRANTS_ALLOW_GROUPS'),
  },
  chat: {
    controls: on('USER_PERMISSIONS_CHAT_CONTROLS'),
    valves: on('USER_PERMISSIONS_CHAT_VALVES'),
    system_prompt: on('USER_PERMISSIONS_CHAT_SYSTEM_PROMPT'),
    params: on('USER_PERMISSIONS_CHAT_PARAMS'),
    file_upload: on('USER_PERMISSIONS_CHAT_FILE_UPLOAD'),
    web_upload: on('USER_PERMISSIONS_CHAT_WEB_UPLOAD'),
    delete: on('USER_PERMISSIONS_CHAT_DELETE'),
    delete_message: on('USER_PERMISSIONS_CHAT_DELETE_MESSAGE'),
    continue_response: on('USER_PERMISSIONS_CHAT_CONTINUE_RESPONSE'),
    regenerate_response: on('USER_PERMISSIONS_CHAT_REGENERATE_RESPONSE'),
    rate_response: on('USER_PERMISSIONS_CHAT_RATE_RESPONSE'),
    edit: on('USER_PERMISSIONS_CHAT_EDIT'),
    share: on('USER_PERMISSIONS_CHAT_SHARE'),
    export: on('USER_PERMISSIONS_CHAT_EXPORT'),
    import: on('USER_PERMISSIONS_CHAT_IMPORT'),
    stt: on('USER_PERMISSIONS_CHAT_STT'),
    tts: on('USER_PERMISSIONS_CHAT_TTS'),
    call: on('USER_PERMISSIONS_CHAT_CALL'),
    multiple_models: on('USER_PERMISSIONS_CHAT_MULTIPLE_MODELS'),
    temporary: on('USER_PERMISSIONS_CHAT_TEMPORARY'),
    temporary_enforced: off('USER_PERMISSIONS_CHAT_TEMPORARY_ENFORCED'),
  },
  features: {
    api_keys: off('USER_PERMISSIONS_FEATURES_API_KEYS'),
    notes: on('USER_PERMISSIONS_FEATURES_NOTES'),
    folders: on('USER_PERMISSIONS_FEATURES_FOLDERS'),
    channels: on('USER_PERMISSIONS_FEATURES_CHANNELS'),
    direct_tool_servers: off('USER_PERMISSIONS_FEATURES_DIRECT_TOOL_SERVERS'),
    web_search: on('USER_PERMISSIONS_FEATURES_WEB_SEARCH'),
    image_generation: on('USER_PERMISSIONS_FEATURES_IMAGE_GENERATION'),
    code_interpreter: on('USER_PERMISSIONS_FEATURES_CODE_INTERPRETER'),
    memories: on('USER_PERMISSIONS_FEATURES_MEMORIES'),
    automations: off('USER_PERMISSIONS_FEATURES_AUTOMATIONS'),
    calendar: on('USER_PERMISSIONS_FEATURES_CALENDAR'),
    webhooks: off('USER_PERMISSIONS_FEATURES_USER_WEBHOOKS'),
  },
  settings: {
    interface: on('USER_PERMISSIONS_SETTINGS_INTERFACE'),
  },
};

export const PERMISSION_SECTIONS = Object.keys(SWITCHES);

/** Every USER_PERMISSIONS_* variable that seeds the tree. */
export const PERMISSION_VARIABLES = Object.values(SWITCHES).flatMap((switches) => Object.values(switches).map((s) => s.env));

function buildTree(value: (s: Switch) => boolean): Record<string, Record<string, boolean>> {
  const tree: Record<string, Record<string, boolean>> = {};
  for (const [section, switches] of Object.entries(SWITCHES)) {
    tree[section] = {};
    for (const [key, s] of Object.entries(switches)) tree[section][key] = value(s);
  }
  return tree;
}

/**
 * The default tree as the environment seeds it. Like config.py, a variable that
 * is set counts as true only when it reads "true" (any case).
 */
export function permissionsFromEnv(env: Record<string, string | undefined>): Record<string, Record<string, boolean>> {
  return buildTree((s) => {
    const raw = env[s.env];
    return raw === undefined ? s.seed : raw.toLowerCase() === 'true';
  });
}

/** Values the admin form takes for keys it leaves out. */
export const FORM_DEFAULTS = buildTree((s) => s.seed);

/**
 * The admin form for the default tree (UserPermissions): every section required,
 * every switch optional with its form default; unknown keys are dropped later.
 */
function sectionSchema(section: string): TObject<Record<string, TOptional<TBoolean>>> {
  const properties: Record<string, TOptional<TBoolean>> = {};
  for (const [key, value] of Object.entries(FORM_DEFAULTS[section])) properties[key] = Type.Optional(Type.Boolean({ default: value }));
  return Type.Object(properties, { additionalProperties: true });
}

export const UserPermissionsSchema = Type.Object(
  Object.fromEntries(PERMISSION_SECTIONS.map((section) => [section, sectionSchema(section)])) as Record<
    string,
    TObject<Record<string, TOptional<TBoolean>>>
  >,
  { additionalProperties: true },
);

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** Adds every key of `defaults` missing from `tree`, at any depth (fill_missing_permissions). */
export function fillMissing(tree: Record<string, unknown>, defaults: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...tree };
  for (const [key, value] of Object.entries(defaults)) {
    if (!(key in out)) out[key] = clone(value);
    else if (isObject(value) && isObject(out[key])) out[key] = fillMissing(out[key] as Record<string, unknown>, value);
  }
  return out;
}

/** Folds one group's permissions into the tree: the most permissive value wins (`a or b`). */
function combine(tree: Record<string, unknown>, group: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...tree };
  for (const [key, value] of Object.entries(group)) {
    if (isObject(value)) out[key] = combine(isObject(out[key]) ? (out[key] as Record<string, unknown>) : {}, value);
    else out[key] = key in out ? out[key] || value : value;
  }
  return out;
}

/**
 * The effective tree of a member of `groups` (utils/access_control.get_permissions):
 * the defaults, then each group's permissions combined in, then missing keys filled.
 */
export function mergePermissions(defaults: PermissionsTree, groups: (Record<string, unknown> | null)[]): PermissionsTree {
  let tree: Record<string, unknown> = clone(defaults);
  for (const permissions of groups) if (isObject(permissions)) tree = combine(tree, permissions);
  return fillMissing(tree, defaults) as PermissionsTree;
}

/** The value at a dotted key as a boolean; a missing step denies (has_permission). */
export function permissionAt(tree: Record<string, unknown>, dottedKey: string): boolean {
  let node: unknown = tree;
  for (const step of dottedKey.split('.')) {
    if (!isObject(node) || !(step in node)) return false;
    node = node[step];
  }
  if (isObject(node)) return Object.keys(node).length > 0;
  if (Array.isArray(node)) return node.length > 0;
  return Boolean(node);
}

/**
 * The default tree as the admin form stores it: the known sections and switches,
 * missing switches at their form defaults, unknown keys dropped. Returns an
 * error message for a malformed tree.
 */
export function normalizeDefaultPermissions(input: unknown): { tree: Record<string, Record<string, boolean>> } | { error: string } {
  if (!isObject(input)) return { error: 'permissions must be an object' };
  const tree: Record<string, Record<string, boolean>> = {};
  for (const section of PERMISSION_SECTIONS) {
    const given = input[section];
    if (!isObject(given)) return { error: `permissions.${section} must be an object` };
    tree[section] = {};
    for (const [key, fallback] of Object.entries(FORM_DEFAULTS[section])) {
      const value = given[key];
      if (value !== undefined && typeof value !== 'boolean') return { error: `permissions.${section}.${key} must be a boolean` };
      tree[section][key] = value ?? fallback;
    }
  }
  return { tree };
}
