/**
 * Parley's own release notes, in the shape `GET /api/changelog` answers (the
 * reference parses its CHANGELOG.md into this): version → date and sections of
 * `{title, content, raw}` entries. The frontend shows it to an admin once per version.
 */
export interface ChangelogEntry {
  title: string;
  content: string;
  raw: string;
}

const entry = (title: string, content: string): ChangelogEntry => ({
  title,
  content,
  raw: `<li><strong>${title}</strong>: ${content}</li>`,
});

export const CHANGELOG: Record<string, { date: string } & Record<string, string | ChangelogEntry[]>> = {
  '0.11.0': {
    date: '2026-11-22',
    added: [
      entry('Accounts', 'Sign-up (the first account is the admin), sign-in, sessions in a cookie or a bearer token, API keys, users, groups and permissions.'),
      entry('Configuration', 'Admin configuration forms, import and export of every setting, banners and prompt suggestions; settings survive restarts.'),
      entry('Web frontend', 'Serves a built Open WebUI frontend from FRONTEND_BUILD_DIR.'),
      entry('Storage', 'SQLite by default, PostgreSQL through DATABASE_URL.'),
    ],
  },
};
