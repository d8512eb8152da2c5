import { expect } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import type { Account } from '../../helpers/users.js';
import { createGroup } from '../tools/helpers.js';

export interface PromptBody {
  command: string;
  name: string;
  content: string;
  tags?: string[];
  data?: Record<string, unknown>;
  meta?: Record<string, unknown>;
  access_grants?: unknown[] | null;
  access_control?: unknown;
  commit_message?: string;
  is_production?: boolean;
}

/** A prompt form; the content keeps a variable, which the server leaves for the frontend to fill. */
export function promptBody(command: string, overrides: Partial<PromptBody> = {}): PromptBody {
  return { command, name: `Prompt ${command}`, content: `Summarise {{CLIPBOARD}} for ${command}`, tags: ['work'], ...overrides };
}

export async function createPrompt(server: TestServer, owner: Account, command: string, overrides: Partial<PromptBody> = {}) {
  const res = await server.api.post('/api/v1/prompts/create', promptBody(command, overrides), { token: owner.token });
  expect(res.status, res.text).toBe(200);
  return res.body as { id: string; version_id: string } & Record<string, unknown>;
}

/** Lets the members write prompts (`workspace.prompts`), as a group permission. */
export async function grantPromptAuthoring(server: TestServer, admin: Account, members: Account[], extra: Record<string, unknown> = {}) {
  return createGroup(server, admin, members, { workspace: { prompts: true }, ...extra });
}

export { createGroup };
