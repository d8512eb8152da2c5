import { expect } from 'vitest';
import { ERROR } from '../../../src/core/http/errors.js';
import type { ApiClient } from '../../helpers/server.js';
import type { Account } from '../../helpers/users.js';

export const NOT_FOUND = { detail: ERROR.NOT_FOUND };
export const PROHIBITED = { detail: ERROR.ACCESS_PROHIBITED };
export const UNKNOWN = '00000000-0000-0000-0000-000000000000';

type Msg = Record<string, unknown>;

/**
 * A frontend-shaped history from a chain of [id, role, content, extra?]: each
 * message answers the previous one; the last is current.
 */
export function chain(...messages: [string, string, string, Msg?][]): { currentId: string | null; messages: Record<string, Msg> } {
  const map: Record<string, Msg> = {};
  let parent: string | null = null;
  let timestamp = 1_700_000_000;
  for (const [id, role, content, extra] of messages) {
    map[id] = { id, parentId: parent, childrenIds: [], role, content, timestamp: timestamp++, ...extra };
    if (parent) (map[parent].childrenIds as string[]).push(id);
    parent = id;
  }
  return { currentId: parent, messages: map };
}

export async function newChat(api: ApiClient, account: Account, chat: Msg = {}, extra: Msg = {}) {
  const res = await api.post('/api/v1/chats/new', { chat: { title: 'A chat', ...chat }, ...extra }, { token: account.token });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** Sets a default permission switch for every user (admin route). */
export async function setDefaultPermission(api: ApiClient, admin: Account, section: string, key: string, value: boolean) {
  const current = await api.get('/api/v1/users/default/permissions', { token: admin.token });
  expect(current.status, current.text).toBe(200);
  const tree = current.body;
  tree[section] = { ...tree[section], [key]: value };
  const res = await api.post('/api/v1/users/default/permissions', tree, { token: admin.token });
  expect(res.status, res.text).toBe(200);
}
