import { expect } from 'vitest';
import type { ApiClient } from './server.js';

/** A signed-in account as tests use it. */
export interface Account {
  id: string;
  email: string;
  name: string;
  role: string;
  token: string;
  password: string;
}

export type Role = 'user' | 'admin' | 'pending';

/** Request options that send the account's token (none for null). */
export const as = (account: Account | null) => ({ token: account?.token ?? null });

let counter = 0;

/** A unique address for an account of this name. */
const emailFor = (name: string) => `${name.toLowerCase().replace(/[^a-z0-9]+/g, '.')}.${Date.now().toString(36)}${counter}@example.com`;

/** Signs up through the API (the first account becomes admin). */
export async function signup(api: ApiClient, name = `User ${++counter}`, password = 'secret-Passw0rd!'): Promise<Account> {
  const email = emailFor(name);
  const res = await api.post('/api/v1/auths/signup', { name, email, password, profile_image_url: '' });
  expect(res.status, res.text).toBe(200);
  return { id: res.body.id, email, name, role: res.body.role, token: res.body.token, password };
}

/** Adds a user through the admin route, with the given role. */
export async function addUser(api: ApiClient, admin: Account, role: Role = 'user', name = `Member ${++counter}`): Promise<Account> {
  const email = emailFor(name);
  const password = 'member-Passw0rd!';
  const res = await api.post('/api/v1/auths/add', { name, email, password, role }, { token: admin.token });
  expect(res.status, res.text).toBe(200);
  const signin = await api.post('/api/v1/auths/signin', { email, password });
  expect(signin.status, signin.text).toBe(200);
  return { id: res.body.id, email, name, role, token: signin.body.token, password };
}
