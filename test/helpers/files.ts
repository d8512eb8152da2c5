import { FormData, fetch } from 'undici';
import type { ApiClient } from './server.js';
import type { Account } from './users.js';

/** A multipart upload to `POST /api/v1/files/` as the frontend sends it; answers the status and the JSON body. */
export async function uploadFile(
  baseUrl: string,
  account: Account,
  name: string,
  content: string | Uint8Array,
  type = 'text/plain',
  options: { metadata?: unknown; query?: string } = {},
): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('file', new Blob([content], { type }), name);
  if (options.metadata !== undefined) form.append('metadata', typeof options.metadata === 'string' ? options.metadata : JSON.stringify(options.metadata));
  const response = await fetch(`${baseUrl}/api/v1/files/${options.query ?? ''}`, { method: 'POST', body: form, headers: { authorization: `Bearer ${account.token}` } });
  return { status: response.status, body: (await response.json()) as any };
}

/** Waits for a file's processing to end; answers its final status (`/process/status`). */
export async function processedFile(api: ApiClient, account: Account, id: string): Promise<{ status: string; error?: string }> {
  for (let i = 0; i < 100; i++) {
    const res = await api.get(`/api/v1/files/${id}/process/status`, { token: account.token });
    if (res.body.status !== 'pending') return res.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('still pending');
}
