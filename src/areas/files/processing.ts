import { createHash } from 'node:crypto';
import type { Core } from '../../core/context.js';
import type { ProcessedFile } from '../../core/knowledge.js';
import { EmbeddingError } from '../../core/retrieval/embeddings.js';
import type { Storage } from '../../core/storage/storage.js';
import { ContentExtraction, type ExtractionOptions, type SpeechTranscriber } from './extraction.js';
import { type Extracted, ExtractionError } from './extraction-shared.js';
import { type FileRecord, FileStore } from './store.js';

export interface ProcessingOptions extends ExtractionOptions {
  /** How long a claimed job is its instance's unless renewed (every third of it, while extracting); after that another instance takes it (CONTENT_EXTRACTION_LEASE_SECONDS). */
  leaseSeconds: number;
  /** How often an idle instance looks for jobs other instances queued (CONTENT_EXTRACTION_POLL_INTERVAL, ms). */
  pollMs: number;
}

/** A job claimed this many times without finishing keeps killing its instance: it fails instead. */
const MAX_ATTEMPTS = 3;

export function readProcessingOptions(raw: Record<string, string | undefined>): ProcessingOptions {
  const number = (value: string | undefined, fallback: number) => {
    const parsed = Number.parseFloat(value ?? '');
    return Number.isFinite(parsed) && parsed > 0 ? parsed : fallback;
  };
  return {
    leaseSeconds: Math.ceil(number(raw.CONTENT_EXTRACTION_LEASE_SECONDS, 300)),
    pollMs: Math.round(number(raw.CONTENT_EXTRACTION_POLL_INTERVAL, 1) * 1000),
    workers: Math.max(1, Math.floor(number(raw.CONTENT_EXTRACTION_WORKERS, 2))),
    timeoutMs: Math.round(number(raw.CONTENT_EXTRACTION_TIMEOUT, 300) * 1000),
    workerMemoryMb: Math.round(number(raw.CONTENT_EXTRACTION_WORKER_MEMORY_MB, 1024)),
  };
}

/**
 * The content extraction queue: uploads add a job in the database and return;
 * every instance claims jobs (see FileStore.claimJob), as many at a time as it
 * has extraction workers (extraction.ts), so extraction never holds a request,
 * and a job an instance dropped (killed, shut down mid-way) is taken again
 * once its lease ran out. A file ends `completed`
 * with `data.content`, or `failed` with `data.error`.
 */
export class FileProcessing {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private readonly extraction: ContentExtraction;

  constructor(
    private readonly core: Core,
    private readonly storage: Storage,
    private readonly options: ProcessingOptions,
    /** Indexes the extracted text for retrieval; throws EmbeddingError when the engine fails. */
    private readonly index: (file: FileRecord, extracted: Extracted) => Promise<void>,
    /** Told when a file's extraction ended (knowledge bases index it then). */
    private readonly onProcessed: (file: ProcessedFile) => Promise<void> | undefined = () => undefined,
  ) {
    this.extraction = new ContentExtraction(core.settings, options);
  }

  private store(): FileStore {
    return new FileStore(this.core.db);
  }

  /** Recordings are transcribed by `transcriber` from now on. */
  connectSpeech(transcriber: SpeechTranscriber): void {
    this.extraction.transcriber = transcriber;
  }

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.kick(), this.options.pollMs);
    this.timer.unref();
    this.kick();
  }

  /** Works through the claimable jobs now (a new upload, or the poll). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((error) => this.core.log.error({ err: error }, 'file processing failed'))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Stops claiming; the jobs under way finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Stops, and ends the extraction workers. */
  async close(): Promise<void> {
    await this.stop();
    await this.extraction.close();
  }

  private async drain(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.workers }, () => this.drainOne()));
  }

  private async drainOne(): Promise<void> {
    while (!this.stopped) {
      const now = this.core.clock.now();
      const job = await this.store().claimJob(now, now + this.options.leaseSeconds);
      if (!job) return;
      await this.process(job.file_id, job.attempts);
    }
  }

  /** Extracts one claimed job, renewing its lease meanwhile so a long document is not taken by another instance. */
  private async process(fileId: string, attempts: number): Promise<void> {
    const store = this.store();
    const renewMs = Math.max(500, (this.options.leaseSeconds * 1000) / 3);
    const renewal = setInterval(() => {
      store.renewJob(fileId, this.core.clock.now() + this.options.leaseSeconds).catch(() => undefined);
    }, renewMs);
    try {
      await this.extract(store, fileId, attempts);
    } finally {
      clearInterval(renewal);
    }
  }

  private async extract(store: FileStore, fileId: string, attempts: number): Promise<void> {
    const file = await store.byId(fileId);
    if (!file) return store.finishJob(fileId);
    const meta = file.meta ?? {};
    let outcome: { hash?: string; data: Record<string, unknown> };
    try {
      if (attempts > MAX_ATTEMPTS) throw new ExtractionError('Processing was interrupted too many times');
      if (!file.path) throw new ExtractionError('The file has no stored bytes');
      const name = typeof meta.name === 'string' ? meta.name : file.filename;
      const contentType = typeof meta.content_type === 'string' ? meta.content_type : null;
      const local = await this.storage.localPath(file.path);
      const extracted = await this.extraction.extract({ path: local, name, contentType }).finally(() => this.storage.releaseLocalPath(file.path!));
      await this.index(file, extracted);
      const content = extracted.text;
      outcome = { hash: createHash('sha256').update(content).digest('hex'), data: { status: 'completed', content } };
    } catch (error) {
      const reason = error instanceof ExtractionError || error instanceof EmbeddingError ? error.message : `Extraction failed: ${(error as Error).message}`;
      outcome = { data: { status: 'failed', error: reason } };
    }
    // The record may have changed while the text was extracted: merge into the newest data.
    const current = await store.byId(fileId);
    if (current) {
      const data = { ...(current.data ?? {}), ...outcome.data };
      if (outcome.data.status === 'completed') delete data.error;
      await store.update(fileId, { data, ...(outcome.hash ? { hash: outcome.hash } : {}) }, this.core.clock.now());
    }
    await store.finishJob(fileId);
    if (current) {
      const processed = { ...current, data: { ...(current.data ?? {}), ...outcome.data }, hash: outcome.hash ?? current.hash };
      await Promise.resolve(this.onProcessed(processed)).catch((error) => this.core.log.error({ err: error, file: fileId }, 'indexing a processed file failed'));
    }
  }
}
