import type { UserRecord } from './auth/user.js';

/*
 * What the files area needs of knowledge bases, which sit above it: a file is readable
 * through a knowledge base the caller may read, and a knowledge base's chunks follow its
 * files' extraction and deletion. The knowledge service provides it (wired in app.ts), so
 * the files area imports nothing of the knowledge area.
 */

/** A file as the knowledge area needs it when its extraction ends. */
export interface ProcessedFile {
  id: string;
  user_id: string;
  filename: string;
  hash: string | null;
  data: Record<string, unknown> | null;
  meta: Record<string, unknown> | null;
}

export interface KnowledgeFileReach {
  /** The knowledge bases holding the file that the user may read or write (owner, admin bypass or grant). */
  reaching(user: UserRecord, fileId: string, permission: 'read' | 'write'): Promise<{ id: string; user_id: string }[]>;
  /** The file's extraction ended (completed or failed): index it where it waits. */
  fileProcessed(file: ProcessedFile): Promise<void>;
  /** The file is about to be deleted: its chunks leave every knowledge base holding it. */
  fileDeleting(fileId: string): Promise<void>;
  /** Every file is about to be deleted: the knowledge bases' chunks go with them. */
  allFilesDeleting(): Promise<void>;
}
