import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, badRequest, unauthorized } from '../../core/http/errors.js';
import type { PythonHost } from '../../core/python/host.js';
import { type ChatTranscript, chatPdf } from './chat-pdf.js';

/**
 * `/api/v1/utils` (routers/utils.py): a Gravatar URL, code formatted with
 * black (in the plugin host's Python, never in this process), a chat as a PDF,
 * and the database file for admins. Code execution is the code-execution area's.
 */
export const DB_NOT_SQLITE = 'This feature is only available with SQLite databases.';

/** Black formats code in a plugin-host worker as the admin, like a tool: its answer or black's refusal. */
const FORMATTER = `"""
title: Parley code formatter
"""
import black


class Tools:
    def format(self, code: str) -> dict:
        """Formats Python code with black."""
        try:
            return {"code": black.format_str(code, mode=black.Mode())}
        except black.NothingChanged:
            return {"code": code}
        except Exception as error:
            return {"error": str(error)}
`;

export interface DatabaseCopy {
  file: string;
  /** Removes the copy (once it has been sent). */
  remove(): Promise<void>;
}

export class UtilsService {
  private readonly adminExport: boolean;

  constructor(
    private readonly core: Core,
    private readonly python: PythonHost,
  ) {
    this.adminExport = !/^false$/i.test(core.env.raw.ENABLE_ADMIN_EXPORT ?? 'true');
  }

  /** The address of the user's Gravatar (misc.get_gravatar_url): SHA-256 of the trimmed, lower-cased address. */
  gravatar(email: string): string {
    const hash = createHash('sha256').update(email.trim().toLowerCase()).digest('hex');
    return `https://www.gravatar.com/avatar/${hash}?d=mp`;
  }

  async formatCode(user: UserRecord, code: string): Promise<{ code: string }> {
    const answer = await this.python.callTool({ id: 'parley_code_formatter', content: FORMATTER, owner: user.id }, 'format', { code });
    const value = answer.value as { code?: unknown; error?: unknown } | null;
    if (value && typeof value.code === 'string') return { code: value.code };
    throw badRequest(value && typeof value.error === 'string' ? value.error : 'The code could not be formatted');
  }

  async chatPdf(chat: ChatTranscript): Promise<Buffer> {
    try {
      return await chatPdf(chat);
    } catch (error) {
      this.core.log.warn({ err: error instanceof Error ? error.message : String(error) }, 'Chat PDF failed');
      throw badRequest(error instanceof Error ? error.message : String(error));
    }
  }

  /**
   * A consistent copy of the embedded database, made by SQLite's online backup
   * while the server keeps writing (never the live file), in a private
   * temporary folder. PostgreSQL: 400, as the reference (its backups are pg_dump's).
   */
  async databaseCopy(): Promise<DatabaseCopy> {
    if (!this.adminExport) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    const backupTo = this.core.database.backupTo;
    if (!backupTo) throw new HttpError(400, DB_NOT_SQLITE);
    const dir = await mkdtemp(path.join(tmpdir(), 'parley-db-'));
    const remove = () => rm(dir, { recursive: true, force: true });
    const file = path.join(dir, 'webui.db');
    try {
      await backupTo(file);
    } catch (error) {
      await remove();
      throw error;
    }
    return { file, remove };
  }
}
