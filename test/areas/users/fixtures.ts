import { expect } from 'vitest';
import type { TestServer } from '../../helpers/server.js';

/** The fields every user response may carry; `variables` is never one of them. */
export const USER_MODEL_KEYS = [
  'id',
  'email',
  'username',
  'role',
  'name',
  'profile_image_url',
  'profile_banner_image_url',
  'bio',
  'gender',
  'date_of_birth',
  'timezone',
  'presence_state',
  'status_emoji',
  'status_message',
  'status_expires_at',
  'info',
  'settings',
  'oauth',
  'scim',
  'last_active_at',
  'updated_at',
  'created_at',
].sort();

export const USER_INFO_KEYS = ['id', 'name', 'email', 'role', 'bio', 'groups', 'is_active', 'status_emoji', 'status_message', 'status_expires_at'].sort();

/** Asserts that no key named `variables` appears anywhere in a response body. */
export function expectNoVariables(body: unknown): void {
  expect(JSON.stringify(body)).not.toMatch(/"variables"/);
}

/** Stores variables for a user straight in the record (what only the variables route may reveal). */
export async function plantVariables(server: TestServer, userId: string, variables: Record<string, string>): Promise<void> {
  await server.parley.services.users.update(userId, { variables });
}
