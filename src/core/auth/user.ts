/**
 * The user as the rest of Parley sees it: the stored record with JSON columns
 * decoded. `variables` is kept here for the server's own use and never serialised
 * (interface §2.6).
 */
export type Role = 'admin' | 'user' | 'pending';

export interface UserRecord {
  id: string;
  email: string;
  username: string | null;
  role: Role | string;
  name: string;
  profile_image_url: string;
  profile_banner_image_url: string | null;
  bio: string | null;
  gender: string | null;
  date_of_birth: string | null;
  timezone: string | null;
  presence_state: string | null;
  status_emoji: string | null;
  status_message: string | null;
  status_expires_at: number | null;
  info: Record<string, unknown> | null;
  variables: Record<string, unknown>;
  settings: Record<string, unknown> | null;
  oauth: Record<string, unknown> | null;
  scim: Record<string, unknown> | null;
  last_active_at: number;
  updated_at: number;
  created_at: number;
}

export const isAdmin = (user: Pick<UserRecord, 'role'>) => user.role === 'admin';

/** The user record as responses carry it: everything but `variables` (interface §2.6). */
export type PublicUser = Omit<UserRecord, 'variables'>;

export function publicUser(user: UserRecord): PublicUser {
  const { variables: _variables, ...rest } = user;
  return rest;
}
