import { expect } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import type { Account } from '../../helpers/users.js';

/** The environment of tool tests: no pip installs (the corpus names requirements it does not import), three workers. */
export const TOOLS_ENV = { ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS: 'false', PLUGIN_POOL_SIZE: '3' };

/** A minimal tool source with one function and both valves classes. */
export function simpleTool(marker = 'one'): string {
  return `"""
title: Simple ${marker}
version: 1.0
"""
from pydantic import BaseModel, Field


class Tools:
    class Valves(BaseModel):
        priority: int = Field(0, description="Priority level")
        max_turns: int = 8

    class UserValves(BaseModel):
        nickname: str = "anon"

    def __init__(self):
        self.valves = self.Valves()

    def marker(self, text: str = "") -> str:
        """Says which source is loaded."""
        return "${marker}:" + text
`;
}

export interface ToolBody {
  id: string;
  name: string;
  content: string;
  meta: Record<string, unknown>;
  access_grants?: unknown[];
  access_control?: unknown;
}

export function toolBody(id: string, overrides: Partial<ToolBody> = {}): ToolBody {
  return { id, name: `Tool ${id}`, content: simpleTool(), meta: { description: `About ${id}` }, ...overrides };
}

export async function createTool(server: TestServer, owner: Account, id: string, overrides: Partial<ToolBody> = {}) {
  const res = await server.api.post('/api/v1/tools/create', toolBody(id, overrides), { token: owner.token });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** A group with the given permissions and members, made by an admin. */
export async function createGroup(server: TestServer, admin: Account, members: Account[], permissions: Record<string, unknown> = {}) {
  const res = await server.api.post(
    '/api/v1/groups/create',
    { name: `Group ${Math.random().toString(36).slice(2, 8)}`, description: 'd', permissions },
    { token: admin.token },
  );
  expect(res.status, res.text).toBe(200);
  if (members.length > 0) {
    const added = await server.api.post(`/api/v1/groups/id/${res.body.id}/users/add`, { user_ids: members.map((m) => m.id) }, { token: admin.token });
    expect(added.status, added.text).toBe(200);
  }
  return res.body as { id: string };
}

/** Lets the members write tools (`workspace.tools`), as a group permission. */
export async function grantAuthoring(server: TestServer, admin: Account, members: Account[], extra: Record<string, unknown> = {}) {
  return createGroup(server, admin, members, { workspace: { tools: true }, ...extra });
}
