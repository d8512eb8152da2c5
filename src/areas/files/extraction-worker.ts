import { parentPort } from 'node:worker_threads';
import { extractText } from './extract.js';
import { type Extracted, ExtractionError } from './extraction-shared.js';

/**
 * A worker thread of the extraction pool (extraction-pool.ts): takes one task
 * at a time and answers its text (and pages), or the reason it has none (`readable` when
 * the reason is meant for the user as is).
 */
export interface ExtractionTask {
  path: string;
  name: string;
  contentType: string | null;
}
export type ExtractionReply = { extracted: Extracted } | { error: string; readable: boolean };

parentPort?.on('message', (task: ExtractionTask) => {
  extractText(task.path, task.name, task.contentType).then(
    (extracted) => parentPort?.postMessage({ extracted } satisfies ExtractionReply),
    (error: Error) => parentPort?.postMessage({ error: error.message, readable: error instanceof ExtractionError } satisfies ExtractionReply),
  );
});
